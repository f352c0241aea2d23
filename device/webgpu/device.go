//go:build cgo || js

package webgpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/extensor/extensor/device"
	"github.com/oliverbestmann/webgpu/wgpu"
)

// BatchSize is the number of dispatches recorded before the device submits
// them without being asked.
const BatchSize = 256

// DrainTimeout bounds a wait for the queue to drain: a device that stops
// answering (lost, or hung) becomes an error instead of a hang.
var DrainTimeout = 10 * time.Minute

// paramWords is the number of u32 parameter words each dispatch may use; its
// slot in the parameter buffer is aligned to 256 bytes. The buffer holds
// paramSlots slots, kept by their contents: a training loop's dispatches
// repeat their parameters step after step, and find them written already
// (docs/kernel-choices.md, waits).
const (
	paramWords = 64
	paramSlot  = 256
	paramSlots = 4096
)

func init() {
	device.Register("webgpu", device.DriverFunc(func() (device.Device, error) {
		d, err := Open()
		if err != nil {
			return nil, err // not a nil *Device in a non-nil interface
		}
		return d, nil
	}))
}

// opened numbers the devices opened, for their identities.
var opened atomic.Int64

// Device is a WebGPU device. Create it with Open or device.Open("webgpu").
// It is safe for concurrent use by many goroutines: one mutex orders
// every method, so work recorded by one goroutine runs in the order it was
// recorded, and a Read sees everything recorded before it.
type Device struct {
	mu sync.Mutex // guards everything below, and the wgpu objects

	id       string // e.g. "webgpu#2"
	instance *wgpu.Instance
	adapter  *wgpu.Adapter
	dev      *wgpu.Device
	queue    *wgpu.Queue
	info     string
	limits   wgpu.Limits
	// loopLimited is set on CPU adapters (lavapipe, a browser's
	// SwiftShader), which take the kernels chosen for them; lavapipe
	// silently ends a loop after about 32768 iterations.
	loopLimited bool
	// threads is how many threads run a CPU adapter's workgroups: lavapipe
	// runs LP_NUM_THREADS of them, by default one a processor.
	threads int

	kernels map[kernelKey]*kernel
	// compileFault, set by tests, fails the compiles of kernels whose
	// names it returns an error for.
	compileFault func(name string) error

	// The open batch.
	encoder    *wgpu.CommandEncoder
	pass       *wgpu.ComputePassEncoder // open in encoder, or nil
	passFrom   int                      // labels[passFrom:] are the pass's
	bgs        bindGroups
	paramBuf   *wgpu.Buffer
	slots      map[string]uint32 // parameter slots by their words, as bytes
	params     []byte            // slots the open batch added, to write at paramFrom
	paramFrom  uint32            // the offset of params in paramBuf
	paramKey   []byte            // scratch for a dispatch's key
	dispatches int               // in the open batch
	ran        int64             // kernel dispatches since the device opened
	copies     int64             // buffer copies since the device opened
	labels     []string

	submitted, completed uint64 // submission counts
	// done is the count of submissions the GPU has finished, set by
	// wgpu's work-done callbacks (on whichever thread it calls them):
	// wgpu-native 29's non-blocking poll says the queue is empty before
	// it is, on lavapipe and on an H100 alike.
	done atomic.Uint64
	pool pool
	live map[*resource]struct{} // the resources of the buffers allocated and not freed

	// Index flags, written by kernels that meet a class index out of
	// range (see check_index in shaders/common.wgsl), read at the next wait.
	flags        *buffer
	spare        *buffer // 16 bytes bound, unread, where a kernel's optional binding is unset and the flags are bound already
	flagsStaging *wgpu.Buffer
	flagsDirty   bool              // a kernel that may write them ran since the last read
	sites        []string          // the ops that passed indices, by id
	siteIDs      map[string]uint32 // and their ids

	err    error       // first runtime failure since the last report
	outs   []*resource // the outputs of the call under way (writing)
	closed bool
	// lost is why the device was lost (a string), set by wgpu's callback
	// on whichever thread it runs; a wait reports it.
	lost atomic.Value
	//lint:ignore U1000 empty natively; the browser's device errors (js.go)
	platform

	surface *wgpu.Surface // the window's, for a device made by OpenSurface
	screen  *screen       // what presents on it

	textures map[texKey]opTexture    // the texture matmul's operands, by size
	kept     map[*opTexture]struct{} // the convolutions' images kept for their gradients (keptImages)
	mm       matmulChoice
	// noDirectConv turns the direct convolution off (EnvConv).
	noDirectConv bool
	// directMinFlops is the least work of a convolution the direct
	// kernels take (see convFits).
	directMinFlops int
	// subgroups: the device has subgroup operations (EnvSubgroups), by
	// WebGPU's feature, which WGSL enables with "enable subgroups;"
	// (enableSubgroups), or by wgpu's native one.
	subgroups, enableSubgroups bool
	// f16: float16 buffers are array<f16> to the kernels that read them
	// so (WGSL's f16, by the adapter's ShaderF16 feature; EnvF16 forces
	// the packed words of adapters without it). The bytes are the same
	// either way: two halves a 32-bit word.
	f16 bool
	// block: a wait blocks in one poll (EnvWait=block). The default
	// spins on every adapter, the faster wait on the H100
	// (docs/kernel-choices.md, waits).
	block bool
	// last is the index of the last submission.
	last wgpu.SubmissionIndex
	prof *profiler // nil unless EnvProfile is set

	// fuse: elementwise calls join chains (fuse.go), unless EnvFuse is
	// "off"; chain is the open one, and fusedRuns counts the fused
	// kernels recorded.
	fuse      bool
	chain     *chain
	fusedRuns int64
}

