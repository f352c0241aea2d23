//go:build cgo

package webgpu

import (
	"cmp"
	"os"
	"slices"
	"time"
)

// EnvProfile is the environment variable that turns the kernel profiler
// on: set to anything but "" or "0" when the device opens, it makes every
// dispatch its own submission, waited for and timed, so that Profile can
// tell where a program's device time goes. The times are the host's wall
// clock around each submission (on lavapipe about 0.1 ms of each is the
// submission's own cost); the program runs several times slower.
const EnvProfile = "EXTENSOR_PROFILE"

// KernelTime is a kernel's share of the time profiled (EnvProfile).
type KernelTime struct {
	Kernel     string        // the kernel and its specialisation, e.g. "unary/exp/vec4"
	Dispatches int           // dispatches recorded
	Time       time.Duration // the time they took, all together
}

// profiler accumulates the kernels' times.
type profiler struct {
	byKernel map[string]*KernelTime
}

func profileOn() *profiler {
	if v := os.Getenv(EnvProfile); v == "" || v == "0" {
		return nil
	}
	return &profiler{byKernel: map[string]*KernelTime{}}
}

// timed waits for the dispatch of kernel name recorded since start, and
// adds the time it took to name's.
func (d *Device) timed(name string, start time.Time) {
	d.wait()
	kt := d.prof.byKernel[name]
	if kt == nil {
		kt = &KernelTime{Kernel: name}
		d.prof.byKernel[name] = kt
	}
	kt.Dispatches++
	kt.Time += time.Since(start)
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
