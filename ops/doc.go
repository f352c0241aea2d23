// Package ops holds extensor's operations and their backward functions.
//
// Every op has a forward function and a backward function named after it
// (Add and AddBackward, Softmax and SoftmaxBackward, …). The forward
// functions are one set for tensors and for the tape: each is generic over
// its values (Operand), which are all *tensor.Tensor, computed at once,
// or all package autograd's *Var, computed at once and recorded for
// backward. ops.Add(a, b) reads the same either way, with the arguments
// in PyTorch's order (LayerNorm(x, shape, w, b, eps), as
// F.layer_norm); nil leaves out an optional input (Linear's bias).
// Reductions take their axes last, none meaning every axis: Sum(x),
// Sum(x, 1), SumKeepdims(x, 1) for keepdim=True. Each function is a line
// over its op's table entry, and a function value names its type:
// ops.Tanh[*autograd.Var]. The backward functions take and return
// tensors. A backward
// function takes the forward's arguments in their order with the upstream
// gradient g (shaped like the op's output) after the last tensor —
// SoftplusBackward(x, g, beta, threshold), IndexSelectBackward(x, axis,
// idx, g) — and returns the gradient of each input, shaped exactly like
// that input. Ops run on the device of
// their inputs; every input must be on the same device and, for
// floating-point inputs, of the same dtype.
//
// # The op table
//
// Table lists every op once: its name, the WGSL kernel family that runs it
// (a file of package shaders), its conventions, its forward and backward
// functions in a uniform signature, and the cases on which the parity
// suite checks it. The parity suite and the coverage table (docs) are
// generated from it. An entry's Grad is a Rule: the backward written in
// ops of the table through a Builder, which a tape records to
// differentiate a gradient again (Eager runs it on tensors; the parity
// suite checks it against Backward). An entry's Save, where it has one
// (conv2d), is a forward that also keeps what backward would compute
// again (Saved, handed to Backward in a Backprop), as PyTorch's
// save_for_backward; the tape and the parity suite's backward checks go
// through it.
//
// An op's arguments other than tensors are a type of its own (Attrs:
// SoftplusAttrs, SliceAttrs, Window, …; nil for an op without any), so
// that a field an op does not read cannot be set, and attributes of
// another type panic with ErrArgument naming both types.
//
// An op is defined in one place: the file of its group holds its
// functions, its table entry (with its parity cases), and its
// second-order Rule. Each entry is an exported var named after the op,
// its handle (SoftplusOp, BCEWithLogitsOp); the group's list (activations,
// say) gives the entries' order in the table and attaches their Rules.
// autograd.Apply records an op by its handle, and Rules apply the ops
// they are written in by theirs, so a misspelt op is a compile error and
// no op is named by a string outside its entry (Lookup finds one by name,
// for tools).
// An elementwise op's entry names its Kernel, the WGSL functions
// op_KERNEL and op_KERNEL_grad (shaders/unary.wgsl) and the CPU twin
// (cpu/unary.go) that run it: adding one (silu, say) touches those three
// files, and make parity regenerates the coverage table in docs. Tests
// fail when an op lacks a part (a handle, special values, a kernel, a
// Rule), or a WGSL function or CPU twin belongs to no op. The tape
// reaches every op through its function here, and through autograd.Apply
// and its handle.
//
// # Conventions
//
// Binary arithmetic broadcasts like NumPy: shapes are aligned on the
// right, and each pair of dimensions must be equal or contain a 1.
// Backward functions sum each gradient back to its input's shape.
//
// Special values follow IEEE 754 and PyTorch, identically on every
// device: NaN propagates through every elementwise op and through max and
// min (relu(NaN) = NaN, 0·Inf = NaN; sign(NaN) = NaN as in NumPy, where
// PyTorch's 0 is a comparison artefact it tracks as a bug,
// pytorch/pytorch#41245), except
// that x⁰ = 1 (pow and pow_scalar, as IEEE 754's pow); the gradient of a
// unary op at NaN is NaN (pow_scalar's at e = 0 is 0); floor_divide and
// mod take Python's floor semantics (±Inf // 1 = NaN); and argmax and
// argmin take NaN as the extreme value. The gradients of
// Div, Log and Sqrt are PyTorch's, ±Inf or NaN where they divide by 0.
// Ties of max and min share the gradient equally; argmax and
// argmin return the first index among ties. Kinks take the subgradient
// PyTorch takes (0 for relu and abs at 0; clip passes the gradient at its
// bounds).
//
// float16 tensors are storage: Cast converts to and from them, bit for
// bit the same on every device. Every op but the optimiser steps takes
// them (all its floating-point operands float16), computing in float32
// and storing float16; ops built of other ops (Linear, Conv2d,
// ClipGradNorm) compute on float32 copies and round once. The optimiser
// steps, which update float32 master weights, refuse them with an
// ErrDType saying so.
//
// Losses reduce by MeanReduction (the zero value), SumReduction or
// NoReduction.
//
// MatMul follows NumPy's matmul: 1-D operands are vectors, N-D operands
// batches of matrices with broadcast batch axes, run as one batched
// kernel. Shape ops (Permute, Transpose, Slice, Pad, Concat, Stack) copy
// with one strided-copy kernel and work on every dtype; Reshape, Squeeze,
// Unsqueeze and Flatten return views. Layers (Linear, Conv2d, MaxPool2d,
// AvgPool2d) take PyTorch's layouts: weights [out, in], images NCHW,
// filters [out, in/groups, KH, KW].
//
// Arguments that cannot work (incompatible shapes, dtypes or devices, a bad
// axis, clip bounds lo > hi, a negative leaky_relu slope) panic with a
// *tensor.Error; see package tensor for the error policy and tensor.Maybe
// to recover. Ops return their results at once; on a GPU they run
// asynchronously and a runtime failure is returned by the readback of the
// result.
package ops
