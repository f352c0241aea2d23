//go:build cgo || js

package webgpu

import (
	"fmt"
	"math/bits"
	"runtime"
	"slices"
	"unsafe"

	"github.com/extensor/extensor/device"
	"github.com/oliverbestmann/webgpu/wgpu"
)

const (
	storageUsage = wgpu.BufferUsageStorage | wgpu.BufferUsageCopySrc | wgpu.BufferUsageCopyDst
	stagingUsage = wgpu.BufferUsageMapRead | wgpu.BufferUsageCopyDst
	// maxPooled is how many bytes of free buffers the pool keeps.
	maxPooled = 1 << 30
)

// buffer is a tensor's storage: a pooled wgpu buffer of at least n elements.
type buffer struct {
	*resource
	dt device.DType
	n  int
}

// resource is a buffer's wgpu buffer, which Free, or else the buffer's
// cleanup once it is unreachable (collect), returns to the pool; nil
// once returned. The device's mutex guards it.
type resource struct {
	b    *wgpu.Buffer
	size uint64 // the pool bucket's size in bytes
	// failed is why the buffer's contents could not be computed: the
	// failure of the call that was to write them, or of an operand of it.
	// Every Read of the buffer returns it, and every call reading the
	// buffer fails its outputs with it.
	failed error
}

func (b *buffer) Len() int            { return b.n }
func (b *buffer) DType() device.DType { return b.dt }

// bytes is the size of the elements in bytes: float16 elements two to a
// 32-bit word, the last word half empty for an odd count.
func (b *buffer) bytes() uint64 { return wordBytes(b.dt, b.n) }

// wordBytes is the size of n elements of dt in whole 32-bit words.
func wordBytes(dt device.DType, n int) uint64 {
	if dt == device.Float16 {
		return uint64((n+1)/2) * 4
	}
	return uint64(n) * 4
}

// bindSize is the size bound to a kernel: the elements' bytes rounded up
// to whole vec4s (16 bytes), which every tensor's buffer holds (alloc):
// the elementwise kernels and the optimisers' steps read and write the
// last vec4 whole, whatever the count (vecs).
func (b *buffer) bindSize() uint64 { return vecBytes(b.bytes()) }

// vecBytes is size rounded up to whole vec4s, at least one.
func vecBytes(size uint64) uint64 { return (max(size, 16) + 15) &^ 15 }

type poolKey struct {
	usage wgpu.BufferUsage
	size  uint64
}

// pool keeps freed buffers by usage and size bucket. A freed buffer is
// reusable at once, even while recorded or submitted work still uses it:
// the queue runs work in order (wgpu puts barriers between dispatches that
// share a buffer), and a host write flushes the open batch first, so that
// a reused buffer's new contents always follow its old uses.
type pool struct {
	d     *Device
	free  map[poolKey][]*wgpu.Buffer
	stats device.PoolStats
	limit uint64 // bytes of free buffers kept: maxPooled
}

func (p *pool) init(d *Device) {
	p.d = d
	p.free = map[poolKey][]*wgpu.Buffer{}
	p.limit = maxPooled
}

// bucket rounds size up to 256 bytes or to a quarter of a power of two.
func bucket(size uint64) uint64 {
	if size <= 256 {
		return 256
	}
	hi := uint64(1) << (63 - bits.LeadingZeros64(size))
	step := hi / 4
	return (size + step - 1) / step * step
}

// get returns a buffer of at least size bytes.
func (p *pool) get(usage wgpu.BufferUsage, size uint64, label string) (*wgpu.Buffer, uint64, error) {
	key := poolKey{usage, min(bucket(size), max(p.d.limits.MaxBufferSize, size))}
	if b := p.take(key); b != nil {
		return b, key.size, nil
	}
	b, err := p.d.dev.TryCreateBuffer(&wgpu.BufferDescriptor{Label: label, Usage: usage, Size: key.size})
	if err != nil && len(p.free) > 0 {
		// Out of memory, perhaps: drain the queue, drop the pool, retry.
		p.d.wait()
		p.trim(0)
		b, err = p.d.dev.TryCreateBuffer(&wgpu.BufferDescriptor{Label: label, Usage: usage, Size: key.size})
	}
	if err != nil {
		return nil, 0, err
	}
	p.stats.Misses++
	p.stats.BytesLive += key.size
	p.stats.BytesPeak = max(p.stats.BytesPeak, p.stats.BytesLive)
	return b, key.size, nil
}

