package tensor

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	_ "github.com/extensor/extensor/cpu" // the "cpu" device is always there
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/internal/half"
)

// storage is a device buffer shared by a tensor and its reshaped views,
// each of which holds one reference.
type storage struct {
	dev device.Device
	// buf holds the buffer until the last reference is dropped: an op
	// racing a Release either finds it, and runs on memory the device
	// keeps for it, or finds none and reports ErrReleased.
	buf   atomic.Pointer[device.Buffer]
	bytes int64
	refs  atomic.Int32
	err   error // why the buffer could not be allocated or computed
}

// buffer returns the storage's buffer, nil once freed (or never
// allocated).
func (st *storage) buffer() device.Buffer {
	if p := st.buf.Load(); p != nil {
		return *p
	}
	return nil
}

// drop drops one reference (a Release), freeing the buffer with the
// last, and reports whether it did.
func (st *storage) drop() bool {
	if st.refs.Add(-1) == 0 {
		if p := st.buf.Swap(nil); p != nil {
			st.dev.Free(*p)
			return true
		}
	}
	return false
}

// Tensor is an n-dimensional array on a device. The zero value is not
// usable; create tensors with the functions of this package.
//
// A tensor's device memory is freed at once by Release (of the tensor
// and all its views), or else once its buffer is unreachable: the device
// frees a buffer that no tensor, and no device call in progress, holds
// (device.Device's Alloc), so that a tensor need not outlive the calls
// that use its buffer. A tensor may be used by many goroutines.
type Tensor struct {
	st       *storage
	shape    []int
	dtype    device.DType
	released atomic.Bool
	scope    atomic.Pointer[Scope] // the open Scope it belongs to, if any
}

// newTensor returns a tensor holding a new reference to st.
func newTensor(st *storage, shape []int, dt device.DType) *Tensor {
	st.refs.Add(1)
	return &Tensor{st: st, shape: shape, dtype: dt}
}

// checkMake panics unless dev and shape can make a tensor: a device, a
// rank up to device.MaxRank, no negative dimension.
func checkMake(op string, dev device.Device, shape []int) {
	if dev == nil {
		Panicf(op, ErrArgument, "nil device")
	}
	checkShape(op, shape)
}

func checkShape(op string, shape []int) {
	if len(shape) > device.MaxRank {
		Panicf(op, ErrShape, "rank %d exceeds the maximum rank %d", len(shape), device.MaxRank)
	}
	for _, d := range shape {
		if d < 0 {
			Panicf(op, ErrShape, "negative dimension in shape %v", shape)
		}
	}
}

// Empty returns an uninitialised tensor on dev. It never fails: when the
// device cannot allocate it, the returned tensor carries the error, which
// its readback (and that of every tensor computed from it) returns. Ops use
// Empty for their outputs; users want Zeros or a From function.
func Empty(dev device.Device, dt device.DType, shape ...int) *Tensor {
	checkMake("tensor.Empty", dev, shape)
	st := &storage{dev: dev}
	t := newTensor(st, dims(shape), dt)
	if !dev.Supports(dt) {
		st.err = fmt.Errorf("tensor: device %s does not support %v: %w", dev, dt, ErrDType)
		return t
	}
	n, err := device.CheckNumel(shape)
	if err != nil {
		st.err = fmt.Errorf("tensor: %v tensor on %s: %w", dt, dev, err)
		return t
	}
	var b device.Buffer
	if b, st.err = dev.Alloc(dt, n); st.err == nil {
		st.buf.Store(&b)
		st.bytes = int64(n * dt.Size())
		pressure(st.bytes)
	}
	return t
}

// GCInterval is how many bytes of tensors the package allocates (and no
// Release frees) between the garbage collections it asks for, so that
// the cleanups of unreachable tensors return device memory, which the Go
// heap does not see; after each, the allocation that asked for it waits
// (at most half a second) for the cleanups the collection queued. Set it before creating tensors;
// 0 or less turns the collections off.
var GCInterval int64 = 256 << 20

// sinceGC counts the bytes of tensors allocated, and not released, since
// the last collection that pressure asked for.
var sinceGC atomic.Int64

// forcedGCs counts the collections pressure asked for.
var forcedGCs atomic.Int64

