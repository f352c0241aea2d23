// Package examples holds runnable programs that use extensor; each lives in
// its own directory: examples/mlp trains an MLP on Fashion-MNIST,
// examples/cnn a CNN with a live dashboard, examples/gpt a transformer on
// Go source, and examples/web the MLP in a web page, on the browser's
// WebGPU.
package examples
