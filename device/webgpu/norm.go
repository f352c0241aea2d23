//go:build cgo || js

package webgpu

import (
	"github.com/extensor/extensor/device"
)

// Norm sets each row of dst to (x − μ)·ρ (device.Normalizer).
func (d *Device) Norm(dst, x device.Buffer, rows, n int, eps float64, center bool) {
	if !d.native(dst, x) && d.widenFresh(1, func(b []device.Buffer) { d.Norm(b[0], b[1], rows, n, eps, center) }, dst, x) {
		return
	}
	d.writing(dst)
	defer d.written()
	d.norm(false, center, rows, n, eps, d.buf(x), d.buf(dst))
}

// NormGrad sets dx to the gradient through Norm (device.Normalizer).
func (d *Device) NormGrad(dx, x, g device.Buffer, rows, n int, eps float64, center bool) {
	if !d.native(dx, x, g) && d.widenFresh(1, func(b []device.Buffer) { d.NormGrad(b[0], b[1], b[2], rows, n, eps, center) }, dx, x, g) {
		return
	}
	d.writing(dx)
	defer d.written()
	d.norm(true, center, rows, n, eps, d.buf(x), d.buf(g), d.buf(dx))
}

// norm runs the norm family: contiguous rows of vec4s that fit a
// workgroup in one pass (the softmax's geometry, softmaxRow), others one
// invocation a row. bufs are the inputs and the output last.
func (d *Device) norm(grad, center bool, rows, n int, eps float64, bufs ...*buffer) {
	if rows == 0 || n == 0 {
		return
	}
	st := d.storeOf(bufs[0].dt)
	if w, v, ok := d.softmaxRow(n / 4); n%4 == 0 && ok {
		k := d.kernel(normSpec{Grad: grad, Center: center, Stage: "row", W: w, V: v, Group: d.group(), F16: st.native()}, flags(len(bufs)-1, 1)...)
		if k == nil {
			return // the failure is recorded
		}
		d.dispatchRows(k, rows, normParams{Rows: uint32(rows), N: uint32(n), Eps: float32(eps)}, bufs...)
		return
	}
	k := d.kernel(normSpec{Grad: grad, Center: center, F16: st.native()}, flags(len(bufs)-1, 1)...)
	if !d.rowLimit(k, n) {
		return
	}
	d.run(k, groupsOf(rows, 64), normParams{Rows: uint32(rows), N: uint32(n), Eps: float32(eps)}, bufs...)
}

// normParams are the norm family's parameters (shaders/norm.wgsl): Rows
// rows of N elements, and eps.
type normParams struct {
	Rows, N uint32
	Eps     float32
}

func (normSpec) params() any { return normParams{} }
