package device

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// MaxRank is the largest tensor rank the kernels accept.
const MaxRank = 8

// Buffer is a block of device memory holding Len elements of one DType.
// Buffers are created by Device.Alloc and returned with Device.Free.
type Buffer interface {
	Len() int
	DType() DType
}

// UnaryOp names an elementwise function of one operand with up to two
// scalar parameters: NAME is the WGSL function op_NAME in
// shaders/unary.wgsl (its gradient op_NAME_grad) and its CPU twin's key in
// package cpu. The op that runs it names it in its definition (package
// ops); a test checks that every WGSL function has its twin and its op.
// Every unary op maps NaN to NaN, and its gradient at NaN is NaN.
type UnaryOp string

// String returns the operation's name.
func (op UnaryOp) String() string { return string(op) }

// BinaryOp names an elementwise function of two operands. Its value is the
// name of its WGSL function in shaders/binary.wgsl (and of its gradients,
// name_grad0 and name_grad1) and of its CPU twin.
type BinaryOp string

// The binary operations.
const (
	Add      BinaryOp = "add"
	Sub      BinaryOp = "sub"
	Mul      BinaryOp = "mul"
	Div      BinaryOp = "div"
	Pow      BinaryOp = "pow"
	FloorDiv BinaryOp = "floor_divide"
	Mod      BinaryOp = "mod"   // floor semantics: the result takes b's sign
	Prelu    BinaryOp = "prelu" // a where a > 0, else b·a
	Equal    BinaryOp = "equal" // 1 where a == b, else 0
	// Elementwise loss terms.
	SquaredDiff BinaryOp = "squared_difference" // (a − b)²
	BCE         BinaryOp = "bce"                // −(b·ln a + (1−b)·ln(1−a)), a clamped
	BCELogits   BinaryOp = "bce_logits"         // BCE of sigmoid(a), stably
)

// String returns the operation's name.
func (op BinaryOp) String() string { return string(op) }

// BCEClamp is the bound to which BCE clamps probabilities: p is taken as
// min(max(p, BCEClamp), 1 − BCEClamp), in the loss and its gradient. It is
// 2⁻²⁴, the smallest ε for which 1 − ε is exact in float32, so the clamp is
// the same on every device.
const BCEClamp = 0x1p-24

// ReduceOp names a reduction.
type ReduceOp uint8

// The reductions. ArgMax and ArgMin reduce one axis (or a flattened
// tensor) into int32 indices, the first among ties; a NaN counts as the
// largest and the smallest value. Max and Min propagate NaN.
const (
	Sum ReduceOp = iota + 1
	Mean
	Max
	Min
	ArgMax
	ArgMin
)

// String returns the reduction's name.
func (op ReduceOp) String() string {
	switch op {
	case Sum:
		return "sum"
	case Mean:
		return "mean"
	case Max:
		return "max"
	case Min:
		return "min"
	case ArgMax:
		return "argmax"
	case ArgMin:
		return "argmin"
	}
	return "reduce?"
}

// Broadcast describes the operands of an elementwise binary kernel. The
// output is contiguous with the given Shape; element i of the output reads A
// and B at the offsets given by the dot product of i's coordinates with
// AStrides and BStrides (a stride is 0 along a broadcast dimension).
type Broadcast struct {
	Shape              []int
	AStrides, BStrides []int
}

// Len returns the number of output elements.
func (l Broadcast) Len() int { return Numel(l.Shape) }

// Numel returns the number of elements of a tensor of the given shape; the
// empty shape is a scalar with one element. For a shape whose count
// overflows int, see CheckNumel.
func Numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// ErrOutOfMemory is wrapped by the errors of allocations that a device
// cannot make: larger than its limits, than its memory, or than an int
// counts.
var ErrOutOfMemory = errors.New("out of device memory")

