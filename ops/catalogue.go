package ops

import (
	"fmt"
	"math"
)

// The domains of the catalogue's cases.
var (
	anyReal   = Domain{}               // [−1, 1)
	positive  = Domain{Lo: 0.1, Hi: 5} // logarithms, square roots
	moderate  = Domain{Lo: -5, Hi: 5}  // exp, activations
	offZero   = Domain{Lo: -1, Hi: 1, Kinks: []float64{0}, Gap: 0.01}
	divisor   = Domain{Lo: -2, Hi: 2, Kinks: []float64{0}, Gap: 0.5}
	integral  = Domain{Lo: -3, Hi: 3, Kinks: []float64{-3, -2, -1, 0, 1, 2, 3}, Gap: 0.01}
	halves    = Domain{Lo: -3, Hi: 3, Kinks: []float64{-2.5, -1.5, -0.5, 0.5, 1.5, 2.5}, Gap: 0.01}
	logits    = Domain{Lo: -3, Hi: 3}
	bigLogits = Domain{Lo: -100, Hi: 100}
	prob      = Domain{Lo: 0.02, Hi: 0.98}
	unit      = Domain{Lo: 0, Hi: 1}
)

// catalogue is the table of every op; Table returns it.
var catalogue = []*Op{
	// Arithmetic, with NumPy broadcasting.
	binaryOp("add", "a + b.", Add, AddBackward, binaryCases(anyReal, anyReal, finiteSpecials, true)),
	binaryOp("sub", "a − b.", Sub, SubBackward, binaryCases(anyReal, anyReal, finiteSpecials, false)),
	binaryOp("mul", "a·b.", Mul, MulBackward, binaryCases(anyReal, anyReal, finiteSpecials, true)),
	binaryOp("div", "a / b (IEEE at 0); gradients g/(b+ε), −g·a/(b²+ε), ε = 1e-10.", Div, DivBackward,
		binaryCases(anyReal, divisor, finiteSpecials, false)),
	binaryOp("pow", "aᵇ, real exponents, IEEE pow's special cases; a negative base needs an integer exponent; ∂/∂b = 0 where a ≤ 0.", Pow, PowBackward,
		binaryCases(Domain{Lo: 0.2, Hi: 2}, Domain{Lo: -3, Hi: 3}, finiteSpecials, false,
			Case{Name: "negative base, integer exponents", Inputs: []Input{
				{Shape: sh(4, 5), Domain: Domain{Lo: -2, Hi: 2, Kinks: []float64{0}, Gap: 0.1}},
				{Shape: sh(4, 5), Domain: Domain{Lo: -3, Hi: 4, Integers: true}, NoFD: true}}})),
	binaryOp("floor_divide", "⌊a / b⌋; zero gradients.", FloorDivide, FloorDivideBackward,
		binaryCases(Domain{Lo: -3, Hi: 3}, divisor, finiteSpecials, false)),
	binaryOp("mod", "a − b·⌊a/b⌋, the sign of b; gradients g and −g·⌊a/b⌋.", Mod, ModBackward,
		binaryCases(Domain{Lo: -3, Hi: 3}, divisor, finiteSpecials, false)),
	unaryOp("neg", "−x.", Neg, NegBackward, unaryCases(anyReal, specials, Attrs{}, false)),

	// Elementwise math.
	unaryOp("exp", "eˣ.", Exp, ExpBackward, unaryCases(moderate, specials, Attrs{}, true)),
	unaryOp("log", "ln x: −Inf at 0, NaN below; gradient g/(x+ε), ε = 1e-10.", Log, LogBackward,
		unaryCases(positive, specials, Attrs{}, false)),
	unaryOp("log2", "log₂ x; gradient g/(x·ln 2+ε).", Log2, Log2Backward, unaryCases(positive, specials, Attrs{}, false)),
	unaryOp("log10", "log₁₀ x; gradient g/(x·ln 10+ε).", Log10, Log10Backward, unaryCases(positive, specials, Attrs{}, false)),
	unaryOp("sqrt", "√x, NaN below 0; gradient g/(2√x+ε).", Sqrt, SqrtBackward, unaryCases(positive, specials, Attrs{}, false)),
	unaryOp("abs", "|x|; gradient g·sign(x), 0 at 0.", Abs, AbsBackward,
		unaryCases(offZero, specials, Attrs{}, false, values("kink at 0", []float64{0, -0.0, 1, -1}, true))),
	unaryOp("sign", "−1, 0 or 1; zero gradient.", Sign, SignBackward, unaryCases(offZero, specials, Attrs{}, false)),
	unaryOp("sin", "sin x (NaN at ±Inf).", Sin, SinBackward, unaryCases(Domain{Lo: -4, Hi: 4}, finiteSpecials, Attrs{}, false)),
	unaryOp("cos", "cos x (NaN at ±Inf).", Cos, CosBackward, unaryCases(Domain{Lo: -4, Hi: 4}, finiteSpecials, Attrs{}, false)),
	{Name: "clip", Family: "unary", Doc: "x clamped to [lo, hi]; gradient passes where lo ≤ x ≤ hi, bounds inclusive; lo > hi panics.",
		Forward:  func(in []*T, a Attrs) *T { return Clip(in[0], a.Lo, a.Hi) },
		Backward: func(in []*T, g *T, a Attrs) []*T { return []*T{ClipBackward(in[0], g, a.Lo, a.Hi)} },
		Cases: unaryCases(Domain{Lo: -1, Hi: 1, Kinks: []float64{-0.5, 0.5}, Gap: 0.01}, specials, Attrs{Lo: -0.5, Hi: 0.5}, false,
			Case{Name: "at the bounds", Inputs: []Input{{Shape: sh(5), Domain: Domain{Values: []float64{-0.5, 0.5, 0, -1, 1}}}}, Attrs: Attrs{Lo: -0.5, Hi: 0.5}, NoFD: true},
			Case{Name: "lo = hi", Inputs: []Input{{Shape: sh(7), Domain: offZero}}, Attrs: Attrs{Lo: 0.25, Hi: 0.25}, NoFD: true})},
	unaryOp("ceil", "⌈x⌉; zero gradient.", Ceil, CeilBackward, unaryCases(integral, specials, Attrs{}, false)),
	unaryOp("floor", "⌊x⌋; zero gradient.", Floor, FloorBackward, unaryCases(integral, specials, Attrs{}, false)),
	unaryOp("round", "nearest integer, halves to even; zero gradient.", Round, RoundBackward,
		unaryCases(halves, specials, Attrs{}, false, values("halves", []float64{0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5}, true))),
	unaryOp("trunc", "toward zero; zero gradient.", Trunc, TruncBackward, unaryCases(integral, specials, Attrs{}, false)),

	// Activations.
	unaryOp("relu", "max(x, 0), relu(NaN) = NaN; gradient 0 at 0.", Relu, ReluBackward,
		unaryCases(offZero, specials, Attrs{}, true, values("kink at 0", []float64{0, -0.0, 1, -1}, true))),
	{Name: "leaky_relu", Family: "unary", Doc: "x, or alpha·x for x ≤ 0; alpha ≥ 0 (default 0.01).",
		Forward:  func(in []*T, a Attrs) *T { return LeakyRelu(in[0], a.Alpha) },
		Backward: func(in []*T, g *T, a Attrs) []*T { return []*T{LeakyReluBackward(in[0], g, a.Alpha)} },
		Cases: unaryCases(offZero, specials, Attrs{Alpha: DefaultLeakySlope}, false,
			Case{Name: "(7,) alpha=0.2", Inputs: []Input{{Shape: sh(7), Domain: offZero}}, Attrs: Attrs{Alpha: 0.2}},
			Case{Name: "(7,) alpha=0", Inputs: []Input{{Shape: sh(7), Domain: offZero}}, Attrs: Attrs{Alpha: 0}})},
	{Name: "prelu", Family: "binary", Doc: "x, or alpha·x for x ≤ 0; one alpha, or one per channel (axis 1).",
		Forward: fwd2(Prelu), Backward: bwd2(PreluBackward), Cases: preluCases()},
	unaryOp("sigmoid", "1/(1+e⁻ˣ), stable at any |x|.", Sigmoid, SigmoidBackward,
		unaryCases(moderate, specials, Attrs{}, false, values("±20, ±100, ±1000", []float64{20, -20, 100, -100, 1000, -1000}, false))),
	unaryOp("tanh", "tanh x, stable at any |x|.", Tanh, TanhBackward,
		unaryCases(moderate, specials, Attrs{}, false, values("±20, ±100, ±1000", []float64{20, -20, 100, -100, 1000, -1000}, false))),
	unaryOp("gelu", "x·Φ(x), exact (erf); 0 at −Inf.", Gelu, GeluBackward,
		unaryCases(moderate, specials, Attrs{}, true, values("|x| > 10", []float64{-30, -12, -10.5, 10.5, 12, 30}, false))),
	unaryOp("gelu_tanh", "x/2·(1+tanh(√(2/π)(x+0.044715x³))).", GeluTanh, GeluTanhBackward,
		unaryCases(moderate, specials, Attrs{}, false, values("|x| > 10", []float64{-30, -12, -10.5, 10.5, 12, 30}, false))),
	{Name: "pow_scalar", Family: "unary", Doc: "xᵉ for a scalar real exponent e, as pow.",
		Forward:  func(in []*T, a Attrs) *T { return PowScalar(in[0], a.Alpha) },
		Backward: func(in []*T, g *T, a Attrs) []*T { return []*T{PowScalarBackward(in[0], g, a.Alpha)} },
		Cases:    powScalarCases()},
	softmaxOp("softmax", "along any axis, stable (max subtracted); gradient y·(g − Σg·y), O(n) per row.", Softmax, SoftmaxBackward),
	softmaxOp("log_softmax", "x − logsumexp(x) along any axis; gradient g − softmax·Σg.", LogSoftmax, LogSoftmaxBackward),

	// Reductions.
	reduceOp("sum", "over every axis, one or a set (negative axes), keepdims; 0 when empty.", SumAxes, SumAxesBackward, reduceCases(true, true)),
	reduceOp("mean", "as sum; NaN when empty.", MeanAxes, MeanAxesBackward, reduceCases(true, false)),
	reduceOp("max", "as sum, NaN-propagating; gradient split equally among ties; empty panics.", MaxAxes, MaxAxesBackward, reduceCases(false, true)),
	reduceOp("min", "as max.", MinAxes, MinAxesBackward, reduceCases(false, false)),
	argOp("argmax", "int32 index, first among ties, NaN counts as largest; no gradient.", ArgMax, ArgMaxAxis, argCases(true)),
	argOp("argmin", "int32 index, first among ties, NaN counts as smallest; no gradient.", ArgMin, ArgMinAxis, argCases(false)),

	// Losses.
	lossOp("mse", "(p − t)², reduced (mean, sum, none).", MSELoss, MSELossBackward,
		lossCases(anyReal, anyReal, []float64{nan, inf, -inf, 1e30, -1e30, 0, 1, -1})),
	lossOp("bce", "−(y·ln p + (1−y)·ln(1−p)), p clamped to [2⁻²⁴, 1−2⁻²⁴]; exact gradient (p−y)/(p(1−p)).", BCELoss, BCELossBackward,
		lossCases(prob, unit, []float64{nan, 0, 1, -1, 2, 1e-30, 0.5, 0.999, inf, -inf})),
	lossOp("bce_with_logits", "BCE of sigmoid(x), stable: (1−y)·x + softplus(−x), as PyTorch (x = +∞ gives +∞ for y < 1, x = −∞ NaN).", BCEWithLogitsLoss, BCEWithLogitsLossBackward,
		lossCases(moderate, unit, []float64{nan, 1e30, -1e30, 100, -100, 0, 30, -30, inf, -inf})),
	classOp("cross_entropy", "from logits (N×C), int32 class indices or probabilities; via logsumexp.", CrossEntropyLoss,
		func(x, t, g *T, r Reduction) []*T {
			gx, gt := CrossEntropyLossBackward(x, t, g, r)
			return []*T{gx, gt}
		}, crossEntropyCases()),
	classOp("nll", "−logp[i, y_i] with int32 class indices.", NLLLoss,
		func(x, t, g *T, r Reduction) []*T { return []*T{NLLLossBackward(x, t, g, r), nil} },
		classCases(Domain{Lo: -5, Hi: 0}, false)),

	// Matrices and shapes.
	{Name: "matmul", Family: "matmul", Doc: "m×k · k×n.", Forward: fwd2(MatMul), Backward: bwd2(MatMulBackward), Cases: matmulCases()},
	{Name: "transpose", Family: "transpose", Doc: "of a matrix.", Forward: fwd1(Transpose), Backward: bwd1(TransposeBackward),
		Cases: []Case{
			{Name: "(1,1)", Inputs: []Input{{Shape: sh(1, 1)}}},
			{Name: "(7,3)", Inputs: []Input{{Shape: sh(7, 3)}}},
			{Name: "(257,7)", Inputs: []Input{{Shape: sh(257, 7)}}},
			{Name: "special values (3,6)", Inputs: []Input{{Shape: sh(3, 6), Domain: Domain{Values: finiteSpecials}}}, NoFD: true},
		}},
	{Name: "broadcast_to", Family: "binary", Doc: "NumPy broadcasting to a shape; gradient summed back.",
		Forward:  func(in []*T, a Attrs) *T { return BroadcastTo(in[0], a.Shape) },
		Backward: bwd1(BroadcastToBackward), Cases: broadcastCases(false)},
	{Name: "sum_to", Family: "reduce", Doc: "sum over broadcast axes to a shape, the adjoint of broadcast_to.",
		Forward:  func(in []*T, a Attrs) *T { return SumTo(in[0], a.Shape) },
		Backward: bwd1(SumToBackward), Cases: broadcastCases(true)},

	// Updates.
	{Name: "sgd", Family: "update", Doc: "w ← w − lr·g in place; no gradient.",
		Forward: func(in []*T, a Attrs) *T {
			w := Clone(in[0])
			SGD(w, in[1], a.Alpha)
			return w
		},
		Cases: sgdCases()},
}