// Open creates a WebGPU device on the adapter chosen as described in the
// package documentation. Without an adapter it returns an error wrapping
// device.ErrUnavailable.
func Open() (*Device, error) { return open(nil) }

// open creates the device; with a surface, on an adapter that can present
// to it (OpenSurface), the surface released with the instance on failure.
func open(sd *wgpu.SurfaceDescriptor) (*Device, error) {
	force, err := parseMatMul()
	if err != nil {
		return nil, err
	}
	conv, sub, wait, f16, fuse := strings.TrimSpace(os.Getenv(EnvConv)), strings.TrimSpace(os.Getenv(EnvSubgroups)), strings.TrimSpace(os.Getenv(EnvWait)), strings.TrimSpace(os.Getenv(EnvF16)), strings.TrimSpace(os.Getenv(EnvFuse))
	for _, e := range []struct {
		name, v string
		want    []string
	}{{EnvConv, conv, []string{"im2col"}}, {EnvSubgroups, sub, []string{"off"}}, {EnvWait, wait, []string{"spin", "block"}}, {EnvF16, f16, []string{"packed"}}, {EnvFuse, fuse, []string{"on", "off"}}} {
		if e.v != "" && !slices.Contains(e.want, e.v) {
			return nil, fmt.Errorf("webgpu: %s=%q; want %s, or nothing for the default", e.name, e.v, strings.Join(e.want, " or "))
		}
	}
	d := &Device{kernels: map[kernelKey]*kernel{}, live: map[*resource]struct{}{}, siteIDs: map[string]uint32{}, slots: map[string]uint32{}, mm: matmulChoice{force: force}, prof: profileOn(),
		noDirectConv: conv == "im2col", directMinFlops: 2 * tuneMinMACs, fuse: fuse != "off"}
	d.id = fmt.Sprintf("webgpu#%d", opened.Add(1))
	quietDeviceSelect()
	if d.instance, err = newInstance(); err != nil {
		return nil, err
	}
	if sd != nil {
		d.surface = d.instance.CreateSurface(sd)
	}
	d.adapter, err = chooseAdapter(d.instance, d.surface)
	if err != nil {
		if d.surface != nil {
			d.surface.Release()
		}
		d.instance.Release()
		return nil, err
	}
	props := adapterInfo(d.adapter)
	d.info = fmt.Sprintf("%s: %s, %s, %s", d.id, props.Device, backendName(props.BackendType), adapterTypeName(props.AdapterType))
	d.loopLimited = props.AdapterType == wgpu.AdapterTypeCPU
	d.block = wait == "block"
	d.threads = runtime.NumCPU()
	if n, err := strconv.Atoi(os.Getenv("LP_NUM_THREADS")); err == nil && n > 0 {
		d.threads = n
	}
	d.limits = requestable(d.adapter.GetLimits())
	var features []wgpu.FeatureName
	for _, f := range []wgpu.FeatureName{wgpu.NativeFeatureSubgroup, wgpu.FeatureNameSubgroups} {
		if sub != "off" && d.adapter.HasFeature(f) && !d.subgroups {
			features, d.subgroups = append(features, f), true
			d.enableSubgroups = f == wgpu.FeatureNameSubgroups
		}
	}
	if f16 != "packed" && d.adapter.HasFeature(wgpu.FeatureNameShaderF16) {
		features, d.f16 = append(features, wgpu.FeatureNameShaderF16), true
	}
	stamps := d.prof != nil && d.adapter.HasFeature(wgpu.FeatureNameTimestampQuery)
	if stamps {
		features = append(features, wgpu.FeatureNameTimestampQuery)
	}
	d.dev, err = d.adapter.RequestDevice(&wgpu.DeviceDescriptor{
		Label:            "extensor",
		RequiredFeatures: features,
		RequiredLimits:   &d.limits,
		DeviceLostCallback: func(reason wgpu.DeviceLostReason, message string) {
			d.lost.Store(fmt.Sprintf("%s (%v)", message, reason))
		},
	})
	if err != nil {
		d.adapter.Release()
		d.instance.Release()
		return nil, fmt.Errorf("webgpu: requesting a device from %s: %v", props.Device, err)
	}
	if err := d.watchErrors(); err != nil {
		d.dev.Release()
		d.adapter.Release()
		d.instance.Release()
		return nil, err
	}
	d.limits = d.dev.GetLimits()
	if d.f16 {
		d.info += ", f16"
	}
	if d.subgroups {
		d.info += ", subgroups"
	}
	// One consistent pair: a binding is never larger than a buffer.
	d.limits.MaxStorageBufferBindingSize = min(d.limits.MaxStorageBufferBindingSize, d.limits.MaxBufferSize)
	d.queue = d.dev.GetQueue()
	if stamps {
		if err := d.initStamps(); err != nil {
			d.Close()
			return nil, fmt.Errorf("webgpu: creating the profile's timestamp queries: %v", err)
		}
	}
	d.pool.init(d)
	d.paramBuf, err = d.dev.TryCreateBuffer(&wgpu.BufferDescriptor{
		Label: "extensor params",
		Usage: wgpu.BufferUsageStorage | wgpu.BufferUsageCopyDst,
		Size:  paramSlots * paramSlot,
	})
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("webgpu: creating the parameter buffer: %v", err)
	}
	flags, err := d.dev.TryCreateBuffer(&wgpu.BufferDescriptor{Label: "extensor index flags", Usage: storageUsage, Size: flagBytes})
	if err == nil {
		d.flags = &buffer{resource: &resource{b: flags}, dt: device.Int32, n: flagBytes / 4}
		d.flagsStaging, err = d.dev.TryCreateBuffer(&wgpu.BufferDescriptor{Label: "extensor index flags readback", Usage: stagingUsage, Size: flagBytes})
	}
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("webgpu: creating the index flags: %v", err)
	}
	spare, err := d.dev.TryCreateBuffer(&wgpu.BufferDescriptor{Label: "extensor spare binding", Usage: storageUsage, Size: flagBytes})
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("webgpu: creating the spare binding: %v", err)
	}
	d.spare = &buffer{resource: &resource{b: spare}, dt: device.Int32, n: flagBytes / 4}
	return d, nil
}

