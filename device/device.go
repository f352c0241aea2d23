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

// SameLayout reports whether both operands are laid out as the output
// (no broadcasting): element i of each is element i of the output.
func (l Broadcast) SameLayout() bool {
	return IsRowMajor(l.Shape, l.AStrides) && IsRowMajor(l.Shape, l.BStrides)
}

// IsRowMajor reports whether strides are shape's row-major strides
// (RowMajor's; those of axes of size 1 aside).
func IsRowMajor(shape, strides []int) bool {
	s := 1
	for ax := len(shape) - 1; ax >= 0; ax-- {
		if shape[ax] != 1 && strides[ax] != s {
			return false
		}
		s *= shape[ax]
	}
	return true
}

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

// Device is a backend that owns memory and runs kernels: its Core and
// every kernel family, each an interface of its own. All buffers passed
// to a device's methods must have been allocated by that device. Kernels
// are recorded in order and may run asynchronously; Read and Sync wait
// for them.
type Device interface {
	Core
	Elementwise
	Reducer
	Softmaxer
	Gatherer
	MatMuler
	Windower
	Convolver
	Strider
	Stepper
	Drawer
	Normalizer
	Selector
	Scanner
	Attender
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

// String returns "SGD" or "Adam".
func (o Optimizer) String() string {
	switch o {
	case SGD:
		return "SGD"
	case Adam:
		return "Adam"
	}
	return fmt.Sprintf("Optimizer(%d)", uint8(o))
}

// StepParams are the hyper-parameters of one optimiser step.
type StepParams struct {
	LR, WeightDecay     float64
	Momentum, Dampening float64 // SGD
	Nesterov, FirstStep bool    // SGD: FirstStep starts the momentum buffer
	Beta1, Beta2, Eps   float64 // Adam
	Decoupled, AMSGrad  bool    // Adam: AdamW's weight decay; AMSGrad
	T                   int     // Adam: the step number, from 1
	// Scaling, when not nil, is a loss scaler's state (ScaleFound…, a
	// buffer of the parameter's dtype; ops.ScaledStep sets it), and
	// Skipped the optimiser's count of steps skipped (one element, the
	// same dtype): the step leaves the parameter and its state as they
	// are where the state's ScaleFound is not 0 (an Inf or NaN among the
	// gradients this step), and counts its step number without the steps
	// skipped: T − Skipped[0], for Adam's bias corrections and for SGD's
	// first step (FirstStep is not read). UpdateScale counts the skip.
	Scaling, Skipped Buffer
}

// The elements of a loss scaler's state (StepParams.Scaling, Stepper's
// Unscale and UpdateScale), a buffer of ScaleStateLen elements (float32,
// or float64 on the CPU), zeros at first. Counts are exact up to 2²⁴.
const (
	ScaleFound   = iota // 1 where an unscaled gradient was Inf or NaN this step, else 0
	ScaleGood           // good steps since the scale last changed
	ScaleSkipped        // steps skipped, in all
	ScaleStateLen
)

// ScaleParams are the settings of dynamic loss scaling
// (Stepper.UpdateScale), as PyTorch's GradScaler's.
type ScaleParams struct {
	Growth, Backoff float64 // the scale's factors after Interval good steps in a row, and after a skipped step
	Interval        int     // good steps in a row before growing
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

// A BindingLimit is a device whose kernels bind at most MaxBinding bytes
// of one operand (WebGPU's maxStorageBufferBindingSize): ops split the
// products whose weights would pass it.
type BindingLimit interface {
	MaxBinding() int
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
//
// Sums, where set, is a buffer of dst's dtype that also receives the sums
// of op(A)'s rows along k (M values: a linear layer's bias gradient beside
// its weight gradient, gᵀ·x). It takes one product (Batch 1) of an a that
// holds op(A) alone (OffA 0, M·K elements), not accumulated.
//
// Bias, where set, is a buffer of N values of dst's dtype added to every
// row of every product, before a float16 dst rounds it (a linear layer's
// x·Wᵀ + b). It takes a dst of the products alone (OffDst 0, Batch·M·N
// elements), not accumulated.
type GEMM struct {
	Batch, M, K, N     int
	TransA, TransB     bool
	StrideA, StrideB   int
	CycleA             int
	OffA, OffB, OffDst int
	LdB                int
	Accumulate         bool
	Sums, Bias         Buffer
}

// CheckSums panics unless s may take s.Sums with these dst and a.
func (s GEMM) CheckSums(dst, a Buffer) {
	if s.Batch != 1 || s.OffA != 0 || s.Accumulate || a.Len() != s.M*s.K || s.Sums.DType() != dst.DType() || s.Sums.Len() != s.M {
		panic(fmt.Sprintf("device: GEMM.Sums (%v, %d elements) takes one product (Batch 1, OffA 0, not accumulated) of an a of M·K = %d elements, and M of dst's dtype %v; got Batch %d, OffA %d, Accumulate %v, a of %d",
			s.Sums.DType(), s.Sums.Len(), s.M*s.K, dst.DType(), s.Batch, s.OffA, s.Accumulate, a.Len()))
	}
}

// CheckBias panics unless s may take s.Bias with this dst.
func (s GEMM) CheckBias(dst Buffer) {
	if s.OffDst != 0 || s.Accumulate || dst.Len() != s.Batch*s.M*s.N || s.Bias.DType() != dst.DType() || s.Bias.Len() != s.N {
		panic(fmt.Sprintf("device: GEMM.Bias (%v, %d elements) takes N = %d values of dst's dtype %v and a dst of the products alone (OffDst 0, Batch·M·N = %d elements), not accumulated; got OffDst %d, Accumulate %v, dst of %d",
			s.Bias.DType(), s.Bias.Len(), s.N, dst.DType(), s.Batch*s.M*s.N, s.OffDst, s.Accumulate, dst.Len()))
	}
}

// RowSums sets s.Sums as op(A)'s row sums by Reducer r: the reduction a
// device without them in its product runs.
func (s GEMM) RowSums(r Reducer, a Buffer) {
	shape, axes := []int{s.M, s.K}, []int{1}
	if s.TransA {
		shape, axes = []int{s.K, s.M}, []int{0}
	}
	r.Reduce(Sum, s.Sums, a, shape, axes)
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
	// Q, K, V and O place q, k, v and out in their buffers, and dq, dk,
	// dv, o and dO in the gradient's: the zero layout is contiguous. They
	// let the kernels read the heads of one packed projection and write
	// the heads merged, without copies.
	Q, K, V, O AttentionLayout
}

// AttentionLayout places an operand of Attention in its buffer: row i of
// matrix b = o·Heads + h starts at element Offset + o·Outer + h·Head +
// i·Row, its columns contiguous. The zero AttentionLayout is the
// contiguous [Batch, rows, cols]. On WebGPU every field is a multiple of 4.
type AttentionLayout struct{ Offset, Outer, Head, Row int }

// Resolve returns l, or for the zero layout the contiguous one of
// matrices of rows × cols, heads a group.
func (l AttentionLayout) Resolve(heads, rows, cols int) AttentionLayout {
	if l == (AttentionLayout{}) {
		return AttentionLayout{Outer: heads * rows * cols, Head: rows * cols, Row: cols}
	}
	return l
}

// At returns the element at which row i of matrix b starts, heads a
// group.
func (l AttentionLayout) At(heads, b, i int) int {
	return l.Offset + b/heads*l.Outer + b%heads*l.Head + i*l.Row
}

// Layouts returns a's layouts of q, k, v and out resolved.
func (a AttentionSpec) Layouts() (q, k, v, o AttentionLayout) {
	return a.Q.Resolve(a.Heads, a.Lq, a.D), a.K.Resolve(a.Heads, a.Lk, a.D), a.V.Resolve(a.Heads, a.Lk, a.DV), a.O.Resolve(a.Heads, a.Lq, a.DV)
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
	// Copies returns the number of buffer-to-buffer copies recorded since
	// the device opened: commands of their own between kernels.
	Copies() int64
}

// Fuser is implemented by devices that fuse chains of elementwise calls
// into kernels of their own.
type Fuser interface {
	// Fusion turns fusion on or off, reporting whether it was on.
	Fusion(on bool) bool
	// FusedKernels returns the number of fused kernels recorded since the
	// device opened.
	FusedKernels() int64
}

// Flusher is implemented by devices that batch work; Flush submits what has
// been recorded without waiting for it.
type Flusher interface {
	Flush() error
}
