// Package cpu is extensor's reference backend: plain Go kernels for float32
// and float64 (and int32 labels), with matrix products by gonum's BLAS.
//
// It is written independently of the WGSL kernels, so that the parity suite
// comparing the two backends means something: indexing walks coordinates
// with an odometer instead of dividing flat indices, reductions accumulate
// in float64, and softmax uses a float64 log-sum-exp.
//
// Importing the package registers the device "cpu"; package tensor imports
// it, so "cpu" is always available.
package cpu
