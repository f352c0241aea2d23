package cpu

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/internal/half"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
)

func init() {
	device.Register("cpu", device.DriverFunc(func() (device.Device, error) { return New(), nil }))
}

// opened numbers the devices created, for their identities.
var opened atomic.Int64

// Device is the CPU reference device. Its zero value is not usable; call
// New. It is safe for concurrent use by many goroutines: it runs each
// kernel at once, on the calling goroutine, and keeps no state but its
// memory accounting.
type Device struct {
	id     string // e.g. "cpu#1"
	closed atomic.Bool
	limit  atomic.Int64 // bytes that live buffers may take
	inUse  atomic.Int64 // bytes that live buffers take
	peak   atomic.Int64 // the most inUse has been since New or ResetPeak

	mu  sync.Mutex
	err error // a failure not yet reported by Read or Sync
}

// fail records err for the next Read or Sync to report, unless one is
// already waiting.
func (d *Device) fail(err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err == nil {
		d.err = err
	}
}

// report returns the failure waiting to be reported, once.
func (d *Device) report() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	err := d.err
	d.err = nil
	return err
}

// checkIndex records an *device.IndexError for index k outside [0, c)
// and reports whether k is inside.
func (d *Device) checkIndex(site string, k, c int) bool {
	if k >= 0 && k < c {
		return true
	}
	d.fail(&device.IndexError{Site: site, Index: k, Classes: c})
	return false
}

// New returns a CPU device whose memory limit is DefaultMemoryLimit.
func New() *Device {
	d := &Device{id: fmt.Sprintf("cpu#%d", opened.Add(1))}
	d.limit.Store(DefaultMemoryLimit())
	return d
}

// DefaultMemoryLimit returns the memory limit of a new CPU device:
// device.HostLimit, three quarters of the machine's or the cgroup's
// memory.
func DefaultMemoryLimit() int64 { return device.HostLimit() }

// SetMemoryLimit sets how many bytes the device's live buffers may take;
// Alloc refuses a buffer past it.
func (d *Device) SetMemoryLimit(bytes int64) { d.limit.Store(bytes) }

// MemoryInUse returns how many bytes the device's live buffers take.
func (d *Device) MemoryInUse() int64 { return d.inUse.Load() }

// MemoryPeak returns the most memory live buffers have taken since New or
// ResetPeak.
func (d *Device) MemoryPeak() int64 { return d.peak.Load() }

// ResetPeak restarts MemoryPeak from the memory in use now.
func (d *Device) ResetPeak() { d.peak.Store(d.inUse.Load()) }

// buffer holds exactly one of its slices, according to dt.
type buffer struct {
	dt  device.DType
	f32 []float32
	f64 []float64
	i32 []int32
	f16 []uint16 // float16 bits
	*lease
	// mu orders the kernels that update a buffer in place (an optimiser
	// step, Axpy, Copy, Write) and the readbacks of it: a Read on another
	// goroutine sees the buffer before or after such a kernel, never half
	// updated.
	mu sync.RWMutex
}

// updating locks bufs for a kernel that writes them in place and
// returns the unlock; a buffer named twice is locked once.
func updating(bufs ...device.Buffer) func() {
	var held []*buffer
	for _, x := range bufs {
		if x == nil {
			continue
		}
		b := buf(x)
		if slices.Contains(held, b) {
			continue
		}
		b.mu.Lock()
		held = append(held, b)
	}
	return func() {
		for _, b := range held {
			b.mu.Unlock()
		}
	}
}

// lease is a buffer's share of the device's memory, which its Free, or
// else its cleanup once the buffer is unreachable, returns.
type lease struct {
	bytes int64
	freed atomic.Bool
}

func (b *buffer) Len() int {
	switch b.dt {
	case device.Float32:
		return len(b.f32)
	case device.Float64:
		return len(b.f64)
	case device.Float16:
		return len(b.f16)
	}
	return len(b.i32)
}

func (b *buffer) DType() device.DType { return b.dt }

// at returns element i as float64. float32's and float64's cases are
// inlined where it is called; the others take a call.
func (b *buffer) at(i int) float64 {
	switch b.dt {
	case device.Float32:
		return float64(b.f32[i])
	case device.Float64:
		return b.f64[i]
	}
	return b.atOther(i)
}

// atOther is at for the dtypes but float32 and float64.
func (b *buffer) atOther(i int) float64 {
	switch b.dt {
	case device.Float16:
		return float64(half.ToFloat32(b.f16[i]))
	}
	return float64(b.i32[i])
}

// copyFrom sets element i to element j of src, of the same dtype, exactly.
func (b *buffer) copyFrom(i int, src *buffer, j int) {
	switch b.dt {
	case device.Float32:
		b.f32[i] = src.f32[j]
	case device.Float64:
		b.f64[i] = src.f64[j]
	case device.Float16:
		b.f16[i] = src.f16[j]
	default:
		b.i32[i] = src.i32[j]
	}
}

