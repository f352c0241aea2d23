package ops

import (
	"math"
	"slices"

	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/tensor"
)

// A Value is a tensor inside a Rule: a *tensor.Tensor when the rule runs
// eagerly (Eager), a recorded variable when a tape records it.
type Value interface {
	Shape() []int
}

// A Builder runs the ops a Rule is written in.
type Builder interface {
	// Apply runs op on the inputs and returns its output.
	Apply(op *Op, a Attrs, in ...Value) Value
	// Const returns t as a value with no gradient (a one-hot mask, say).
	Const(t *tensor.Tensor) Value
	// Tensor returns the tensor that holds v's value.
	Tensor(v Value) *tensor.Tensor
}

// A Rule computes an op's input gradients, like Backward, but in ops of
// the table applied through b, so that a tape can record the gradient
// computation and differentiate it again (second-order gradients, a
// Hessian-vector product as two backward passes). in are the op's inputs,
// out its output and g the upstream gradient; an input that needs no
// gradient (a Backprop's Need) or has none (int32) may get nil.
type Rule func(b Builder, in []Value, out, g Value, a Attrs) []Value

// Eager is the Builder that runs a Rule at once on tensors; the parity
// suite uses it to check each Rule against its op's Backward.
type Eager struct{}

// Apply runs op's forward function on tensors.
func (Eager) Apply(op *Op, a Attrs, in ...Value) Value {
	ts := make([]*tensor.Tensor, len(in))
	for i, v := range in {
		ts[i] = v.(*tensor.Tensor)
	}
	return op.Forward(ts, a)
}

// Const returns t.
func (Eager) Const(t *tensor.Tensor) Value { return t }

// Tensor returns v, a *tensor.Tensor.
func (Eager) Tensor(v Value) *tensor.Tensor { return v.(*tensor.Tensor) }

// with returns op with its second-order rule.
func (op *Op) with(r Rule) *Op {
	op.Grad = r
	return op
}

// rb writes rules: the table's ops through a Builder.
type rb struct{ b Builder }

func (r rb) op(op *Op, a Attrs, in ...Value) Value { return r.b.Apply(op, a, in...) }
func (r rb) add(x, y Value) Value                  { return r.op(AddOp, nil, x, y) }
func (r rb) sub(x, y Value) Value                  { return r.op(SubOp, nil, x, y) }
func (r rb) mul(x, y Value) Value                  { return r.op(MulOp, nil, x, y) }
func (r rb) div(x, y Value) Value                  { return r.op(DivOp, nil, x, y) }
func (r rb) neg(x Value) Value                     { return r.op(NegOp, nil, x) }
func (r rb) un(op *Op, x Value) Value              { return r.op(op, nil, x) }
func (r rb) reshape(x Value, s []int) Value        { return r.op(ReshapeOp, ShapeAttrs{Shape: s}, x) }
func (r rb) sumTo(x Value, s []int) Value          { return r.op(SumToOp, ShapeAttrs{Shape: s}, x) }
func (r rb) broadcast(x Value, s []int) Value      { return r.op(BroadcastToOp, ShapeAttrs{Shape: s}, x) }
func (r rb) matmul(x, y Value) Value               { return r.op(MatmulOp, nil, x, y) }

// sum sums x over axes (every axis when nil), keeping them as size 1.
func (r rb) sum(x Value, axes []int) Value {
	return r.op(SumOp, ReduceAttrs{Axes: axes, Keepdims: true}, x)
}

// scalar returns a 0-D constant v of like's device and dtype.
func (r rb) scalar(like Value, v float64) Value {
	t := r.b.Tensor(like)
	return r.b.Const(tensor.Must(tensor.Scalar(t.Device(), t.DType(), v)))
}

// scale returns x·v.
func (r rb) scale(x Value, v float64) Value { return r.mul(x, r.scalar(x, v)) }

// swap returns x with its last two axes swapped.
func (r rb) swap(x Value) Value {
	n := len(x.Shape())
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	perm[n-2], perm[n-1] = n-1, n-2
	return r.op(PermuteOp, PermuteAttrs{Perm: perm}, x)
}