// smallBuffer is the size up to which the pool hands out no buffer that
// the open elementwise chain reads other than element for element (a
// splat or a broadcast, freed while the chain is open): taken anew, it
// would cut the chain whatever wrote it (fuse.go), and it is most often
// an op's scalar constant, filled by a kernel of its own, where a new
// buffer costs next to no memory.
const smallBuffer = 4096

// take returns a free buffer of key from the pool, or nil.
func (p *pool) take(key poolKey) *wgpu.Buffer {
	list := p.free[key]
	i := len(list) - 1
	if c := p.d.chain; c != nil && key.size <= smallBuffer {
		for i >= 0 && c.readsOther(list[i]) {
			i--
		}
	}
	if i < 0 {
		return nil
	}
	b := list[i]
	p.free[key] = slices.Delete(list, i, i+1)
	p.stats.Hits++
	p.stats.BytesPooled -= key.size
	p.stats.BytesLive += key.size
	p.stats.BytesPeak = max(p.stats.BytesPeak, p.stats.BytesLive)
	return b
}

// put returns a buffer to the pool.
func (p *pool) put(usage wgpu.BufferUsage, size uint64, b *wgpu.Buffer) {
	key := poolKey{usage, size}
	p.free[key] = append(p.free[key], b)
	p.stats.BytesLive -= size
	p.stats.BytesPooled += size
	if p.stats.BytesPooled > p.limit {
		p.trim(p.limit)
	}
}

// trim releases free buffers until at most limit bytes are pooled. The
// open chain is recorded and the open compute pass ends first: they may
// bind them, and wgpu resolves a
// pass's resources only when it ends (a buffer released before then
// aborts the process inside wgpu).
func (p *pool) trim(limit uint64) {
	if p.stats.BytesPooled > limit {
		p.d.flushChain() // it may read them
		p.d.endPass()
	}
	for key, list := range p.free {
		for len(list) > 0 && p.stats.BytesPooled > limit {
			p.d.forget(list[len(list)-1])
			list[len(list)-1].Release()
			list = list[:len(list)-1]
			p.stats.BytesPooled -= key.size
		}
		p.free[key] = list
	}
}

func (p *pool) releaseAll() { p.trim(0) }

// reclaim learns, without blocking, whether submitted work has completed.
func (d *Device) reclaim() {
	if d.completed < d.submitted {
		d.dev.Poll(false, nil) // runs the work-done callbacks that are due
		d.completed = max(d.completed, d.done.Load())
	}
}

func (d *Device) buf(b device.Buffer) *buffer {
	wb, ok := b.(*buffer)
	if !ok {
		panic(fmt.Sprintf("webgpu: buffer %T was not allocated by a webgpu device", b))
	}
	return wb
}

// Alloc returns a buffer of n elements of dtype dt from the pool. A
// buffer larger than the device's maximum buffer size, or one the device
// has no memory for, is an error wrapping device.ErrOutOfMemory. (A buffer
// may exceed the binding limit: see the package documentation.)
func (d *Device) Alloc(dt device.DType, n int) (device.Buffer, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	b, err := d.alloc(dt, n)
	if err != nil {
		return nil, err
	}
	return b, nil
}

func (d *Device) alloc(dt device.DType, n int) (*buffer, error) {
	if d.closed {
		return nil, fmt.Errorf("webgpu: Alloc on %s after Close", d.id)
	}
	if !d.Supports(dt) {
		return nil, fmt.Errorf("webgpu: cannot allocate %v: the device supports float32, float16 and int32", dt)
	}
	if _, err := device.Bytes(dt, n); err != nil {
		return nil, fmt.Errorf("webgpu: %w", err)
	}
	size := int(vecBytes(wordBytes(dt, n)))
	if limit := d.limits.MaxBufferSize; uint64(size) > limit {
		return nil, fmt.Errorf("webgpu: a %v tensor of %d elements (%d bytes) exceeds %s's maximum buffer size of %d bytes: %w", dt, n, size, d.info, limit, device.ErrOutOfMemory)
	}
	b, bucketSize, err := d.pool.get(storageUsage, uint64(size), "tensor")
	if err != nil {
		return nil, fmt.Errorf("webgpu: allocating %d bytes for a %v tensor of %d elements on %s: %v: %w", size, dt, n, d.id, err, device.ErrOutOfMemory)
	}
	wb := &buffer{resource: &resource{b: b, size: bucketSize}, dt: dt, n: n}
	d.live[wb.resource] = struct{}{}
	runtime.AddCleanup(wb, d.collect, wb.resource)
	return wb, nil
}

