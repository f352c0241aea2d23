//go:build cgo

package webgpu

// SetPoolLimit sets how many bytes of free buffers d's pool keeps, for
// tests that need buffers released rather than pooled.
func SetPoolLimit(d *Device, n uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pool.limit = n
}

// AsGPU makes d choose the kernels and work orders it chooses on GPUs
// (coalesced elementwise items, unbounded loops), so that those paths
// run on a CPU adapter too.
func AsGPU(d *Device) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.loopLimited = false
}
