//go:build cgo || js

package webgpu

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/oliverbestmann/webgpu/wgpu"
)

// EnvProfile is the environment variable that turns the kernel profiler
// on: set to anything but "" or "0" when the device opens, it times every
// dispatch, so that Profile can tell where a program's device time goes.
//
// Where the adapter has timestamp queries, each dispatch runs in a compute
// pass of its own whose start and end the GPU stamps, and a wait follows
// each batch: the times are the GPU's, and the program runs at nearly its
// speed. Elsewhere every dispatch is its own submission, waited for, and
// its time is the host's wall clock around it, the submission's own cost
// included; the program runs several times slower. ProfileClock says
// which.
const EnvProfile = "EXTENSOR_PROFILE"

// KernelTime is a kernel's share of the time profiled (EnvProfile).
type KernelTime struct {
	Kernel     string        // the kernel and its specialisation, e.g. "unary/exp/unroll=2"
	Dispatches int           // dispatches recorded
	Time       time.Duration // the time they took, all together
}

// profiler accumulates the kernels' times.
type profiler struct {
	byKernel map[string]*KernelTime
	// With the adapter's timestamp queries: the stamps of the open batch's
	// passes go to qs, two a pass (its start and end), pending naming the
	// batch's kernels in order; at submission they are resolved into
	// resolve and copied to staging, read once the batch is done. period
	// is the nanoseconds a tick.
	qs               *wgpu.QuerySet
	resolve, staging *wgpu.Buffer
	period           float64
	pending          []string
}

func profileOn() *profiler {
	if v := os.Getenv(EnvProfile); v == "" || v == "0" {
		return nil
	}
	return &profiler{byKernel: map[string]*KernelTime{}}
}

// stamps reports whether the profiler times dispatches by the GPU's
// timestamps.
func (p *profiler) stamps() bool { return p != nil && p.qs != nil }

// initStamps creates the query set and buffers of the GPU's timestamps,
// on a device with the timestamp-query feature.
func (d *Device) initStamps() error {
	p := d.prof
	var err error
	if p.qs, err = d.dev.TryCreateQuerySet(&wgpu.QuerySetDescriptor{Label: "extensor profile", Type: wgpu.QueryTypeTimestamp, Count: 2 * BatchSize}); err != nil {
		return err
	}
	if p.resolve, err = d.dev.TryCreateBuffer(&wgpu.BufferDescriptor{Label: "extensor profile stamps", Usage: wgpu.BufferUsageQueryResolve | wgpu.BufferUsageCopySrc, Size: 16 * BatchSize}); err != nil {
		return err
	}
	if p.staging, err = d.dev.TryCreateBuffer(&wgpu.BufferDescriptor{Label: "extensor profile stamps readback", Usage: stagingUsage, Size: 16 * BatchSize}); err != nil {
		return err
	}
	p.period = float64(d.queue.GetTimestampPeriod())
	return nil
}

// releaseStamps releases what initStamps created.
func (p *profiler) releaseStamps() {
	if p == nil {
		return
	}
	for _, b := range []*wgpu.Buffer{p.resolve, p.staging} {
		if b != nil {
			b.Release()
		}
	}
	if p.qs != nil {
		p.qs.Release()
	}
	p.qs, p.resolve, p.staging = nil, nil, nil
}

// passStamps returns the timestamp writes of the next dispatch's pass.
func (p *profiler) passStamps() *wgpu.ComputePassDescriptor {
	i := uint32(len(p.pending))
	return &wgpu.ComputePassDescriptor{TimestampWrites: &wgpu.PassTimestampWrites{QuerySet: p.qs, BeginningOfPassWriteIndex: 2 * i, EndOfPassWriteIndex: 2*i + 1}}
}

// resolveStamps records, into the batch about to be submitted, the
// resolution of its passes' stamps and their copy to the staging buffer,
// and reports whether it did (the batch stamped passes, and recording
// succeeded).
func (d *Device) resolveStamps(enc *wgpu.CommandEncoder) bool {
	p := d.prof
	n := len(p.pending)
	if n == 0 {
		return false
	}
	if err := enc.TryResolveQuerySet(p.qs, 0, uint32(2*n), p.resolve, 0); err != nil {
		d.fail(fmt.Errorf("webgpu: resolving the profile's timestamps: %v", err))
		return false
	}
	if err := enc.TryCopyBufferToBuffer(p.resolve, 0, p.staging, 0, uint64(16*n)); err != nil {
		d.fail(fmt.Errorf("webgpu: copying the profile's timestamps: %v", err))
		return false
	}
	return true
}

// readStamps waits for the batch just submitted, whose passes were
// stamped (pending names their kernels), and adds each pass's time to
// its kernel's.
func (d *Device) readStamps() {
	p := d.prof
	if !d.drain() {
		return
	}
	d.readMapped(p.staging, uint64(16*len(p.pending)), "the profile's timestamps", func(w []byte) {
		for i, name := range p.pending {
			begin, end := binary.LittleEndian.Uint64(w[16*i:]), binary.LittleEndian.Uint64(w[16*i+8:])
			ticks := float64(0)
			if end > begin { // a stamp pair out of order (GPU clocks may do that) counts as nothing
				ticks = float64(end - begin)
			}
			d.addTime(name, time.Duration(ticks*p.period))
		}
	})
}

// addTime adds a dispatch of kernel name that took t.
func (d *Device) addTime(name string, t time.Duration) {
	kt := d.prof.byKernel[name]
	if kt == nil {
		kt = &KernelTime{Kernel: name}
		d.prof.byKernel[name] = kt
	}
	kt.Dispatches++
	kt.Time += t
}

// ProfileClock says how the profiler times dispatches: "gpu" (the GPU's
// timestamps), "host" (the host's wall clock around each), or "" when
// EnvProfile was not set as the device opened.
func (d *Device) ProfileClock() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case d.prof == nil:
		return ""
	case d.prof.stamps():
		return "gpu"
	}
	return "host"
}

// timed waits for the dispatch of kernel name recorded since start, and
// adds the time it took to name's.
func (d *Device) timed(name string, start time.Time) {
	d.wait()
	d.addTime(name, time.Since(start))
}

// Profile returns the time each kernel took since the device opened or
// the last ResetProfile, the longest first; nil unless EnvProfile was set
// when the device opened.
func (d *Device) Profile() []KernelTime {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.prof == nil {
		return nil
	}
	out := make([]KernelTime, 0, len(d.prof.byKernel))
	for _, kt := range d.prof.byKernel {
		out = append(out, *kt)
	}
	slices.SortFunc(out, func(a, b KernelTime) int {
		return cmp.Or(cmp.Compare(b.Time, a.Time), cmp.Compare(a.Kernel, b.Kernel))
	})
	return out
}

// ResetProfile forgets the times profiled so far.
func (d *Device) ResetProfile() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.prof != nil {
		clear(d.prof.byKernel)
	}
}
