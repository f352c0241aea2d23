package device

// The kernel families of a Device, each an interface of its own (the
// families a table op runs on are its Family in package ops).

// Core is what every device does besides kernels: its identity, memory,
// transfers, waiting and closing.
type Core interface {
	// Name returns the registered name of the backend, e.g. "webgpu".
	Name() string
	// String describes the device and its adapter, e.g.
	// "webgpu: llvmpipe (LLVM 15.0.6, 256 bits), Vulkan, CPU".
	String() string
	// Supports reports whether the device can hold elements of dtype dt:
	// float32, float16 and int32 on every device, float64 on the CPU.
	Supports(dt DType) bool
	// Alloc returns an uninitialised buffer of n elements of dtype dt.
	// A buffer that becomes unreachable without Free is freed by the
	// device (a cleanup the garbage collector runs): a call holds its
	// buffer arguments, so their memory outlives the call even if
	// nothing else refers to them, and work recorded with a buffer may
	// outlive the buffer.
	Alloc(dt DType, n int) (Buffer, error)
	// Free returns a buffer to the device at once. The buffer must not be
	// used again.
	Free(b Buffer)
	// Write copies src, a []float32, []float64 or []int32 matching dst's
	// dtype and length, into dst.
	Write(dst Buffer, src any) error
	// Read waits for the work recorded so far and copies src into dst, a
	// slice matching src's dtype and length. It returns the first runtime
	// failure of any kernel recorded before it.
	Read(src Buffer, dst any) error
	// Sync waits for all recorded work and returns the first runtime failure.
	Sync() error
	// Close waits for recorded work, frees every resource of the device and
	// returns the first failure. Calling Close twice is safe.
	Close() error
}

// Elementwise is the kernel families of one output element per input
// element (shaders unary, binary, update, cast): fills, copies, unary and
// broadcasting binary ops and their gradients, axpy and dtype conversion.
// A backend may defer the unary and binary calls and run a chain of them
// as one kernel (fused.wgsl, which includes their functions; see Fuser):
// the results are those of the calls run one by one.
//
// WGSL: shaders/unary.wgsl, binary.wgsl, update.wgsl, cast.wgsl and fused.wgsl.
type Elementwise interface {
	// Fill sets every element of dst to v.
	Fill(dst Buffer, v float64)
	// Arange sets element i of dst to start + i·step. For int32 dst,
	// start and step are integers and the arithmetic is int32's; a
	// floating-point dst gets the value computed in float64 (the CPU) or
	// float32 (WebGPU, as PyTorch on CUDA), rounded to its dtype.
	Arange(dst Buffer, start, step float64)
	// Copy copies src into dst, which has the same dtype and length.
	Copy(dst, src Buffer)
	// Unary sets dst = op(x; p) elementwise, where p holds op's scalar
	// parameters (at most two).
	Unary(op UnaryOp, dst, x Buffer, p ...float64)
	// UnaryGrad sets dx = dy · op'(x; p) elementwise.
	UnaryGrad(op UnaryOp, dx, x, dy Buffer, p ...float64)
	// Binary sets dst = op(a, b) with broadcasting described by l.
	Binary(op BinaryOp, dst, a, b Buffer, l Broadcast)
	// BinaryGrad sets dst, shaped like the output l.Shape, to the gradient of
	// op's output with respect to operand wrt (0 for a, 1 for b), multiplied
	// elementwise by the upstream gradient g (contiguous, shaped l.Shape).
	BinaryGrad(op BinaryOp, wrt int, dst, g, a, b Buffer, l Broadcast)
	// Axpy sets y = y + alpha·x in place.
	Axpy(y, x Buffer, alpha float64)
	// Convert sets dst to src's values in dst's dtype (of the same length):
	// to float16 rounding to nearest even (overflow to ±Inf, subnormals
	// kept, NaN kept), from float16 exactly.
	Convert(dst, src Buffer)
}

// Reducer is the reduce family: sums, means, extrema and arg-extrema over
// axes.
//
// WGSL: shaders/reduce.wgsl.
type Reducer interface {
	// Reduce sets dst to x (contiguous, of the given shape) reduced over the
	// given axes; dst is laid out as the shape with those axes set to 1.
	// For ArgMax and ArgMin dst is int32 and the axes are adjacent, their
	// flattened index being the result.
	Reduce(op ReduceOp, dst, x Buffer, shape, axes []int)
}

