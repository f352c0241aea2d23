package ops

import (
	"fmt"
	"math"
	"slices"

	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/tensor"
)

// Attention: scaled_dot_product_attention's functions, table entry and
// cases. It runs on the attention kernel family (device.Attender): one
// pass over the keys with an online softmax forward, and a backward that
// recomputes the probabilities from the rows' saved log-sum-exps, so
// that no Lq×Lk matrix is ever held.

// The entries of attentions. Each var is an op's handle, by which autograd.Apply
// and the rules reach it.
var (
	ScaledDotProductAttentionOp = &Op{Name: "scaled_dot_product_attention", Family: "attention", Doc: "softmax(q·kᵀ·scale + mask)·v over q [..., Lq, D], k [..., Lk, D], v [..., Lk, DV]; scale 1/√D unless given; mask (4th input) additive, or boolean (true: attend) with BoolMask, broadcast to [..., Lq, Lk]; Causal: key j ≤ query i; Dropout on the probabilities by a seeded hash; a row with no key allowed gives NaN; a boolean mask's gradient is zero.",
		Forward: func(in []*T, a Attrs) *T { return scaledDotProductAttention(in[0], in[1], in[2], attentionOf(in, a)) },
		Save: func(in []*T, a Attrs) (*T, *Saved) {
			out, stats := attention("ops.ScaledDotProductAttention", in[0], in[1], in[2], attentionOf(in, a))
			if stats == nil {
				return out, nil
			}
			return out, &Saved{tensors: []*T{stats, out.Reshape(out.Shape()...)}}
		},
		Backward: func(in []*T, g *T, a Attrs) []*T {
			var out, stats *T
			bp := backprop(a)
			if bp.Saved.Len() == 2 {
				stats, out = bp.Saved.tensors[0], bp.Saved.tensors[1]
			}
			gq, gk, gv, gm := attentionBackward("ops.ScaledDotProductAttentionBackward", in[0], in[1], in[2], attentionOf(in, a), g, out, stats, bp.needs(3))
			return []*T{gq, gk, gv, gm}[:len(in)]
		},
		Cases: attentionCases()}
)

// attentions is scaled_dot_product_attention, in the coverage table's order.
var attentions = []*Op{
	ScaledDotProductAttentionOp.with(attentionRule),
}

// attentionRule is attention's backward in table ops, the scores held:
// S = q·kᵀ·scale, masked (−Inf where a key may not be seen), P =
// softmax(S), D the dropout's constant factors; dv = (P⊙D)ᵀ·g, dP =
// (g·vᵀ)⊙D, dS = P⊙(dP − Σ dP⊙P), dq = dS·k·scale, dk = dSᵀ·q·scale, an
// additive mask's gradient dS summed to its shape.
var attentionRule = rule(func(b Builder, in []Value, _, g Value, a AttentionAttrs) []Value {
	r := rb{b}
	q, k, v := in[0], in[1], in[2]
	qs := q.Shape()
	rank := len(qs)
	lq, lk, d := qs[rank-2], k.Shape()[rank-2], qs[rank-1]
	scale := a.Scale
	if scale == 0 {
		scale = 1 / math.Sqrt(float64(d))
	}
	qt := b.Tensor(q)
	dev, dt := qt.Device(), qt.DType()
	s := r.scale(r.matmul(q, r.swap(k)), scale)
	if len(in) > 3 {
		if a.BoolMask {
			s = r.op(WhereOp, nil, in[3], s, r.scalar(s, math.Inf(-1)))
		} else {
			s = r.add(s, in[3])
		}
	}
	if a.Causal {
		above := make([]float64, lq*lk)
		for i := range lq {
			for j := i + 1; j < lk; j++ {
				above[i*lk+j] = 1
			}
		}
		s = r.op(MaskedFillOp, FillAttrs{Value: math.Inf(-1)}, s, b.Const(tensor.Must(tensor.FromValues(dev, dt, above, lq, lk))))
	}
	p := r.op(SoftmaxOp, AxisAttrs{Axis: rank - 1}, s)
	pd, gp := p, r.matmul(g, r.swap(v))
	if a.Dropout > 0 {
		full := s.Shape()
		kept := make([]float64, device.Numel(full))
		thr, keep := device.DropThreshold(a.Dropout), 1/(1-a.Dropout)
		for e := range kept {
			if !device.AttentionDrop(a.Seed, thr, e/lk, e%lk) {
				kept[e] = keep
			}
		}
		dk := b.Const(tensor.Must(tensor.FromValues(dev, dt, kept, full...)))
		pd, gp = r.mul(p, dk), r.mul(gp, dk)
	}
	gv := r.matmul(r.swap(pd), g)
	ds := r.mul(p, r.sub(gp, r.op(SumOp, ReduceAttrs{Axes: []int{rank - 1}, Keepdims: true}, r.mul(gp, p))))
	gq := r.scale(r.matmul(ds, k), scale)
	gk := r.scale(r.matmul(r.swap(ds), q), scale)
	grads := []Value{gq, gk, gv}
	if len(in) > 3 {
		if a.BoolMask {
			grads = append(grads, zerosLike(b, in[3]))
		} else {
			grads = append(grads, r.sumTo(ds, in[3].Shape()))
		}
	}
	return grads
})

