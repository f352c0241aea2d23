package ops

import (
	"fmt"
	"math"

	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/tensor"
)

// The channel normalisations, batch_norm and group_norm: each op's
// functions, table entry and second-order rule. They normalise x (N, C,
// …) over channels, or groups of them, and every other axis, then apply
// the optional per-channel affine transform.

// The entries of channelNorms. Each var is an op's handle, by which
// autograd.Apply and the rules reach it.
var (
	BatchNormOp = &Op{Name: "batch_norm", Family: "reduce, binary", Doc: "training mode: (x − mean)/√(var + eps)·w + b per channel (axis 1) over every other axis, biased variance, w and b [C] optional; eps = 1e-5. nn.BatchNorm keeps the running statistics and evaluates with them.",
		Forward: fwd(func(in []*T, a NormAttrs) *T { return batchNorm(in[0], opt(in, 1), opt(in, 2), a.Eps) }),
		Backward: bwd(func(in []*T, g *T, a NormAttrs) []*T {
			gx, gw, gb := BatchNormBackward(in[0], opt(in, 1), opt(in, 2), g, a.Eps)
			return []*T{gx, gw, gb}[:len(in)]
		}),
		Cases: batchNormCases()}
	GroupNormOp = &Op{Name: "group_norm", Family: "norm, binary", Doc: "x (N, C, …) normalised over each of Groups groups of C/Groups channels and every other axis, biased variance, times w plus b [C] (optional); eps = 1e-5.",
		Forward: fwd(func(in []*T, a GroupNormAttrs) *T { return groupNorm(in[0], a.Groups, opt(in, 1), opt(in, 2), a.Eps) }),
		Backward: bwd(func(in []*T, g *T, a GroupNormAttrs) []*T {
			gx, gw, gb := GroupNormBackward(in[0], a.Groups, opt(in, 1), opt(in, 2), g, a.Eps)
			return []*T{gx, gw, gb}[:len(in)]
		}),
		Cases: groupNormCases()}
)

// channelNorms are the channel normalisations, in the coverage table's
// order.
var channelNorms = []*Op{
	BatchNormOp.with(batchNormRule),
	GroupNormOp.with(groupNormRule),
}

// groupNormRule is group_norm's backward in table ops (normGrads) over
// the view [N, G, C/G, rest].
var groupNormRule = rule(func(b Builder, in []Value, out, g Value, a GroupNormAttrs) []Value {
	r := rb{b}
	s := in[0].Shape()
	view, pshape := groupView(s, a.Groups)
	vin := append([]Value{r.reshape(in[0], view)}, in[1:]...)
	grads := normGrads(r, vin, r.reshape(g, view), []int{2, 3}, pshape, a.Eps, true)
	grads[0] = r.reshape(grads[0], s)
	return grads
})

// groupView returns group_norm's view of x's shape s, [N, G, C/G, rest],
// and the shape its parameters broadcast as there, [1, G, C/G, 1].
func groupView(s []int, groups int) (view, pshape []int) {
	return []int{s[0], groups, s[1] / groups, device.Numel(s[2:])}, []int{1, groups, s[1] / groups, 1}
}

// groupNormArgs checks group_norm's arguments.
func groupNormArgs(op string, x *T, groups int, w, b *T, eps float64) {
	channelArgs(op, x, w, b, eps)
	if groups < 1 || x.Dim(1)%groups != 0 {
		tensor.Panicf(op, tensor.ErrArgument, "%d groups for x of shape %v; want groups ≥ 1 dividing the channels", groups, x.Shape())
	}
}

// GroupNorm returns PyTorch's group_norm: x (N, C, …) normalised over
// each group of C/groups consecutive channels and every axis after the
// channels, (x − mean)/√(var + eps) with the biased variance, times w
// plus b (each [C] or nil). On float16 with w or b it computes in
// float32 and rounds once.
func GroupNorm[V Operand[E], E any](x V, groups int, w, b V, eps float64) V {
	return call(GroupNormOp, GroupNormAttrs{Groups: groups, Eps: eps}, inputs("ops.GroupNorm", []V{x}, w, b)...)
}

