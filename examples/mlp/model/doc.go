// Package model is the 784-256-10 ReLU MLP of the mlp example, written with
// extensor's explicit forward and backward ops; the benchmarks time its
// training step.
package model