// flagBytes is the size of the index flags: 4 u32 words.
const flagBytes = 16

// site returns the id of the op site in the index flags, marking them as
// possibly written.
func (d *Device) site(name string) uint32 {
	d.flagsDirty = true
	id, ok := d.siteIDs[name]
	if !ok {
		id = uint32(len(d.sites))
		d.sites = append(d.sites, name)
		d.siteIDs[name] = id
	}
	return id
}

// readFlags reads the index flags copied into their staging buffer,
// records an *device.IndexError if a kernel set them, and clears them.
func (d *Device) readFlags() {
	var count, index, classes, site uint32
	d.readMapped(d.flagsStaging, flagBytes, "the index flags", func(w []byte) {
		count, index, classes, site = binary.LittleEndian.Uint32(w), binary.LittleEndian.Uint32(w[4:]), binary.LittleEndian.Uint32(w[8:]), binary.LittleEndian.Uint32(w[12:])
	})
	if count == 0 {
		return
	}
	name := "a kernel"
	if int(site) < len(d.sites) {
		name = d.sites[site]
	}
	d.fail(&device.IndexError{Site: name, Index: int(int32(index)), Classes: int(classes)})
	if err := d.queue.TryWriteBuffer(d.flags.b, 0, make([]byte, flagBytes)); err != nil {
		d.fail(fmt.Errorf("webgpu: clearing the index flags: %v", err))
	}
}

