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
			return savedAttention(attention("ops.ScaledDotProductAttention", in[0], in[1], in[2], attentionOf(in, a)))
		},
		Backward: func(in []*T, g *T, a Attrs) []*T {
			bp := backprop(a)
			out, stats := bp.Saved.attention()
			gq, gk, gv, gm := attentionBackward("ops.ScaledDotProductAttentionBackward", in[0], in[1], in[2], attentionOf(in, a), g, out, stats, bp.needs(3))
			return []*T{gq, gk, gv, gm}[:len(in)]
		},
		Cases: attentionCases()}
)

// MultiHeadAttentionOp is scaled_dot_product_attention over the heads of
// one packed projection, read and written in place.
var MultiHeadAttentionOp = &Op{Name: "multi_head_attention", Family: "attention", Doc: "scaled_dot_product_attention of the heads of one packed projection: qkv [..., L, 3·E] holds q, k and v as its thirds on the last axis, each of Heads heads of E/Heads features (an in-projection's output viewed as [..., L, Heads, E/Heads], heads before positions); the output [..., L, E] has the heads merged back, as before out_proj; mask (2nd input), Causal, Scale, Dropout as scaled_dot_product_attention's, the mask broadcast to [..., Heads, L, L]. The kernels read and write the heads in place where E/Heads is a multiple of 4, else through copies.",
	Forward: func(in []*T, a Attrs) *T {
		out, stats := multiHeadAttention("ops.MultiHeadAttention", in[0], headsOf(in, a))
		stats.Release()
		return out
	},
	Save: func(in []*T, a Attrs) (*T, *Saved) {
		return savedAttention(multiHeadAttention("ops.MultiHeadAttention", in[0], headsOf(in, a)))
	},
	Backward: func(in []*T, g *T, a Attrs) []*T {
		bp := backprop(a)
		out, stats := bp.Saved.attention()
		gqkv, gm := multiHeadAttentionBackward("ops.MultiHeadAttentionBackward", in[0], headsOf(in, a), g, out, stats, bp.needs(1))
		return []*T{gqkv, gm}[:len(in)]
	},
	Cases: multiHeadCases()}

// savedAttention returns an attention's output, and what its Save keeps
// for the backward: the rows' stats (none where the kernels did not run)
// and the output.
func savedAttention(out, stats *T) (*T, *Saved) {
	if stats == nil {
		return out, nil
	}
	return out, &Saved{tensors: []*T{stats, out.Reshape(out.Shape()...)}}
}

// attention returns the output and stats savedAttention kept, or nils.
func (s *Saved) attention() (out, stats *T) {
	if s.Len() != 2 {
		return nil, nil
	}
	return s.tensors[1], s.tensors[0]
}

// attentions is scaled_dot_product_attention and multi_head_attention, in
// the coverage table's order.
var attentions = []*Op{
	ScaledDotProductAttentionOp.with(attentionRule),
	MultiHeadAttentionOp.with(multiHeadRule),
}

// MultiHeadAttrs are multi_head_attention's: the heads, and
// scaled_dot_product_attention's attributes, whose mask is the optional
// second input.
type MultiHeadAttrs struct {
	Heads int
	AttentionAttrs
}

func (MultiHeadAttrs) isAttrs() {}

// heads holds a multi_head_attention call's arguments.
type heads struct {
	Attention
	n int // heads
}

// headsOf returns the table's attributes and optional second input.
func headsOf(in []*T, at Attrs) heads {
	a := attrsAs[MultiHeadAttrs](at)
	return heads{n: a.Heads, Attention: Attention{Mask: opt(in, 1), BoolMask: a.BoolMask, Causal: a.Causal, Scale: a.Scale, Dropout: a.Dropout, Seed: a.Seed}}
}

