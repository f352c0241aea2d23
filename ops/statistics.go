package ops

import (
	"fmt"
	"math"

	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/tensor"
)

// The statistics over axes: each op's functions, table entry and
// second-order rule. They are composed of the reduction, broadcasting and
// elementwise kernels; on float16 they compute in float32 and round once.

// The entries of statistics. Each var is an op's handle, by which autograd.Apply
// and the rules reach it.
var (
	VarOp = &Op{Name: "var", Family: "reduce, binary", Doc: "Σ(x − mean)²/max(0, N − correction) over axes (nil: all), keepdims; correction 1 is PyTorch's default (Bessel's).",
		Forward: fwd(func(in []*T, a VarAttrs) *T { return varOf(in[0], a.Axes, a.Correction, a.Keepdims) }),
		Backward: bwd(func(in []*T, g *T, a VarAttrs) []*T {
			return []*T{VarBackward(in[0], g, a.Axes, a.Correction, a.Keepdims)}
		}),
		Cases: statCases(true)}
	StdOp = &Op{Name: "std", Family: "reduce, binary", Doc: "√var, as var; gradient 0 where std is 0 (PyTorch's).",
		Forward: fwd(func(in []*T, a VarAttrs) *T { return std(in[0], a.Axes, a.Correction, a.Keepdims) }),
		Backward: bwd(func(in []*T, g *T, a VarAttrs) []*T {
			return []*T{StdBackward(in[0], g, a.Axes, a.Correction, a.Keepdims)}
		}),
		Cases: statCases(true)}
	LogsumexpOp = &Op{Name: "logsumexp", Family: "reduce, binary, unary", Doc: "ln Σ eˣ over axes, the maximum subtracted first (kept 0 where it is ±Inf); −Inf for nothing; gradient g·e^(x − y).",
		Forward:  fwd(func(in []*T, a ReduceAttrs) *T { return logSumExp(in[0], a.Axes, a.Keepdims) }),
		Backward: bwd(func(in []*T, g *T, a ReduceAttrs) []*T { return []*T{LogSumExpBackward(in[0], g, a.Axes, a.Keepdims)} }),
		Cases:    statCases(false)}
)

// statistics are var, std and logsumexp, in the coverage table's order.
var statistics = []*Op{
	VarOp.with(varRule(false)),
	StdOp.with(varRule(true)),
	LogsumexpOp.with(logsumexpRule),
}

// varRule is var's (or std's) backward in table ops:
// g·2(x − mean)/d, or for std g·(x − mean)/(d·std), d = max(0, N − correction).
func varRule(std bool) Rule {
	return unaryRule(func(r rb, x, y, g Value, a VarAttrs) Value {
		t := r.b.Tensor(x)
		ax, _, kshape := reduceAxes("ops.Var", t, a.Axes, a.Keepdims)
		d := math.Max(0, float64(reducedCount(t, ax))-a.Correction)
		xc := r.sub(x, r.op(MeanOp, ReduceAttrs{Axes: a.Axes, Keepdims: true}, x))
		gu := r.unreduce(x, g, a.Axes)
		if !std {
			return r.mul(gu, r.scale(xc, 2/d))
		}
		// ÷ std, and 0 where std is 0.
		yb := r.broadcast(r.reshape(y, kshape), t.Shape())
		ybt := r.b.Tensor(yb)
		zero := scalarOf(ybt, 0)
		defer zero.Release()
		isZero := r.b.Const(binary("ops.Std", device.Equal, ybt, zero))
		safe := r.op(WhereOp, nil, isZero, r.scalar(y, 1), yb)
		q := r.div(r.mul(gu, xc), r.scale(safe, d))
		return r.op(WhereOp, nil, isZero, r.scalar(y, 0), q)
	})
}

