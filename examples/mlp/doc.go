// Command mlp trains a 784-256-10 ReLU multilayer perceptron on
// Fashion-MNIST with extensor's explicit forward and backward ops and plain
// SGD (learning rate 0.1, batch 128, He initialisation), on the device
// chosen by -device ("auto", "webgpu" or "cpu").
//
// The data come from Debian's dataset-fashion-mnist package
// (/usr/share/datasets/fashion-mnist), read by package fashionmnist. The
// program prints progress during each epoch, then the epoch's mean training
// loss, test accuracy and wall time.
//
// Usage:
//
//	go run ./examples/mlp [-device auto] [-epochs 3] [-lr 0.1] [-batch 128]
package main