// pressure counts an allocation of n bytes, and collects garbage once
// GCInterval bytes have been allocated. It then waits, for at most
// cleanupWait, for the cleanups the collection queued to have run: they
// run on other goroutines, and a loop that allocates faster than they
// free would otherwise outgrow the interval.
func pressure(n int64) {
	if GCInterval <= 0 {
		return
	}
	if sinceGC.Add(n) >= GCInterval {
		sinceGC.Store(0)
		forcedGCs.Add(1)
		runtime.GC()
		awaitCleanups(cleanupWait)
	}
}

// relieve uncounts n bytes that Release freed: memory freed without the
// collector needs no collection to come back: counted, a loop that
// releases what it allocates would trigger collections that cost every op
// (docs/kernel-choices.md, memory).
func relieve(n int64) {
	for {
		old := sinceGC.Load()
		if sinceGC.CompareAndSwap(old, max(old-n, 0)) {
			return
		}
	}
}

// cleanupWait bounds how long pressure waits for queued cleanups, so that
// a slow cleanup elsewhere in the program delays an allocation by no more.
const cleanupWait = 500 * time.Millisecond

// awaitCleanups waits until the runtime has executed every cleanup it has
// queued, or until timeout has passed. With a Go that does not count
// cleanups in runtime/metrics it returns at once.
func awaitCleanups(timeout time.Duration) {
	samples := []metrics.Sample{
		{Name: "/gc/cleanups/queued:cleanups"},
		{Name: "/gc/cleanups/executed:cleanups"},
	}
	deadline := time.Now().Add(timeout)
	for {
		metrics.Read(samples)
		if samples[0].Value.Kind() != metrics.KindUint64 || samples[1].Value.Kind() != metrics.KindUint64 {
			return
		}
		if samples[1].Value.Uint64() >= samples[0].Value.Uint64() || time.Now().After(deadline) {
			return
		}
		time.Sleep(100 * time.Microsecond)
	}
}

func (t *Tensor) live(op string) {
	t.notNil(op)
	if t.released.Load() {
		Panicf(op, ErrReleased, "tensor %v %v was released", t.shape, t.dtype)
	}
}

// notNil panics with ErrArgument if t is nil: a nil *Tensor is a
// programmer error, never a crash inside the accessors.
func (t *Tensor) notNil(op string) {
	if t == nil {
		Panicf(op, ErrArgument, "nil tensor")
	}
}

// Shape returns a copy of the tensor's shape; a 0-D scalar has an empty,
// non-nil shape, which passed back to a From function makes a 0-D tensor.
// Like every accessor it panics with ErrArgument on a nil tensor.
func (t *Tensor) Shape() []int {
	t.notNil("Tensor.Shape")
	return append([]int{}, t.shape...)
}

// Dim returns the size of axis ax; negative axes count from the end.
func (t *Tensor) Dim(ax int) int {
	t.notNil("Tensor.Dim")
	if ax < 0 {
		ax += len(t.shape)
	}
	if ax < 0 || ax >= len(t.shape) {
		Panicf("Tensor.Dim", ErrArgument, "axis %d out of range for shape %v", ax, t.shape)
	}
	return t.shape[ax]
}

// Rank returns the number of dimensions.
func (t *Tensor) Rank() int {
	t.notNil("Tensor.Rank")
	return len(t.shape)
}

// Len returns the number of elements.
func (t *Tensor) Len() int {
	t.notNil("Tensor.Len")
	return device.Numel(t.shape)
}

// DType returns the element type.
func (t *Tensor) DType() device.DType {
	t.notNil("Tensor.DType")
	return t.dtype
}

// Device returns the device holding the tensor.
func (t *Tensor) Device() device.Device {
	t.notNil("Tensor.Device")
	return t.st.dev
}

// Buffer returns the tensor's device buffer, for backends and ops. It
// panics if the tensor was released.
func (t *Tensor) Buffer() device.Buffer {
	t.live("Tensor.Buffer")
	b := t.st.buffer()
	if b == nil && t.st.err == nil { // released since live looked
		Panicf("Tensor.Buffer", ErrReleased, "tensor %v %v was released", t.shape, t.dtype)
	}
	return b
}