// g·e^(x − y), y broadcast back over the reduced axes.
var logsumexpRule = unaryRule(func(r rb, x, y, g Value, a ReduceAttrs) Value {
	t := r.b.Tensor(x)
	_, _, kshape := reduceAxes("ops.LogSumExp", t, a.Axes, a.Keepdims)
	yb := r.broadcast(r.reshape(y, kshape), t.Shape())
	return r.mul(r.unreduce(x, g, a.Axes), r.un(ExpOp, r.sub(x, yb)))
})

// varDenominator returns max(0, N − correction) for the axes of x.
func varDenominator(op string, x *T, axes []int, correction float64) float64 {
	if math.IsNaN(correction) || math.IsInf(correction, 0) {
		tensor.Panicf(op, tensor.ErrArgument, "correction %v; want a finite correction (1: Bessel's)", correction)
	}
	ax, _, _ := reduceAxes(op, x, axes, false)
	return math.Max(0, float64(reducedCount(x, ax))-correction)
}

// scalarOf returns a 0-D tensor v of like's device and dtype.
func scalarOf(like *T, v float64) *T {
	return tensor.Must(tensor.Scalar(like.Device(), like.DType(), v))
}

// scaleBy returns x·k.
func scaleBy(x *T, k float64) *T { return scaledBroadcast("ops.Mul", x, x.Shape(), k) }

// shiftBy returns x + k.
func shiftBy(x *T, k float64) *T {
	s := scalarOf(x, k)
	defer s.Release()
	return add(x, s)
}

// centered returns x − mean(x) over axes (kept), on float32 or float64.
func centered(x *T, axes []int) *T {
	mu := mean(x, axes, true)
	defer mu.Release()
	xc := sub(x, mu)
	defer xc.Release()
	// The mean's rounding error, taken out again: the corrected two-pass
	// algorithm (Chan, Golub and LeVeque, 1983), without which a row of a
	// large mean and a small spread keeps an offset of the order of its
	// spread.
	e := mean(xc, axes, true)
	defer e.Release()
	return sub(xc, e)
}

// Var returns the variance of x over axes (nil: every axis), as PyTorch's
// var: Σ(x − mean)² / max(0, N − correction), N the count of the reduced
// elements (correction 1: the unbiased estimate; 0: the biased one).
// Nothing to divide by gives Inf (NaN for 0/0), as PyTorch.
func Var[V Operand[E], E any](x V, axes []int, correction float64, keepdims bool) V {
	return call(VarOp, VarAttrs{Axes: axes, Correction: correction, Keepdims: keepdims}, x)
}

func varOf(x *T, axes []int, correction float64, keepdims bool) *T {
	return variance("ops.Var", x, axes, correction, keepdims, false)
}

// Std returns the standard deviation, √Var.
func Std[V Operand[E], E any](x V, axes []int, correction float64, keepdims bool) V {
	return call(StdOp, VarAttrs{Axes: axes, Correction: correction, Keepdims: keepdims}, x)
}

func std(x *T, axes []int, correction float64, keepdims bool) *T {
	return variance("ops.Std", x, axes, correction, keepdims, true)
}

func variance(op string, x *T, axes []int, correction float64, keepdims, std bool) *T {
	operands(op, x)
	dt := floats(op, x)
	d := varDenominator(op, x, axes, correction)
	if dt == device.Float16 {
		in, done := wide32(x)
		defer done()
		return narrow16(variance(op, in[0], axes, correction, keepdims, std))
	}
	xc := centered(x, axes)
	defer xc.Release()
	sq := mul(xc, xc)
	defer sq.Release()
	s := sum(sq, axes, keepdims)
	defer s.Release()
	k := scalarOf(s, d)
	defer k.Release()
	v := div(s, k)
	if !std {
		return v
	}
	defer v.Release()
	return sqrt(v)
}

// VarBackward returns the gradient of Var: g·2(x − mean)/max(0, N − correction).
func VarBackward(x, g *T, axes []int, correction float64, keepdims bool) *T {
	return varianceBackward("ops.VarBackward", x, g, axes, correction, keepdims, false)
}

