package cpu

import (
	"math"

	"github.com/extensor/extensor/device"
)

// attnStats is the columns of the row statistics.
const attnStats = device.AttentionStats

// attention holds one Attention call's buffers and spec, for its twin.
type attention struct {
	q, k, v, mask  *buffer
	a              device.AttentionSpec
	lq, lk, lv, lo device.AttentionLayout // the layouts, resolved
	ds             *buffer                // AttentionScoresGrad's output, or nil
	keep           float64                // 1/(1 − dropout)
	thr            uint32
}

func newAttention(q, k, v, mask device.Buffer, a device.AttentionSpec) *attention {
	t := &attention{q: buf(q), k: buf(k), v: buf(v), a: a, keep: 1 / (1 - a.Dropout), thr: device.DropThreshold(a.Dropout)}
	t.lq, t.lk, t.lv, t.lo = a.Layouts()
	if a.Mask != device.NoMask {
		t.mask = buf(mask)
	}
	return t
}

// scores returns query i of batch b's scaled, masked scores s and which
// keys it may see; seen[j] is whether it would see key j unmasked. The
// products of float32 operands are rounded to float32, as the GPU's: a
// product past float32's range is ±Inf.
func (t *attention) scores(b, i int, s []float64, live, seen []bool) {
	a := t.a
	o, h := b/a.Heads, b%a.Heads
	qi := t.lq.At(a.Heads, b, i)
	for j := range a.Lk {
		dot := 0.0
		kj := t.lk.At(a.Heads, b, j)
		for c := range a.D {
			dot += t.q.at(qi+c) * t.k.at(kj+c)
		}
		if t.q.dt == device.Float32 {
			dot = float64(float32(dot))
		}
		s[j], live[j] = a.Scale*dot, !a.Causal || j <= i
		seen[j] = live[j]
		if t.mask != nil {
			m := t.mask.at(o*a.MaskStride[0] + h*a.MaskStride[1] + i*a.MaskStride[2] + j*a.MaskStride[3])
			switch a.Mask {
			case device.AdditiveMask:
				s[j] += m
				live[j] = live[j] && !math.IsInf(s[j], -1)
			case device.BoolMask:
				live[j] = live[j] && m != 0 // NaN ≠ 0
			}
		}
	}
}

// kept returns the factor dropout applies to probability (r, j).
func (t *attention) kept(r, j int) float64 {
	if t.a.Dropout == 0 {
		return 1
	}
	if device.AttentionDrop(t.a.Seed, t.thr, r, j) {
		return 0
	}
	return t.keep
}

// Attention sets out to softmax(scale·qkᵀ + mask)·v, and stats' first
// columns to each row's largest score and ln Σ e^(s − max)
// (device.Attender).
func (d *Device) Attention(out, stats, q, k, v, mask device.Buffer, a device.AttentionSpec) {
	t := newAttention(q, k, v, mask, a)
	o, st := buf(out), buf(stats)
	s, live, seen := make([]float64, a.Lk), make([]bool, a.Lk), make([]bool, a.Lk)
	for b := range a.Batch {
		for i := range a.Lq {
			r := b*a.Lq + i
			t.scores(b, i, s, live, seen)
			mx := math.Inf(-1)
			for j, l := range live {
				if l {
					mx = math.Max(mx, s[j]) // NaN wins
				}
			}
			sum := 0.0
			for j, l := range live {
				if l {
					sum += math.Exp(s[j] - mx)
				}
			}
			st.set(attnStats*r, mx)
			st.set(attnStats*r+1, math.Log(sum))
			if math.IsInf(mx, -1) { // no key: NaN out
				sum = math.NaN()
			}
			oi := t.lo.At(a.Heads, b, i)
			for c := range a.DV {
				acc := 0.0
				for j, l := range live {
					if l {
						acc += math.Exp(s[j]-mx) / sum * t.kept(r, j) * t.v.at(t.lv.At(a.Heads, b, j)+c)
					}
				}
				if math.IsNaN(sum) {
					acc = math.NaN()
				}
				o.set(oi+c, acc)
			}
		}
	}
}