// Err returns the runtime failure that kept the tensor from being
// allocated or computed, if any. It does not wait for the device; use a
// readback or Device.Sync for failures of kernels still running.
func (t *Tensor) Err() error {
	t.notNil("Tensor.Err")
	return t.st.err
}

// Released reports whether Release was called.
func (t *Tensor) Released() bool {
	t.notNil("Tensor.Released")
	return t.released.Load()
}

// Release frees the tensor's device memory once no view of it remains.
// Releasing twice is safe; using a released tensor panics with ErrReleased.
func (t *Tensor) Release() {
	if t == nil || !t.released.CompareAndSwap(false, true) {
		return
	}
	if t.st.drop() {
		relieve(t.st.bytes)
	}
}

// Reshape returns a view of t with a new shape of the same number of
// elements; one dimension may be -1 and is inferred. The view shares t's
// memory; release both.
func (t *Tensor) Reshape(shape ...int) *Tensor {
	const op = "Tensor.Reshape"
	t.live(op)
	shape = slices.Clone(shape)
	infer, known := -1, 1
	for i, d := range shape {
		var ok bool
		switch {
		case d == -1 && infer < 0:
			infer = i
		case d < 0:
			Panicf(op, ErrShape, "invalid shape %v", shape)
		default:
			if known, ok = device.CheckedMul(known, d); !ok {
				Panicf(op, ErrShape, "cannot reshape %v (%d elements) into %v, which has more elements than an int counts", t.shape, t.Len(), shape)
			}
		}
	}
	if infer >= 0 {
		if known == 0 || t.Len()%known != 0 {
			Panicf(op, ErrShape, "cannot reshape %v (%d elements) into %v", t.shape, t.Len(), shape)
		}
		shape[infer] = t.Len() / known
	}
	checkLen(op, t.Len(), shape)
	return Join(newTensor(t.st, shape, t.dtype), t)
}

func (t *Tensor) readErr() error {
	if t.released.Load() {
		return &Error{Op: "Tensor readback", Kind: ErrReleased, Msg: fmt.Sprintf("tensor %v %v was released", t.shape, t.dtype)}
	}
	return t.st.err
}

// Float64s waits for the tensor's value and returns it as float64s,
// converting from the tensor's dtype.
func (t *Tensor) Float64s() ([]float64, error) {
	if err := t.readErr(); err != nil {
		return nil, err
	}
	out, err := hostSlice[float64]("Tensor.Float64s", t.Len())
	if err != nil {
		return nil, err
	}
	switch t.dtype {
	case device.Float64:
		return out, t.read(out)
	case device.Float32, device.Float16:
		f, err := t.Float32s()
		if err != nil {
			return nil, err
		}
		for i, v := range f {
			out[i] = float64(v)
		}
		return out, nil
	default:
		v, err := t.Int32s()
		if err != nil {
			return nil, err
		}
		for i, x := range v {
			out[i] = float64(x)
		}
		return out, nil
	}
}

// Float32s waits for the tensor's value and returns it as float32s; a
// float64 tensor is rounded.
func (t *Tensor) Float32s() ([]float32, error) {
	if err := t.readErr(); err != nil {
		return nil, err
	}
	switch t.dtype {
	case device.Float32:
		out, err := hostSlice[float32]("Tensor.Float32s", t.Len())
		if err != nil {
			return nil, err
		}
		return out, t.read(out)
	case device.Float64:
		f, err := t.Float64s()
		if err != nil {
			return nil, err
		}
		out := make([]float32, len(f))
		for i, v := range f {
			out[i] = float32(v)
		}
		return out, nil
	case device.Float16:
		h, err := t.Float16Bits()
		if err != nil {
			return nil, err
		}
		out := make([]float32, len(h))
		for i, v := range h {
			out[i] = half.ToFloat32(v)
		}
		return out, nil
	}
	return nil, &Error{Op: "Tensor.Float32s", Kind: ErrDType, Msg: fmt.Sprintf("tensor is %v; want float32, float64 or float16", t.dtype)}
}