// CheckNumel returns the number of elements of shape, or an error wrapping
// ErrOutOfMemory if it overflows int.
func CheckNumel(shape []int) (int, error) {
	n := 1
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("shape %v has a negative dimension", shape)
		}
	}
	if slices.Contains(shape, 0) {
		return 0, nil // however large the other dimensions
	}
	for _, d := range shape {
		var ok bool
		if n, ok = CheckedMul(n, d); !ok {
			return 0, fmt.Errorf("shape %v has more elements than an int counts: %w", shape, ErrOutOfMemory)
		}
	}
	return n, nil
}

// Bytes returns the size in bytes of n elements of dtype dt, or an error
// wrapping ErrOutOfMemory if it overflows int.
func Bytes(dt DType, n int) (int, error) {
	if n < 0 {
		return 0, fmt.Errorf("%d elements of %v", n, dt)
	}
	b, ok := CheckedMul(n, dt.Size())
	if !ok {
		return 0, fmt.Errorf("%d elements of %v take more bytes than an int counts: %w", n, dt, ErrOutOfMemory)
	}
	return b, nil
}

// Device is a backend that owns memory and runs kernels. All buffers passed
// to a device's methods must have been allocated by that device. Kernels are
// recorded in order and may run asynchronously; Read and Sync wait for them.
type Device interface {
	Normalizer
	Selector
	Scanner
	Attender
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
	// Reduce sets dst to x (contiguous, of the given shape) reduced over the
	// given axes; dst is laid out as the shape with those axes set to 1.
	// For ArgMax and ArgMin dst is int32 and the axes are adjacent, their
	// flattened index being the result.
	Reduce(op ReduceOp, dst, x Buffer, shape, axes []int)
	// Softmax sets dst to the softmax of x (contiguous, of the given shape)
	// along axis, or to its logarithm when log is set; stably, subtracting
	// each row's maximum.
	Softmax(dst, x Buffer, shape []int, axis int, log bool)
	// SoftmaxGrad sets dx from the output y of Softmax (or of its log) and
	// the upstream gradient dy: y·(dy − Σ dy·y), or for the log,
	// dy − exp(y)·Σ dy, the sums running along axis.
	SoftmaxGrad(dx, y, dy Buffer, shape []int, axis int, log bool)
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
	// MatMul computes the batch of matrix products s describes.
	MatMul(dst, a, b Buffer, s GEMM)
	// Window runs the sliding-window kernel op over NCHW images as w
	// describes: dst ← op(x, g), g only for the gradients (and x unused by
	// AvgPoolGrad).
	Window(op WindowOp, dst, x, g Buffer, w Window2D)
	// CopyStrided copies elements of src into dst as s describes, for
	// buffers of one dtype (any); elements of dst it does not reach keep
	// their values. Permutations, slices, padding, concatenation and their
	// gradients are strided copies.
	CopyStrided(dst, src Buffer, s Strided)
	// SoftmaxCrossEntropy sets loss[i], for each of the n rows of logits
	// (n×c), to logsumexp(logits[i]) − logits[i][labels[i]]. A label outside
	// [0, c) gives a NaN loss for its row, and is reported as by Gather.
	SoftmaxCrossEntropy(site string, loss, logits, labels Buffer, n, c int)
	// SoftmaxCrossEntropyGrad sets row i of dlogits to
	// (softmax(logits[i]) − onehot(labels[i]))·g[i], where g holds the
	// upstream gradient of each row's loss; labels as in SoftmaxCrossEntropy.
	SoftmaxCrossEntropyGrad(site string, dlogits, logits, labels, g Buffer, n, c int)
	// Step runs one fused optimiser step in place: param and the state
	// buffers are read and written, grad read, by a single kernel (see
	// Optimizer for the state each needs).
	Step(op Optimizer, param, grad Buffer, state []Buffer, h StepParams)
	// Axpy sets y = y + alpha·x in place.
	Axpy(y, x Buffer, alpha float64)
	// Convert sets dst to src's values in dst's dtype (of the same length):
	// to float16 rounding to nearest even (overflow to ±Inf, subnormals
	// kept, NaN kept), from float16 exactly.
	Convert(dst, src Buffer)
	// Draw paints into canvas, an int32 buffer of p.H×p.W pixels, as op
	// and p describe, reading src (and aux); see DrawOp.
	Draw(op DrawOp, canvas, src, aux Buffer, p Paint)
}