// Attention holds scaled_dot_product_attention's arguments besides q, k
// and v, with PyTorch's defaults as zero values.
type Attention struct {
	// Mask is nil, or of q's dtype and broadcastable to [..., Lq, Lk]:
	// added to the scaled scores (−Inf: the key takes no part), or with
	// BoolMask true where a query attends to a key (≠ 0; NaN counts as
	// true), as PyTorch's boolean attn_mask.
	Mask     *T
	BoolMask bool
	// Causal lets query i attend only to keys j ≤ i (PyTorch's is_causal,
	// aligned top-left when Lq ≠ Lk); with a mask both apply.
	Causal bool
	// Scale multiplies q·kᵀ; 0 means 1/√D.
	Scale float64
	// Dropout is the probability, in [0, 1), of zeroing each attention
	// probability (the others scaled by 1/(1 − Dropout)), drawn by a hash
	// of Seed, the query row and the key (device.AttentionDrop): the same
	// on every backend, and again in the backward.
	Dropout float64
	Seed    uint64
}

// attentionOf returns the table's attributes and optional fourth input
// as an Attention.
func attentionOf(in []*T, at Attrs) Attention {
	a := attrsAs[AttentionAttrs](at)
	return Attention{Mask: opt(in, 3), BoolMask: a.BoolMask, Causal: a.Causal, Scale: a.Scale, Dropout: a.Dropout, Seed: a.Seed}
}

// attnPlan is a checked attention call: the device spec and the shapes.
type attnPlan struct {
	dev      device.Device
	dt       device.DType
	spec     device.AttentionSpec
	batch    []int // q's batch axes
	d, dv    int   // D and DV before padding to multiples of 4
	mask     *T    // the mask the kernels read (a broadcast copy when owned)
	ownsMask bool
}

func (p *attnPlan) release() {
	if p.ownsMask {
		p.mask.Release()
	}
}