// Name returns "webgpu".
func (d *Device) Name() string { return "webgpu" }

// String names the device and describes its adapter and the optional
// features its kernels use, e.g. "webgpu#1: llvmpipe (LLVM 15.0.6, 256
// bits), Vulkan, CPU, f16, subgroups".
func (d *Device) String() string { return d.info }

// Limits returns the limits of the device: the adapter's, requested when
// the device was made, with the binding size no larger than the buffer
// size.
func (d *Device) Limits() wgpu.Limits { return d.limits }

// MaxBinding returns the largest storage binding, in bytes
// (device.BindingLimit).
func (d *Device) MaxBinding() int {
	return int(min(d.limits.MaxStorageBufferBindingSize, math.MaxInt32))
}

// Supports reports true for float32, float16 and int32.
func (d *Device) Supports(dt device.DType) bool {
	return dt == device.Float32 || dt == device.Int32 || dt == device.Float16
}

// fail records a runtime failure; the next Flush, Read or Sync reports the
// first one recorded since the last report.
func (d *Device) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

// writing takes the device's mutex for a call that computes outs (nil
// ones ignored), until written: a failure that keeps the call's work from
// running (refuse), or a failed operand of it (tainted), fails them.
func (d *Device) writing(outs ...device.Buffer) {
	d.mu.Lock()
	d.outs = d.outs[:0]
	for _, o := range outs {
		if o != nil {
			d.outs = append(d.outs, d.buf(o).resource)
		}
	}
}

// written ends the call writing began.
func (d *Device) written() {
	d.outs = d.outs[:0]
	d.mu.Unlock()
}

// refuse records err, a failure that keeps the current call's work from
// running, and fails the call's outputs with it.
func (d *Device) refuse(err error) {
	d.fail(err)
	d.failOuts(err)
}

// failOuts fails the current call's outputs with err, but those that
// failed before.
func (d *Device) failOuts(err error) {
	for _, r := range d.outs {
		if r.failed == nil {
			r.failed = err
		}
	}
}

// tainted reports whether one of bufs, the operands of a command, failed,
// and then fails the current call's outputs with its failure: work on a
// failed buffer is not recorded. The open chain is recorded first where
// it binds one of bufs, so that a failure of its kernel fails what reads
// its values.
func (d *Device) tainted(bufs ...*buffer) bool {
	if d.chain != nil && d.chain.bindsAnyOf(bufs) {
		d.flushChain()
	}
	return d.failedIn(bufs...)
}

