//go:build cgo

package webgpu

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/extensor/extensor/device"
	"github.com/rajveermalviya/go-webgpu/wgpu"
)

// EnvAdapter is the environment variable that chooses the adapter: an index
// into the enumerated adapters, or a substring of an adapter's name.
const EnvAdapter = "EXTENSOR_ADAPTER"

// BatchSize is the number of dispatches recorded before the device submits
// them without being asked.
const BatchSize = 256

// DrainTimeout bounds a wait for the queue to drain: a device that stops
// answering (lost, or hung) becomes an error instead of a hang.
var DrainTimeout = 10 * time.Minute

// paramWords is the number of u32 parameter words each dispatch may use; its
// slot in the parameter buffer is aligned to 256 bytes.
const (
	paramWords = 64
	paramSlot  = 256
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

// Device is a WebGPU device. Create it with Open or device.Open("webgpu").
type Device struct {
	instance *wgpu.Instance
	adapter  *wgpu.Adapter
	dev      *wgpu.Device
	queue    *wgpu.Queue
	info     string
	limits   wgpu.Limits
	// loopLimited is set on CPU adapters (lavapipe), which silently end a
	// loop after about 32768 iterations.
	loopLimited bool

	kernels map[string]*kernel

	// The open batch.
	encoder    *wgpu.CommandEncoder
	params     []byte // parameter slots of the open batch
	paramBuf   *wgpu.Buffer
	dispatches int // in the open batch
	labels     []string

	submitted, completed uint64 // submission counts
	pool                 pool

	err    error // first runtime failure; sticky
	closed bool
}

// Open creates a WebGPU device on the adapter chosen as described in the
// package documentation. Without an adapter it returns an error wrapping
// device.ErrUnavailable.
func Open() (*Device, error) {
	d := &Device{kernels: map[string]*kernel{}}
	d.instance = wgpu.CreateInstance(nil)
	var err error
	d.adapter, err = chooseAdapter(d.instance)
	if err != nil {
		d.instance.Release()
		return nil, err
	}
	props := d.adapter.GetProperties()
	d.info = fmt.Sprintf("webgpu: %s, %s, %s", props.Name, props.BackendType, props.AdapterType)
	d.loopLimited = props.AdapterType == wgpu.AdapterType_CPU
	d.limits = d.adapter.GetLimits().Limits
	d.dev, err = d.adapter.RequestDevice(&wgpu.DeviceDescriptor{
		Label:          "extensor",
		RequiredLimits: &wgpu.RequiredLimits{Limits: d.limits},
	})
	if err != nil {
		d.adapter.Release()
		d.instance.Release()
		return nil, fmt.Errorf("webgpu: requesting a device from %s: %v", props.Name, err)
	}
	d.limits = d.dev.GetLimits().Limits
	d.queue = d.dev.GetQueue()
	d.pool.init(d)
	d.paramBuf, err = d.dev.CreateBuffer(&wgpu.BufferDescriptor{
		Label: "extensor params",
		Usage: wgpu.BufferUsage_Storage | wgpu.BufferUsage_CopyDst,
		Size:  BatchSize * paramSlot,
	})
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("webgpu: creating the parameter buffer: %v", err)
	}
	return d, nil
}

func chooseAdapter(inst *wgpu.Instance) (*wgpu.Adapter, error) {
	want := strings.TrimSpace(os.Getenv(EnvAdapter))
	if want == "" {
		a, err := inst.RequestAdapter(&wgpu.RequestAdapterOptions{PowerPreference: wgpu.PowerPreference_HighPerformance})
		if err != nil || a == nil {
			return nil, fmt.Errorf("webgpu: no adapter found (on Debian without a GPU: apt-get install mesa-vulkan-drivers libvulkan1): %w", device.ErrUnavailable)
		}
		return a, nil
	}
	adapters := inst.EnumerateAdapters(nil)
	var names []string
	pick := -1
	idx, numeric := strconv.Atoi(want)
	for i, a := range adapters {
		name := a.GetProperties().Name
		names = append(names, fmt.Sprintf("%d: %s", i, name))
		if pick < 0 && ((numeric == nil && i == idx) || (numeric != nil && strings.Contains(strings.ToLower(name), strings.ToLower(want)))) {
			pick = i
		}
	}
	for i, a := range adapters {
		if i != pick {
			a.Release()
		}
	}
	if pick < 0 {
		return nil, fmt.Errorf("webgpu: %s=%q matches no adapter (have: %s): %w", EnvAdapter, want, strings.Join(names, "; "), device.ErrUnavailable)
	}
	return adapters[pick], nil
}