// attentionArgs checks attention's arguments and plans the kernels' call.
func attentionArgs(op string, q, k, v *T, a Attention) *attnPlan {
	ts := []*T{q, k, v}
	if a.Mask != nil {
		ts = append(ts, a.Mask)
	}
	p := &attnPlan{dev: operands(op, ts...), dt: floats(op, ts...)}
	if q.Rank() < 2 || k.Rank() != q.Rank() || v.Rank() != q.Rank() {
		tensor.Panicf(op, tensor.ErrShape, "q %v, k %v, v %v; want [..., Lq, D], [..., Lk, D], [..., Lk, DV] of one rank ≥ 2", q.Shape(), k.Shape(), v.Shape())
	}
	r := q.Rank()
	qs, ks, vs := q.Shape(), k.Shape(), v.Shape()
	if !slices.Equal(qs[:r-2], ks[:r-2]) || !slices.Equal(qs[:r-2], vs[:r-2]) || ks[r-1] != qs[r-1] || vs[r-2] != ks[r-2] {
		tensor.Panicf(op, tensor.ErrShape, "q %v, k %v, v %v; want [..., Lq, D], [..., Lk, D], [..., Lk, DV] with the same batch axes", qs, ks, vs)
	}
	if qs[r-1] == 0 {
		tensor.Panicf(op, tensor.ErrShape, "q %v, k %v: D = 0; want D ≥ 1", qs, ks)
	}
	if math.IsNaN(a.Scale) || math.IsInf(a.Scale, 0) {
		tensor.Panicf(op, tensor.ErrArgument, "scale %v; want a finite scale (0: 1/√D)", a.Scale)
	}
	if !(a.Dropout >= 0 && a.Dropout < 1) {
		tensor.Panicf(op, tensor.ErrArgument, "dropout %v; want 0 ≤ p < 1", a.Dropout)
	}
	if a.BoolMask && a.Mask == nil {
		tensor.Panicf(op, tensor.ErrArgument, "BoolMask without a mask")
	}
	p.batch, p.d, p.dv = qs[:r-2], qs[r-1], vs[r-1]
	scale := a.Scale
	if scale == 0 {
		scale = 1 / math.Sqrt(float64(p.d))
	}
	heads := 1
	if len(p.batch) > 0 {
		heads = p.batch[len(p.batch)-1]
	}
	p.spec = device.AttentionSpec{Batch: device.Numel(p.batch), Heads: max(heads, 1), Lq: qs[r-2], Lk: ks[r-2],
		D: (p.d + 3) / 4 * 4, DV: (p.dv + 3) / 4 * 4, Scale: scale, Causal: a.Causal, Dropout: a.Dropout, Seed: a.Seed}
	if a.Mask != nil {
		p.spec.Mask = device.AdditiveMask
		if a.BoolMask {
			p.spec.Mask = device.BoolMask
		}
		p.maskStrides(op, a.Mask)
	}
	return p
}

// maskStrides sets the spec's mask strides for mask broadcast to
// [batch..., Lq, Lk], collapsing the batch axes before the last into one
// (a broadcast copy of the mask where its strides do not collapse).
func (p *attnPlan) maskStrides(op string, m *T) {
	full := append(slices.Clone(p.batch), p.spec.Lq, p.spec.Lk)
	ms := m.Shape()
	if len(ms) > len(full) {
		tensor.Panicf(op, tensor.ErrShape, "mask %v for scores [..., Lq, Lk] of shape %v; want a shape that broadcasts to it", ms, full)
	}
	lead := len(full) - len(ms)
	strides := make([]int, len(full))
	st := device.RowMajor(ms)
	for ax := range full {
		if ax < lead {
			continue
		}
		switch md := ms[ax-lead]; {
		case md == full[ax] && md > 1:
			strides[ax] = st[ax-lead]
		case md != 1 && md != full[ax]:
			tensor.Panicf(op, tensor.ErrShape, "mask %v for scores [..., Lq, Lk] of shape %v; want a shape that broadcasts to it", ms, full)
		}
	}
	nb := len(p.batch)
	outer := 0
	if nb >= 2 {
		outer = strides[nb-2]
		span := 1
		for ax := nb - 2; ax >= 0; ax-- {
			if full[ax] > 1 && strides[ax] != outer*span {
				// Not one stride: broadcast the outer axes out.
				shape := slices.Clone(full)
				for k := nb - 1; k < len(full); k++ {
					if k < lead {
						shape[k] = 1
					} else {
						shape[k] = ms[k-lead]
					}
				}
				p.mask, p.ownsMask = broadcastTo(m, shape), true
				p.maskStrides(op, p.mask)
				return
			}
			span *= full[ax]
		}
	}
	p.mask = m
	p.spec.MaskStride = [4]int{outer, 0, strides[len(full)-2], strides[len(full)-1]}
	if nb >= 1 {
		p.spec.MaskStride[1] = strides[nb-1]
	}
}