// set stores v at element i, rounding to the buffer's dtype. float32's
// case is inlined where it is called; the others take a call.
func (b *buffer) set(i int, v float64) {
	if b.dt == device.Float32 {
		b.f32[i] = float32(v)
		return
	}
	b.setOther(i, v)
}

// setOther is set for the dtypes but float32.
func (b *buffer) setOther(i int, v float64) {
	switch b.dt {
	case device.Float64:
		b.f64[i] = v
	case device.Float16:
		// Through float32, exact for the float32 values kernels compute.
		b.f16[i] = half.FromFloat32(float32(v))
	default:
		b.i32[i] = int32(v)
	}
}

// optional returns b's buffer, or nil for a nil b.
func optional(b device.Buffer) *buffer {
	if b == nil {
		return nil
	}
	return buf(b)
}

func buf(b device.Buffer) *buffer {
	cb, ok := b.(*buffer)
	if !ok {
		panic(fmt.Sprintf("cpu: buffer %T was not allocated by the cpu device", b))
	}
	return cb
}

// Name returns "cpu".
func (d *Device) Name() string { return "cpu" }

// String describes the device.
func (d *Device) String() string { return d.id + ": Go reference backend (gonum BLAS)" }

// Supports reports true for float32, float64, float16 and int32.
func (d *Device) Supports(dt device.DType) bool {
	return dt == device.Float32 || dt == device.Float64 || dt == device.Int32 || dt == device.Float16
}

// Alloc returns a zeroed buffer. A buffer that would take the live
// buffers past the memory limit is an error wrapping device.ErrOutOfMemory.
func (d *Device) Alloc(dt device.DType, n int) (device.Buffer, error) {
	if d.closed.Load() {
		return nil, fmt.Errorf("cpu: Alloc on %s after Close", d.id)
	}
	if !d.Supports(dt) {
		return nil, fmt.Errorf("cpu: Alloc: unsupported dtype %v", dt)
	}
	size, err := device.Bytes(dt, n)
	if err != nil {
		return nil, fmt.Errorf("cpu: %w", err)
	}
	used := d.inUse.Add(int64(size))
	if used > d.limit.Load() {
		d.inUse.Add(-int64(size))
		return nil, fmt.Errorf("cpu: allocating %d bytes for a %v tensor of %d elements on %s: %d bytes are in use and the limit is %d (cpu.Device.SetMemoryLimit): %w",
			size, dt, n, d.id, used-int64(size), d.limit.Load(), device.ErrOutOfMemory)
	}
	for p := d.peak.Load(); used > p && !d.peak.CompareAndSwap(p, used); p = d.peak.Load() {
	}
	b := &buffer{dt: dt, lease: &lease{bytes: int64(size)}}
	runtime.AddCleanup(b, d.release, b.lease)
	switch dt {
	case device.Float32:
		b.f32 = make([]float32, n)
	case device.Float64:
		b.f64 = make([]float64, n)
	case device.Float16:
		b.f16 = make([]uint16, n)
	case device.Int32:
		b.i32 = make([]int32, n)
	default:
		return nil, fmt.Errorf("cpu: Alloc: unsupported dtype %v", dt)
	}
	return b, nil
}

// Free uncounts the buffer; the garbage collector reclaims its memory once
// nothing refers to it. A kernel running on it meanwhile (an op racing a
// Release on another goroutine) keeps it and finishes unharmed. Freeing
// twice does nothing.
func (d *Device) Free(b device.Buffer) { d.release(buf(b).lease) }

// release returns l's memory, once.
func (d *Device) release(l *lease) {
	if !l.freed.Swap(true) {
		d.inUse.Add(-l.bytes)
	}
}

// Write copies src into dst.
func (d *Device) Write(dst device.Buffer, src any) error {
	b := buf(dst)
	defer updating(dst)()
	if err := device.CheckHost("cpu: Write", src, b.dt, b.Len()); err != nil {
		return err
	}
	switch s := src.(type) {
	case []float32:
		copy(b.f32, s)
	case []float64:
		copy(b.f64, s)
	case []int32:
		copy(b.i32, s)
	case []uint16:
		copy(b.f16, s)
	}
	return nil
}

// Read copies src into dst, between the kernels that update src in
// place.
func (d *Device) Read(src device.Buffer, dst any) error {
	b := buf(src)
	b.mu.RLock()
	defer b.mu.RUnlock()
	if err := device.CheckHost("cpu: Read", dst, b.dt, b.Len()); err != nil {
		return err
	}
	switch s := dst.(type) {
	case []float32:
		copy(s, b.f32)
	case []float64:
		copy(s, b.f64)
	case []int32:
		copy(s, b.i32)
	case []uint16:
		copy(s, b.f16)
	}
	return d.report()
}

// Sync reports the failure recorded since the last report (a class index
// out of range): the CPU device runs kernels synchronously.
func (d *Device) Sync() error { return d.report() }

// Close marks the device closed. It is safe to call twice.
func (d *Device) Close() error {
	d.closed.Store(true)
	return nil
}

// Fill sets every element of dst to v.
func (d *Device) Fill(dst device.Buffer, v float64) {
	b := buf(dst)
	for i := range b.Len() {
		b.set(i, v)
	}
}

