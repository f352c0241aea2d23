package dist

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/internal/half"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/tensor"
)

// DataParallel averages the gradients of a model's parameters across the
// ranks of a Comm, as PyTorch's DistributedDataParallel: each rank runs
// the model on its part of the global batch, and after its backward
// every rank holds the same gradients, each rank's weighted by its part.
//
// The parameters are grouped into buckets of about BucketBytes. During
// Backward, a bucket whose gradients are all complete (autograd's grad
// hooks) is gathered into one tensor on the device and handed to a
// goroutine that reads it back, reduces it across ranks and uploads the
// average, while Backward goes on with the layers before it. Buckets
// are reduced in one order on every rank: in the first step, the
// parameters' reverse order; from the second on, the order in which
// rank 0's gradients became complete in the first.
//
// A DataParallel is used from one goroutine: Backward, then Wait, each
// step.
type DataParallel struct {
	comm        *Comm
	params      []*autograd.Var // those requiring a gradient
	bucketBytes int
	weight      float64

	buckets []*bucket
	of      map[*autograd.Var]int  // the bucket of each parameter
	next    int                    // the next bucket to start
	ready   []*autograd.Var        // the parameters complete so far in this step
	seen    map[*autograd.Var]bool // ready's
	twice   *autograd.Var          // a parameter completed twice before Wait
	steps   int

	work chan *bucket
	wg   sync.WaitGroup
	mu   sync.Mutex
	st   Stats
	last time.Time // the last Wait's return
}

// DefaultBucketBytes is the size of the buckets: PyTorch's first bucket's
// size, 1 MiB, so that the reduction of the last layers' gradients starts
// early in a small model's backward.
const DefaultBucketBytes = 1 << 20

// bucket is a group of parameters reduced together.
type bucket struct {
	params []*autograd.Var
	dtype  device.DType
	elems  int
	ready  int
	weight float64          // the rank's weight when the bucket started
	has    []bool           // which parameters had a gradient on this rank
	flat   *tensor.Tensor   // the gathered gradients, on the device (the bucket's to release)
	grads  []*tensor.Tensor // the averaged gradients, uploaded
	err    error
	done   chan struct{}
	// when the readback, the allreduce and the upload began, and when the
	// upload ended
	read, reduce, upload, end time.Time
}

// Stats is what a DataParallel measured, summed over the steps since
// the last ResetStats.
type Stats struct {
	Steps   int   // steps reduced (Waits)
	Bytes   int64 // bytes of gradients this rank reduced
	Buckets int   // buckets reduced
	// Readback is the buckets' readbacks: waiting for the device to
	// compute them, and the copies.
	Readback time.Duration
	// Allreduce is the time in MPI's reductions, and Upload the
	// averages' uploads.
	Allreduce, Upload time.Duration
	// Overlap is the part of Allreduce and Upload that passed while the
	// device still computed the backward: before the last bucket's
	// readback returned.
	Overlap time.Duration
	// Waiting is Wait's time waiting for the buckets.
	Waiting time.Duration
	// Interval is the time from one Wait's return to the next's: the
	// steps' time, but the first's since ResetStats.
	Interval  time.Duration
	Intervals int // the steps Interval counts
}

// NewDataParallel returns the data parallelism of params (those that
// require a gradient take part) over c, with buckets of bucketBytes (0:
// DefaultBucketBytes). It sets a grad hook on each of them. Every rank
// passes the same parameters in the same order.
func NewDataParallel(c *Comm, params []*autograd.Var, bucketBytes int) (*DataParallel, error) {
	if c == nil {
		return nil, fmt.Errorf("dist: NewDataParallel of a nil Comm")
	}
	if bucketBytes < 0 {
		return nil, fmt.Errorf("dist: NewDataParallel: buckets of %d bytes; want ≥ 0 (0: %d)", bucketBytes, DefaultBucketBytes)
	}
	if bucketBytes == 0 {
		bucketBytes = DefaultBucketBytes
	}
	d := &DataParallel{comm: c, bucketBytes: bucketBytes, weight: 1 / float64(c.Size()), work: make(chan *bucket, 1024), seen: map[*autograd.Var]bool{}}
	seen := map[*autograd.Var]bool{}
	for i, p := range params {
		if p == nil {
			return nil, fmt.Errorf("dist: NewDataParallel: parameter %d is nil", i)
		}
		if seen[p] {
			return nil, fmt.Errorf("dist: NewDataParallel: parameter %d is passed twice", i)
		}
		seen[p] = true
		if dt := p.Value().DType(); dt != device.Float32 && dt != device.Float16 {
			return nil, fmt.Errorf("dist: NewDataParallel: parameter %d is %v; want float32 or float16", i, dt)
		}
		if p.RequiresGrad() {
			d.params = append(d.params, p)
		}
	}
	order := slices.Clone(d.params)
	slices.Reverse(order)
	d.group(order)
	for _, p := range d.params {
		p.SetGradHook(d.complete)
	}
	d.wg.Add(1)
	go d.reduce()
	return d, nil
}