// DrawOp names a kernel of the draw family (Device.Draw), which paints
// tensors into a canvas: an int32 buffer of H×W pixels, each packed RGBA
// with red in the low byte (Pack). Each kernel paints the pixels of one
// rectangle (X, Y, RW, RH; clipped to the canvas) and leaves the others.
type DrawOp uint8

// The draw kernels.
const (
	// DrawRect fills the rectangle with Color; src and aux are unused.
	DrawRect DrawOp = iota
	// DrawImages paints src, N float32 images of IH×IW, as a grid of Cols
	// columns from the rectangle's corner: image k in cell (k mod Cols,
	// k div Cols), each cell IW·Zoom + 2·Border wide and IH·Zoom + 2·Border
	// high, the image's pixels Zoom×Zoom squares of grey, Lo black and Hi
	// white (clamped; NaN red), framed Border pixels wide in the colour
	// aux[k] (int32; 0 leaves the frame alone).
	DrawImages
	// DrawCurve paints the N values of src (float32) as a curve across the
	// rectangle: value i at x = i·(RW−1)/(N−1), the value Lo at the bottom
	// row and Hi at the top (clamped); each column spans the values of the
	// indices it covers, Thick pixels thick, in Color. NaN values are left out.
	DrawCurve
	// DrawText paints the N int32 character codes of src in Color from the
	// rectangle's corner, each a glyph of the bitmap font aux (GW×GH cells
	// for the codes 32…126, one int32 a glyph row, bit c the pixel of
	// column c), its pixels Zoom×Zoom squares.
	DrawText
)

// Paint holds the geometry of a Device.Draw.
type Paint struct {
	W, H         int // the canvas
	X, Y, RW, RH int // the rectangle painted
	Color        uint32
	N, IH, IW    int // DrawImages: images; DrawCurve, DrawText: values, characters
	Cols, Border int // DrawImages
	Zoom         int // DrawImages, DrawText: pixels per image pixel
	Lo, Hi       float64
	Thick        int // DrawCurve
	GW, GH       int // DrawText: the font's glyph cells
}

// Pack packs an RGBA colour into a canvas pixel.
func Pack(r, g, b, a uint8) uint32 {
	return uint32(r) | uint32(g)<<8 | uint32(b)<<16 | uint32(a)<<24
}

// Optimizer names a fused optimiser step (Device.Step), as PyTorch's
// torch.optim computes it.
type Optimizer uint8

// The optimisers.
const (
	// SGD: g ← grad + wd·p; with momentum, buf ← g on the first step, else
	// momentum·buf + (1 − dampening)·g, and g ← g + momentum·buf
	// (Nesterov) or buf; p ← p − lr·g. State: the momentum buffer (none
	// without momentum).
	SGD Optimizer = iota
	// Adam: with weight decay, p ← p·(1 − lr·wd) (decoupled, AdamW) or
	// g ← grad + wd·p; m ← β1·m + (1−β1)·g, v ← β2·v + (1−β2)·g²; with
	// AMSGrad, vmax ← max(vmax, v) stands for v below;
	// p ← p − lr/(1−β1ᵗ)·m/(√v/√(1−β2ᵗ) + ε). State: m, v (and vmax).
	Adam
)

// StepParams are the hyper-parameters of one optimiser step.
type StepParams struct {
	LR, WeightDecay     float64
	Momentum, Dampening float64 // SGD
	Nesterov, FirstStep bool    // SGD: FirstStep starts the momentum buffer
	Beta1, Beta2, Eps   float64 // Adam
	Decoupled, AMSGrad  bool    // Adam: AdamW's weight decay; AMSGrad
	T                   int     // Adam: the step number, from 1
}