func groupNorm(x *T, groups int, w, b *T, eps float64) *T {
	const op = "ops.GroupNorm"
	groupNormArgs(op, x, groups, w, b, eps)
	if x.DType() == device.Float16 && (w != nil || b != nil) {
		in, done := wide32(x, w, b)
		defer done()
		return narrow16(groupNorm(in[0], groups, in[1], in[2], eps))
	}
	s := x.Shape()
	n := device.Numel(s[1:]) / groups
	rows := x.Reshape(s[0]*groups, n)
	defer rows.Release()
	xh := normalize(op, rows, []int{n}, nil, nil, eps, true)
	defer xh.Release()
	_, pshape := channelAxes(s)
	wv, bv := view(w, pshape), view(b, pshape)
	defer wv.Release()
	defer bv.Release()
	return affine(xh.Reshape(s...), wv, bv)
}

// GroupNormBackward returns the gradients of GroupNorm for x, w and b
// (nil for a nil w or b).
func GroupNormBackward(x *T, groups int, w, b, g *T, eps float64) (gx, gw, gb *T) {
	const op = "ops.GroupNormBackward"
	groupNormArgs(op, x, groups, w, b, eps)
	operands(op, x, g)
	floats(op, x, g)
	sameShape(op, "upstream gradient", g, x.Shape())
	if x.DType() == device.Float16 && (w != nil || b != nil) {
		in, done := wide32(x, w, b, g)
		defer done()
		gx, gw, gb = GroupNormBackward(in[0], groups, in[1], in[2], in[3], eps)
		return narrow16(gx), narrow16(gw), narrow16(gb)
	}
	s := x.Shape()
	n := device.Numel(s[1:]) / groups
	axes, pshape := channelAxes(s)
	gh, done := weighted(g, w, pshape)
	defer done()
	rows, grows := x.Reshape(s[0]*groups, n), gh.Reshape(s[0]*groups, n)
	defer rows.Release()
	defer grows.Release()
	gr, _, _ := normBackward(op, rows, []int{n}, nil, nil, grows, eps, true)
	defer gr.Release()
	gx = gr.Reshape(s...)
	if w != nil {
		xh := normalize(op, rows, []int{n}, nil, nil, eps, true)
		gxh := mul(g, xh.Reshape(s...))
		xh.Release()
		gw = sum(gxh, axes, false)
		gxh.Release()
	}
	if b != nil {
		gb = sum(g, axes, false)
	}
	return gx, gw, gb
}

func groupNormCases() []Case {
	c := func(x []int, groups, params int) Case {
		in := []Input{{Shape: x}}
		name := fmt.Sprintf("%s groups=%d", ShapeName(x), groups)
		for i := range params {
			in = append(in, Input{Shape: sh(x[1]), Domain: Domain{Lo: 0.5, Hi: 1.5}})
			name += []string{" w", " b"}[i]
		}
		return Case{Name: name, Inputs: in, Attrs: GroupNormAttrs{Groups: groups, Eps: DefaultLayerNormEps}}
	}
	big := c(sh(8, 32, 16, 16), 8, 2)
	big.NoFD = true
	special := c(sh(2, 4, 3), 2, 2)
	special.Name, special.NoFD = "special values "+special.Name, true
	special.Inputs[0].Domain = Domain{Values: finiteSpecials}
	offset := c(sh(2, 4, 3), 2, 2)
	offset.Name, offset.NoFD = "large mean "+offset.Name, true
	offset.Inputs[0].Domain = largeMean
	huge := c(sh(2, 4, 3), 2, 0)
	huge.Name, huge.NoFD = "huge "+huge.Name, true
	huge.Inputs[0].Domain = Domain{Values: hugeValues}
	return []Case{c(sh(2, 6, 4, 4), 3, 2), c(sh(3, 4, 5), 2, 2), c(sh(1, 6, 3, 3), 1, 1), c(sh(2, 4, 2, 2), 2, 0),
		c(sh(2, 4, 3), 4, 2), c(sh(0, 4, 3), 2, 2), big, special, offset, huge}
}

