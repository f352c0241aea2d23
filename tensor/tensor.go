package tensor

import (
	"fmt"
	"github.com/x448/float16"
	"math"
	"math/rand/v2"
	"runtime"
	"runtime/metrics"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	_ "github.com/extensor/extensor/cpu" // the "cpu" device is always there
	"github.com/extensor/extensor/device"
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
}

// newTensor returns a tensor holding a new reference to st.
func newTensor(st *storage, shape []int, dt device.DType) *Tensor {
	st.refs.Add(1)
	t := &Tensor{st: st, shape: shape, dtype: dt}
	record(t)
	return t
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
// collector needs no collection to come back. (Collections for tensors
// that a loop allocates and releases, 64 MiB a time, made an Add of 16M
// elements on the H100 wait 300 µs an op, amortised.)
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

// Failed returns a tensor of the given shape that carries err; ops that
// cannot run because an input failed return one.
func Failed(dev device.Device, dt device.DType, err error, shape ...int) *Tensor {
	return newTensor(&storage{dev: dev, err: err}, dims(shape), dt)
}

// dims returns a copy of shape that is never nil, so that passing it on to
// a From function keeps a 0-D shape 0-D.
func dims(shape []int) []int { return append([]int{}, shape...) }

func newFilled(dev device.Device, dt device.DType, shape []int, fill func(b device.Buffer) error) (*Tensor, error) {
	t := Empty(dev, dt, shape...)
	if t.st.err != nil {
		return nil, t.st.err
	}
	if err := fill(t.st.buffer()); err != nil {
		t.Release()
		return nil, err
	}
	return t, nil
}

func checkLen(op string, n int, shape []int) {
	checkShape(op, shape)
	checkLenOnly(op, n, shape)
}

// checkFrom is checkLen for the From functions, which also need a device.
func checkFrom(op string, dev device.Device, n int, shape []int) {
	checkMake(op, dev, shape)
	checkLenOnly(op, n, shape)
}

func checkLenOnly(op string, n int, shape []int) {
	want, err := device.CheckNumel(shape)
	if err != nil {
		Panicf(op, ErrShape, "%d values do not fill shape %v, which has more elements than an int counts", n, shape)
	}
	if n != want {
		Panicf(op, ErrShape, "%d values do not fill shape %v (%d elements)", n, shape, want)
	}
}

// FromFloat32 copies data into a new float32 tensor of the given shape on
// dev. With no shape (a nil one), the tensor is 1-D; for a 0-D tensor pass
// an empty shape, []int{}..., or use Scalar.
func FromFloat32(dev device.Device, data []float32, shape ...int) (*Tensor, error) {
	if shape == nil {
		shape = []int{len(data)}
	}
	checkFrom("tensor.FromFloat32", dev, len(data), shape)
	return newFilled(dev, device.Float32, shape, func(b device.Buffer) error { return dev.Write(b, data) })
}

// FromFloat64 copies data into a new float64 tensor of the given shape on
// dev. With no shape, the tensor is 1-D.
func FromFloat64(dev device.Device, data []float64, shape ...int) (*Tensor, error) {
	if shape == nil {
		shape = []int{len(data)}
	}
	checkFrom("tensor.FromFloat64", dev, len(data), shape)
	return newFilled(dev, device.Float64, shape, func(b device.Buffer) error { return dev.Write(b, data) })
}

// FromInt32 copies data into a new int32 tensor of the given shape on dev.
// With no shape, the tensor is 1-D.
func FromInt32(dev device.Device, data []int32, shape ...int) (*Tensor, error) {
	if shape == nil {
		shape = []int{len(data)}
	}
	checkFrom("tensor.FromInt32", dev, len(data), shape)
	return newFilled(dev, device.Int32, shape, func(b device.Buffer) error { return dev.Write(b, data) })
}

// FromFloat16Bits copies float16 values, given by their IEEE binary16
// bits, into a new float16 tensor.
func FromFloat16Bits(dev device.Device, bits []uint16, shape ...int) (*Tensor, error) {
	checkFrom("tensor.FromFloat16Bits", dev, len(bits), shape)
	return newFilled(dev, device.Float16, shape, func(b device.Buffer) error { return dev.Write(b, bits) })
}

// FromValues copies float64 values into a new tensor of dtype dt, rounding
// them to dt (to float16 through float32, rounding to nearest even).
func FromValues(dev device.Device, dt device.DType, data []float64, shape ...int) (*Tensor, error) {
	switch dt {
	case device.Float64:
		return FromFloat64(dev, data, shape...)
	case device.Float32:
		f := make([]float32, len(data))
		for i, v := range data {
			f[i] = float32(v)
		}
		return FromFloat32(dev, f, shape...)
	case device.Int32:
		n := make([]int32, len(data))
		for i, v := range data {
			n[i] = int32(v)
		}
		return FromInt32(dev, n, shape...)
	case device.Float16:
		h := make([]uint16, len(data))
		for i, v := range data {
			h[i] = float16.Fromfloat32(float32(v)).Bits()
		}
		return FromFloat16Bits(dev, h, shape...)
	}
	Panicf("tensor.FromValues", ErrDType, "unknown dtype %v", dt)
	return nil, nil
}

// Full returns a tensor of the given shape with every element set to v.
func Full(dev device.Device, dt device.DType, v float64, shape ...int) (*Tensor, error) {
	checkMake("tensor.Full", dev, shape)
	return newFilled(dev, dt, shape, func(b device.Buffer) error {
		dev.Fill(b, v)
		return nil
	})
}

// Zeros returns a tensor of zeros.
func Zeros(dev device.Device, dt device.DType, shape ...int) (*Tensor, error) {
	return Full(dev, dt, 0, shape...)
}

// Ones returns a tensor of ones.
func Ones(dev device.Device, dt device.DType, shape ...int) (*Tensor, error) {
	return Full(dev, dt, 1, shape...)
}

// Scalar returns a 0-D tensor holding v.
func Scalar(dev device.Device, dt device.DType, v float64) (*Tensor, error) {
	return Full(dev, dt, v)
}

// Arange returns the 1-D tensor start, start + step, … before stop, as
// PyTorch's arange: ⌈(stop − start)/step⌉ elements, element i start +
// i·step, computed on dev (Device.Arange: float64 on the CPU, float32 on
// WebGPU, as PyTorch on CUDA) and rounded to dt. The bounds and step must
// be finite, step non-zero and of the sign of stop − start (or the range
// empty); for int32, start and step must be integers and every element
// an int32 (PyTorch truncates fractions instead).
func Arange(dev device.Device, dt device.DType, start, stop, step float64) (*Tensor, error) {
	const op = "tensor.Arange"
	for _, v := range []float64{start, stop, step} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			Panicf(op, ErrArgument, "start %v, stop %v, step %v; want finite numbers", start, stop, step)
		}
	}
	if step == 0 {
		Panicf(op, ErrArgument, "step 0; want a non-zero step")
	}
	n := math.Ceil((stop - start) / step)
	switch {
	case n < 0:
		Panicf(op, ErrArgument, "start %v, stop %v, step %v: the bounds and the step's sign disagree", start, stop, step)
	case n > math.MaxInt32:
		Panicf(op, ErrArgument, "start %v, stop %v, step %v: %v elements; want at most 2³¹−1", start, stop, step, n)
	}
	if dt == device.Int32 {
		last := start + max(n-1, 0)*step
		if start != math.Trunc(start) || step != math.Trunc(step) || min(start, last) < math.MinInt32 || max(start, last) > math.MaxInt32 {
			Panicf(op, ErrArgument, "int32 from start %v, stop %v, step %v; want an integer start and step, and int32 elements", start, stop, step)
		}
	}
	checkMake(op, dev, []int{int(n)})
	return newFilled(dev, dt, []int{int(n)}, func(b device.Buffer) error {
		if n > 0 {
			dev.Arange(b, start, step)
		}
		return nil
	})
}

