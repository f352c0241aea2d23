//go:build cgo || js

package webgpu

import (
	"github.com/extensor/extensor/device"
)

// Norm sets each row of dst to (x − μ)·ρ, times w and plus b where they
// are not nil (device.Normalizer).
func (d *Device) Norm(dst, x, w, b device.Buffer, rows, n int, eps float64, center bool) {
	if !d.native(dst, x, w, b) && d.widenFresh(1, func(s []device.Buffer) { d.Norm(s[0], s[1], s[2], s[3], rows, n, eps, center) }, dst, x, w, b) {
		return
	}
	d.writing(dst)
	defer d.written()
	p := normParams{HasW: b2u(w != nil), HasB: b2u(b != nil)}
	d.norm(false, center, rows, n, eps, p, d.buf(x), d.buf(dst), d.orFlags(w), d.orFlags(b))
}

// NormGrad sets dx to the gradient through Norm, and gxh to g·x̂ unless
// it is nil (device.Normalizer).
func (d *Device) NormGrad(dx, gxh, x, g, w device.Buffer, rows, n int, eps float64, center bool) {
	if !d.native(dx, gxh, x, g, w) && d.widenFresh(2, func(s []device.Buffer) { d.NormGrad(s[0], s[1], s[2], s[3], s[4], rows, n, eps, center) }, dx, gxh, x, g, w) {
		return
	}
	d.writing(dx, gxh)
	defer d.written()
	// An unset gxh binds the spare buffer, written by none: not the flags,
	// which an unset w binds, read (no buffer is bound twice, written).
	out := d.spare
	if gxh != nil {
		out = d.buf(gxh)
	}
	p := normParams{HasW: b2u(w != nil), HasGXH: b2u(gxh != nil)}
	d.norm(true, center, rows, n, eps, p, d.buf(x), d.buf(g), d.buf(dx), d.orFlags(w), out)
}

// orFlags returns b's buffer, or for a nil b the index flags' (bound
// where a kernel's optional input is absent, whose values it discards:
// it reads element 0 at most).
func (d *Device) orFlags(b device.Buffer) *buffer {
	if b == nil {
		return d.flags
	}
	return d.buf(b)
}

// norm runs the norm family: contiguous rows of vec4s that fit a
// workgroup in one pass (oneRow), others one invocation a row. bufs are
// shaders/norm.wgsl's bindings in order: the inputs x (and g), the
// output, then the affine weights (and gxh).
func (d *Device) norm(grad, center bool, rows, n int, eps float64, p normParams, bufs ...*buffer) {
	if rows == 0 || n == 0 {
		return
	}
	p.Rows, p.N, p.Eps = uint32(rows), uint32(n), float32(eps)
	st := d.storeOf(bufs[0].dt)
	// Which bindings are written: the output, and the gradient's gxh.
	kinds := append(flags(1, 1), false, false)
	if grad {
		kinds = append(flags(2, 1), false, true)
	}
	if w, v, ok := d.oneRow(n/4, normLeastQuads); n%4 == 0 && ok {
		k := d.kernel(normSpec{Grad: grad, Center: center, Stage: "row", W: w, V: v, Group: d.group(), F16: st.native()}, kinds...)
		if k == nil {
			return // the failure is recorded
		}
		d.dispatchRows(k, rows, p, bufs...)
		return
	}
	k := d.kernel(normSpec{Grad: grad, Center: center, F16: st.native()}, kinds...)
	if !d.rowLimit(k, n) {
		return
	}
	d.run(k, groupsOf(rows, 64), p, bufs...)
}

// normParams are the norm family's parameters (shaders/norm.wgsl): Rows
// rows of N elements, and eps; whether w, b and gxh are bound (1) or not
// (0).
type normParams struct {
	Rows, N            uint32
	Eps                float32
	HasW, HasB, HasGXH uint32
}

func (normSpec) params() any { return normParams{} }