func powScalarCases() []Case {
	cs := unaryCases(Domain{Lo: 0.1, Hi: 3}, specials, Attrs{Alpha: 2.5}, false)
	for _, e := range []float64{3, -2, 0.5, 0, 1} {
		dom := Domain{Lo: -2, Hi: 2, Kinks: []float64{0}, Gap: 0.1}
		if e != math.Trunc(e) {
			dom = Domain{Lo: 0.1, Hi: 2} // a non-integer exponent needs a positive base
		}
		cs = append(cs,
			Case{Name: fmt.Sprintf("(4,5) e=%v", e), Inputs: []Input{{Shape: sh(4, 5), Domain: dom}}, Attrs: Attrs{Alpha: e}},
			Case{Name: fmt.Sprintf("special values e=%v", e), Inputs: []Input{{Shape: sh(len(specials)), Domain: Domain{Values: specials}}}, Attrs: Attrs{Alpha: e}, NoFD: true})
	}
	return cs
}

func preluCases() []Case {
	c := func(x, alpha []int) Case {
		return Case{Name: ShapeName(x) + " alpha " + ShapeName(alpha), Inputs: []Input{{Shape: x, Domain: offZero}, {Shape: alpha, Domain: Domain{Lo: 0, Hi: 0.5}}}}
	}
	return []Case{
		c(sh(7), sh()), c(sh(7), sh(1)), c(sh(4, 3), sh(3)), c(sh(2, 3, 4, 5), sh(3)), c(sh(2, 3, 4, 5), sh(1)),
		c(sh(), sh()), c(sh(0, 3), sh(3)),
		{Name: "special values", Inputs: []Input{{Shape: sh(len(specials)), Domain: Domain{Values: specials}}, {Shape: sh(), Domain: Domain{Values: []float64{0.25}}}}, NoFD: true},
	}
}