// padLast returns xs padded with zeros on their last axis to n (those
// that have n already as they are), and a function releasing the copies.
func padLast(n int, xs ...*T) ([]*T, func()) {
	out := make([]*T, len(xs))
	var copies []*T
	for i, x := range xs {
		out[i] = x
		if d := x.Dim(-1); d != n {
			pads := make([][2]int, x.Rank())
			pads[len(pads)-1][1] = n - d
			out[i] = pad(x, pads, 0)
			copies = append(copies, out[i])
		}
	}
	return out, func() {
		for _, c := range copies {
			c.Release()
		}
	}
}

// attention returns attention's output and its stats (nil where the
// kernels do not run: no query, no key or no output column).
func attention(op string, q, k, v *T, a Attention) (out, stats *T) {
	p := attentionArgs(op, q, k, v, a)
	defer p.release()
	s := p.spec
	shape := append(slices.Clone(p.batch), s.Lq, p.dv)
	if s.Batch*s.Lq*p.dv == 0 || s.Lk == 0 {
		return filled(p.dev, p.dt, shape, 0, q, k, v), nil
	}
	padded, done := padLast(s.D, q, k)
	defer done()
	vp, done := padLast(s.DV, v)
	defer done()
	qp, kp := padded[0], padded[1]
	vp0 := vp[0]
	wide := append(slices.Clone(p.batch), s.Lq, s.DV)
	o, ok := output(p.dev, p.dt, wide, qp, kp, vp0)
	st, ok2 := output(p.dev, statsDType(p.dt), []int{s.Batch * s.Lq, device.AttentionStats}, qp, kp, vp0)
	if ok && ok2 {
		p.dev.Attention(o.Buffer(), st.Buffer(), qp.Buffer(), kp.Buffer(), vp0.Buffer(), maskBuffer(p.mask), s)
	}
	if s.DV == p.dv {
		return o, st
	}
	defer o.Release()
	return slice(o, -1, 0, p.dv, 1), st
}

// statsDType is the dtype of attention's row statistics.
func statsDType(dt device.DType) device.DType {
	if dt == device.Float64 {
		return device.Float64
	}
	return device.Float32
}

func maskBuffer(m *T) device.Buffer {
	if m == nil {
		return nil
	}
	return m.Buffer()
}

// ScaledDotProductAttention returns PyTorch's scaled_dot_product_attention
// of q [..., Lq, D], k [..., Lk, D] and v [..., Lk, DV] (the same batch
// axes): softmax(q·kᵀ·scale + mask)·v, [..., Lq, DV], computed by the
// fused attention kernels without the Lq×Lk scores in memory. A query row
// that may attend to no key gives NaN (PyTorch's math backend); with
// Lk = 0 the output is zeros. On float16 it accumulates in float32. mask
// may be nil; a's fields are Attention's but for the mask.
func ScaledDotProductAttention[V Operand[E], E any](q, k, v, mask V, a AttentionAttrs) V {
	return call(ScaledDotProductAttentionOp, a, inputs("ops.ScaledDotProductAttention", []V{q, k, v}, mask)...)
}

func scaledDotProductAttention(q, k, v *T, a Attention) *T {
	out, stats := attention("ops.ScaledDotProductAttention", q, k, v, a)
	stats.Release()
	return out
}

// ScaledDotProductAttentionBackward returns the gradients of
// ScaledDotProductAttention for q, k, v and the mask (nil without one;
// zeros for a boolean mask; for an additive mask the scores' gradient
// summed to its shape, which holds an Lq×Lk matrix).
func ScaledDotProductAttentionBackward(q, k, v *T, a Attention, g *T) (gq, gk, gv, gmask *T) {
	return attentionBackward("ops.ScaledDotProductAttentionBackward", q, k, v, a, g, nil, nil, true)
}