// failedIn is tainted without the chain: for a call joining it.
func (d *Device) failedIn(bufs ...*buffer) bool {
	for _, b := range bufs {
		if b != nil && b.resource != nil && b.failed != nil {
			d.failOuts(b.failed)
			return true
		}
	}
	return false
}

// report returns the failure recorded since the last report, once.
func (d *Device) report() error {
	err := d.err
	d.err = nil
	return err
}

// ok reports whether work may still be recorded: until Close.
func (d *Device) ok() bool {
	if d.closed {
		d.fail(fmt.Errorf("webgpu: %s used after Close", d.id))
		return false
	}
	return true
}

// Flush submits the open batch without waiting for it, and reports the
// failure recorded since the last report.
func (d *Device) Flush() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.flush()
	return d.report()
}

// flush submits the open batch, and learns whether submitted work has
// completed.
func (d *Device) flush() {
	d.submit()
	d.reclaim()
}

// submit submits the open batch.
func (d *Device) submit() {
	if d.closed {
		return
	}
	d.flushChain()
	if d.encoder == nil {
		return
	}
	d.endPass()
	enc := d.encoder
	d.encoder = nil
	defer enc.Release()
	if len(d.params) > 0 {
		if err := d.queue.TryWriteBuffer(d.paramBuf, uint64(d.paramFrom), d.params); err != nil {
			d.fail(fmt.Errorf("webgpu: writing the parameters of %s: %v", d.batchLabels(0), err))
		}
	}
	d.paramFrom += uint32(len(d.params))
	stamped := d.prof.stamps() && d.resolveStamps(enc)
	cmd, err := enc.TryFinish(nil)
	if err != nil {
		d.fail(fmt.Errorf("webgpu: %s: %v", d.batchLabels(0), err))
	} else {
		d.last = d.queue.Submit(cmd)
		d.submitted++
		n := d.submitted
		d.queue.OnSubmittedWorkDone(func(wgpu.QueueWorkDoneStatus) {
			for old := d.done.Load(); old < n && !d.done.CompareAndSwap(old, n); old = d.done.Load() {
			}
		})
		if err := d.asyncErrors(); err != nil {
			d.fail(fmt.Errorf("webgpu: %s: %v", d.batchLabels(0), err))
		}
		cmd.Release()
		if stamped {
			d.readStamps()
		}
	}
	if d.prof != nil {
		d.prof.pending = d.prof.pending[:0] // read, or lost with the batch
	}
	d.params = d.params[:0]
	d.dispatches = 0
	d.labels = d.labels[:0]
}

// batchLabels names the open batch's kernels from the from'th on, for
// an error: "kernel k", or "kernels [k1 k2 …]", each distinct name once,
// at most 16 of them.
func (d *Device) batchLabels(from int) string {
	var names []string
	for _, l := range d.labels[from:] {
		if !slices.Contains(names, l) {
			names = append(names, l)
		}
	}
	if len(names) == 1 {
		return "kernel " + names[0]
	}
	if len(names) > 16 {
		names = append(names[:16], fmt.Sprintf("and %d more", len(names)-16))
	}
	return "kernels [" + strings.Join(names, " ") + "]"
}

// wait submits the open batch and waits until the queue is idle, polling
// without blocking unless EnvWait says block (a blocking wait crashes
// lavapipe on long dispatches).
func (d *Device) wait() {
	check := false
	if d.flagsDirty && !d.closed {
		if enc := d.encoderFor(); enc != nil {
			check = enc.TryCopyBufferToBuffer(d.flags.b, 0, d.flagsStaging, 0, flagBytes) == nil
			d.flagsDirty = !check
		}
	}
	before := d.submitted
	defer func() {
		switch {
		case !check:
		case d.submitted > before && d.completed == d.submitted:
			d.readFlags()
		default: // the batch with the copy failed, or did not finish
			d.flagsDirty = true
		}
	}()
	d.submit() // not flush: drain polls
	if d.completed == d.submitted {
		return
	}
	d.drain()
}

