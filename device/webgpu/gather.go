//go:build cgo || js

package webgpu

import (
	"github.com/extensor/extensor/device"
)

// Gather takes elements (or table rows) as t describes.
func (d *Device) Gather(dst, x, idx device.Buffer, t device.Take) {
	if !d.native(dst, x) && d.widen(1, func(b []device.Buffer) { d.Gather(b[0], b[1], b[2], t) }, dst, x, idx) {
		return
	}
	d.writing(dst)
	defer d.written()
	st := d.storeOf(d.buf(x).dt)
	rowsForm := t.K > 0 && !t.Table
	k := d.kernel(gatherSpec{Table: t.Table, Rows: rowsForm, F16: st.native()}, flags(2, 2)...)
	n, w := t.N, t.D
	switch {
	case t.Table:
		n *= t.D
	case rowsForm:
		n, w = t.N*t.K, t.K
	}
	d.run(k, groupsOf(n, 256), gatherParams{N: uint32(t.N), C: uint32(t.C), Scale: float32(t.Scale), Site: d.site(t.Site), Width: uint32(w),
		Ignoring: b2u(t.Ignoring), IgnoreIndex: int32(t.IgnoreIndex)},
		d.buf(x), d.buf(idx), d.buf(dst), d.flags)
}

// tableRows is how many table rows one invocation of the table form's
// gradient serves (shaders/gather.wgsl's tableRows).
const tableRows = 32

// GatherGrad scatters scale·g back to where Gather took from, each
// element of dx gathering what it receives: a feature of a block of
// tableRows table rows loops over the indices, in chunks of at most
// maxLoop a dispatch; an element of the rows form over its row's k
// indices.
func (d *Device) GatherGrad(dx, idx, g device.Buffer, t device.Take) {
	if !d.native(dx, g) && d.widen(1, func(b []device.Buffer) { d.GatherGrad(b[0], b[1], b[2], t) }, dx, idx, g) {
		return
	}
	d.writing(dx)
	defer d.written()
	st := d.storeOf(d.buf(g).dt)
	rowsForm := t.K > 0 && !t.Table
	k := d.kernel(gatherSpec{Grad: true, Table: t.Table, Rows: rowsForm, F16: st.native()}, flags(2, 2)...)
	p := gatherParams{N: uint32(t.N), C: uint32(t.C), Scale: float32(t.Scale), Site: d.site(t.Site), Width: uint32(t.D),
		Ignoring: b2u(t.Ignoring), IgnoreIndex: int32(t.IgnoreIndex)}
	if rowsForm {
		if !d.rowLimit(k, t.K) {
			return
		}
		p.Width = uint32(t.K)
		d.run(k, groupsOf(t.N*t.C, 256), p, d.buf(idx), d.buf(g), d.buf(dx), d.flags)
		return
	}
	if !t.Table {
		d.run(k, groupsOf(t.N*t.C, 256), p, d.buf(idx), d.buf(g), d.buf(dx), d.flags)
		return
	}
	for i0 := 0; i0 < max(t.N, 1); i0 += maxLoop {
		q := p
		q.I0, q.I1 = uint32(i0), uint32(min(t.N, i0+maxLoop))
		d.run(k, groupsOf(t.D*((t.C+tableRows-1)/tableRows), 256), q, d.buf(idx), d.buf(g), d.buf(dx), d.flags)
	}
}

// gatherParams are the gather family's parameters (shaders/gather.wgsl):
// N rows of indices into C classes (rows of a table), scaled by Scale,
// reported at Site; Width is the table's row width (the rows form: the
// indices a row); the table form's gradient sums the indices in [I0, I1);
// an index equal to IgnoreIndex is ignored where Ignoring ≠ 0.
type gatherParams struct {
	N, C        uint32
	Scale       float32
	Site, Width uint32
	I0, I1      uint32
	Ignoring    uint32
	IgnoreIndex int32
}

func (gatherSpec) params() any { return gatherParams{} }