// Take describes a gather with int32 indices, one for each of N rows
// (Device.Gather): from row i of an N×C matrix its element idx[i] (a
// loss's class), or with Table, from a C×D table its row idx[i] (an
// embedding), or with K > 0, from row i of an N×C matrix its K elements
// idx[i, 0…K) (PyTorch's gather along the last axis; the gradient, its
// scatter_add: each index outside [0, C) takes NaN and adds nowhere).
type Take struct {
	Site  string // the op, named by index errors
	N, C  int
	D     int  // Table: the length of a table row
	Table bool // gather rows of one C×D table
	K     int  // not Table: the indices of each row, idx [N, K], when > 0
	Scale float64
	// Ignoring (not with K): an index equal to IgnoreIndex (a padding
	// label) takes 0 and adds nowhere, and is not reported.
	Ignoring    bool
	IgnoreIndex int32
}

// GEMM describes a batch of matrix products for Device.MatMul: for each
// i < Batch, matrix i of dst (M×N, at OffDst + i·M·N) = op(A_i)·op(B_i),
// where A_i starts at element OffA + j·StrideA of a, j = i, or i mod
// CycleA when CycleA > 0 (the groups of a grouped convolution), and B_i at
// OffB + i·StrideB of b. A stride of 0 uses one matrix for the whole
// batch. op(A_i) is M×K: A_i is stored K×M when TransA is set; op(B_i) is
// K×N: B_i is stored N×K when TransB is set. Every matrix is row-major;
// A_i and dst's are contiguous, B_i's stored rows LdB apart when LdB > 0
// (BLAS's ldb: rows padded, as a convolution's columns are), else
// contiguous. With Accumulate the products are added to what dst holds
// (BLAS's β = 1), in float32 before a float16 dst rounds them.
type GEMM struct {
	Batch, M, K, N     int
	TransA, TransB     bool
	StrideA, StrideB   int
	CycleA             int
	OffA, OffB, OffDst int
	LdB                int
	Accumulate         bool
}

// RowB returns the distance between the stored rows of B_i: LdB, or
// for a contiguous B_i its row's length (N, or K when TransB).
func (s GEMM) RowB() int {
	switch {
	case s.LdB > 0:
		return s.LdB
	case s.TransB:
		return s.K
	}
	return s.N
}

// WindowOp names a kernel of the window family (Device.Window): the
// sliding windows of convolution and pooling over NCHW images.
type WindowOp uint8

// The window kernels. Images are N×C×H×W; a window of KH×KW taps, the
// taps DH and DW apart, moves by SH and SW over the image padded by PH
// and PW on each side, giving OH×OW windows.
const (
	// Im2Col writes dst (N, C·KH·KW, OH·OW) (rows padded to Window2D.Pitch): the taps of every window, 0
	// in the padding, for images N0… of x. A convolution is then one
	// matrix product per image. With Window2D.Ones, each image's matrix
	// ends with a row of ones (N, C·KH·KW + 1, OH·OW): a product with
	// filters whose last column is the bias then adds the bias, and the
	// gradient's last column is the bias's.
	Im2Col WindowOp = iota
	// Col2Im is Im2Col's adjoint: dst (images N0… of an N×C×H×W tensor)
	// = the sum, at each pixel, of the entries of x (N, C·KH·KW, OH·OW)
	// that Im2Col would copy from it.
	Col2Im
	// MaxPool writes dst (N, C, OH, OW): each window's maximum, the
	// padding never chosen; NaN wins.
	MaxPool
	// MaxPoolGrad writes dst (N, C, H, W): g (N, C, OH, OW) routed to
	// each window's first maximum (in row-major order), summed where
	// windows overlap.
	MaxPoolGrad
	// AvgPool writes dst (N, C, OH, OW): each window's sum over KH·KW,
	// padding counted as zeros (PyTorch's count_include_pad).
	AvgPool
	// AvgPoolGrad writes dst (N, C, H, W): g/(KH·KW) summed over the
	// windows that hold each pixel.
	AvgPoolGrad
)

