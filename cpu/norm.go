package cpu

import (
	"math"

	"github.com/extensor/extensor/device"
)

// normRow is a row's statistics: x's element j is normalised as
// (Ldexp(x, −e) − c − mu)·rho, the row taken scaled by 2⁻ᵉ (its largest
// magnitude into [½, 1), e ≥ −40) and shifted by c (its first element,
// scaled; 0 unless centred), so that its sums neither overflow nor cancel.
type normRow struct {
	e          int
	c, mu, rho float64
	in         *buffer
	off        int
}

// y returns the row's element j scaled and shifted.
func (r *normRow) y(j int) float64 { return math.Ldexp(r.in.at(r.off+j), -r.e) - r.c }

// xhat returns the row's element j normalised.
func (r *normRow) xhat(j int) float64 { return (r.y(j) - r.mu) * r.rho }

// normStats returns the statistics of the row of n elements at off, in
// float64: the mean (0 unless center) and ρ = 1/√(variance + eps).
func normStats(in *buffer, off, n int, eps float64, center bool) normRow {
	r := normRow{in: in, off: off}
	m := 0.0
	for j := range n {
		m = math.Max(m, math.Abs(in.at(off+j)))
	}
	if m > 0 && !math.IsInf(m, 0) && !math.IsNaN(m) {
		_, r.e = math.Frexp(m)
		r.e = max(r.e, -40)
	}
	if center {
		r.c = r.y(0)
		for j := range n {
			r.mu += r.y(j)
		}
		r.mu /= float64(n)
	}
	v := 0.0
	for j := range n {
		d := r.y(j) - r.mu
		v += d * d
	}
	r.rho = 1 / math.Sqrt(v/float64(n)+math.Ldexp(eps, -2*r.e))
	return r
}

// Norm sets each row of dst to (x − μ)·ρ, times w and plus b where they
// are not nil.
func (d *Device) Norm(dst, x, w, b device.Buffer, rows, n int, eps float64, center bool) {
	o, in, wb, bb := buf(dst), buf(x), optional(w), optional(b)
	for r := range rows {
		off := r * n
		st := normStats(in, off, n, eps, center)
		for j := range n {
			v := st.xhat(j)
			if wb != nil {
				v *= wb.at(j)
			}
			if bb != nil {
				v += bb.at(j)
			}
			o.set(off+j, v)
		}
	}
}

// NormGrad sets dx = ρ·(ĝ − mean(ĝ) − x̂·mean(ĝ·x̂)), ĝ = g·w (g where w is
// nil), and gw and gb, unless nil, to the sums over the rows of g·x̂ and
// of g.
func (d *Device) NormGrad(dx, gw, gb, x, g, w device.Buffer, rows, n int, eps float64, center bool) {
	o, in, gr, wb := buf(dx), buf(x), buf(g), optional(w)
	gh := func(off, j int) float64 {
		if wb != nil {
			return gr.at(off+j) * wb.at(j)
		}
		return gr.at(off + j)
	}
	if n == 0 {
		return // rows of nothing
	}
	sw, sb := make([]float64, n), make([]float64, n)
	for r := range rows {
		off := r * n
		st := normStats(in, off, n, eps, center)
		rho := math.Ldexp(st.rho, -st.e) // x's, not y's
		var sg, sgx float64
		for j := range n {
			xh := st.xhat(j)
			sg += gh(off, j)
			sgx += gh(off, j) * xh
		}
		if !center {
			sg = 0
		}
		for j := range n {
			// Every value read before the store: dx may be x or g.
			xh, gj, ghj := st.xhat(j), gr.at(off+j), gh(off, j)
			sw[j] += gj * xh
			sb[j] += gj
			o.set(off+j, rho*(ghj-sg/float64(n)-xh*sgx/float64(n)))
		}
	}
	for _, s := range []struct {
		dst  device.Buffer
		sums []float64
	}{{gw, sw}, {gb, sb}} {
		if s.dst != nil {
			for j, v := range s.sums {
				buf(s.dst).set(j, v)
			}
		}
	}
}