// drain waits until the submitted work is done, reporting whether it is
// (else the device was lost, or the wait timed out, recorded as the
// failure). A blocking wait (EnvWait) polls once, for the last
// submission. Otherwise it polls without sleeping for the first spinFor
// (a GPU finishes short work in microseconds, and a sleep costs tens of
// them), yielding the processor between polls; then sleeps, longer as the
// wait goes on, so that a long wait on a CPU adapter leaves the cores to
// its threads.
func (d *Device) drain() bool {
	if d.block {
		idx := uint64(d.last)
		d.dev.Poll(true, &idx)
		if d.lost.Load() != nil {
			d.fail(fmt.Errorf("webgpu: %s was lost: %v", d.id, d.lost.Load()))
			return false
		}
		d.completed = d.submitted
		d.reclaim()
		return true
	}
	start := time.Now()
	nap := 10 * time.Microsecond
	for d.dev.Poll(false, nil); d.done.Load() < d.submitted; d.dev.Poll(false, nil) {
		waited := time.Since(start)
		switch {
		case d.lost.Load() != nil:
			d.fail(fmt.Errorf("webgpu: %s was lost: %v", d.id, d.lost.Load()))
			return false
		case waited > DrainTimeout:
			d.fail(fmt.Errorf("webgpu: the queue did not drain within %v (device lost?)", DrainTimeout))
			return false
		case waited < spinFor:
			runtime.Gosched()
		default:
			time.Sleep(nap)
			nap = min(2*nap, time.Millisecond)
		}
	}
	d.completed = d.submitted
	d.reclaim()
	return true
}

// spinFor is how long a wait polls the device without sleeping.
const spinFor = 2 * time.Millisecond

// Sync waits for all recorded work and reports the first runtime failure
// recorded since the last report.
func (d *Device) Sync() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.closed {
		d.wait()
	}
	return d.report()
}

// Close waits for recorded work, frees every resource of the device,
// including the buffers of tensors still alive, and reports the first
// runtime failure not yet reported. Calling Close twice is safe, and so is
// freeing a buffer after Close.
func (d *Device) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return d.report()
	}
	if d.dev != nil && d.queue != nil {
		d.wait()
	}
	d.closed = true
	d.screen.release()
	d.releaseTextures()
	for t := range d.kept {
		t.release()
	}
	d.kept = nil
	d.pool.releaseAll()
	d.releaseBindGroups()
	for b := range d.live {
		b.b.Release()
		b.b = nil
	}
	d.live = nil
	for _, k := range d.kernels {
		k.release()
	}
	d.kernels = nil
	if d.paramBuf != nil {
		d.paramBuf.Release()
	}
	if d.flags != nil {
		d.flags.b.Release()
	}
	if d.spare != nil {
		d.spare.b.Release()
	}
	if d.flagsStaging != nil {
		d.flagsStaging.Release()
	}
	d.prof.releaseStamps()
	if d.queue != nil {
		d.queue.Release()
	}
	if d.dev != nil {
		d.unwatchErrors()
		d.dev.Release()
	}
	d.adapter.Release()
	if d.surface != nil {
		d.surface.Release()
	}
	d.instance.Release()
	return d.report()
}

// Submissions returns how many batches the device has submitted.
func (d *Device) Submissions() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.submitted
}

// PoolStats returns the statistics of the buffer pool.
func (d *Device) PoolStats() device.PoolStats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.pool.stats
}

// ResetPeak restarts the pool's BytesPeak from BytesLive.
func (d *Device) ResetPeak() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pool.stats.BytesPeak = d.pool.stats.BytesLive
}

var (
	_ device.Device  = (*Device)(nil)
	_ device.Pooler  = (*Device)(nil)
	_ device.Flusher = (*Device)(nil)
)