// Rules of the table's ops, in the catalogue's order. Each is the op's
// Backward written in table ops (compare the Backward's doc comment).

func unaryRule[A Attrs](f func(r rb, x, y, g Value, a A) Value) Rule {
	return func(b Builder, in []Value, out, g Value, a Attrs) []Value {
		return []Value{f(rb{b}, in[0], out, g, attrsAs[A](a))}
	}
}

// binaryRule sums each gradient back to its input's shape.
func binaryRule(f func(r rb, x, y, g Value) (Value, Value)) Rule {
	return func(b Builder, in []Value, _, g Value, a Attrs) []Value {
		r := rb{b}
		gx, gy := f(r, in[0], in[1], g)
		return []Value{r.sumTo(gx, in[0].Shape()), r.sumTo(gy, in[1].Shape())}
	}
}

var (
	addRule = binaryRule(func(r rb, x, y, g Value) (Value, Value) { return g, g })
	subRule = binaryRule(func(r rb, x, y, g Value) (Value, Value) { return g, r.neg(g) })
	mulRule = binaryRule(func(r rb, x, y, g Value) (Value, Value) { return r.mul(g, y), r.mul(g, x) })
	divRule = binaryRule(func(r rb, x, y, g Value) (Value, Value) {
		return r.div(g, y), r.neg(r.div(r.mul(g, r.div(x, y)), y))
	})
	negRule = unaryRule(func(r rb, x, y, g Value, _ Attrs) Value { return r.neg(g) })
	expRule = unaryRule(func(r rb, x, y, g Value, _ Attrs) Value { return r.mul(g, y) })
	logRule = unaryRule(func(r rb, x, y, g Value, _ Attrs) Value {
		return r.div(g, x)
	})
	log2Rule  = logBaseRule(math.Ln2)
	log10Rule = logBaseRule(math.Ln10)
	// floor_divide's gradients are zeros; mod's g and −g·⌊a/b⌋.
	floorDivideRule = func(b Builder, in []Value, _, g Value, a Attrs) []Value {
		return []Value{zerosLike(b, in[0]), zerosLike(b, in[1])}
	}
	modRule = binaryRule(func(r rb, x, y, g Value) (Value, Value) {
		return g, r.neg(r.mul(g, r.op(FloorDivideOp, nil, x, y)))
	})
	sqrtRule = unaryRule(func(r rb, x, y, g Value, _ Attrs) Value {
		return r.div(g, r.scale(y, 2))
	})
	absRule       = unaryRule(func(r rb, x, y, g Value, _ Attrs) Value { return r.mul(g, r.un(SignOp, x)) })
	sinRule       = unaryRule(func(r rb, x, y, g Value, _ Attrs) Value { return r.mul(g, r.un(CosOp, x)) })
	cosRule       = unaryRule(func(r rb, x, y, g Value, _ Attrs) Value { return r.neg(r.mul(g, r.un(SinOp, x))) })
	powScalarRule = unaryRule(func(r rb, x, y, g Value, a PowScalarAttrs) Value {
		if a.Exponent == 0 { // x⁰ is 1 everywhere
			return zerosLike(r.b, x)
		}
		return r.mul(g, r.scale(r.op(PowScalarOp, PowScalarAttrs{Exponent: a.Exponent - 1}, x), a.Exponent))
	})
	// y·(g − Σg·y) and g − softmax·Σg along the axis.
	softmaxRule = unaryRule(func(r rb, x, y, g Value, a AxisAttrs) Value {
		return r.mul(y, r.sub(g, r.sum(r.mul(g, y), softmaxAxes(x, a.Axis))))
	})
	logSoftmaxRule = unaryRule(func(r rb, x, y, g Value, a AxisAttrs) Value {
		return r.sub(g, r.mul(r.un(ExpOp, y), r.sum(g, softmaxAxes(x, a.Axis))))
	})
	sumRule = unaryRule(func(r rb, x, y, g Value, a ReduceAttrs) Value {
		return r.unreduce(x, g, a.Axes)
	})
	meanRule = unaryRule(func(r rb, x, y, g Value, a ReduceAttrs) Value {
		n := device.Numel(x.Shape()) / max(1, device.Numel(y.Shape()))
		return r.scale(r.unreduce(x, g, a.Axes), 1/float64(max(n, 1)))
	})
	reshapeRule   = unaryRule(func(r rb, x, y, g Value, _ Attrs) Value { return r.reshape(g, x.Shape()) })
	broadcastRule = unaryRule(func(r rb, x, y, g Value, _ Attrs) Value { return r.sumTo(g, x.Shape()) })
	sumToRule     = unaryRule(func(r rb, x, y, g Value, _ Attrs) Value { return r.broadcast(g, x.Shape()) })
	transposeRule = unaryRule(func(r rb, x, y, g Value, _ Attrs) Value { return r.un(TransposeOp, g) })
	permuteRule   = unaryRule(func(r rb, x, y, g Value, a PermuteAttrs) Value {
		inv := make([]int, len(a.Perm))
		for k, p := range a.Perm {
			if p < 0 {
				p += len(a.Perm)
			}
			inv[p] = k
		}
		return r.op(PermuteOp, PermuteAttrs{Perm: inv}, g)
	})
)

