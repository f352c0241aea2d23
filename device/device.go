package device

// MaxRank is the largest tensor rank the kernels accept.
const MaxRank = 8

// Buffer is a block of device memory holding Len elements of one DType.
// Buffers are created by Device.Alloc and returned with Device.Free.
type Buffer interface {
	Len() int
	DType() DType
}

// UnaryOp names an elementwise unary operation.
type UnaryOp uint8

// The unary operations.
const (
	Relu UnaryOp = iota + 1
)

// String returns the operation's name.
func (op UnaryOp) String() string {
	switch op {
	case Relu:
		return "relu"
	}
	return "unary?"
}

// BinaryOp names an elementwise binary operation.
type BinaryOp uint8

// The binary operations.
const (
	Add BinaryOp = iota + 1
	Sub
	Mul
	Div
)

// String returns the operation's name.
func (op BinaryOp) String() string {
	switch op {
	case Add:
		return "add"
	case Sub:
		return "sub"
	case Mul:
		return "mul"
	case Div:
		return "div"
	}
	return "binary?"
}

// ReduceOp names a reduction.
type ReduceOp uint8

// The reductions.
const (
	Sum ReduceOp = iota + 1
	Mean
)

// String returns the reduction's name.
func (op ReduceOp) String() string {
	switch op {
	case Sum:
		return "sum"
	case Mean:
		return "mean"
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
// empty shape is a scalar with one element.
func Numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
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
	// Unary sets dst = op(x) elementwise.
	Unary(op UnaryOp, dst, x Buffer)
	// UnaryGrad sets dx = dy · op'(x) elementwise.
	UnaryGrad(op UnaryOp, dx, x, dy Buffer)
	// Binary sets dst = op(a, b) with broadcasting described by l.
	Binary(op BinaryOp, dst, a, b Buffer, l Broadcast)
	// BinaryGrad sets dst, shaped like the output l.Shape, to the gradient of
	// op's output with respect to operand wrt (0 for a, 1 for b), multiplied
	// elementwise by the upstream gradient g (contiguous, shaped l.Shape).
	BinaryGrad(op BinaryOp, wrt int, dst, g, a, b Buffer, l Broadcast)
	// Reduce sets dst to x (contiguous, of the given shape) reduced over the
	// given axes; dst is laid out as the shape with those axes set to 1.
	Reduce(op ReduceOp, dst, x Buffer, shape, axes []int)
	// MatMul sets dst (m×n) = op(a)·op(b), where op(a) is m×k and op(b) is
	// k×n; a is stored k×m when transA is set, and b is stored n×k when
	// transB is set. All matrices are row-major and contiguous.
	MatMul(dst, a, b Buffer, m, k, n int, transA, transB bool)
	// Transpose sets dst (cols×rows) to the transpose of x (rows×cols).
	Transpose(dst, x Buffer, rows, cols int)
	// SoftmaxCrossEntropy sets loss[i], for each of the n rows of logits
	// (n×c), to logsumexp(logits[i]) − logits[i][labels[i]]. A label outside
	// [0, c) gives a NaN loss for its row.
	SoftmaxCrossEntropy(loss, logits, labels Buffer, n, c int)
	// SoftmaxCrossEntropyGrad sets dlogits = (softmax(logits) − onehot(labels))
	// · g[0] / n, where g holds the upstream gradient of the mean loss.
	SoftmaxCrossEntropyGrad(dlogits, logits, labels, g Buffer, n, c int)
	// Axpy sets y = y + alpha·x in place.
	Axpy(y, x Buffer, alpha float64)
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