func crossEntropyCases() []Case {
	cs := classCases(logits, false)
	for _, r := range []Reduction{MeanReduction, NoReduction} {
		cs = append(cs,
			Case{Name: "(7,10) ±100 " + r.String(), Inputs: []Input{{Shape: sh(7, 10), Domain: bigLogits}, {Shape: sh(7), Int: true, Domain: Domain{Classes: 10}}},
				Attrs: Attrs{Reduction: r}, FDATol: 1e-6},
			Case{Name: "(0,5) " + r.String(), Inputs: []Input{{Shape: sh(0, 5), Domain: logits}, {Shape: sh(0), Int: true, Domain: Domain{Classes: 5}}},
				Attrs: Attrs{Reduction: r}})
	}
	for _, c := range classCases(logits, true) {
		c.Name = "probabilities " + c.Name
		cs = append(cs, c)
	}
	return append(cs,
		Case{Name: "probabilities (7,10) ±100", Inputs: []Input{{Shape: sh(7, 10), Domain: bigLogits}, {Shape: sh(7, 10), Domain: unit}}, FDATol: 1e-6},
		Case{Name: "special values none", Inputs: []Input{
			{Shape: sh(3, 4), Domain: Domain{Values: []float64{1e30, -1e30, 0, 1, nan, 1, 2, 3, 100, -100, 50, 0}}},
			{Shape: sh(3), Int: true, Domain: Domain{Values: []float64{1, 2, 3}}}},
			Attrs: Attrs{Reduction: NoReduction}, NoFD: true},
	)
}