// group makes the buckets of the parameters in order: consecutive
// parameters of one dtype up to bucketBytes.
func (d *DataParallel) group(order []*autograd.Var) {
	d.buckets, d.of = nil, map[*autograd.Var]int{}
	var b *bucket
	for _, p := range order {
		t := p.Value()
		n := t.Len()
		if b == nil || b.dtype != t.DType() || (b.elems+n)*t.DType().Size() > d.bucketBytes && b.elems > 0 {
			b = &bucket{dtype: t.DType()}
			d.buckets = append(d.buckets, b)
		}
		b.params = append(b.params, p)
		b.elems += n
		d.of[p] = len(d.buckets) - 1
	}
}

// SetWeight sets this rank's weight in the average of the next
// Backward's gradients (call it before Backward): each rank's gradients
// are multiplied by its weight and summed. The default is 1/Size; a
// rank whose part of a batch is n of the global batch's N examples sets
// n/N, so that the result is the gradient of the global batch's mean
// loss.
func (d *DataParallel) SetWeight(w float64) { d.weight = w }

// complete is the grad hook: p's gradient of this step is complete.
func (d *DataParallel) complete(p *autograd.Var) {
	i, ok := d.of[p]
	if !ok {
		return
	}
	if d.seen[p] { // a second Backward before Wait
		d.twice = p
		return
	}
	d.seen[p] = true
	d.ready = append(d.ready, p)
	d.buckets[i].ready++
	for d.next < len(d.buckets) && d.buckets[d.next].ready >= len(d.buckets[d.next].params) {
		d.start(d.buckets[d.next])
		d.next++
	}
}

// start gathers b's gradients into one tensor on the device and hands it
// to the reducing goroutine.
func (d *DataParallel) start(b *bucket) {
	b.done = make(chan struct{})
	b.err, b.flat, b.weight = nil, nil, d.weight
	b.has = make([]bool, len(b.params))
	err := tensor.Maybe(func() {
		parts := make([]*tensor.Tensor, len(b.params))
		for k, p := range b.params {
			if g := p.Grad(); g != nil {
				parts[k], b.has[k] = g.Reshape(g.Len()), true
				continue
			}
			z, err := tensor.Zeros(p.Value().Device(), b.dtype, p.Value().Len()) // no gradient on this rank
			if err != nil {
				panic(err)
			}
			parts[k] = z
		}
		if len(parts) == 1 {
			b.flat = parts[0]
			return
		}
		b.flat = ops.Concat(parts, 0)
		for _, t := range parts {
			t.Release()
		}
	})
	if err != nil {
		b.err = d.fail(b, err)
		close(b.done)
		return
	}
	d.work <- b
}

// fail returns the error of averaging bucket b; with other ranks, whose
// collectives this rank can no longer match, it ends the job (Abort)
// instead.
func (d *DataParallel) fail(b *bucket, err error) error {
	err = fmt.Errorf("dist: %v: averaging a bucket of %d gradients: %w", d.comm, len(b.params), err)
	if d.comm.Size() > 1 {
		d.comm.Abort(err)
	}
	return err
}

// reduce reads back, reduces and uploads the buckets handed to it, in
// order.
func (d *DataParallel) reduce() {
	defer d.wg.Done()
	for b := range d.work {
		b.read = time.Now()
		b.reduce, b.upload = b.read, b.read
		var err error
		if e := tensor.Maybe(func() { b.grads, err = d.average(b) }); e != nil {
			err = e
		}
		if err != nil {
			for _, g := range b.grads {
				g.Release()
			}
			b.grads, b.err = nil, d.fail(b, err)
		}
		b.end = time.Now()
		close(b.done)
	}
}