// String returns the kernel's name, e.g. "im2col".
func (op WindowOp) String() string {
	switch op {
	case Im2Col:
		return "im2col"
	case Col2Im:
		return "col2im"
	case MaxPool:
		return "max_pool"
	case MaxPoolGrad:
		return "max_pool_grad"
	case AvgPool:
		return "avg_pool"
	case AvgPoolGrad:
		return "avg_pool_grad"
	}
	return "window?"
}

// Window2D describes the sliding windows of a window kernel: N images
// (from image N0 of the larger tensor for Im2Col and Col2Im) of C
// channels of H×W pixels, windows of KH×KW taps DH and DW apart, moved by
// SH and SW over the image padded with PH and PW on each side. Ones
// adds a row of ones to each image's matrix of Im2Col. Pitch, when
// positive, is the length of the rows of Im2Col's and Col2Im's matrices
// (at least OH·OW): Im2Col writes zeros past OH·OW, Col2Im reads nothing
// there, so that a product may read the rows by vec4s (GEMM.LdB).
type Window2D struct {
	N, N0, C, H, W int
	KH, KW         int
	SH, SW         int
	PH, PW         int
	DH, DW         int
	Ones           bool
	Pitch          int
}

// RowLen returns the length of the rows of Im2Col's and Col2Im's
// matrices: Pitch, or OH·OW.
func (w Window2D) RowLen() int {
	if w.Pitch > 0 {
		return w.Pitch
	}
	oh, ow := w.Out()
	return oh * ow
}

// Out returns the number of window positions, OH and OW.
func (w Window2D) Out() (oh, ow int) {
	return (w.H+2*w.PH-w.DH*(w.KH-1)-1)/w.SH + 1, (w.W+2*w.PW-w.DW*(w.KW-1)-1)/w.SW + 1
}

// Strided describes a strided copy: for every coordinate c of Shape,
// dst[DstOffset + Σₖ c[k]·DstStrides[k]] = src[SrcOffset + Σₖ c[k]·SrcStrides[k]].
// Strides and offsets count elements and are not negative.
type Strided struct {
	Shape                  []int
	SrcStrides, DstStrides []int
	SrcOffset, DstOffset   int
}

// Len returns the number of elements copied.
func (s Strided) Len() int { return Numel(s.Shape) }

// RowMajor returns the strides of a contiguous tensor of the given shape.
func RowMajor(shape []int) []int {
	st := make([]int, len(shape))
	n := 1
	for k := len(shape) - 1; k >= 0; k-- {
		st[k] = n
		n *= shape[k]
	}
	return st
}

// IndexError reports a class index outside [0, Classes), met by a kernel
// (Gather, SoftmaxCrossEntropy and their gradients) and returned by the
// Read or Sync that follows it. Kernels find indices on the device, so the
// error comes with the next readback rather than from the op's call.
type IndexError struct {
	Site    string // the op that passed the indices, e.g. "ops.CrossEntropyLoss"
	Index   int    // an index outside the range (the first found, on the CPU)
	Classes int
}

func (e *IndexError) Error() string {
	return fmt.Sprintf("%s: class index %d is out of bounds for %d classes (want 0 ≤ index < %d)", e.Site, e.Index, e.Classes, e.Classes)
}

// PoolStats are the statistics of a device's buffer pool.
type PoolStats struct {
	Hits, Misses uint64 // allocations served from the pool, and not
	BytesLive    uint64 // bytes held by buffers in use
	BytesPeak    uint64 // the most BytesLive has been since the device opened or ResetPeak
	BytesPooled  uint64 // bytes held by free buffers kept for reuse
	BytesPending uint64 // bytes freed but not yet reusable (0 where freed buffers are reusable at once, as on WebGPU)
}