// Name returns "webgpu".
func (d *Device) Name() string { return "webgpu" }

// String describes the adapter, e.g. "webgpu: llvmpipe (LLVM 15.0.6, 256 bits), Vulkan, CPU".
func (d *Device) String() string { return d.info }

// Limits returns the limits of the device, which are the adapter's.
func (d *Device) Limits() wgpu.Limits { return d.limits }

// Supports reports true for float32 and int32.
func (d *Device) Supports(dt device.DType) bool { return dt == device.Float32 || dt == device.Int32 }

// fail records the first runtime failure.
func (d *Device) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

// ok reports whether work may still be recorded.
func (d *Device) ok() bool {
	if d.closed {
		d.fail(fmt.Errorf("webgpu: device used after Close"))
	}
	return d.err == nil
}

// Flush submits the open batch without waiting for it.
func (d *Device) Flush() error {
	if d.closed {
		return d.err
	}
	if d.encoder == nil {
		d.reclaim()
		return d.err
	}
	enc := d.encoder
	d.encoder = nil
	defer enc.Release()
	if len(d.params) > 0 {
		if err := d.queue.WriteBuffer(d.paramBuf, 0, d.params); err != nil {
			d.fail(fmt.Errorf("webgpu: writing parameters of kernels %s: %v", d.batchLabels(), err))
		}
	}
	cmd, err := enc.Finish(nil)
	if err != nil {
		d.fail(fmt.Errorf("webgpu: finishing a batch of kernels %s: %v", d.batchLabels(), err))
	} else {
		if d.err == nil {
			d.queue.Submit(cmd)
			d.submitted++
		}
		cmd.Release()
	}
	d.params = d.params[:0]
	d.dispatches = 0
	d.labels = d.labels[:0]
	d.reclaim()
	return d.err
}

func (d *Device) batchLabels() string {
	return "[" + strings.Join(d.labels, " ") + "]"
}

// wait submits the open batch and waits until the queue is idle, polling
// without blocking (a blocking wait crashes lavapipe on long dispatches).
func (d *Device) wait() {
	d.Flush()
	if d.completed == d.submitted {
		return
	}
	spin := 0
	start := time.Now()
	for !d.dev.Poll(false, nil) {
		if time.Since(start) > DrainTimeout {
			d.fail(fmt.Errorf("webgpu: the queue did not drain within %v (device lost?)", DrainTimeout))
			return
		}
		switch {
		case spin < 50:
			spin++
		case spin < 200:
			spin++
			time.Sleep(20 * time.Microsecond)
		default:
			time.Sleep(200 * time.Microsecond)
		}
	}
	d.completed = d.submitted
	d.reclaim()
}

// Sync waits for all recorded work and returns the first runtime failure.
func (d *Device) Sync() error {
	if !d.closed {
		d.wait()
	}
	return d.err
}

// Close waits for recorded work, frees every resource of the device and
// returns the first runtime failure. Calling Close twice is safe.
func (d *Device) Close() error {
	if d.closed {
		return d.err
	}
	if d.dev != nil && d.queue != nil {
		d.wait()
	}
	d.closed = true
	d.pool.releaseAll()
	for _, k := range d.kernels {
		k.release()
	}
	d.kernels = nil
	if d.paramBuf != nil {
		d.paramBuf.Release()
	}
	if d.queue != nil {
		d.queue.Release()
	}
	if d.dev != nil {
		d.dev.Release()
	}
	d.adapter.Release()
	d.instance.Release()
	return d.err
}

// Submissions returns how many batches the device has submitted.
func (d *Device) Submissions() uint64 { return d.submitted }

// PoolStats returns the statistics of the buffer pool.
func (d *Device) PoolStats() device.PoolStats { return d.pool.stats }

var (
	_ device.Device  = (*Device)(nil)
	_ device.Pooler  = (*Device)(nil)
	_ device.Flusher = (*Device)(nil)
)
