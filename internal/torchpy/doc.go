// Package torchpy finds a Python that imports PyTorch, for the tests and
// benchmarks that compare extensor with it.
package torchpy
