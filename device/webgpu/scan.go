//go:build cgo || js

package webgpu

import (
	"github.com/extensor/extensor/device"
)

// Cumsum sets dst to the running sums of x along axis (device.Scanner).
func (d *Device) Cumsum(dst, x device.Buffer, shape []int, axis int, reverse bool) {
	if !d.native(dst, x) && d.widen(1, func(b []device.Buffer) { d.Cumsum(b[0], b[1], shape, axis, reverse) }, dst, x) {
		return
	}
	d.writing(dst)
	defer d.written()
	count, n, inner := rows(shape, axis)
	if count == 0 || n == 0 {
		return
	}
	st := d.storeOf(d.buf(x).dt)
	k := d.kernel(scanSpec{Reverse: reverse, F16: st.native()}, flags(1, 1)...)
	if !d.rowLimit(k, n) {
		return
	}
	d.run(k, groupsOf(count, 256), lineParams{Count: uint32(count), N: uint32(n), Inner: uint32(inner)}, d.buf(x), d.buf(dst))
}

func (scanSpec) params() any { return lineParams{} }