// average returns b's gradients averaged across the ranks, on the
// device; nil for a parameter that had none on any rank (counted by a
// flag a parameter, reduced with the gradients).
func (d *DataParallel) average(b *bucket) ([]*tensor.Tensor, error) {
	flat := b.flat
	defer flat.Release()
	dev := flat.Device()
	w := float32(b.weight)
	var f32 []float32
	var f16 []uint16
	var had []bool // whether any rank had each parameter's gradient
	var err error
	if b.dtype == device.Float16 {
		if f16, err = flat.Float16Bits(); err != nil {
			return nil, err
		}
		b.reduce = time.Now()
		if w != 1 {
			for i, h := range f16 {
				f16[i] = half.FromFloat32(half.ToFloat32(h) * w)
			}
		}
		for _, has := range b.has {
			f16 = append(f16, half.FromFloat32(float32(b2i(has))))
		}
		err = d.comm.AllreduceFloat16(f16)
		for _, h := range f16[b.elems:] {
			had = append(had, h != 0)
		}
	} else {
		if f32, err = flat.Float32s(); err != nil {
			return nil, err
		}
		b.reduce = time.Now()
		if w != 1 {
			for i := range f32 {
				f32[i] *= w
			}
		}
		for _, has := range b.has {
			f32 = append(f32, float32(b2i(has)))
		}
		err = d.comm.AllreduceFloat32(f32)
		for _, x := range f32[b.elems:] {
			had = append(had, x != 0)
		}
	}
	if err != nil {
		return nil, err
	}
	b.upload = time.Now()
	grads := make([]*tensor.Tensor, 0, len(b.params))
	off := 0
	for k, p := range b.params {
		shape := p.Value().Shape()
		n := p.Value().Len()
		var g *tensor.Tensor
		switch {
		case !had[k]: // no rank had a gradient: none, as alone
		case b.dtype == device.Float16:
			g, err = tensor.FromFloat16Bits(dev, f16[off:off+n], shape...)
		default:
			g, err = tensor.FromFloat32(dev, f32[off:off+n], shape...)
		}
		if err != nil {
			return grads, err
		}
		grads = append(grads, g)
		off += n
	}
	return grads, nil
}

// Wait returns once every bucket of this step is averaged, with the
// averages in the parameters' Grad. It starts the buckets Backward did
// not complete (a parameter the loss does not use: zeros on this rank;
// a parameter no rank has a gradient for keeps none). Call it after
// each Backward, on every rank.
func (d *DataParallel) Wait() error {
	for d.next < len(d.buckets) {
		d.start(d.buckets[d.next])
		d.next++
	}
	start := time.Now()
	var err error
	var computed time.Time // when the device had computed every bucket
	for _, b := range d.buckets {
		<-b.done
		if b.reduce.After(computed) {
			computed = b.reduce
		}
		if b.err != nil && err == nil {
			err = b.err
		}
	}
	now := time.Now()
	d.mu.Lock()
	d.st.Steps++
	d.st.Buckets += len(d.buckets)
	d.st.Waiting += now.Sub(start)
	for _, b := range d.buckets {
		d.st.Bytes += int64(b.elems) * int64(b.dtype.Size())
		d.st.Readback += b.reduce.Sub(b.read)
		d.st.Allreduce += b.upload.Sub(b.reduce)
		d.st.Upload += b.end.Sub(b.upload)
		end := b.end
		if end.After(computed) {
			end = computed
		}
		d.st.Overlap += max(end.Sub(b.reduce), 0)
	}
	if !d.last.IsZero() {
		d.st.Interval += now.Sub(d.last)
		d.st.Intervals++
	}
	d.last = now
	d.mu.Unlock()
	for _, b := range d.buckets {
		for k, p := range b.params {
			if err == nil {
				p.SetGrad(b.grads[k])
			} else if k < len(b.grads) {
				b.grads[k].Release()
			}
		}
		b.grads, b.ready = nil, 0
	}
	ready, twice := d.ready, d.twice
	d.ready, d.next, d.twice = d.ready[:0:0], 0, nil
	clear(d.seen)
	if err != nil {
		return err
	}
	if twice != nil {
		return fmt.Errorf("dist: %v: a parameter's gradient was completed by two Backwards before Wait; Wait after each Backward (the buckets reduced the first's)", d.comm)
	}
	d.steps++
	if d.steps == 1 {
		return d.regroup(ready)
	}
	return nil
}

// regroup makes the buckets in the order rank 0's gradients became
// complete in the first step (ready, on rank 0), the parameters never
// complete last.
func (d *DataParallel) regroup(ready []*autograd.Var) error {
	index := map[*autograd.Var]int{}
	for i, p := range d.params {
		index[p] = i
	}
	buf := make([]byte, 4*len(d.params))
	at := 0
	seen := map[*autograd.Var]bool{}
	put := func(p *autograd.Var) {
		if !seen[p] {
			seen[p] = true
			binary.LittleEndian.PutUint32(buf[4*at:], uint32(index[p]))
			at++
		}
	}
	for _, p := range ready {
		put(p)
	}
	for i := len(d.params) - 1; i >= 0; i-- {
		put(d.params[i])
	}
	if err := d.comm.Broadcast(buf, 0); err != nil {
		return err
	}
	order := make([]*autograd.Var, len(d.params))
	for i := range order {
		k := int(binary.LittleEndian.Uint32(buf[4*i:]))
		if k >= len(d.params) {
			return fmt.Errorf("dist: %v: rank 0's bucket order names parameter %d of %d", d.comm, k, len(d.params))
		}
		order[i] = d.params[k]
	}
	d.group(order)
	return nil
}