// MultiHeadAttention returns the attention of the heads packed in qkv
// [..., L, 3·E]: its thirds along the last axis are q, k and v, each
// split into a.Heads heads of E/Heads features, and the result [..., L,
// E] has the heads' outputs merged back. It equals
//
//	split := func(x) { Permute(Reshape(x, ..., L, Heads, E/Heads), ..., -2, -3, -1) }
//	o := ScaledDotProductAttention(split(q), split(k), split(v), mask, a.AttentionAttrs)
//	Reshape(Permute(o, ..., -2, -3, -1), ..., L, E)
//
// (PyTorch's MultiheadAttention between its in_proj and out_proj) but
// for the copies: with E/Heads a multiple of 4 the kernels read the heads
// where they are and write them merged, and the gradient is one tensor
// shaped like qkv. mask may be nil.
func MultiHeadAttention[V Operand[E], E any](qkv, mask V, a MultiHeadAttrs) V {
	return call(MultiHeadAttentionOp, a, inputs("ops.MultiHeadAttention", []V{qkv}, mask)...)
}

// MultiHeadAttentionBackward returns the gradients of MultiHeadAttention
// for qkv and for the mask (nil without one; see
// ScaledDotProductAttentionBackward).
func MultiHeadAttentionBackward(qkv *T, a MultiHeadAttrs, mask, g *T) (gqkv, gmask *T) {
	ins := []*T{qkv}
	if mask != nil {
		ins = append(ins, mask)
	}
	return multiHeadAttentionBackward("ops.MultiHeadAttentionBackward", qkv, headsOf(ins, a), g, nil, nil, true)
}

// headsPlan is a checked multi_head_attention call: the attention's plan
// with the heads' layouts in qkv and the output, or nil layouts where the
// heads go through copies (copies).
type headsPlan struct {
	*attnPlan
	lead      []int // qkv's axes before L
	l, e, d   int
	copies    bool
	headShape []int // [lead..., Heads, L, D]
}

// planHeads checks qkv and a and plans the kernels' call.
func planHeads(op string, qkv *T, a heads) *headsPlan {
	p := &headsPlan{attnPlan: newAttnPlan(op, a.Mask, qkv)}
	s := qkv.Shape()
	r := len(s)
	if r < 2 {
		tensor.Panicf(op, tensor.ErrShape, "qkv %v; want [..., L, 3·E] of rank ≥ 2", s)
	}
	if a.n < 1 || s[r-1]%(3*a.n) != 0 || s[r-1] == 0 {
		tensor.Panicf(op, tensor.ErrShape, "qkv %v in %d heads; want [..., L, 3·E], E > 0 a multiple of the heads (≥ 1)", s, a.n)
	}
	p.lead, p.l, p.e = s[:r-2], s[r-2], s[r-1]/3
	p.d = p.e / a.n
	p.headShape = append(slices.Clone(p.lead), a.n, p.l, p.d)
	p.plan(op, p.headShape, p.headShape, p.headShape, a.Attention)
	p.copies = p.d%4 != 0
	if !p.copies {
		in := func(off int) device.AttentionLayout {
			return device.AttentionLayout{Offset: off, Outer: p.l * 3 * p.e, Head: p.d, Row: 3 * p.e}
		}
		p.spec.Q, p.spec.K, p.spec.V = in(0), in(p.e), in(2*p.e)
		p.spec.O = device.AttentionLayout{Outer: p.l * p.e, Head: p.d, Row: p.e}
	}
	return p
}

// strides returns the strided copy between head i of qkv (column i·E
// on, in heads) and a contiguous [lead..., Heads, L, D]: out of qkv, or
// into a tensor [..., L, w] from column i·E when in.
func (p *headsPlan) strides(i, w int, in bool) device.Strided {
	n := p.headShape[len(p.lead)]
	shape := []int{device.Numel(p.lead), n, p.l, p.d}
	packed := []int{p.l * w, p.d, w, 1}
	s := device.Strided{Shape: shape, SrcStrides: packed, DstStrides: device.RowMajor(shape), SrcOffset: i * p.e}
	if in {
		s.SrcStrides, s.DstStrides, s.SrcOffset, s.DstOffset = s.DstStrides, s.SrcStrides, 0, i*p.e
	}
	return s
}