// attentionBackward is ScaledDotProductAttentionBackward from the forward's
// out and stats where they were kept (nil: computed again); the mask's
// gradient only if maskGrad.
func attentionBackward(op string, q, k, v *T, a Attention, g, out, stats *T, maskGrad bool) (gq, gk, gv, gm *T) {
	p := attentionArgs(op, q, k, v, a)
	defer p.release()
	s := p.spec
	operands(op, q, g)
	floats(op, q, g)
	sameShape(op, "upstream gradient", g, append(slices.Clone(p.batch), s.Lq, p.dv))
	if a.Mask != nil && (a.BoolMask || !maskGrad) {
		gm = filled(p.dev, p.dt, a.Mask.Shape(), 0, a.Mask)
		if !maskGrad {
			gm.Release()
			gm = nil
		}
	}
	if s.Batch*s.Lq*p.dv == 0 || s.Lk == 0 {
		gq, gk, gv = filled(p.dev, p.dt, q.Shape(), 0, q, g), filled(p.dev, p.dt, k.Shape(), 0, k, g), filled(p.dev, p.dt, v.Shape(), 0, v, g)
		if a.Mask != nil && gm == nil && maskGrad {
			gm = filled(p.dev, p.dt, a.Mask.Shape(), 0, a.Mask)
		}
		return gq, gk, gv, gm
	}
	if stats == nil {
		out, stats = attention(op, q, k, v, a)
		defer out.Release()
		defer stats.Release()
	}
	d, done := padLast(s.D, q, k)
	defer done()
	dv_, done := padLast(s.DV, v, out, g)
	defer done()
	qp, kp, vp, op_, gp := d[0], d[1], dv_[0], dv_[1], dv_[2]
	dq, ok1 := output(p.dev, p.dt, qp.Shape(), qp, kp, vp, op_, gp, stats)
	dk, ok2 := output(p.dev, p.dt, kp.Shape(), qp, kp, vp, op_, gp, stats)
	dv, ok3 := output(p.dev, p.dt, vp.Shape(), qp, kp, vp, op_, gp, stats)
	if ok1 && ok2 && ok3 {
		p.dev.AttentionGrad(dq.Buffer(), dk.Buffer(), dv.Buffer(), stats.Buffer(), qp.Buffer(), kp.Buffer(), vp.Buffer(), maskBuffer(p.mask), op_.Buffer(), gp.Buffer(), s)
	}
	if a.Mask != nil && gm == nil {
		full := append(slices.Clone(p.batch), s.Lq, s.Lk)
		ds, ok := output(p.dev, p.dt, full, qp, kp, vp, gp, stats)
		if ok {
			p.dev.AttentionScoresGrad(ds.Buffer(), stats.Buffer(), qp.Buffer(), kp.Buffer(), vp.Buffer(), maskBuffer(p.mask), gp.Buffer(), s)
		}
		gm = sumTo(ds, a.Mask.Shape())
		ds.Release()
	}
	return unpad(dq, p.d), unpad(dk, p.d), unpad(dv, p.dv), gm
}

// unpad returns x's first n columns of its last axis, releasing x.
func unpad(x *T, n int) *T {
	if x.Dim(-1) == n {
		return x
	}
	defer x.Release()
	return slice(x, -1, 0, n, 1)
}