// Stats returns what the reductions measured since the last ResetStats.
func (d *DataParallel) Stats() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.st
}

// ResetStats zeroes Stats.
func (d *DataParallel) ResetStats() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.st, d.last = Stats{}, time.Time{}
}

// Close ends the reducing goroutine and removes the grad hooks.
func (d *DataParallel) Close() {
	if d.work == nil {
		return
	}
	close(d.work)
	d.wg.Wait()
	d.work = nil
	for _, p := range d.params {
		p.SetGradHook(nil)
	}
}

// BroadcastTensors replaces each of ts, on every rank, by root's: parameters
// and optimiser state at the start, or after root alone loaded a
// checkpoint. Every rank passes tensors of the same names, shapes and
// dtypes (float32, float16 or int32); they are sent in the names'
// order, in parts of about 64 MiB (a tensor is not split).
func (c *Comm) BroadcastTensors(ts map[string]*tensor.Tensor, root int) error {
	names := slices.Sorted(maps.Keys(ts))
	var part []string
	size := 0
	for i, name := range names {
		t := ts[name]
		part = append(part, name)
		size += t.Len() * t.DType().Size()
		if size >= broadcastPart || i == len(names)-1 {
			if err := c.broadcastPart(ts, part, size, root); err != nil {
				return err
			}
			part, size = part[:0], 0
		}
	}
	return nil
}

const broadcastPart = 64 << 20

func (c *Comm) broadcastPart(ts map[string]*tensor.Tensor, names []string, size, root int) error {
	if c.Size() == 1 {
		return nil
	}
	buf := make([]byte, size)
	if c.Rank() == root {
		at := 0
		for _, name := range names {
			t := ts[name]
			var err error
			switch t.DType() {
			case device.Float32:
				var v []float32
				if v, err = t.Float32s(); err == nil {
					at = putWords(buf, at, v)
				}
			case device.Float16:
				var v []uint16
				if v, err = t.Float16Bits(); err == nil {
					at = putWords(buf, at, v)
				}
			case device.Int32:
				var v []int32
				if v, err = t.Int32s(); err == nil {
					at = putWords(buf, at, v)
				}
			default:
				err = fmt.Errorf("a tensor of %v; want float32, float16 or int32", t.DType())
			}
			if err != nil {
				return fmt.Errorf("dist: %v: Broadcast of %q: %w", c, name, err)
			}
		}
	}
	if err := c.Broadcast(buf, root); err != nil {
		return err
	}
	if c.Rank() == root {
		return nil
	}
	at := 0
	for _, name := range names {
		t := ts[name]
		n := t.Len()
		var src any
		switch t.DType() {
		case device.Float32:
			src = getWords[float32](buf, at, n)
		case device.Float16:
			src = getWords[uint16](buf, at, n)
		case device.Int32:
			src = getWords[int32](buf, at, n)
		default:
			return fmt.Errorf("dist: %v: Broadcast of %q: a tensor of %v; want float32, float16 or int32", c, name, t.DType())
		}
		at += n * t.DType().Size()
		if err := t.Device().Write(t.Buffer(), src); err != nil {
			return fmt.Errorf("dist: %v: Broadcast of %q: %w", c, name, err)
		}
	}
	return nil
}

// BroadcastInt returns root's v on every rank (a step count, say).
func (c *Comm) BroadcastInt(v, root int) (int, error) {
	var buf [8]byte
	binary.LittleEndian.PutUint64(buf[:], uint64(v))
	if err := c.Broadcast(buf[:], root); err != nil {
		return 0, err
	}
	return int(binary.LittleEndian.Uint64(buf[:])), nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// putWords writes v's little-endian bytes into buf at at.
func putWords[T float32 | uint16 | int32](buf []byte, at int, v []T) int {
	_, err := binary.Encode(buf[at:], binary.LittleEndian, v)
	if err != nil {
		panic(err) // buf was sized for v
	}
	var z T
	return at + len(v)*binary.Size(z)
}

// getWords reads n values from buf at at.
func getWords[T float32 | uint16 | int32](buf []byte, at, n int) []T {
	v := make([]T, n)
	if _, err := binary.Decode(buf[at:], binary.LittleEndian, v); err != nil {
		panic(err)
	}
	return v
}