func matmulCases() []Case {
	var cs []Case
	for _, mkn := range [][3]int{{1, 1, 1}, {7, 7, 7}, {257, 7, 3}, {3, 257, 5}, {8, 12, 16}, {70, 33, 66}, {64, 64, 64}, {5, 0, 3}} {
		m, k, n := mkn[0], mkn[1], mkn[2]
		cs = append(cs, Case{Name: fmt.Sprintf("(%d,%d)@(%d,%d)", m, k, k, n), Inputs: []Input{{Shape: sh(m, k)}, {Shape: sh(k, n)}}})
	}
	// More terms than one loop of a lavapipe invocation runs: the sum is split.
	return append(cs, Case{Name: "(2,40000)@(40000,3)", Inputs: []Input{{Shape: sh(2, 40000)}, {Shape: sh(40000, 3)}}, NoFD: true},
		// NaN, ∞·0, ∞ and 1e30 in sums whose order cannot change the result.
		Case{Name: "special values (3,3)@(3,2)", Inputs: []Input{
			{Shape: sh(3, 3), Domain: Domain{Values: []float64{nan, 1, 2, inf, 0, 1, 1e30, 1, -1e-30}}},
			{Shape: sh(3, 2), Domain: Domain{Values: []float64{1, 0, 2, 1, math.Copysign(0, -1), 3}}}}, NoFD: true})
}