func attentionCases() []Case {
	c := func(name string, q, k, v []int, a AttentionAttrs) Case {
		return Case{Name: name, Inputs: []Input{{Shape: q}, {Shape: k}, {Shape: v}}, Attrs: a}
	}
	self := func(s []int, a AttentionAttrs) Case { return c(ShapeName(s), s, s, s, a) }
	withMask := func(cs Case, m []int, dom Domain, boolean bool) Case {
		cs.Inputs = append(cs.Inputs, Input{Shape: m, Domain: dom, NoFD: boolean})
		a := cs.Attrs.(AttentionAttrs)
		a.BoolMask = boolean
		cs.Attrs = a
		kind := "additive"
		if boolean {
			kind = "boolean"
		}
		cs.Name += fmt.Sprintf(" %s mask %s", kind, ShapeName(m))
		return cs
	}
	keys := Domain{Values: []float64{1, 1, 0, 1, 1, 1, 0}}
	causal := self(sh(1, 2, 6, 4), AttentionAttrs{Causal: true})
	causal.Name += " causal"
	wide := c("q (2,2,5,8) k (2,2,7,8) v (2,2,7,4)", sh(2, 2, 5, 8), sh(2, 2, 7, 8), sh(2, 2, 7, 4), AttentionAttrs{})
	odd := c("q (2,4,3) k (2,6,3) v (2,6,5)", sh(2, 4, 3), sh(2, 6, 3), sh(2, 6, 5), AttentionAttrs{})
	rect := c("q (5,4) k (3,4) v (3,8) causal", sh(5, 4), sh(3, 4), sh(3, 8), AttentionAttrs{Causal: true})
	drop := self(sh(2, 6, 8), AttentionAttrs{Dropout: 0.3, Seed: 7})
	drop.Name += " dropout=0.3"
	scaled := self(sh(3, 5, 4), AttentionAttrs{Scale: 0.5})
	scaled.Name += " scale=0.5"
	big := c("q (2,3,37,16) k (2,3,45,16) v (2,3,45,8) causal", sh(2, 3, 37, 16), sh(2, 3, 45, 16), sh(2, 3, 45, 8), AttentionAttrs{Causal: true})
	big.NoFD = true
	bigMask := withMask(c("q (2,2,21,8) k, v (2,2,30,8) dropout=0.1", sh(2, 2, 21, 8), sh(2, 2, 30, 8), sh(2, 2, 30, 8), AttentionAttrs{Dropout: 0.1, Seed: 3}), sh(2, 1, 21, 30), Domain{}, false)
	bigMask.NoFD = true
	dead := withMask(self(sh(1, 3, 4), AttentionAttrs{}), sh(3, 3), Domain{Values: []float64{0, 0, 0, -inf, -inf, -inf, 0, -inf, 1}}, false)
	dead.Name, dead.NoFD = "a row with no key: NaN"+dead.Name[len("(1,3,4)"):], true
	special := self(sh(2, 3, 4), AttentionAttrs{})
	special.Name, special.NoFD = "special values (2,3,4)", true
	special.Inputs[0].Domain = Domain{Values: finiteSpecials}
	// Causal, ±Inf and NaN where a query may not look: the first query's
	// row (which only key 0 meets), the last key and value (which only the
	// last query sees). They add nothing elsewhere, not even 0·∞.
	unseen := self(sh(1, 5, 4), AttentionAttrs{Causal: true})
	unseen.Name, unseen.NoFD = "special values where unseen (1,5,4) causal", true
	row := func(last bool, sp ...float64) Domain {
		v := make([]float64, 20)
		for i := range v {
			v[i] = float64(i%7)/4 - 0.75
		}
		at := 0
		if last {
			at = 16
		}
		copy(v[at:], sp)
		return Domain{Values: v}
	}
	unseen.Inputs[0].Domain = row(false, inf, 1, -1, 0.5)
	unseen.Inputs[1].Domain = row(true, inf, -inf, nan, 1)
	unseen.Inputs[2].Domain = row(true, inf, nan, 1, 2)
	return []Case{
		self(sh(2, 3, 4), AttentionAttrs{}), wide, causal, odd, rect, drop, scaled,
		withMask(self(sh(2, 5, 4), AttentionAttrs{}), sh(5, 5), Domain{}, false),
		withMask(c("q (2,2,3,4) k, v (2,2,7,4)", sh(2, 2, 3, 4), sh(2, 2, 7, 4), sh(2, 2, 7, 4), AttentionAttrs{}), sh(2, 1, 1, 7), keys, true),
		withMask(c("q (3,2,2,4) k, v (3,2,5,4) causal", sh(3, 2, 2, 4), sh(3, 2, 5, 4), sh(3, 2, 5, 4), AttentionAttrs{Causal: true}), sh(3, 1, 2, 5), Domain{}, false),
		c("no query (2,0,4)", sh(2, 0, 4), sh(2, 3, 4), sh(2, 3, 4), AttentionAttrs{}),
		c("no key (2,3,4) k (2,0,4)", sh(2, 3, 4), sh(2, 0, 4), sh(2, 0, 4), AttentionAttrs{}),
		big, bigMask, dead, special, unseen,
	}
}

// AttentionAttrs are scaled_dot_product_attention's, whose optional
// fourth input is the mask (see Attention).
type AttentionAttrs struct {
	Causal   bool
	Scale    float64
	Dropout  float64
	Seed     uint64
	BoolMask bool
}

func (AttentionAttrs) isAttrs() {}