func logBaseRule(lnBase float64) Rule {
	return unaryRule(func(r rb, x, y, g Value, _ Attrs) Value {
		return r.div(g, r.scale(x, lnBase))
	})
}

// zerosLike returns a constant of zeros shaped like v.
func zerosLike(b Builder, v Value) Value {
	t := b.Tensor(v)
	return b.Const(tensor.Must(tensor.Zeros(t.Device(), t.DType(), t.Shape()...)))
}

// slopeRule is the rule of an op whose gradient is g times a slope that
// is piecewise constant in x (clip, leaky_relu, the rounding ops' zero):
// the slopes, Backward's gradient for a unit upstream, enter as a
// constant. For max and min (reduce) the upstream is first broadcast back.
func slopeRule(bwd func(in []*tensor.Tensor, g *tensor.Tensor, a Attrs) []*tensor.Tensor, reduce bool) Rule {
	return func(b Builder, in []Value, out, g Value, a Attrs) []Value {
		r := rb{b}
		x, y := b.Tensor(in[0]), b.Tensor(out)
		one := tensor.Must(tensor.Ones(x.Device(), x.DType(), y.Shape()...))
		slope := bwd([]*tensor.Tensor{x}, one, a)[0]
		if reduce {
			g = r.unreduce(in[0], g, attrsAs[ReduceAttrs](a).Axes)
		}
		return []Value{r.mul(g, b.Const(slope))}
	}
}

// softmaxAxes is the axis of a softmax of x as a reduction's axes: every
// axis of a 0-D x.
func softmaxAxes(x Value, axis int) []int {
	if len(x.Shape()) == 0 {
		return nil
	}
	return []int{axis}
}

// unreduce broadcasts the gradient g of a reduction of x back over x.
func (r rb) unreduce(x, g Value, axes []int) Value {
	s := x.Shape()
	keep := slices.Clone(s)
	if axes == nil {
		for i := range keep {
			keep[i] = 1
		}
	}
	for _, ax := range axes {
		if ax < 0 {
			ax += len(s)
		}
		keep[ax] = 1
	}
	return r.broadcast(r.reshape(g, keep), s)
}

