//go:build cgo || js

package webgpu

import (
	"errors"
	"strings"

	"github.com/extensor/extensor/device"
)

// SetPoolLimit sets how many bytes of free buffers d's pool keeps, for
// tests that need buffers released rather than pooled.
func SetPoolLimit(d *Device, n uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pool.limit = n
}

// FailCompiles makes d's compiles of kernels whose names start with
// prefix fail, so that tests reach what follows a kernel's failure.
func FailCompiles(d *Device, prefix string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.compileFault = func(name string) error {
		if strings.HasPrefix(name, prefix) {
			return errors.New("a compile failed by the test")
		}
		return nil
	}
}

// AsGPU makes d choose the kernels and work orders it chooses on GPUs
// (coalesced elementwise items, unbounded loops), so that those paths
// run on a CPU adapter too.
func AsGPU(d *Device) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.loopLimited = false
}

// AsCPU makes d choose the kernels and work orders it chooses on CPU
// adapters (the direct convolution, bounded loops), so that those paths
// run on a GPU too.
func AsCPU(d *Device) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.loopLimited = true
}

// SetTextureLimit lowers d's largest texture side, so that tests reach the
// paths that split work by it.
func SetTextureLimit(d *Device, n uint32) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.limits.MaxTextureDimension2D = n
}

// DirectConvAtAnySize makes d's direct convolution take convolutions
// of any size, so that tests can run it on small ones.
func DirectConvAtAnySize(d *Device) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.directMinFlops = 0
}

// DirectConv reports whether d's direct convolution takes the forward
// of g with f filters (ignoring dtypes), and its gradients.
func DirectConv(d *Device, g device.Window2D, f int) (forward, backward bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	direct := d.convFits(g, f)
	return direct || d.rowsFits(g, f), direct
}

// DirectGradients reports whether d's direct kernels take the gradients
// of g with f filters, the input's too if withX.
func DirectGradients(d *Device, g device.Window2D, f int, withX bool) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.planBackward(g, f, withX)
	return ok
}

// NativeF16 reports whether d stores float16 as WGSL's f16.
func NativeF16(d *Device) bool { return d.f16 }

// SetConvSplits sets the invocations the filters' gradient aims at, and
// returns the old number.
func SetConvSplits(n int) int {
	old := convSplits
	convSplits = n
	return old
}

// TileFits reports whether d can run the tiled matmul variant name (as
// MatMulKernels names it): true for the other kernels.
func TileFits(d *Device, name string) bool {
	for _, t := range tiles {
		if t.String() == name {
			return t.fits(d.limits)
		}
	}
	return true
}

// SetThreads sets the threads d takes a CPU adapter to run workgroups on
// (which split products over k: kParts).
func SetThreads(d *Device, n int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.threads = n
}

// ProfileByHost makes d's profiler time dispatches by the host's clock,
// as on adapters without timestamp queries.
func ProfileByHost(d *Device) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.prof.releaseStamps()
}

// StepGroup returns the most tensors one dispatch of d's update family's
// grouped kernels takes.
func StepGroup(d *Device) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stepGroupOf()
}