// StdBackward returns the gradient of Std: g·(x − mean)/(max(0, N −
// correction)·std), and 0 where std is 0, as PyTorch's.
func StdBackward(x, g *T, axes []int, correction float64, keepdims bool) *T {
	return varianceBackward("ops.StdBackward", x, g, axes, correction, keepdims, true)
}

func varianceBackward(op string, x, g *T, axes []int, correction float64, keepdims, isStd bool) *T {
	operands(op, x, g)
	dt := floats(op, x, g)
	d := varDenominator(op, x, axes, correction)
	_, shape, kshape := reduceAxes(op, x, axes, keepdims)
	sameShape(op, "upstream gradient", g, shape)
	if dt == device.Float16 {
		in, done := wide32(x, g)
		defer done()
		return narrow16(varianceBackward(op, in[0], in[1], axes, correction, keepdims, isStd))
	}
	xc := centered(x, axes)
	defer xc.Release()
	gk := g.Reshape(kshape...)
	defer gk.Release()
	scale := 2 / d
	if isStd {
		scale = 1 / d
	}
	f := scaledBroadcast(op, gk, x.Shape(), scale)
	defer f.Release()
	if !isStd {
		return mul(f, xc)
	}
	// ÷ std, 0 where std is 0.
	s := std(x, axes, correction, true)
	defer s.Release()
	zero := scalarOf(s, 0)
	defer zero.Release()
	isZero := binary(op, device.Equal, s, zero)
	defer isZero.Release()
	one := scalarOf(s, 1)
	defer one.Release()
	safe := where(isZero, one, s)
	defer safe.Release()
	q := div(xc, safe)
	defer q.Release()
	fq := mul(f, q)
	defer fq.Release()
	return where(isZero, zero, fq)
}

// LogSumExp returns ln Σ eˣ over axes (nil: every axis), as PyTorch's
// logsumexp: the maximum m is subtracted first, and kept 0 where it is
// ±Inf, so that large values do not overflow and rows of −Inf give −Inf;
// nothing to sum gives −Inf.
func LogSumExp[V Operand[E], E any](x V, axes []int, keepdims bool) V {
	return call(LogsumexpOp, ReduceAttrs{Axes: axes, Keepdims: keepdims}, x)
}

func logSumExp(x *T, axes []int, keepdims bool) *T {
	const op = "ops.LogSumExp"
	operands(op, x)
	dt := floats(op, x)
	ax, shape, _ := reduceAxes(op, x, axes, keepdims)
	if dt == device.Float16 {
		in, done := wide32(x)
		defer done()
		return narrow16(logSumExp(in[0], axes, keepdims))
	}
	m := shift(x, ax)
	defer m.Release()
	xm := sub(x, m)
	defer xm.Release()
	e := exp(xm)
	defer e.Release()
	s := sum(e, ax, true)
	defer s.Release()
	l := log(s)
	defer l.Release()
	y := add(l, m)
	if keepdims {
		return y
	}
	defer y.Release()
	return y.Reshape(shape...)
}

// shift returns LogSumExp's shift over axes ax of x (kept): the maximum,
// 0 where it is ±Inf or where there is nothing to reduce.
func shift(x *T, ax []int) *T {
	if reducedCount(x, ax) == 0 {
		_, _, kshape := reduceAxes("ops.LogSumExp", x, ax, true)
		return filled(x.Device(), x.DType(), kshape, 0, x)
	}
	m := maxOf(x, ax, true)
	defer m.Release()
	am := abs(m)
	defer am.Release()
	inf := scalarOf(m, math.Inf(1))
	defer inf.Release()
	isInf := binary("ops.LogSumExp", device.Equal, am, inf)
	defer isInf.Release()
	zero := scalarOf(m, 0)
	defer zero.Release()
	return where(isInf, zero, m)
}