// matmulRule is MatMul's backward, ga = g·bᵀ and gb = aᵀ·g, with 1-D
// operands as matrices and broadcast batch axes summed back.
func matmulRule(b Builder, in []Value, _, g Value, a Attrs) []Value {
	r := rb{b}
	x, y := in[0], in[1]
	xs, ys := x.Shape(), y.Shape()
	if len(xs) == 1 {
		x = r.reshape(x, []int{1, xs[0]})
	}
	if len(ys) == 1 {
		y = r.reshape(y, []int{ys[0], 1})
	}
	// g with the axes of the 1-D operands back.
	gs := slices.Clone(g.Shape())
	if len(xs) == 1 {
		gs = slices.Insert(gs, max(len(gs)-1+boolInt(len(ys) == 1), 0), 1)
	}
	if len(ys) == 1 {
		gs = append(gs, 1)
	}
	g = r.reshape(g, gs)
	gv := make([]Value, 2)
	if backprop(a).needs(0) {
		gv[0] = r.reshape(r.sumTo(r.matmul(g, r.swap(y)), x.Shape()), xs)
	}
	if backprop(a).needs(1) {
		gv[1] = r.reshape(r.sumTo(r.matmul(r.swap(x), g), y.Shape()), ys)
	}
	return gv
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// dotRule and outerRule: ga = g·b, gb = g·a; ga = g·b, gb = gᵀ·a.
var (
	dotRule   = binaryRule(func(r rb, x, y, g Value) (Value, Value) { return r.mul(g, y), r.mul(g, x) })
	outerRule = binaryRule(func(r rb, x, y, g Value) (Value, Value) { return r.matmul(g, y), r.matmul(x, g) })
)

// linearRule is Linear's backward: gx = g·W, gW = gᵀ·x over the rows of
// every leading axis, gb = g summed to [out].
func linearRule(b Builder, in []Value, _, g Value, a Attrs) []Value {
	r := rb{b}
	x, w := in[0], in[1]
	gv := make([]Value, len(in))
	if backprop(a).needs(0) {
		gv[0] = r.matmul(g, w)
	}
	ws, xs := w.Shape(), x.Shape()
	if backprop(a).needs(1) {
		rows := device.Numel(xs[:len(xs)-1])
		g2 := r.reshape(g, []int{rows, ws[0]})
		x2 := r.reshape(x, []int{rows, ws[1]})
		gv[1] = r.matmul(r.swap(g2), x2)
	}
	if len(in) > 2 && backprop(a).needs(2) {
		gv[2] = r.sumTo(g, []int{ws[0]})
	}
	return gv
}

// lossScale returns the upstream gradient of each of n per-element (or
// per-row) losses: g/n (mean), g (sum) or g itself (none), shaped to
// broadcast against [n, …] when rows.
func (r rb) lossScale(g Value, n int, red Reduction, rows bool) Value {
	switch red {
	case MeanReduction:
		if n == 0 {
			return g
		}
		return r.scale(g, 1/float64(n))
	case NoReduction:
		if rows {
			return r.reshape(g, []int{n, 1})
		}
	}
	return g
}

// Rules of the losses: each is the per-element gradient times the
// reduction's upstream gradient.
var (
	mseRule = lossRule(func(r rb, p, t Value) (Value, Value) {
		d := r.scale(r.sub(p, t), 2)
		return d, r.neg(d)
	})
	// (p−y)/(p(1−p)) as (1−y)/(1−p) − y/p, in powers: differentiated
	// again it gives (1−y)/(1−p)² + y/p² exactly, where the quotient's
	// ε-guarded gradient cancelled two terms of size 1/(1−p) (at p =
	// 0.9999, y = 1, 100.02 for 1.0002).
	bceRule = lossRule(func(r rb, p, y Value) (Value, Value) {
		pc := r.op(ClipOp, ClipAttrs{Lo: device.BCEClamp, Hi: 1 - device.BCEClamp}, p)
		q := r.sub(r.scalar(pc, 1), pc)
		inv := func(v Value) Value { return r.op(PowScalarOp, PowScalarAttrs{Exponent: -1}, v) }
		gp := r.sub(r.mul(r.sub(r.scalar(y, 1), y), inv(q)), r.mul(y, inv(pc)))
		return gp, r.sub(r.un(LogOp, q), r.un(LogOp, pc))
	})
	bceLogitsRule = lossRule(func(r rb, x, y Value) (Value, Value) {
		return r.sub(r.un(SigmoidOp, x), y), r.neg(x)
	})
)

func lossRule(f func(r rb, p, t Value) (Value, Value)) Rule {
	return rule(func(b Builder, in []Value, _, g Value, a LossAttrs) []Value {
		r := rb{b}
		gs := r.lossScale(g, device.Numel(in[0].Shape()), a.Reduction, false)
		gp, gt := f(r, in[0], in[1])
		return []Value{r.mul(gp, gs), r.mul(gt, gs)}
	})
}

// classRule is the rule of the losses over classes: nll, or (lsm)
// cross-entropy through log_softmax. Class indices enter as a constant
// −onehot mask, NLLLossBackward's gradient for a unit upstream.
func classRule(lsm bool) Rule {
	return rule(func(b Builder, in []Value, _, g Value, a CrossEntropyAttrs) []Value {
		r := rb{b}
		x, t := in[0], in[1]
		n, c := x.Shape()[0], x.Shape()[1]
		xt, tt := b.Tensor(x), b.Tensor(t)
		ts := []*T{xt, tt}
		if len(in) > 2 {
			ts = append(ts, b.Tensor(in[2]))
		}
		o := classOptionsOf(ts, a)
		probs := tt.DType().IsFloat()
		if !o.plain() && !probs {
			return weightedClassRule(r, x, g, o, lsm, n, c, a.Reduction, len(in))
		}
		gs := r.lossScale(g, n, a.Reduction, true)
		var gl, gt Value // the gradients of the log-probabilities and of t
		if probs {
			gl = r.mul(r.neg(t), gs)
		} else {
			one := tensor.Must(tensor.Scalar(xt.Device(), xt.DType(), 1))
			gl = r.mul(b.Const(NLLLossBackward(xt, tt, one, SumReduction)), gs)
		}
		if !lsm {
			return []Value{gl, nil}
		}
		if probs {
			gt = r.mul(r.neg(r.op(LogSoftmaxOp, AxisAttrs{Axis: 1}, x)), gs)
		}
		if eps := a.LabelSmoothing; eps != 0 {
			// The smoothed target (1 − ε)·t + ε/C: its log-probabilities'
			// gradient gains −ε/C·g, and t's is (1 − ε) times.
			gl = r.sub(r.scale(gl, 1-eps), r.scale(gs, eps/float64(c)))
			if probs {
				gt = r.scale(gt, 1-eps)
			}
		}
		if o.Weight != nil { // probabilities times the weights (a constant)
			row := b.Const(o.Weight.Reshape(1, c))
			gl, gt = r.mul(gl, row), r.mul(gt, row)
		}
		sm := r.op(SoftmaxOp, AxisAttrs{Axis: 1}, x)
		return append([]Value{r.sub(gl, r.mul(sm, r.sum(gl, []int{1}))), gt}, make([]Value, len(in)-2)...)
	})
}

// weightedClassRule is classRule with class indices and class weights or
// an ignored label: the log-probabilities' gradient for a unit upstream
// of each row enters as a constant, times each row's upstream gradient
// (the mean's divided by Σ ω, read as a constant).
func weightedClassRule(r rb, x, g Value, o ClassOptions, lsm bool, n, c int, red Reduction, inputs int) []Value {
	const op = "ops.CrossEntropyLossWithBackward"
	xt := r.b.Tensor(x)
	y := o.labels
	omega, m := rowWeights(op, y, o, xt, n, c)
	m.Release()
	ones := filled(xt.Device(), xt.DType(), []int{n}, 1, xt)
	unit := classGrad(op, xt, y, ones, omega, o, n, c) // [N, C]
	var gs Value
	switch red {
	case NoReduction:
		gs = r.reshape(g, []int{n, 1})
	case SumReduction:
		gs = g
	default:
		sw, err := sum(omega, nil, false).Float64s()
		if err != nil {
			panic(err)
		}
		gs = r.scale(g, 1/sw[0])
	}
	gl := r.mul(r.b.Const(unit), gs)
	if lsm {
		sm := r.op(SoftmaxOp, AxisAttrs{Axis: 1}, x)
		gl = r.sub(gl, r.mul(sm, r.sum(gl, []int{1})))
	}
	return append([]Value{gl}, make([]Value, inputs-1)...)
}

// Rules of the shape copies: pad's gradient is slices of g, concat's and
// stack's slices of g along the joined axis; slice's scatters g back with
// a constant 0/1 selection matrix along the axis (any step).
var (
	padRule = unaryRule(func(r rb, x, y, g Value, a PadAttrs) Value {
		s := x.Shape()
		for ax, p := range a.Pads {
			if p != [2]int{} {
				g = r.op(SliceOp, SliceAttrs{Axis: ax, Start: p[0], Stop: p[0] + s[ax], Step: 1}, g)
			}
		}
		return g
	})
	sliceRule = unaryRule(func(r rb, x, y, g Value, a SliceAttrs) Value {
		s := x.Shape()
		ax := a.Axis
		if ax < 0 {
			ax += len(s)
		}
		from, n := sliceRange("ops.Slice", s[ax], a.Start, a.Stop, a.Step)
		sel := make([]float64, n*s[ax]) // row j picks element from + j·step
		for j := range n {
			sel[j*s[ax]+from+j*a.Step] = 1
		}
		xt := r.b.Tensor(x)
		m := r.b.Const(tensor.Must(tensor.FromValues(xt.Device(), xt.DType(), sel, n, s[ax])))
		last := len(s) - 1
		perm := make([]int, len(s)) // swaps the axis with the last
		for i := range perm {
			perm[i] = i
		}
		perm[ax], perm[last] = last, ax
		moved := r.op(PermuteOp, PermuteAttrs{Perm: perm}, g)
		return r.op(PermuteOp, PermuteAttrs{Perm: perm}, r.matmul(moved, m))
	})
	concatRule = joinRule(false)
	stackRule  = joinRule(true)
	// embedding: the table's gradient is onehot(idx)ᵀ·g, onehot a constant.
	embeddingRule = func(b Builder, in []Value, _, g Value, a Attrs) []Value {
		r := rb{b}
		idx, w := b.Tensor(in[0]), b.Tensor(in[1])
		ids, err := idx.Int32s()
		if err != nil {
			panic(err)
		}
		rows, d := w.Dim(0), w.Dim(1)
		hot := make([]float64, len(ids)*rows)
		for i, k := range ids {
			if k >= 0 && int(k) < rows {
				hot[i*rows+int(k)] = 1
			}
		}
		oh := b.Const(tensor.Must(tensor.FromValues(w.Device(), w.DType(), hot, len(ids), rows)))
		return []Value{nil, r.matmul(r.swap(oh), r.reshape(g, []int{len(ids), d}))}
	}
	// pow: g·b·a^(b−1) and g·aᵇ·ln a where a > 0 (a constant mask), 0
	// elsewhere.
	powRule = binaryRule(func(r rb, x, y, g Value) (Value, Value) {
		ga := r.mul(g, r.mul(y, r.op(PowOp, nil, x, r.sub(y, r.scalar(y, 1)))))
		xt := r.b.Tensor(x)
		pos := r.b.Const(sign(relu(xt))) // 1 where a > 0
		lna := r.un(LogOp, r.op(ClipOp, ClipAttrs{Lo: 1e-30, Hi: math.MaxFloat32}, x))
		gb := r.mul(g, r.mul(r.op(PowOp, nil, x, y), r.mul(lna, pos)))
		return ga, gb
	})
)

// joinRule is concat's (or stack's) rule: each input's gradient is its
// part of g along the axis.
func joinRule(stack bool) Rule {
	return rule(func(b Builder, in []Value, _, g Value, a AxisAttrs) []Value {
		r := rb{b}
		s0 := in[0].Shape()
		ax := a.Axis
		rank := len(s0)
		if stack {
			rank++
		}
		if ax < 0 {
			ax += rank
		}
		gs := make([]Value, len(in))
		off := 0
		for i, x := range in {
			n := 1
			if !stack {
				n = x.Shape()[ax]
			}
			part := r.op(SliceOp, SliceAttrs{Axis: ax, Start: off, Stop: off + n, Step: 1}, g)
			if stack {
				part = r.reshape(part, x.Shape())
			}
			gs[i] = part
			off += n
		}
		return gs
	})
}

// castRule casts the gradient back to the input's dtype.
var castRule = unaryRule(func(r rb, x, y, g Value, _ Attrs) Value {
	return r.op(CastOp, CastAttrs{DType: r.b.Tensor(x).DType()}, g)
})
