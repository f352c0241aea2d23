// Package ops holds extensor's operations and their backward functions.
//
// Every op has a forward function and a backward function named after it
// (Add and AddBackward, MatMul and MatMulBackward, …). A backward function
// takes the op's inputs and the upstream gradient g (shaped like the op's
// output) and returns the gradient of each input, shaped exactly like that
// input. Ops run on the device of their inputs; every input must be on the
// same device and, for floating-point inputs, of the same dtype.
//
// Binary arithmetic broadcasts like NumPy: shapes are aligned on the right,
// and each pair of dimensions must be equal or contain a 1. Backward
// functions sum each gradient back to its input's shape.
//
// Arguments that cannot work (incompatible shapes, dtypes or devices, a bad
// axis) panic with a *tensor.Error; see package tensor for the error policy
// and tensor.Maybe to recover. Ops return their results at once; on a GPU
// they run asynchronously and a runtime failure is returned by the readback
// of the result.
package ops