// Normalizer is the normalisation kernel family: layer_norm and rms_norm
// before their affine transform. x holds rows rows of n contiguous
// elements; each row is normalised on its own, accumulating in float32
// (float64 on the CPU for float64), so a row whose squares overflow
// float32 gives what PyTorch's float32 gives: NaN or 0.
type Normalizer interface {
	// Norm sets each row of dst to (x − μ)·ρ, where μ is the row's mean
	// (0 unless center) and ρ = 1/√(mean((x − μ)²) + eps).
	Norm(dst, x Buffer, rows, n int, eps float64, center bool)
	// NormGrad sets dx to the gradient through Norm of x, given the
	// upstream gradient g of Norm's output x̂: ρ·(g − mean(g) − x̂·mean(g·x̂)),
	// the mean of g left out unless center.
	NormGrad(dx, x, g Buffer, rows, n int, eps float64, center bool)
}

// Selector is the selection kernel family: where and masked_fill.
type Selector interface {
	// Where sets dst[i] = a[i] where cond[i] ≠ 0 (NaN counts as true)
	// and b[i] elsewhere, for buffers of one length and one dtype.
	Where(dst, cond, a, b Buffer)
}

// Attender is the fused attention kernel family: softmax(scale·QKᵀ +
// mask)·V, never holding the Lq×Lk scores in memory. Its buffers are
// contiguous: q [Batch, Lq, D], k [Batch, Lk, D], v [Batch, Lk, DV], out
// and dO [Batch, Lq, DV], and stats [Batch·Lq, 2], float32 (float64 for
// float64 inputs): each query row's log-sum-exp of its scores, then the
// scratch of the gradient. Accumulation is in float32 (float64 on the CPU
// for float64). D and DV are multiples of 4. A key a query may not see
// (masked, or after it when causal) adds nothing to the output or to any
// gradient.
type Attender interface {
	// Attention sets out to the attention of q, k and v under a, and
	// stats' first column to the rows' log-sum-exps (−Inf for a row with
	// no key allowed, whose output is NaN). mask is nil unless a.Mask.
	Attention(out, stats, q, k, v, mask Buffer, a AttentionSpec)
	// AttentionGrad sets dq, dk and dv to the gradients of Attention's
	// output o given its upstream gradient dO, recomputing the scores
	// from Attention's stats; it overwrites stats' second column.
	AttentionGrad(dq, dk, dv, stats, q, k, v, mask, o, dO Buffer, a AttentionSpec)
	// AttentionScoresGrad sets ds [Batch, Lq, Lk] to the gradient of the
	// masked scores (an additive mask's gradient before broadcasting): 0
	// where a query may not see a key. It reads the scratch that
	// AttentionGrad left in stats.
	AttentionScoresGrad(ds, stats, q, k, v, mask, dO Buffer, a AttentionSpec)
}

// MaskKind says how Attention reads its mask.
type MaskKind uint8

// The masks of Attention.
const (
	NoMask       MaskKind = iota
	AdditiveMask          // added to the scaled scores (−Inf: the key takes no part)
	BoolMask              // a key takes part where the mask ≠ 0 (NaN counts as true)
)

// AttentionSpec describes Device.Attention. The batch of Batch matrices
// is Outer × Heads (Heads divides Batch): the mask's element for batch
// b = o·Heads + h, query i and key j is at
// o·MaskStride[0] + h·MaskStride[1] + i·MaskStride[2] + j·MaskStride[3],
// a stride of 0 broadcasting that axis. Causal allows key j for query i
// only when j ≤ i (PyTorch's is_causal, aligned top-left); with a mask
// both apply. Dropout zeroes each probability where AttentionDrop says
// and scales the others by 1/(1 − Dropout).
type AttentionSpec struct {
	Batch, Heads, Lq, Lk, D, DV int
	Scale                       float64
	Causal                      bool
	Mask                        MaskKind
	MaskStride                  [4]int
	Dropout                     float64
	Seed                        uint64
}