// broadcastCases are the cases of broadcast_to, or (sum) of sum_to, its
// adjoint, which goes the other way.
func broadcastCases(sum bool) []Case {
	var cs []Case
	for _, p := range [][2][]int{{sh(3, 1, 5), sh(3, 4, 5)}, {sh(), sh(4, 3)}, {sh(5), sh(2, 5)}} {
		from, to := p[0], p[1]
		if sum {
			from, to = to, from
		}
		cs = append(cs, Case{Name: ShapeName(from) + "->" + ShapeName(to), Inputs: []Input{{Shape: from}}, Attrs: Attrs{Shape: to}})
	}
	from, to := sh(3, 1), sh(3, 4)
	vals := []float64{nan, inf, math.Copysign(0, -1)}
	if sum { // columns of ∞ + 1e30, −∞ + 1e30, NaN + 1
		from, to = sh(2, 3), sh(3)
		vals = []float64{inf, -inf, nan, 1e30, 1e30, 1}
	}
	return append(cs, Case{Name: "special values " + ShapeName(from) + "->" + ShapeName(to), Inputs: []Input{{Shape: from, Domain: Domain{Values: vals}}}, Attrs: Attrs{Shape: to}, NoFD: true})
}

func sgdCases() []Case {
	var cs []Case
	for _, s := range [][]int{sh(1), sh(257), sh(3, 4, 5), sh(LargeLen)} {
		cs = append(cs, Case{Name: ShapeName(s) + " lr=0.1", Inputs: []Input{{Shape: s}, {Shape: s}}, Attrs: Attrs{Alpha: 0.1}, NoFD: true})
	}
	return append(cs, Case{Name: "special values lr=0.1", Inputs: []Input{
		{Shape: sh(5), Domain: Domain{Values: []float64{nan, inf, 1, 0, 1e30}}},
		{Shape: sh(5), Domain: Domain{Values: []float64{1, 1, inf, nan, -1e30}}}}, Attrs: Attrs{Alpha: 0.1}, NoFD: true})
}