// collect returns the resource of a buffer that became unreachable
// without Free.
func (d *Device) collect(r *resource) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.release(r)
}

// Free returns b to the pool, for reuse by work recorded after this call.
// Freeing twice, or after Close, does nothing.
func (d *Device) Free(b device.Buffer) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if k, ok := b.(*keptImages); ok {
		d.releaseKept(k.tex)
		return
	}
	d.free(d.buf(b))
}

func (d *Device) free(wb *buffer) { d.release(wb.resource) }

// release returns r to the pool, once.
func (d *Device) release(r *resource) {
	if r.b == nil {
		return
	}
	d.releaseFusing(r)
	delete(d.live, r)
	d.pool.put(storageUsage, r.size, r.b)
	r.b = nil
}

// hostBytes returns the bytes of a []float32, []int32 or []uint16
// (float16) matching b.
func hostBytes(op string, b *buffer, s any) ([]byte, error) {
	if err := device.CheckHost("webgpu: "+op, s, b.dt, b.n); err != nil {
		return nil, err
	}
	var p unsafe.Pointer
	size := 4
	switch s := s.(type) {
	case []float32:
		if len(s) > 0 {
			p = unsafe.Pointer(&s[0])
		}
	case []int32:
		if len(s) > 0 {
			p = unsafe.Pointer(&s[0])
		}
	case []uint16:
		if len(s) > 0 {
			p, size = unsafe.Pointer(&s[0]), 2
		}
	}
	if p == nil {
		return nil, nil
	}
	return unsafe.Slice((*byte)(p), b.n*size), nil
}

// Write copies src into dst, after submitting the work recorded before it.
func (d *Device) Write(dst device.Buffer, src any) error {
	b := d.buf(dst)
	data, err := hostBytes("Write", b, src)
	if err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.ok() || b.b == nil {
		return fmt.Errorf("webgpu: Write to a freed buffer or on %s after Close", d.id)
	}
	if len(data) == 0 {
		return nil
	}
	if len(data)%4 != 0 { // an odd count of float16: pad to the word
		data = append(append([]byte(nil), data...), 0, 0)
	}
	d.flush() // work recorded earlier must see the old contents
	if err := d.queue.TryWriteBuffer(b.b, 0, data); err != nil {
		return fmt.Errorf("webgpu: writing %d bytes: %v", len(data), err)
	}
	b.failed = nil // contents anew
	return nil
}

// Read waits for the recorded work and copies src into dst.
func (d *Device) Read(src device.Buffer, dst any) error {
	b := d.buf(src)
	out, err := hostBytes("Read", b, dst)
	if err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.ok() || b.b == nil {
		d.fail(fmt.Errorf("webgpu: Read of a freed buffer or on %s after Close", d.id))
		return d.report()
	}
	if b.failed != nil {
		if d.err == b.failed {
			d.err = nil // reported here
		}
		return b.failed
	}
	if len(out) == 0 {
		d.wait()
		return d.report()
	}
	size := b.bytes() // whole words, the last half word of an odd float16 count too
	staging, stagingSize, err := d.pool.get(stagingUsage, size, "readback")
	if err != nil {
		d.fail(fmt.Errorf("webgpu: allocating a %d-byte readback buffer: %v", size, err))
		return d.report()
	}
	defer d.pool.put(stagingUsage, stagingSize, staging)
	enc := d.encoderFor()
	if enc == nil {
		return d.report()
	}
	if err := enc.TryCopyBufferToBuffer(b.b, 0, staging, 0, size); err != nil {
		d.fail(fmt.Errorf("webgpu: copying %d bytes for readback: %v", size, err))
		return d.report()
	}
	d.wait()
	d.readMapped(staging, size, "a readback buffer", func(w []byte) { copy(out, w[:len(out)]) })
	return d.report()
}

// readMapped maps the first size bytes of staging, a readback buffer
// whose copies are done (the queue idle), hands them to read, and unmaps
// them; a failure to map or unmap is recorded, naming what.
func (d *Device) readMapped(staging *wgpu.Buffer, size uint64, what string, read func([]byte)) {
	if err := d.mapRead(staging, size); err != nil {
		d.fail(fmt.Errorf("webgpu: mapping %s: %v", what, err))
		return
	}
	read(staging.GetMappedRange(0, uint(size)))
	if err := staging.TryUnmap(); err != nil {
		d.fail(fmt.Errorf("webgpu: unmapping %s: %v", what, err))
	}
}
