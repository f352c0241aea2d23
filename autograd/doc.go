// Package autograd is extensor's reverse-mode automatic differentiation:
// a tape over the op table of package ops.
//
// Variables wrap tensors. Leaf makes a parameter (requiresGrad true) or an
// input (false). The functions of package ops, given variables
// (ops.MatMul(x, w), ops.Relu(h)), and Apply, given an op's handle
// (Apply(ops.SoftplusOp, ops.SoftplusAttrs{Beta: 1, Threshold: 20}, x)),
// run an op of the table and
// record it when any input requires a gradient: an op on inputs that need
// none is not recorded and costs nothing in backward. Recording and differentiating
// come from the op's table entry (its Forward and Backward), never from
// code written again per op; an op without a backward (argmax, say) is an
// error when a gradient must pass through it. An op whose entry has a
// Save (conv2d) keeps what its backward would compute again (conv2d's
// im2col columns) while recorded, as PyTorch's save_for_backward does,
// and Backward releases it with the op's inputs.
//
// Backward on a 0-D loss (or BackwardWith an upstream gradient) adds each
// leaf's gradient to its Grad: gradients accumulate across calls until
// ZeroGrad, as in PyTorch, and a variable used several times receives the
// sum of its gradients. Backward releases the graph's intermediate values
// (the results of ops, those that need no gradient too, that recorded ops
// read) as soon as the ops that need them have been differentiated, so a
// training loop keeps device memory flat without waiting for the garbage
// collector; Retain keeps one to read afterwards, and BackwardWith's
// retain keeps the whole graph for another pass. A second Backward
// through a consumed graph is an error.
//
// Grad returns gradients as variables instead (torch.autograd.grad); with
// create it records their computation, through each op's Grad rule in the
// op table (its backward written in ops of the table), so that they can be
// differentiated again: second-order gradients, and a Hessian-vector
// product as two Grad calls.
//
// Checkpoint trades compute for memory: a segment's activations are not
// kept but recomputed during backward.
//
// A variable's NoGrad marks the computation that flows from it as
// unrecorded (evaluation), as torch.no_grad does for a block of code.
//
// Variables are not safe for concurrent use; the devices under them are.
package autograd