// Float16Bits waits for the value of a float16 tensor and returns its
// IEEE binary16 bits.
func (t *Tensor) Float16Bits() ([]uint16, error) {
	if err := t.readErr(); err != nil {
		return nil, err
	}
	if t.dtype != device.Float16 {
		return nil, &Error{Op: "Tensor.Float16Bits", Kind: ErrDType, Msg: fmt.Sprintf("tensor is %v; want float16", t.dtype)}
	}
	out, err := hostSlice[uint16]("Tensor.Float16Bits", t.Len())
	if err != nil {
		return nil, err
	}
	return out, t.read(out)
}

// Int32s waits for the value of an int32 tensor and returns it.
func (t *Tensor) Int32s() ([]int32, error) {
	if err := t.readErr(); err != nil {
		return nil, err
	}
	if t.dtype != device.Int32 {
		return nil, &Error{Op: "Tensor.Int32s", Kind: ErrDType, Msg: fmt.Sprintf("tensor is %v; want int32", t.dtype)}
	}
	out, err := hostSlice[int32]("Tensor.Int32s", t.Len())
	if err != nil {
		return nil, err
	}
	return out, t.read(out)
}

// read copies the tensor's buffer into out.
func (t *Tensor) read(out any) error {
	b := t.st.buffer()
	if b == nil { // released since readErr looked
		return &Error{Op: "Tensor readback", Kind: ErrReleased, Msg: fmt.Sprintf("tensor %v %v was released", t.shape, t.dtype)}
	}
	return t.st.dev.Read(b, out)
}

// To returns a copy of t on dev, with the same dtype.
func (t *Tensor) To(dev device.Device) (*Tensor, error) {
	if dev == nil {
		Panicf("Tensor.To", ErrArgument, "nil device")
	}
	if err := t.readErr(); err != nil {
		return nil, err
	}
	if !dev.Supports(t.dtype) {
		return nil, &Error{Op: "Tensor.To", Kind: ErrDType, Msg: fmt.Sprintf("device %s does not support %v", dev.Name(), t.dtype)}
	}
	switch t.dtype {
	case device.Int32:
		v, err := t.Int32s()
		if err != nil {
			return nil, err
		}
		return FromInt32(dev, v, t.Shape()...)
	case device.Float32:
		v, err := t.Float32s()
		if err != nil {
			return nil, err
		}
		return FromFloat32(dev, v, t.Shape()...)
	case device.Float16:
		v, err := t.Float16Bits()
		if err != nil {
			return nil, err
		}
		return FromFloat16Bits(dev, v, t.Shape()...)
	default:
		v, err := t.Float64s()
		if err != nil {
			return nil, err
		}
		return FromFloat64(dev, v, t.Shape()...)
	}
}

// String returns a description and, after waiting for the device, the
// values (abbreviated past 6 per axis), e.g.
//
//	Tensor([2 3], float32, cpu)
//	[[1 2 3]
//	 [4 5 6]]
func (t *Tensor) String() string {
	head := fmt.Sprintf("Tensor(%v, %v, %s)", t.shape, t.dtype, t.st.dev.Name())
	if t.released.Load() {
		return head + " <released>"
	}
	v, err := t.Float64s()
	if err != nil {
		return head + " <error: " + err.Error() + ">"
	}
	var b strings.Builder
	b.WriteString(head)
	b.WriteByte('\n')
	format(&b, v, t.shape, 0)
	return b.String()
}

func format(b *strings.Builder, v []float64, shape []int, depth int) {
	if len(shape) == 0 {
		fmt.Fprintf(b, "%.6g", v[0])
		return
	}
	const edge = 3
	n, inner := shape[0], device.Numel(shape[1:])
	b.WriteByte('[')
	for i := 0; i < n; i++ {
		if n > 2*edge && i == edge {
			if len(shape) == 1 {
				b.WriteString(" ...")
			} else {
				b.WriteString("\n" + strings.Repeat(" ", depth+1) + "...")
			}
			i = n - edge
		}
		if i > 0 {
			if len(shape) == 1 {
				b.WriteByte(' ')
			} else {
				b.WriteString("\n" + strings.Repeat(" ", depth+1))
			}
		}
		format(b, v[i*inner:(i+1)*inner], shape[1:], depth+1)
	}
	b.WriteByte(']')
}

// SetErr marks the tensor as failed with err: its readback returns err from
// now on. It is for ops that update a tensor in place from a failed input.
func (t *Tensor) SetErr(err error) {
	if t.st.err == nil {
		t.st.err = err
	}
}