// Arange sets element i of dst to start + i·step, computed in float64
// (int32 dst: exactly, start and step being integers).
func (d *Device) Arange(dst device.Buffer, start, step float64) {
	b := buf(dst)
	for i := range b.Len() {
		b.set(i, start+float64(i)*step)
	}
}

// Copy copies src into dst.
func (d *Device) Copy(dst, src device.Buffer) {
	o, s := buf(dst), buf(src)
	defer updating(dst)()
	if s != o {
		s.mu.RLock()
		defer s.mu.RUnlock()
	}
	copy(o.f32, s.f32)
	copy(o.f64, s.f64)
	copy(o.i32, s.i32)
	copy(o.f16, s.f16)
}

// odometer visits every coordinate of shape in row-major order, calling
// visit with the flat output index and the offsets into two strided
// operands.
func odometer(shape, sa, sb []int, visit func(i, ia, ib int)) {
	n := device.Numel(shape)
	if device.IsRowMajor(shape, sa) && device.IsRowMajor(shape, sb) { // same-shape operands
		for i := range n {
			visit(i, i, i)
		}
		return
	}
	coord := make([]int, len(shape))
	ia, ib := 0, 0
	for i := 0; i < n; i++ {
		visit(i, ia, ib)
		for ax := len(shape) - 1; ax >= 0; ax-- {
			coord[ax]++
			ia += sa[ax]
			ib += sb[ax]
			if coord[ax] < shape[ax] {
				break
			}
			ia -= sa[ax] * shape[ax]
			ib -= sb[ax] * shape[ax]
			coord[ax] = 0
		}
	}
}

// CopyStrided copies src into dst as s describes, walking the coordinates
// like an odometer and moving both offsets by the strides.
func (d *Device) CopyStrided(dst, src device.Buffer, s device.Strided) {
	o, in := buf(dst), buf(src)
	n := s.Len()
	if n == 0 {
		return
	}
	rank := len(s.Shape)
	c := make([]int, rank)
	so, do := s.SrcOffset, s.DstOffset
	for range n {
		o.copyFrom(do, in, so)
		for k := rank - 1; k >= 0; k-- {
			c[k]++
			so += s.SrcStrides[k]
			do += s.DstStrides[k]
			if c[k] < s.Shape[k] {
				break
			}
			so -= c[k] * s.SrcStrides[k]
			do -= c[k] * s.DstStrides[k]
			c[k] = 0
		}
	}
}

// SoftmaxCrossEntropy sets the per-row loss.
func (d *Device) SoftmaxCrossEntropy(site string, loss, logits, labels device.Buffer, n, c int) {
	o, in, lab := buf(loss), buf(logits), buf(labels)
	for i := range n {
		y := int(lab.i32[i])
		if !d.checkIndex(site, y, c) {
			o.set(i, math.NaN())
			continue
		}
		o.set(i, logSumExp(c, func(j int) float64 { return in.at(i*c + j) })-in.at(i*c+y))
	}
}

// SoftmaxCrossEntropyGrad sets row i of dlogits to (softmax − onehot)·g[i].
func (d *Device) SoftmaxCrossEntropyGrad(site string, dlogits, logits, labels, g device.Buffer, n, c int) {
	o, in, lab, gb := buf(dlogits), buf(logits), buf(labels), buf(g)
	for i := range n {
		scale := gb.at(i)
		lse := logSumExp(c, func(j int) float64 { return in.at(i*c + j) })
		y := int(lab.i32[i])
		ok := d.checkIndex(site, y, c)
		for j := range c {
			p := math.Exp(in.at(i*c+j) - lse)
			if j == y {
				p--
			}
			if !ok {
				p = math.NaN()
			}
			o.set(i*c+j, p*scale)
		}
	}
}

// Axpy sets y += alpha·x: in float64 for float64 buffers, else in
// float32.
func (d *Device) Axpy(y, x device.Buffer, alpha float64) {
	o, in := buf(y), buf(x)
	defer updating(y)()
	switch {
	case alpha == 0: // BLAS skips the terms, where 0·Inf and 0·NaN are NaN
		for i := range o.Len() {
			o.set(i, o.at(i)+0*in.at(i))
		}
	case o.dt == device.Float64:
		blas64.Axpy(alpha, blas64.Vector{N: len(in.f64), Inc: 1, Data: in.f64}, blas64.Vector{N: len(o.f64), Inc: 1, Data: o.f64})
	case o.dt == device.Float32: // in float32, as the kernel computes (and PyTorch's add_ on float32)
		blas32.Axpy(float32(alpha), blas32.Vector{N: len(in.f32), Inc: 1, Data: in.f32}, blas32.Vector{N: len(o.f32), Inc: 1, Data: o.f32})
	default: // float16, in float32
		a := float32(alpha)
		for i := range o.Len() {
			o.set(i, float64(float32(o.at(i))+a*float32(in.at(i))))
		}
	}
}

var _ device.Device = (*Device)(nil)