// Softmaxer is the softmax families: softmax and log-softmax along an axis,
// their gradients, and the fused softmax cross-entropy.
//
// WGSL: shaders/softmax.wgsl, softmax_xent.wgsl and softmax_xent_grad.wgsl.
type Softmaxer interface {
	// Softmax sets dst to the softmax of x (contiguous, of the given shape)
	// along axis, or to its logarithm when log is set; stably, subtracting
	// each row's maximum.
	Softmax(dst, x Buffer, shape []int, axis int, log bool)
	// SoftmaxGrad sets dx from the output y of Softmax (or of its log) and
	// the upstream gradient dy: y·(dy − Σ dy·y), or for the log,
	// dy − exp(y)·Σ dy, the sums running along axis.
	SoftmaxGrad(dx, y, dy Buffer, shape []int, axis int, log bool)
	// SoftmaxCrossEntropy sets loss[i], for each of the n rows of logits
	// (n×c), to logsumexp(logits[i]) − logits[i][labels[i]]. A label outside
	// [0, c) gives a NaN loss for its row, and is reported as by Gather.
	SoftmaxCrossEntropy(site string, loss, logits, labels Buffer, n, c int)
	// SoftmaxCrossEntropyGrad sets row i of dlogits to
	// (softmax(logits[i]) − onehot(labels[i]))·g[i], where g holds the
	// upstream gradient of each row's loss; labels as in SoftmaxCrossEntropy.
	SoftmaxCrossEntropyGrad(site string, dlogits, logits, labels, g Buffer, n, c int)
}

// Gatherer is the gather family: picking an element or a table row per
// index, and its adjoint.
//
// WGSL: shaders/gather.wgsl.
type Gatherer interface {
	// Gather takes, for each row i of idx (int32), what t describes: the
	// element x[i·C + idx[i]] of row i of an N×C matrix, or (t.Table) the
	// row idx[i] of a C×D table, times t.Scale. An index outside [0, C)
	// gives NaN and is reported, as an *IndexError naming t.Site, by the
	// next Read or Sync.
	Gather(dst, x, idx Buffer, t Take)
	// GatherGrad applies Gather's adjoint to g: dx (N×C) holds
	// t.Scale·g[i] at (i, idx[i]) and 0 elsewhere, a row of NaN for an
	// index out of range; with t.Table, row r of dx (C×D) is
	// t.Scale·Σ g[i, :] over the i with idx[i] = r, summed in order of i
	// (an index out of range adds nowhere). Bad indices are reported as by
	// Gather.
	GatherGrad(dx, idx, g Buffer, t Take)
}

// MatMuler is the matmul families: batched matrix products.
//
// WGSL: shaders/matmul.wgsl, matmul_tiled.wgsl, matmul_tex.wgsl and matmul_sum.wgsl.
type MatMuler interface {
	// MatMul computes the batch of matrix products s describes.
	MatMul(dst, a, b Buffer, s GEMM)
}

// Windower is the window family: im2col, col2im and the poolings over NCHW
// images.
//
// WGSL: shaders/window.wgsl.
type Windower interface {
	// Window runs the sliding-window kernel op over NCHW images as w
	// describes: dst ← op(x, g), g only for the gradients (and x unused by
	// AvgPoolGrad).
	Window(op WindowOp, dst, x, g Buffer, w Window2D)
}

// Convolver is the convolution family: 2-D convolutions of NCHW images
// and their gradients, lowered as the backend chooses (im2col and matrix
// products in chunks, direct kernels, ...; package im2col lowers them on
// any device's window and matrix-product families). Buffers share one
// floating-point dtype. A failure to allocate the backend's scratch
// memory is returned, the outputs then being unspecified; the kernels'
// own runtime failures are reported by the next Read or Sync, as
// everywhere.
//
// WGSL: shaders/conv_tex.wgsl (and the window and matmul families').
type Convolver interface {
	// Conv2d sets out (N, F, OH, OW) to the cross-correlation of the
	// images x (N, C, H, W) with the filters w (F, C/Groups, KH, KW), plus
	// b (F) unless b is nil. With keep set it may return buffers that
	// Conv2dBackward reuses (im2col's columns, or WebGPU's texture of the
	// images: a buffer of no elements): the caller owns them, frees them,
	// and hands them to Conv2dBackward for the same x and c unchanged;
	// nil when it keeps nothing.
	Conv2d(out, x, w, b Buffer, c Conv2D, keep bool) ([]Buffer, error)
	// Conv2dBackward sets, for the upstream gradient gy (N, F, OH, OW),
	// each of gx (N, C, H, W), gw (F, C/Groups, KH, KW) and gb (F) that is
	// not nil to the gradient of Conv2d's x, w and b. x may be nil if gw
	// is. kept is what Conv2d returned for x, or nil.
	Conv2dBackward(gx, gw, gb, x, w, gy Buffer, c Conv2D, kept []Buffer) error
}