// AttentionDrop reports whether attention dropout with seed and threshold
// (DropThreshold's) drops the probability of key j for query row r
// (counted over the batch: b·Lq + i). It is the contract both backends
// follow: a PCG hash (pcg32) chained over the seed's halves, the row and
// the key, below the threshold.
func AttentionDrop(seed uint64, threshold uint32, r, j int) bool {
	h := pcg32(pcg32(uint32(seed)^pcg32(uint32(seed>>32))) + uint32(r))
	return pcg32(h^uint32(j)) < threshold
}

// DropThreshold returns the hash threshold of a dropout probability p in
// [0, 1): ⌊p·2³²⌋, at most 2³² − 1.
func DropThreshold(p float64) uint32 {
	return uint32(min(math.Floor(p*(1<<32)), 1<<32-1))
}

// pcg32 is the PCG RXS-M-XS hash of one 32-bit word.
func pcg32(v uint32) uint32 {
	s := v*747796405 + 2891336453
	w := ((s >> ((s >> 28) + 4)) ^ s) * 277803737
	return (w >> 22) ^ w
}

// Scanner is the scan kernel family: cumulative sums.
type Scanner interface {
	// Cumsum sets dst to the running sums of x (contiguous, of the given
	// shape) along axis, from the first element, or from the last when
	// reverse is set (cumsum's gradient), accumulating in float32
	// (float64 on the CPU for float64).
	Cumsum(dst, x Buffer, shape []int, axis int, reverse bool)
}

// Pooler is implemented by devices that keep a buffer pool.
type Pooler interface {
	PoolStats() PoolStats
	// ResetPeak restarts BytesPeak from BytesLive.
	ResetPeak()
}

// PeakMemory returns the most memory, in bytes, that d has held since it
// opened or since its last ResetPeak, where it tells: a Pooler's
// BytesPeak, or the MemoryPeak of a device with one (the CPU backend).
func PeakMemory(d Device) (uint64, bool) {
	switch p := d.(type) {
	case Pooler:
		return p.PoolStats().BytesPeak, true
	case interface{ MemoryPeak() int64 }:
		return uint64(p.MemoryPeak()), true
	}
	return 0, false
}

// Counter is implemented by devices that count the kernels they run.
type Counter interface {
	// Kernels returns the number of kernel dispatches recorded since the
	// device opened (copies not counted).
	Kernels() int64
}

// Convolver is implemented by devices with a direct convolution kernel
// family of their own (the WebGPU backend on CPU adapters: no im2col
// matrix, see package webgpu), which ops.Conv2d and its gradients use in
// place of im2col and matrix products for the geometries and dtypes it
// takes. Each method reports false, having recorded nothing, for those
// it does not take. g describes the images x (N, C, H, W) and the window
// of the filters w (F, C, KH, KW), groups 1, g.N0 and g.Ones unused
// (0 and false), the output rows not padded (g.Pitch unused); the
// buffers share one dtype. A result may differ from im2col's only where
// a filter weight is Inf or NaN: an implementation may multiply it by
// the zeros of padding that im2col never reads.
type Convolver interface {
	// Conv2d sets out (N, F, OH, OW) to the convolution of x with the f
	// filters w, plus b (F) unless b is nil.
	Conv2d(out, x, w, b Buffer, g Window2D, f int) bool
	// Conv2dBackward sets gwb (F, C·KH·KW + 1) to the gradient of
	// Conv2d's filters, with the bias's as its last column, and gx (N,
	// C, H, W) to its input's unless gx is nil, for the upstream
	// gradient gy (N, F, OH, OW).
	Conv2dBackward(gx, gwb, x, w, gy Buffer, g Window2D, f int) bool
}

// Flusher is implemented by devices that batch work; Flush submits what has
// been recorded without waiting for it.
type Flusher interface {
	Flush() error
}
