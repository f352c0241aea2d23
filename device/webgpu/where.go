//go:build cgo || js

package webgpu

import (
	"github.com/extensor/extensor/device"
)

// Where sets dst[i] = a[i] where cond[i] ≠ 0, else b[i] (device.Selector).
func (d *Device) Where(dst, cond, a, b device.Buffer) {
	if !d.native(dst, cond, a, b) && d.widenFresh(1, func(w []device.Buffer) { d.Where(w[0], w[1], w[2], w[3]) }, dst, cond, a, b) {
		return
	}
	d.writing(dst)
	defer d.written()
	out, ins := d.buf(dst), []*buffer{d.buf(cond), d.buf(a), d.buf(b)}
	if out.n == 0 || d.join(nodeWhere, "where", -1, out, nil, device.Broadcast{}, []fuseIn{{b: ins[0]}, {b: ins[1]}, {b: ins[2]}}, ins) {
		return
	}
	d.where(out, ins[0], ins[1], ins[2])
}

// where records Where on its own kernel.
func (d *Device) where(out, cond, a, b *buffer) {
	st := d.storeOf(out.dt)
	k := d.kernel(whereSpec{F16: st.native()}, flags(3, 1)...)
	d.runItems(k, 1, itemBytes(false, st), countParams{N: uint32(out.n)}, cond, a, b, out)
}

// countParams are the parameters of a kernel over N items (where.wgsl).
type countParams struct{ N uint32 }

func (whereSpec) params() any { return countParams{} }