// Uniform returns a tensor of values drawn uniformly from [lo, hi) by a PCG
// generator seeded with seed. The values are drawn on the host, so a seed
// gives the same tensor on every device.
func Uniform(dev device.Device, dt device.DType, lo, hi float64, seed uint64, shape ...int) (*Tensor, error) {
	return random("tensor.Uniform", dev, dt, seed, shape, func(r *rand.Rand) float64 {
		v := lo + (hi-lo)*r.Float64()
		// Rounding to float32 may reach hi; draw again.
		for dt == device.Float32 && hi > lo && float64(float32(v)) >= hi {
			v = lo + (hi-lo)*r.Float64()
		}
		return v
	})
}

// Normal returns a tensor of normally distributed values with the given
// mean and standard deviation, drawn on the host by a PCG generator seeded
// with seed.
func Normal(dev device.Device, dt device.DType, mean, std float64, seed uint64, shape ...int) (*Tensor, error) {
	return random("tensor.Normal", dev, dt, seed, shape, func(r *rand.Rand) float64 { return mean + std*r.NormFloat64() })
}

// random makes a tensor of values drawn by draw from a PCG generator
// seeded with seed. The tensor is allocated first, and the values drawn
// into a host slice of its dtype once the host is known to hold it: an
// allocation past either memory is an error wrapping
// device.ErrOutOfMemory, never the end of the process.
func random(op string, dev device.Device, dt device.DType, seed uint64, shape []int, draw func(*rand.Rand) float64) (*Tensor, error) {
	checkMake(op, dev, shape)
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return newFilled(dev, dt, shape, func(b device.Buffer) error {
		switch dt {
		case device.Float64:
			return drawInto(op, dev, b, r, draw, func(v float64) float64 { return v })
		case device.Float32:
			return drawInto(op, dev, b, r, draw, func(v float64) float32 { return float32(v) })
		case device.Float16:
			return drawInto(op, dev, b, r, draw, func(v float64) uint16 { return float16.Fromfloat32(float32(v)).Bits() })
		case device.Int32:
			return drawInto(op, dev, b, r, draw, func(v float64) int32 { return int32(v) })
		}
		return &Error{Op: op, Kind: ErrDType, Msg: fmt.Sprintf("unknown dtype %v", dt)}
	})
}

// drawInto writes b.Len() values drawn by draw, converted to the host
// type of b's dtype, into b.
func drawInto[E hostElem](op string, dev device.Device, b device.Buffer, r *rand.Rand, draw func(*rand.Rand) float64, conv func(float64) E) error {
	v, err := hostSlice[E](op, b.Len())
	if err != nil {
		return err
	}
	for i := range v {
		v[i] = conv(draw(r))
	}
	return dev.Write(b, v)
}

// hostElem is the host type of a dtype's elements (float16 as its bits).
type hostElem interface {
	float32 | float64 | int32 | uint16
}

// hostSlice returns a host slice of n elements, or an error wrapping
// device.ErrOutOfMemory, naming op, when the host cannot hold it
// (device.CheckHostAlloc).
func hostSlice[E hostElem](op string, n int) ([]E, error) {
	var e E
	if err := device.CheckHostAlloc(op, n, int(unsafe.Sizeof(e))); err != nil {
		return nil, err
	}
	return make([]E, n), nil
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
	return newTensor(t.st, shape, t.dtype)
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
			out[i] = float16.Frombits(v).Float32()
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