// Strider is the strided family: copies between strided views
// (permutations, slices, padding, concatenation).
//
// WGSL: shaders/strided.wgsl.
type Strider interface {
	// CopyStrided copies elements of src into dst as s describes, for
	// buffers of one dtype (any); elements of dst it does not reach keep
	// their values. Permutations, slices, padding, concatenation and their
	// gradients are strided copies.
	CopyStrided(dst, src Buffer, s Strided)
}

// Conv2D describes a convolution for Convolver: the images and the
// window of its F filters (Window2D's N0, Ones and Pitch are 0 and false),
// in Groups ≥ 1 groups of channels.
type Conv2D struct {
	Window2D
	F, Groups int
}

// Stepper is the update family's fused optimiser steps.
//
// WGSL: shaders/update.wgsl.
type Stepper interface {
	// Step runs one fused optimiser step of each of params in place:
	// params[i] and its state buffers, state[i], are read and written,
	// grads[i] read (see Optimizer for the state each needs), as though
	// the parameters were stepped one after another in order. They share
	// a dtype; a device may step many in one kernel.
	Step(op Optimizer, params, grads []Buffer, state [][]Buffer, h StepParams)
	// Unscale divides each of grads in place by scale's one element
	// (multiplying it by the scale's reciprocal), and sets state's
	// ScaleFound to 1 where any result is Inf or NaN: PyTorch's
	// _amp_foreach_non_finite_check_and_unscale_. grads, scale and state
	// (a loss scaler's, ScaleStateLen elements) share a float dtype; a
	// device may unscale many gradients in one kernel.
	Unscale(grads []Buffer, scale, state Buffer)
	// UpdateScale ends a step of dynamic loss scaling, as PyTorch's
	// _amp_update_scale_: after a step with ScaleFound set, the scale is
	// multiplied by p.Backoff, ScaleGood reset and ScaleSkipped counted,
	// and so is each of skipped (the stepped optimisers' counts of steps
	// skipped, one element each: StepParams.Skipped; at most
	// MaxScaledOptimizers); otherwise ScaleGood is counted, and on
	// reaching p.Interval reset, the scale multiplied by p.Growth where
	// the product is finite. ScaleFound is then cleared.
	UpdateScale(scale, state Buffer, skipped []Buffer, p ScaleParams)
	// SquaredNorm sets out's one element to the sum of the squares of
	// the elements of xs, as PyTorch's clip_grad_norm_ takes their norm
	// (its square): accumulated in float64 on the CPU, by a tree of
	// float32 sums on WebGPU. out and xs share a float dtype; a device
	// may read many of xs in one kernel.
	SquaredNorm(out Buffer, xs []Buffer)
	// Scale multiplies each of xs in place by s's one element (of their
	// float dtype); a device may scale many in one kernel.
	Scale(xs []Buffer, s Buffer)
}

// MaxScaledOptimizers bounds the optimisers that one step of loss
// scaling steps (Stepper.UpdateScale's counts): a kernel binds at most 8
// storage buffers, its parameters, the scale and the state among them.
const MaxScaledOptimizers = 5

// Drawer is the draw family: painting tensors into a canvas.
//
// WGSL: shaders/draw.wgsl and present.wgsl (a canvas onto a window's
// surface, in package webgpu).
type Drawer interface {
	// Draw paints into canvas, an int32 buffer of p.H×p.W pixels, as op
	// and p describe, reading src (and aux); see DrawOp.
	Draw(op DrawOp, canvas, src, aux Buffer, p Paint)
}

