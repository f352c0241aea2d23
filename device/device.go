package device

import (
	"errors"
	"fmt"
	"math"
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
// scalar parameters. Its value is the name of its WGSL function in
// shaders/unary.wgsl (and of its gradient, name_grad) and of its CPU twin.
// Every unary op maps NaN to NaN, and its gradient at NaN is NaN.
type UnaryOp string

// The unary operations; parameters in brackets.
const (
	Neg       UnaryOp = "neg"
	Exp       UnaryOp = "exp"
	Log       UnaryOp = "log"
	Log2      UnaryOp = "log2"
	Log10     UnaryOp = "log10"
	Sqrt      UnaryOp = "sqrt"
	Abs       UnaryOp = "abs"
	Sign      UnaryOp = "sign"
	Sin       UnaryOp = "sin"
	Cos       UnaryOp = "cos"
	Ceil      UnaryOp = "ceil"
	Floor     UnaryOp = "floor"
	Round     UnaryOp = "round" // half to even
	Trunc     UnaryOp = "trunc"
	Relu      UnaryOp = "relu"
	LeakyRelu UnaryOp = "leaky_relu" // [slope for x ≤ 0]
	Sigmoid   UnaryOp = "sigmoid"
	Tanh      UnaryOp = "tanh"
	Gelu      UnaryOp = "gelu"       // exact, with erf
	GeluTanh  UnaryOp = "gelu_tanh"  // the tanh approximation
	Clip      UnaryOp = "clip"       // [lo, hi]
	PowScalar UnaryOp = "pow_scalar" // [exponent]
)

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

// DivEpsilon is added to the denominators of the gradients of Div
// (g/(b+ε) and −g·a/(b²+ε)) and of the logarithms (g/(x·ln(base)+ε)), and
// Sqrt's (g/(2√x+ε)), so that they stay finite at 0.
const DivEpsilon = 1e-10

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
		if d != 0 && n > math.MaxInt/d {
			return 0, fmt.Errorf("shape %v has more elements than an int counts: %w", shape, ErrOutOfMemory)
		}
		n *= d
	}
	return n, nil
}

// Bytes returns the size in bytes of n elements of dtype dt, or an error
// wrapping ErrOutOfMemory if it overflows int.
func Bytes(dt DType, n int) (int, error) {
	if n < 0 {
		return 0, fmt.Errorf("%d elements of %v", n, dt)
	}
	if n > math.MaxInt/dt.Size() {
		return 0, fmt.Errorf("%d elements of %v take more bytes than an int counts: %w", n, dt, ErrOutOfMemory)
	}
	return n * dt.Size(), nil
}

// Device is a backend that owns memory and runs kernels. All buffers passed
// to a device's methods must have been allocated by that device. Kernels are
// recorded in order and may run asynchronously; Read and Sync wait for them.
type Device interface {
	// Name returns the registered name of the backend, e.g. "webgpu".
	Name() string
	// String describes the device and its adapter, e.g.
	// "webgpu: llvmpipe (LLVM 15.0.6, 256 bits), Vulkan, CPU".
	String() string
	// Supports reports whether the device can hold elements of dtype dt.
	Supports(dt DType) bool

	// Alloc returns an uninitialised buffer of n elements of dtype dt.
	Alloc(dt DType, n int) (Buffer, error)
	// Free returns a buffer to the device. The buffer must not be used again.
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
	// Gather sets dst[i] = scale·x[i·c + idx[i]] for each row i of x (n×c),
	// NaN where idx[i] (int32) is outside [0, c); such an index is also
	// reported, as an *IndexError naming site, by the next Read or Sync.
	Gather(site string, dst, x, idx Buffer, n, c int, scale float64)
	// GatherGrad sets dx (n×c) to scale·g[i] at (i, idx[i]) and 0 elsewhere
	// in each row i, a row of NaN where idx[i] is outside [0, c), reported
	// as by Gather.
	GatherGrad(site string, dx, idx, g Buffer, n, c int, scale float64)
	// MatMul sets dst (m×n) = op(a)·op(b), where op(a) is m×k and op(b) is
	// k×n; a is stored k×m when transA is set, and b is stored n×k when
	// transB is set. All matrices are row-major and contiguous.
	MatMul(dst, a, b Buffer, m, k, n int, transA, transB bool)
	// Transpose sets dst (cols×rows) to the transpose of x (rows×cols).
	Transpose(dst, x Buffer, rows, cols int)
	// SoftmaxCrossEntropy sets loss[i], for each of the n rows of logits
	// (n×c), to logsumexp(logits[i]) − logits[i][labels[i]]. A label outside
	// [0, c) gives a NaN loss for its row, and is reported as by Gather.
	SoftmaxCrossEntropy(site string, loss, logits, labels Buffer, n, c int)
	// SoftmaxCrossEntropyGrad sets row i of dlogits to
	// (softmax(logits[i]) − onehot(labels[i]))·g[i], where g holds the
	// upstream gradient of each row's loss; labels as in SoftmaxCrossEntropy.
	SoftmaxCrossEntropyGrad(site string, dlogits, logits, labels, g Buffer, n, c int)
	// Axpy sets y = y + alpha·x in place.
	Axpy(y, x Buffer, alpha float64)
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
	BytesPooled  uint64 // bytes held by free buffers kept for reuse
	BytesPending uint64 // bytes freed but waiting for their submission to complete
}

// Pooler is implemented by devices that keep a buffer pool.
type Pooler interface {
	PoolStats() PoolStats
}

// Flusher is implemented by devices that batch work; Flush submits what has
// been recorded without waiting for it.
type Flusher interface {
	Flush() error
}