// batchNormRule is batch_norm's backward in table ops (normGrads), over
// every axis but the channels'.
var batchNormRule = rule(func(b Builder, in []Value, out, g Value, a NormAttrs) []Value {
	axes, pshape := channelAxes(in[0].Shape())
	return normGrads(rb{b}, in, g, axes, pshape, a.Eps, true)
})

// channelAxes returns the axes batch_norm reduces over for x of shape s
// (N, C, …): all but 1; and the shape [1, C, 1, …] its parameters
// broadcast as.
func channelAxes(s []int) (axes, pshape []int) {
	pshape = make([]int, len(s))
	for ax := range s {
		pshape[ax] = 1
		if ax != 1 {
			axes = append(axes, ax)
		}
	}
	pshape[1] = s[1]
	return axes, pshape
}

// batchNormArgs checks batch_norm's arguments.
func batchNormArgs(op string, x, w, b *T, eps float64) (axes, pshape []int) {
	channelArgs(op, x, w, b, eps)
	return channelAxes(x.Shape())
}

// channelArgs checks the arguments of a normalisation of x (N, C, …) with
// per-channel parameters w and b (each [C] or nil) and eps.
func channelArgs(op string, x, w, b *T, eps float64) {
	ts := []*T{x}
	for _, p := range []*T{w, b} {
		if p != nil {
			ts = append(ts, p)
		}
	}
	operands(op, ts...)
	floats(op, ts...)
	if x.Rank() < 2 {
		tensor.Panicf(op, tensor.ErrShape, "x of shape %v; want [N, C, …]", x.Shape())
	}
	for _, p := range []struct {
		name string
		t    *T
	}{{"weight", w}, {"bias", b}} {
		if p.t != nil {
			sameShape(op, p.name, p.t, []int{x.Dim(1)})
		}
	}
	if !(eps >= 0) || math.IsInf(eps, 0) {
		tensor.Panicf(op, tensor.ErrArgument, "eps %v; want a finite eps ≥ 0", eps)
	}
}

// weighted returns g·w with w viewed as pshape (g itself for a nil w),
// and a function releasing what it made.
func weighted(g, w *T, pshape []int) (*T, func()) {
	if w == nil {
		return g, func() {}
	}
	wv := view(w, pshape)
	defer wv.Release()
	gh := mul(g, wv)
	return gh, gh.Release
}

// view returns t reshaped to s (nil stays nil); the caller releases it.
func view(t *T, s []int) *T {
	if t == nil {
		return nil
	}
	return t.Reshape(s...)
}

// batchStats returns x − mean and ρ = (var + eps)^−½ over axes, kept.
func batchStats(x *T, axes []int, eps float64) (xc, rho *T) {
	xc = centered(x, axes)
	sq := mul(xc, xc)
	defer sq.Release()
	v := mean(sq, axes, true)
	defer v.Release()
	e := scalarOf(v, eps)
	defer e.Release()
	ve := add(v, e)
	defer ve.Release()
	return xc, powScalar(ve, -0.5)
}

// BatchNorm returns PyTorch's batch_norm in training mode: x (N, C, …)
// normalised per channel (axis 1) over every other axis with the batch's
// mean and biased variance, (x − mean)/√(var + eps), times w plus b (each
// [C] or nil). On float16 it computes in float32 and rounds once. The
// running statistics and evaluation mode are nn.BatchNorm's.
func BatchNorm[V Operand[E], E any](x, w, b V, eps float64) V {
	return call(BatchNormOp, NormAttrs{Eps: eps}, inputs("ops.BatchNorm", []V{x}, w, b)...)
}