// Normalizer is the normalisation kernel family: layer_norm and rms_norm
// with their optional affine transform (w, b), and their gradients. x
// holds rows rows of n contiguous elements; each row is normalised on its
// own, accumulating in float32 (float64 on the CPU for float64), so a row
// whose squares overflow float32 gives what PyTorch's float32 gives: NaN
// or 0.
//
// WGSL: shaders/norm.wgsl.
type Normalizer interface {
	// Norm sets each row of dst to x̂ = (x − μ)·ρ, where μ is the row's
	// mean (0 unless center) and ρ = 1/√(mean((x − μ)²) + eps), times w
	// and plus b (the affine transform: n values each, of x's dtype)
	// where they are not nil, rounded once.
	Norm(dst, x, w, b Buffer, rows, n int, eps float64, center bool)
	// NormGrad sets dx to the gradient through Norm of x, given the
	// upstream gradient g of Norm's output: with ĝ = g·w (g where w is
	// nil), ρ·(ĝ − mean(ĝ) − x̂·mean(ĝ·x̂)), the mean of ĝ left out unless
	// center; and, unless they are nil, gw to the sum over the rows of
	// g·x̂ (w's gradient) and gb to the sum of g (b's), n elements each,
	// summed in float32 (float64 on the CPU); zeros for no rows.
	NormGrad(dx, gw, gb, x, g, w Buffer, rows, n int, eps float64, center bool)
}

// Selector is the selection kernel family: where and masked_fill.
//
// WGSL: shaders/where.wgsl.
type Selector interface {
	// Where sets dst[i] = a[i] where cond[i] ≠ 0 (NaN counts as true)
	// and b[i] elsewhere, for buffers of one length and one dtype.
	Where(dst, cond, a, b Buffer)
}

// AttentionStats is the columns of the fused attention's row statistics.
const AttentionStats = 3

// Attender is the fused attention kernel family: softmax(scale·QKᵀ +
// mask)·V, never holding the Lq×Lk scores in memory. Its operands are
// q [Batch, Lq, D], k [Batch, Lk, D], v [Batch, Lk, DV], out and dO
// [Batch, Lq, DV], placed by the spec's layouts (contiguous unless
// given; dq, dk and dv as q, k and v, o and dO as out; one buffer may
// hold several, dq, dk and dv among them), and stats [Batch·Lq,
// AttentionStats], float32 (float64 for float64 inputs): each query
// row's largest score m and ln Σ e^(s − m), kept apart (their sum, the
// log-sum-exp, rounds to m for scores near the float's largest, as a
// −3.4e38 mask gives), then the scratch of the gradient. Accumulation
// is in float32 (float64 on the CPU for float64). D and DV are multiples
// of 4. A key a query may not see
// (masked, or after it when causal) adds nothing to the output or to any
// gradient; a row that may see no key is NaN, and so are its gradients
// through every key it would see unmasked, as PyTorch's.
//
// WGSL: shaders/attention.wgsl.
type Attender interface {
	// Attention sets out to the attention of q, k and v under a, and
	// stats' first two columns to the rows' m (−Inf for a row with no key
	// allowed, whose output is NaN) and ln Σ e^(s − m). mask is nil unless
	// a.Mask.
	Attention(out, stats, q, k, v, mask Buffer, a AttentionSpec)
	// AttentionGrad sets dq, dk and dv to the gradients of Attention's
	// output o given its upstream gradient dO, recomputing the scores
	// from Attention's stats; it overwrites stats' third column.
	AttentionGrad(dq, dk, dv, stats, q, k, v, mask, o, dO Buffer, a AttentionSpec)
	// AttentionScoresGrad sets ds [Batch, Lq, Lk] to the gradient of the
	// masked scores (an additive mask's gradient before broadcasting): 0
	// where a query may not see a key. It reads the scratch that
	// AttentionGrad left in stats.
	AttentionScoresGrad(ds, stats, q, k, v, mask, dO Buffer, a AttentionSpec)
}

// Scanner is the scan kernel family: cumulative sums.
//
// WGSL: shaders/scan.wgsl.
type Scanner interface {
	// Cumsum sets dst to the running sums of x (contiguous, of the given
	// shape) along axis, from the first element, or from the last when
	// reverse is set (cumsum's gradient), accumulating in float32
	// (float64 on the CPU for float64).
	Cumsum(dst, x Buffer, shape []int, axis int, reverse bool)
}
