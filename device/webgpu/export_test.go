//go:build cgo

package webgpu

// SetPoolLimit sets how many bytes of free buffers d's pool keeps, for
// tests that need buffers released rather than pooled.
func SetPoolLimit(d *Device, n uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pool.limit = n
}
