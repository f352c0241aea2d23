//go:build cgo || js

package webgpu

import (
	"fmt"

	"github.com/oliverbestmann/webgpu/wgpu"

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
	p := gatherParams{N: uint32(t.N), C: uint32(t.C), Scale: float32(t.Scale), Site: d.site(t.Site), Width: uint32(w),
		Ignoring: b2u(t.Ignoring), IgnoreIndex: int32(t.IgnoreIndex), I1: uint32(t.C)}
	xb := d.buf(x)
	if t.Table && xb.bindSize() > d.limits.MaxStorageBufferBindingSize {
		d.gatherTableChunks(k, n, p, xb, d.buf(idx), d.buf(dst), t)
		return
	}
	d.run(k, groupsOf(n, 256), p, xb, d.buf(idx), d.buf(dst), d.flags)
}

// gatherTableChunks runs the table gather with the table bound a chunk of
// rows at a time, at offsets aligned for storage bindings: a table larger
// than the binding limit (a language model's token embedding).
func (d *Device) gatherTableChunks(k *kernel, n int, p gatherParams, x, idx, dst *buffer, t device.Take) {
	if k == nil || d.tainted(x, idx, dst) {
		return
	}
	rowBytes := uint64(t.D) * uint64(x.dt.Size())
	align := max(uint64(d.limits.MinStorageBufferOffsetAlignment), 256)
	step := align / gcd(rowBytes, align) // rows whose bytes are a multiple of align
	rows := d.limits.MaxStorageBufferBindingSize / rowBytes / step * step
	if rows == 0 {
		d.refuse(fmt.Errorf("webgpu: kernel %s: a table row of %d bytes in %d-byte aligned chunks passes the storage binding size of %s, %d bytes: %w",
			k.name, rowBytes, align, d.info, d.limits.MaxStorageBufferBindingSize, device.ErrOutOfMemory))
		return
	}
	gx, gy, err := grid(groupsOf(n, 256))
	if err != nil {
		d.refuse(fmt.Errorf("webgpu: kernel %s: %v", k.name, err))
		return
	}
	for r0 := uint64(0); r0 < uint64(t.C); r0 += rows {
		r1 := min(uint64(t.C), r0+rows)
		p.I0, p.I1 = uint32(r0), uint32(r1)
		off := r0 * rowBytes
		entries := []wgpu.BindGroupEntry{
			{Binding: 1, Buffer: x.b, Offset: off, Size: min(vecBytes((r1-r0)*rowBytes), x.size-off)},
			{Binding: 2, Buffer: idx.b, Size: idx.bindSize()},
			{Binding: 3, Buffer: dst.b, Size: dst.bindSize()},
			{Binding: 4, Buffer: d.flags.b, Size: d.flags.bindSize()},
		}
		d.dispatchEntries(k, gx, gy, 1, p, entries)
	}
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// tableRows is how many table rows one invocation of the table form's
// gradient serves, 4 features of each (shaders/gather.wgsl's tableRows).
const tableRows = 64

// GatherGrad scatters scale·g back to where Gather took from, each
// element of dx gathering what it receives: 4 features of a block of
// tableRows table rows loop over the indices, in chunks of at most
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
		d.run(k, groupsOf(groupsOf(t.D, 4)*groupsOf(t.C, tableRows), 256), q, d.buf(idx), d.buf(g), d.buf(dx), d.flags)
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