// LogSumExpBackward returns the gradient of LogSumExp: g·e^(x − y), the
// softmax of x over the axes times g.
func LogSumExpBackward(x, g *T, axes []int, keepdims bool) *T {
	const op = "ops.LogSumExpBackward"
	operands(op, x, g)
	dt := floats(op, x, g)
	_, shape, kshape := reduceAxes(op, x, axes, keepdims)
	sameShape(op, "upstream gradient", g, shape)
	if dt == device.Float16 {
		in, done := wide32(x, g)
		defer done()
		return narrow16(LogSumExpBackward(in[0], in[1], axes, keepdims))
	}
	y := logSumExp(x, axes, true)
	defer y.Release()
	xy := sub(x, y)
	defer xy.Release()
	e := exp(xy)
	defer e.Release()
	gk := g.Reshape(kshape...)
	defer gk.Release()
	return mul(e, gk)
}

// statCases are the cases of var and std (with corrections) or logsumexp.
func statCases(variance bool) []Case {
	type sc struct {
		shape      []int
		axes       []int
		keepdims   bool
		correction float64
	}
	list := []sc{
		{sh(7), nil, false, 1}, {sh(3, 4), []int{1}, false, 1}, {sh(3, 4), []int{0}, true, 0},
		{sh(2, 3, 4), []int{0, 2}, false, 1}, {sh(2, 3, 4), []int{-1}, true, 2}, {sh(), nil, false, 0},
		{sh(129, 130), []int{1}, false, 1},
	}
	dom := Domain{Lo: -2, Hi: 2}
	if !variance {
		dom = Domain{Lo: -5, Hi: 5}
	}
	var cs []Case
	for _, s := range list {
		var a Attrs = ReduceAttrs{Axes: s.axes, Keepdims: s.keepdims}
		name := ShapeName(s.shape)
		if s.axes != nil {
			name += fmt.Sprintf(" axes=%v", s.axes)
		}
		if s.keepdims {
			name += " keepdims"
		}
		if variance {
			a = VarAttrs{Axes: s.axes, Keepdims: s.keepdims, Correction: s.correction}
			name += fmt.Sprintf(" correction=%v", s.correction)
		}
		cs = append(cs, Case{Name: name, Inputs: []Input{{Shape: s.shape, Domain: dom}}, Attrs: a, NoFD: device.Numel(s.shape) > 4096})
	}
	// One row of each kind of special value: NaN, ±Inf, ordinary.
	var rows Attrs = ReduceAttrs{Axes: []int{1}}
	if variance {
		rows = VarAttrs{Axes: []int{1}, Correction: 1}
	}
	special := Case{Name: "special values", Inputs: []Input{{Shape: sh(5, 3), Domain: Domain{Values: []float64{
		nan, 1, 2, inf, 1, 2, -inf, -inf, -inf, inf, -inf, 0, 1, 2, 3}}}}, Attrs: rows, NoFD: true}
	empty := Case{Name: "(3,0) axes=[1]", Inputs: []Input{{Shape: sh(3, 0)}}, Attrs: rows, NoFD: true}
	cs = append(cs, special, empty)
	if variance {
		// A constant row: std 0, whose gradient PyTorch takes as 0.
		cs = append(cs, Case{Name: "constant rows", Inputs: []Input{{Shape: sh(2, 3), Domain: Domain{Values: []float64{2, 2, 2, -1, -1, -1}}}}, Attrs: VarAttrs{Axes: []int{1}, Correction: 1}, NoFD: true},
			Case{Name: "(4,) correction=4", Inputs: []Input{{Shape: sh(4)}}, Attrs: VarAttrs{Correction: 4}, NoFD: true})
	} else {
		cs = append(cs, Case{Name: "±100 rows", Inputs: []Input{{Shape: sh(2, 3), Domain: Domain{Values: []float64{100, 99, 98, -100, -101, -99}}}}, Attrs: ReduceAttrs{Axes: []int{1}}})
	}
	return cs
}

// VarAttrs are var's and std's axes and keepdim, and the correction:
// the divisor is N − Correction (PyTorch's default 1).
type VarAttrs struct {
	Axes       []int
	Keepdims   bool
	Correction float64
}

func (VarAttrs) isAttrs() {}
