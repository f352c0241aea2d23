// Package examples holds runnable programs that use extensor; each lives in
// its own directory (examples/mlp trains an MLP on Fashion-MNIST).
package examples