// split returns head i of qkv ([lead..., Heads, L, D], a copy).
func (p *headsPlan) split(qkv *T, i int) *T {
	out, ok := output(p.dev, p.dt, p.headShape, qkv)
	if ok {
		copyInto(p.dev, out, qkv, p.strides(i, 3*p.e, false))
	}
	return out
}

// merge copies xs [lead..., Heads, L, D] side by side into a new tensor
// [lead..., L, len(xs)·E], releasing them.
func (p *headsPlan) merge(xs ...*T) *T {
	out, ok := output(p.dev, p.dt, append(slices.Clone(p.lead), p.l, len(xs)*p.e), xs...)
	for i, x := range xs {
		if ok {
			copyInto(p.dev, out, x, p.strides(i, len(xs)*p.e, true))
		}
		x.Release()
	}
	return out
}

// multiHeadAttention returns multi_head_attention's output and stats (nil
// where the kernels do not run).
func multiHeadAttention(op string, qkv *T, a heads) (out, stats *T) {
	p := planHeads(op, qkv, a)
	defer p.release()
	if p.copies {
		q, k, v := p.split(qkv, 0), p.split(qkv, 1), p.split(qkv, 2)
		defer q.Release()
		defer k.Release()
		defer v.Release()
		o, st := attention(op, q, k, v, a.Attention)
		return p.merge(o), st
	}
	s := p.spec
	shape := append(slices.Clone(p.lead), p.l, p.e)
	if s.Batch*s.Lq == 0 {
		return filled(p.dev, p.dt, shape, 0, qkv), nil
	}
	o, ok := output(p.dev, p.dt, shape, qkv)
	st, ok2 := output(p.dev, statsDType(p.dt), []int{s.Batch * s.Lq, device.AttentionStats}, qkv)
	if ok && ok2 {
		p.dev.Attention(o.Buffer(), st.Buffer(), qkv.Buffer(), qkv.Buffer(), qkv.Buffer(), bufferOf(p.mask), s)
	}
	return o, st
}

// multiHeadAttentionBackward is MultiHeadAttentionBackward from the
// forward's out and stats where they were kept (nil: computed again); the
// mask's gradient only if maskGrad.
func multiHeadAttentionBackward(op string, qkv *T, a heads, g, out, stats *T, maskGrad bool) (gqkv, gm *T) {
	p := planHeads(op, qkv, a)
	defer p.release()
	operands(op, qkv, g)
	floats(op, qkv, g)
	sameShape(op, "upstream gradient", g, append(slices.Clone(p.lead), p.l, p.e))
	if p.copies {
		q, k, v := p.split(qkv, 0), p.split(qkv, 1), p.split(qkv, 2)
		defer q.Release()
		defer k.Release()
		defer v.Release()
		gh, ok := output(p.dev, p.dt, p.headShape, g)
		if ok {
			copyInto(p.dev, gh, g, p.strides(0, p.e, false))
		}
		defer gh.Release()
		gq, gk, gv, gm := attentionBackward(op, q, k, v, a.Attention, gh, nil, nil, maskGrad)
		return p.merge(gq, gk, gv), gm
	}
	s := p.spec
	if s.Batch*s.Lq == 0 {
		return filled(p.dev, p.dt, qkv.Shape(), 0, qkv, g), p.maskGrad(a.Attention, maskGrad, nil, nil, nil, nil, nil)
	}
	if stats == nil {
		out, stats = multiHeadAttention(op, qkv, a)
		defer out.Release()
		defer stats.Release()
	}
	gb, ok := output(p.dev, p.dt, qkv.Shape(), qkv, out, g, stats)
	if ok {
		b := gb.Buffer()
		p.dev.AttentionGrad(b, b, b, stats.Buffer(), qkv.Buffer(), qkv.Buffer(), qkv.Buffer(), bufferOf(p.mask), out.Buffer(), g.Buffer(), s)
	}
	return gb, p.maskGrad(a.Attention, maskGrad, qkv, qkv, qkv, g, stats)
}

