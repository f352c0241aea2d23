//go:build cgo || js

package webgpu

import (
	"fmt"

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
	d.norm(center, rows, n, eps, p, d.buf(x), d.buf(dst), d.orFlags(w), d.orFlags(b))
}

// NormGrad sets dx to the gradient through Norm, and gw and gb, unless
// nil, to the sums over the rows of g·x̂ and of g (device.Normalizer).
func (d *Device) NormGrad(dx, gw, gb, x, g, w device.Buffer, rows, n int, eps float64, center bool) {
	if !d.native(dx, gw, gb, x, g, w) && d.widenFresh(3, func(s []device.Buffer) { d.NormGrad(s[0], s[1], s[2], s[3], s[4], s[5], rows, n, eps, center) }, dx, gw, gb, x, g, w) {
		return
	}
	d.writing(dx, gw, gb)
	defer d.written()
	if rows == 0 || n == 0 {
		for _, s := range []device.Buffer{gw, gb} {
			if s != nil && n > 0 {
				d.fill(d.buf(s), 0)
			}
		}
		return
	}
	p := normParams{Rows: uint32(rows), N: uint32(n), Eps: float32(eps), HasW: b2u(w != nil)}
	st := d.storeOf(x.DType())
	// sum reduces the partial sums in over their parts into s.
	sum := func(s device.Buffer, in *buffer, parts int) {
		if s != nil {
			d.reduce(device.Sum, d.buf(s), in, false, []axis{{n, 1}}, []axis{{parts, n}}, 1)
		}
	}
	// part returns scratch for float32 partial sums of parts rows where
	// want, else the spare buffer (not the flags, which an unset w binds:
	// no buffer is bound twice, written) or, once that is taken, 16 bytes
	// of scratch.
	var scratch []*buffer
	defer func() {
		for _, b := range scratch {
			d.free(b)
		}
	}()
	spare := d.spare
	part := func(want bool, parts int) *buffer {
		size := parts * n
		if !want {
			if b := spare; b != nil {
				spare = nil
				return b
			}
			size = 4
		}
		b, err := d.alloc(device.Float32, size)
		if err != nil {
			d.refuse(fmt.Errorf("webgpu: norm's gradient: partial sums of %d rows of %d: %v", parts, n, err))
			return nil
		}
		scratch = append(scratch, b)
		return b
	}
	if wl, v, ok := d.oneRow(n/4, normLeastQuads); n%4 == 0 && ok {
		// A workgroup takes per rows, and sums g·x̂ and g over them, or
		// (on rows of more than normSumQuads vec4s an invocation) one row,
		// storing g·x̂ for the reduction.
		sums := v <= normSumQuads
		per := 1
		if sums {
			per = d.normRowsPer(rows)
		}
		parts := groupsOf(rows, per)
		sw, sb := part(gw != nil, parts), part(gb != nil && per > 1, parts)
		if sw == nil || sb == nil {
			return
		}
		p.RowsPer, p.SumW, p.SumB = uint32(per), b2u(gw != nil), b2u(gb != nil && per > 1)
		k := d.kernel(normSpec{Grad: true, Center: center, Stage: "row", W: wl, V: v, Sums: sums, Group: d.group(), F16: st.native()}, append(flags(2, 1), false, true, true)...)
		if k == nil {
			return // the failure is recorded
		}
		d.dispatchRows(k, parts, p, d.buf(x), d.buf(g), d.buf(dx), d.orFlags(w), sw, sb)
		sum(gw, sw, parts)
		if per > 1 {
			sum(gb, sb, parts)
		} else {
			sum(gb, d.buf(g), rows)
		}
		return
	}
	sw := part(gw != nil, rows)
	if sw == nil {
		return
	}
	p.SumW = b2u(gw != nil)
	k := d.kernel(normSpec{Grad: true, Center: center, F16: st.native()}, append(flags(2, 1), false, true)...)
	if !d.rowLimit(k, n) {
		return
	}
	d.run(k, groupsOf(rows, 64), p, d.buf(x), d.buf(g), d.buf(dx), d.orFlags(w), sw)
	sum(gw, sw, rows)
	sum(gb, d.buf(g), rows)
}

// normMostRowsPer is the most rows a workgroup of the one-pass norm
// gradient takes; normSumQuads the most vec4s an invocation of a kernel
// that sums its rows holds: llvmpipe compiled those holding more, with
// the sums, in about 1.7 times their time without
// (docs/kernel-choices.md).
const (
	normMostRowsPer = 16
	normSumQuads    = 8
)

// normRowsPer is how many rows a workgroup of the one-pass norm gradient
// takes, summing w's and b's gradients over them, for rows rows: as many
// as leave 4 workgroups a thread on CPU adapters, 1024 workgroups on
// GPUs, at most normMostRowsPer.
func (d *Device) normRowsPer(rows int) int {
	per := rows / 1024
	if d.loopLimited {
		per = rows / (4 * d.threads)
	}
	return min(max(per, 1), normMostRowsPer)
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

// norm runs the norm family's forward: contiguous rows of vec4s that fit
// a workgroup in one pass (oneRow), others one invocation a row. bufs are
// shaders/norm.wgsl's bindings in order: x, the output, w and b.
func (d *Device) norm(center bool, rows, n int, eps float64, p normParams, bufs ...*buffer) {
	if rows == 0 || n == 0 {
		return
	}
	p.Rows, p.N, p.Eps = uint32(rows), uint32(n), float32(eps)
	st := d.storeOf(bufs[0].dt)
	kinds := append(flags(1, 1), false, false)
	if w, v, ok := d.oneRow(n/4, normLeastQuads); n%4 == 0 && ok {
		k := d.kernel(normSpec{Center: center, Stage: "row", W: w, V: v, Group: d.group(), F16: st.native()}, kinds...)
		if k == nil {
			return // the failure is recorded
		}
		d.dispatchRows(k, rows, p, bufs...)
		return
	}
	k := d.kernel(normSpec{Center: center, F16: st.native()}, kinds...)
	if !d.rowLimit(k, n) {
		return
	}
	d.run(k, groupsOf(rows, 64), p, bufs...)
}

// normParams are the norm family's parameters (shaders/norm.wgsl): Rows
// rows of N elements, and eps; whether w and b are bound (1) or not (0);
// for the gradient, whether it writes the partial sums of w's (SumW) and
// b's (SumB) gradients, over RowsPer rows a workgroup (one-pass kernel).
type normParams struct {
	Rows, N                uint32
	Eps                    float32
	HasW, HasB, SumW, SumB uint32
	RowsPer                uint32
}

func (normSpec) params() any { return normParams{} }