func batchNorm(x, w, b *T, eps float64) *T {
	const op = "ops.BatchNorm"
	axes, pshape := batchNormArgs(op, x, w, b, eps)
	if x.DType() == device.Float16 {
		in, done := wide32(x, w, b)
		defer done()
		return narrow16(batchNorm(in[0], in[1], in[2], eps))
	}
	xc, rho := batchStats(x, axes, eps)
	defer xc.Release()
	defer rho.Release()
	wv, bv := view(w, pshape), view(b, pshape)
	defer wv.Release()
	defer bv.Release()
	return affine(mul(xc, rho), wv, bv)
}

// BatchNormBackward returns the gradients of BatchNorm for x, w and b (nil
// for a nil w or b).
func BatchNormBackward(x, w, b, g *T, eps float64) (gx, gw, gb *T) {
	const op = "ops.BatchNormBackward"
	axes, pshape := batchNormArgs(op, x, w, b, eps)
	operands(op, x, g)
	floats(op, x, g)
	sameShape(op, "upstream gradient", g, x.Shape())
	if x.DType() == device.Float16 {
		in, done := wide32(x, w, b, g)
		defer done()
		gx, gw, gb = BatchNormBackward(in[0], in[1], in[2], in[3], eps)
		return narrow16(gx), narrow16(gw), narrow16(gb)
	}
	xc, rho := batchStats(x, axes, eps)
	defer xc.Release()
	defer rho.Release()
	xh := mul(xc, rho)
	defer xh.Release()
	gh, done := weighted(g, w, pshape)
	defer done()
	mg := mean(gh, axes, true)
	defer mg.Release()
	ghx := mul(gh, xh)
	defer ghx.Release()
	mgx := mean(ghx, axes, true)
	defer mgx.Release()
	t1 := sub(gh, mg)
	defer t1.Release()
	t2 := mul(xh, mgx)
	defer t2.Release()
	d := sub(t1, t2)
	defer d.Release()
	gx = mul(rho, d)
	if w != nil {
		gxh := mul(g, xh)
		defer gxh.Release()
		gw = sum(gxh, axes, false)
	}
	if b != nil {
		gb = sum(g, axes, false)
	}
	return gx, gw, gb
}

func batchNormCases() []Case {
	c := func(x []int, params int) Case {
		in := []Input{{Shape: x}}
		name := ShapeName(x)
		for i := range params {
			in = append(in, Input{Shape: sh(x[1]), Domain: Domain{Lo: 0.5, Hi: 1.5}})
			name += []string{" w", " b"}[i]
		}
		return Case{Name: name, Inputs: in, Attrs: NormAttrs{Eps: DefaultLayerNormEps}}
	}
	big := c(sh(16, 8, 16, 16), 2)
	big.NoFD = true
	special := c(sh(5, 3), 2)
	special.Name, special.NoFD = "special values (5,3) w b", true
	special.Inputs[0].Domain = Domain{Values: finiteSpecials}
	eps := c(sh(6, 2), 0)
	eps.Name, eps.Attrs = eps.Name+" eps=0.5", NormAttrs{Eps: 0.5}
	offset := c(sh(64, 3), 2)
	offset.Name, offset.NoFD = "large mean (64,3) w b", true
	offset.Inputs[0].Domain = largeMean
	return []Case{c(sh(4, 3), 2), c(sh(2, 3, 4, 5), 2), c(sh(3, 2, 5), 0), c(sh(5, 4, 3, 3), 1), c(sh(0, 3), 2), eps, big, special, offset}
}

// GroupNormAttrs are group_norm's groups of channels and ε.
type GroupNormAttrs struct {
	Groups int
	Eps    float64
}

func (GroupNormAttrs) isAttrs() {}