// multiHeadRule is multi_head_attention's backward in table ops: the
// heads split and merged by slices, reshapes and permutations around
// attentionRule.
var multiHeadRule = rule(func(b Builder, in []Value, _, g Value, a MultiHeadAttrs) []Value {
	r := rb{b}
	s := in[0].Shape()
	rank := len(s)
	lead, l, e := s[:rank-2], s[rank-2], s[rank-1]/3
	perm := make([]int, rank+1) // [..., L, H, D] ⇄ [..., H, L, D]
	for k := range perm {
		perm[k] = k
	}
	perm[rank-2], perm[rank-1] = rank-1, rank-2
	split := func(x Value) Value {
		return r.op(PermuteOp, PermuteAttrs{Perm: perm}, r.reshape(x, append(slices.Clone(lead), l, a.Heads, e/a.Heads)))
	}
	third := func(i int) Value {
		return split(r.op(SliceOp, SliceAttrs{Axis: -1, Start: i * e, Stop: (i + 1) * e, Step: 1}, in[0]))
	}
	qkv := append([]Value{third(0), third(1), third(2)}, in[1:]...)
	gs := attentionRule(b, qkv, nil, split(g), a.AttentionAttrs)
	merged := make([]Value, 3)
	for i := range merged {
		merged[i] = r.reshape(r.op(PermuteOp, PermuteAttrs{Perm: perm}, gs[i]), append(slices.Clone(lead), l, e))
	}
	return append([]Value{r.op(ConcatOp, AxisAttrs{Axis: -1}, merged...)}, gs[3:]...)
})

// withMask returns cs, an attention's case, with a mask of shape m
// drawn from dom, additive or boolean.
func withMask(cs Case, m []int, dom Domain, boolean bool) Case {
	cs.Inputs = append(cs.Inputs, Input{Shape: m, Domain: dom, NoFD: boolean})
	switch a := cs.Attrs.(type) {
	case AttentionAttrs:
		a.BoolMask = boolean
		cs.Attrs = a
	case MultiHeadAttrs:
		a.BoolMask = boolean
		cs.Attrs = a
	}
	kind := "additive"
	if boolean {
		kind = "boolean"
	}
	cs.Name += fmt.Sprintf(" %s mask %s", kind, ShapeName(m))
	return cs
}

// multiHeadCases are multi_head_attention's cases, their head sizes (4
// and 8) and attributes those of scaled_dot_product_attention's cases,
// so that they compile no kernel of their own on lavapipe.
func multiHeadCases() []Case {
	c := func(s []int, heads int, a AttentionAttrs, name string) Case {
		return Case{Name: ShapeName(s) + fmt.Sprintf(" heads=%d", heads) + name, Inputs: []Input{{Shape: s}}, Attrs: MultiHeadAttrs{Heads: heads, AttentionAttrs: a}}
	}
	big := c(sh(2, 37, 48), 2, AttentionAttrs{Causal: true, Dropout: 0.1, Seed: 5}, " causal dropout=0.1")
	big.NoFD = true
	// The special values in q's third, as scaled_dot_product_attention's
	// case has them in q (in k or v a probability that float32 rounds to
	// 0 times ∞ is NaN, where float64's is not 0).
	special := c(sh(2, 3, 24), 2, AttentionAttrs{}, "")
	special.Name, special.NoFD = "special values in q "+special.Name, true
	rows := make([]float64, 48)
	for i := range rows {
		rows[i] = float64(i%7)/4 - 0.75
	}
	copy(rows, finiteSpecials[:8])
	copy(rows[24:], finiteSpecials[8:])
	special.Inputs[0].Domain = Domain{Values: rows}
	return []Case{
		c(sh(2, 5, 24), 2, AttentionAttrs{}, ""),
		c(sh(3, 24), 2, AttentionAttrs{Causal: true}, " causal"),
		c(sh(2, 2, 4, 24), 2, AttentionAttrs{Scale: 0.5}, " scale=0.5"),
		c(sh(2, 6, 48), 2, AttentionAttrs{Causal: true, Dropout: 0.3, Seed: 7}, " causal dropout=0.3"),
		c(sh(2, 4, 18), 2, AttentionAttrs{}, " (D=3: copies)"),
		withMask(c(sh(2, 5, 24), 2, AttentionAttrs{}, ""), sh(2, 1, 5, 5), Domain{}, false),
		withMask(c(sh(2, 5, 24), 2, AttentionAttrs{Causal: true}, " causal"), sh(5, 5), Domain{Values: []float64{1, 1, 0, 1, 1, 1, 0}}, true),
		c(sh(2, 0, 24), 2, AttentionAttrs{}, " (no position)"),
		big, special,
	}
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
	p := newAttnPlan(op, a.Mask, q, k, v)
	p.plan(op, q.Shape(), k.Shape(), v.Shape(), a)
	return p
}