// AttentionGrad sets dq, dk and dv to Attention's gradients
// (device.Attender), each at its layout's elements alone (one buffer may
// hold all three).
func (d *Device) AttentionGrad(dq, dk, dv, stats, q, k, v, mask, o, dO device.Buffer, a device.AttentionSpec) {
	t := newAttention(q, k, v, mask, a)
	// Contiguous sums, then placed.
	gq, gk, gv := make([]float64, a.Batch*a.Lq*a.D), make([]float64, a.Batch*a.Lk*a.D), make([]float64, a.Batch*a.Lk*a.DV)
	t.grad(buf(stats), buf(o), buf(dO), gq, gk, gv)
	for _, x := range []struct {
		dst        *buffer
		v          []float64
		l          device.AttentionLayout
		rows, cols int
	}{{buf(dq), gq, t.lq, a.Lq, a.D}, {buf(dk), gk, t.lk, a.Lk, a.D}, {buf(dv), gv, t.lv, a.Lk, a.DV}} {
		for b := range a.Batch {
			for i := range x.rows {
				at, from := x.l.At(a.Heads, b, i), (b*x.rows+i)*x.cols
				for c := range x.cols {
					x.dst.set(at+c, x.v[from+c])
				}
			}
		}
	}
}

// grad accumulates the gradients into gq, gk and gv (and sets t.ds),
// first setting Δ = Σ dO·O in stats where o is not nil, else reading it.
func (t *attention) grad(st, ob, gb *buffer, gq, gk, gv []float64) {
	a := t.a
	s, live, seen := make([]float64, a.Lk), make([]bool, a.Lk), make([]bool, a.Lk)
	for b := range a.Batch {
		for i := range a.Lq {
			r := b*a.Lq + i
			t.scores(b, i, s, live, seen)
			mx, ll := st.at(attnStats*r), st.at(attnStats*r+1)
			dead := math.IsInf(mx, -1) // NaN through every key it would see
			delta := 0.0               // Σ dO·O = Σ_j p_j·dp_j
			oi := t.lo.At(a.Heads, b, i)
			if ob != nil {
				for c := range a.DV {
					delta += gb.at(oi+c) * ob.at(oi+c)
				}
				st.set(attnStats*r+2, delta)
			} else {
				delta = st.at(attnStats*r + 2)
			}
			for j, l := range live {
				if !l && !(dead && seen[j]) {
					continue
				}
				p, kept := math.Exp((s[j]-mx)-ll), t.kept(r, j)
				if dead {
					p = math.NaN()
				}
				dp := 0.0
				vj, kj, qi := t.lv.At(a.Heads, b, j), t.lk.At(a.Heads, b, j), t.lq.At(a.Heads, b, i)
				for c := range a.DV {
					g := gb.at(oi + c)
					dp += g * t.v.at(vj+c)
					if gv != nil {
						gv[(b*a.Lk+j)*a.DV+c] += p * kept * g
					}
				}
				ds := p * (dp*kept - delta)
				if t.ds != nil {
					t.ds.set(r*a.Lk+j, ds)
				}
				if gq == nil {
					continue
				}
				for c := range a.D {
					gq[r*a.D+c] += a.Scale * ds * t.k.at(kj+c)
					gk[(b*a.Lk+j)*a.D+c] += a.Scale * ds * t.q.at(qi+c)
				}
			}
		}
	}
}

// AttentionScoresGrad sets ds to the gradient of the masked scores
// (device.Attender).
func (d *Device) AttentionScoresGrad(ds, stats, q, k, v, mask, dO device.Buffer, a device.AttentionSpec) {
	t := newAttention(q, k, v, mask, a)
	t.ds = buf(ds)
	for i := range t.ds.Len() {
		t.ds.set(i, 0)
	}
	t.grad(buf(stats), nil, buf(dO), nil, nil, nil)
}