// newAttnPlan returns a plan of the device and float dtype that ts and
// mask (if not nil) share.
func newAttnPlan(op string, mask *T, ts ...*T) *attnPlan {
	if mask != nil {
		ts = append(ts, mask)
	}
	return &attnPlan{dev: operands(op, ts...), dt: floats(op, ts...)}
}

// plan checks the shapes of q, k and v and a's arguments, and sets the
// plan's spec (contiguous layouts) and shapes.
func (p *attnPlan) plan(op string, qs, ks, vs []int, a Attention) {
	if len(qs) < 2 || len(ks) != len(qs) || len(vs) != len(qs) {
		tensor.Panicf(op, tensor.ErrShape, "q %v, k %v, v %v; want [..., Lq, D], [..., Lk, D], [..., Lk, DV] of one rank ≥ 2", qs, ks, vs)
	}
	r := len(qs)
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
		p.dev.Attention(o.Buffer(), st.Buffer(), qp.Buffer(), kp.Buffer(), vp0.Buffer(), bufferOf(p.mask), s)
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
	if s.Batch*s.Lq*p.dv == 0 || s.Lk == 0 {
		gq, gk, gv = filled(p.dev, p.dt, q.Shape(), 0, q, g), filled(p.dev, p.dt, k.Shape(), 0, k, g), filled(p.dev, p.dt, v.Shape(), 0, v, g)
		return gq, gk, gv, p.maskGrad(a, maskGrad, nil, nil, nil, nil, nil)
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
		p.dev.AttentionGrad(dq.Buffer(), dk.Buffer(), dv.Buffer(), stats.Buffer(), qp.Buffer(), kp.Buffer(), vp.Buffer(), bufferOf(p.mask), op_.Buffer(), gp.Buffer(), s)
	}
	return unpad(dq, p.d), unpad(dk, p.d), unpad(dv, p.dv), p.maskGrad(a, maskGrad, qp, kp, vp, gp, stats)
}

// maskGrad returns the gradient of a's mask: nil without a mask or
// unless want; zeros for a boolean mask, or where the kernels do not run
// (q nil); else the scores' gradient, which AttentionScoresGrad computes
// from q, k, v and g as the plan's spec lays them out and from the stats
// AttentionGrad left, summed to the mask's shape.
func (p *attnPlan) maskGrad(a Attention, want bool, q, k, v, g, stats *T) *T {
	if a.Mask == nil || !want {
		return nil
	}
	if a.BoolMask || q == nil {
		return filled(p.dev, p.dt, a.Mask.Shape(), 0, a.Mask)
	}
	s := p.spec
	full := append(slices.Clone(p.batch), s.Lq, s.Lk)
	ds, ok := output(p.dev, p.dt, full, q, k, v, g, stats)
	if ok {
		p.dev.AttentionScoresGrad(ds.Buffer(), stats.Buffer(), q.Buffer(), k.Buffer(), v.Buffer(), bufferOf(p.mask), g.Buffer(), s)
	}
	defer ds.Release()
	return sumTo(ds, a.Mask.Shape())
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
