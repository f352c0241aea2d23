package ops

import (
	"math"

	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/tensor"
)

// The activations: each op's functions, table entry and second-order rule.

// The entries of activations. Each var is an op's handle, by which autograd.Apply
// and the rules reach it.
var (
	ReluOp = unaryOp("relu", "max(x, 0), relu(NaN) = NaN; gradient 0 at 0.", relu, ReluBackward,
		unaryCases(offZero, specials, nil, true, values("kink at 0", []float64{0, negZero, 1, -1}, true)))
	LeakyReluOp = &Op{Name: "leaky_relu", Family: "unary", Kernel: "leaky_relu", Doc: "x, or slope·x for x ≤ 0; slope ≥ 0 (default 0.01).",
		Forward:  fwd(func(in []*T, a LeakyReluAttrs) *T { return leakyRelu(in[0], a.Slope) }),
		Backward: leakyBwd,
		Cases: unaryCases(offZero, specials, LeakyReluAttrs{Slope: DefaultLeakySlope}, false,
			Case{Name: "(7,) alpha=0.2", Inputs: []Input{{Shape: sh(7), Domain: offZero}}, Attrs: LeakyReluAttrs{Slope: 0.2}},
			Case{Name: "(7,) alpha=0", Inputs: []Input{{Shape: sh(7), Domain: offZero}}, Attrs: LeakyReluAttrs{Slope: 0}})}
	PreluOp = &Op{Name: "prelu", Family: "binary", Doc: "x, or alpha·x for x ≤ 0; one alpha, or one per channel (axis 1).",
		Forward: fwd2(prelu), Backward: bwd2(PreluBackward), Cases: preluCases()}
	SigmoidOp = unaryOp("sigmoid", "1/(1+e⁻ˣ), stable at any |x|.", sigmoid, SigmoidBackward,
		unaryCases(moderate, specials, nil, false, values("±20, ±100, ±1000", []float64{20, -20, 100, -100, 1000, -1000}, false)))
	TanhOp = unaryOp("tanh", "tanh x, stable at any |x|.", tanh, TanhBackward,
		unaryCases(moderate, specials, nil, false, values("±20, ±100, ±1000", []float64{20, -20, 100, -100, 1000, -1000}, false), nearZero()))
	GeluOp = unaryOp("gelu", "x·Φ(x), exact (erf); 0 at −Inf.", gelu, GeluBackward,
		unaryCases(moderate, specials, nil, true, values("|x| > 10", []float64{-30, -12, -10.5, 10.5, 12, 30}, false), nearZero()))
	GeluTanhOp = unaryOp("gelu_tanh", "x/2·(1+tanh(√(2/π)(x+0.044715x³))).", geluTanh, GeluTanhBackward,
		unaryCases(moderate, specials, nil, false, values("|x| > 10", []float64{-30, -12, -10.5, 10.5, 12, 30}, false), nearZero()))
	NdtrOp = unaryOp("ndtr", "Φ(x), the standard normal distribution function (torch.special.ndtr), through erfc; gradient φ(x).", ndtr, NdtrBackward,
		unaryCases(moderate, specials, nil, false, values("far tails", []float64{-12, -8, -5, 5, 8}, false)))
	SiluOp = unaryOp("silu", "x·σ(x) (swish); NaN at −Inf, as PyTorch's x/(1+e⁻ˣ).", silu, SiluBackward,
		unaryCases(moderate, specials, nil, true, values("±20, ±100", []float64{20, -20, 100, -100}, false), nearZero()))
	SoftplusOp = &Op{Name: "softplus", Family: "unary", Kernel: "softplus", Doc: "ln(1 + e^(βx))/β, x where βx > threshold (β = 1, threshold = 20); stable at any βx; β finite and nonzero, threshold not NaN.",
		Forward: fwd(func(in []*T, a SoftplusAttrs) *T { return softplus(in[0], a.Beta, a.Threshold) }),
		Backward: bwd(func(in []*T, g *T, a SoftplusAttrs) []*T {
			return []*T{SoftplusBackward(in[0], g, a.Beta, a.Threshold)}
		}),
		Cases: softplusCases()}
	EluOp = &Op{Name: "elu", Family: "unary", Kernel: "elu", Doc: "x for x > 0, alpha·(eˣ − 1) otherwise (alpha = 1, finite); gradient alpha·eˣ at and below 0.",
		Forward:  fwd(func(in []*T, a EluAttrs) *T { return elu(in[0], a.Alpha) }),
		Backward: bwd(func(in []*T, g *T, a EluAttrs) []*T { return []*T{EluBackward(in[0], g, a.Alpha)} }),
		Cases: unaryCases(moderate, specials, EluAttrs{Alpha: DefaultEluAlpha}, false, nearZeroNoFD(EluAttrs{Alpha: DefaultEluAlpha}),
			Case{Name: "(4,5) alpha=0.5", Inputs: []Input{{Shape: sh(4, 5), Domain: Domain{Lo: -3, Hi: 3, Kinks: []float64{0}, Gap: 0.01}}}, Attrs: EluAttrs{Alpha: 0.5}},
			Case{Name: "-40, -100, -Inf alpha=2", Inputs: []Input{{Shape: sh(3), Domain: Domain{Values: []float64{-40, -100, math.Inf(-1)}}}}, Attrs: EluAttrs{Alpha: 2}, NoFD: true})}
	CeluOp = &Op{Name: "celu", Family: "unary", Kernel: "celu", Doc: "x for x > 0, alpha·(e^(x/alpha) − 1) otherwise (alpha = 1, finite and nonzero), PyTorch's celu; gradient e^(x/alpha) at and below 0.",
		Forward:  fwd(func(in []*T, a CeluAttrs) *T { return celu(in[0], a.Alpha) }),
		Backward: bwd(func(in []*T, g *T, a CeluAttrs) []*T { return []*T{CeluBackward(in[0], g, a.Alpha)} }),
		Cases: unaryCases(moderate, specials, CeluAttrs{Alpha: DefaultCeluAlpha}, false, nearZeroNoFD(CeluAttrs{Alpha: DefaultCeluAlpha}),
			Case{Name: "(4,5) alpha=0.5", Inputs: []Input{{Shape: sh(4, 5), Domain: Domain{Lo: -3, Hi: 3, Kinks: []float64{0}, Gap: 0.01}}}, Attrs: CeluAttrs{Alpha: 0.5}},
			named("near 0, relative alpha=-2", nearZeroNoFD(CeluAttrs{Alpha: -2})),
			Case{Name: "(4,5) alpha=-2", Inputs: []Input{{Shape: sh(4, 5), Domain: Domain{Lo: -3, Hi: 3, Kinks: []float64{0}, Gap: 0.01}}}, Attrs: CeluAttrs{Alpha: -2}},
			Case{Name: "-40, -100, -Inf alpha=2", Inputs: []Input{{Shape: sh(3), Domain: Domain{Values: []float64{-40, -100, math.Inf(-1)}}}}, Attrs: CeluAttrs{Alpha: 2}, NoFD: true})}
	HardswishOp = unaryOp("hardswish", "x·min(max(x + 3, 0), 6)/6, as PyTorch (NaN at −Inf); gradient 0 below −3, x/3 + ½ on [−3, 3], 1 above.", hardswish, HardswishBackward,
		unaryCases(Domain{Lo: -5, Hi: 5, Kinks: []float64{-3, 3}, Gap: 0.01}, specials, nil, false, nearZero(),
			values("at ±3", []float64{-3, 3, -3.5, 3.5}, true)))
	MishOp = unaryOp("mish", "x·tanh(softplus(x)); NaN at −Inf, as PyTorch.", mish, MishBackward,
		unaryCases(moderate, specials, nil, false, values("±20, ±100", []float64{20, -20, 100, -100}, false), nearZero()))
)

// activations are the activation functions, in the coverage table's order.
var activations = []*Op{
	ReluOp.with(reluRule),
	LeakyReluOp.with(slopeRule(leakyBwd, false)),
	PreluOp.with(preluRule),
	SigmoidOp.with(sigmoidRule),
	TanhOp.with(tanhRule),
	GeluOp.with(geluRule),
	GeluTanhOp.with(geluTanhRule),
	NdtrOp.with(ndtrRule),
	SiluOp.with(siluRule),
	SoftplusOp.with(softplusRule),
	EluOp.with(eluRule),
	CeluOp.with(celuRule),
	HardswishOp.with(hardswishRule),
	MishOp.with(mishRule),
}

// Second-order rules.
var (
	reluRule = unaryRule(func(r rb, x, y, g Value, _ Attrs) Value { return r.mul(g, r.un(SignOp, y)) })
	// 1 − y² and y·(1 − y) in the outputs.
	tanhRule = unaryRule(func(r rb, x, y, g Value, _ Attrs) Value {
		return r.mul(g, r.sub(r.scalar(y, 1), r.mul(y, y)))
	})
	sigmoidRule = unaryRule(func(r rb, x, y, g Value, _ Attrs) Value {
		return r.mul(g, r.mul(y, r.sub(r.scalar(y, 1), y)))
	})
	// Φ(x) + x·φ(x).
	geluRule = unaryRule(func(r rb, x, y, g Value, _ Attrs) Value {
		return r.mul(g, r.add(r.un(NdtrOp, x), r.mul(x, normalDensity(r, x))))
	})
	// ½(1 + t) + ½x·(1 − t²)·u′, t = tanh u, u = k(x + 0.044715x³),
	// u′ = k(1 + 3·0.044715x²), k = √(2/π).
	geluTanhRule = unaryRule(func(r rb, x, y, g Value, _ Attrs) Value {
		const k = 0.7978845608028654
		x2 := r.mul(x, x)
		u := r.scale(r.add(x, r.scale(r.mul(x, x2), 0.044715)), k)
		t := r.un(TanhOp, u)
		one := r.scalar(x, 1)
		du := r.scale(r.add(one, r.scale(x2, 3*0.044715)), k)
		d := r.add(r.scale(r.add(one, t), 0.5), r.mul(r.scale(x, 0.5), r.mul(r.sub(one, r.mul(t, t)), du)))
		return r.mul(g, d)
	})
	// φ(x).
	ndtrRule = unaryRule(func(r rb, x, y, g Value, _ Attrs) Value { return r.mul(g, normalDensity(r, x)) })
	// σ(x)·(1 + x·(1 − σ(x))).
	siluRule = unaryRule(func(r rb, x, y, g Value, _ Attrs) Value {
		s := r.un(SigmoidOp, x)
		return r.mul(g, r.mul(s, r.add(r.scalar(x, 1), r.mul(x, r.sub(r.scalar(x, 1), s)))))
	})
	// σ(βx) where βx ≤ threshold, 1 above it.
	softplusRule = unaryRule(func(r rb, x, y, g Value, a SoftplusAttrs) Value {
		lin := above(r.b.Tensor(x), a.Beta, a.Threshold)
		s := r.un(SigmoidOp, r.scale(x, a.Beta))
		return r.mul(g, r.add(r.mul(s, r.b.Const(complement(lin))), r.b.Const(lin)))
	})
	// 1 above 0; alpha·eˣ = y + alpha at and below it.
	eluRule = unaryRule(func(r rb, x, y, g Value, a EluAttrs) Value {
		pos := above(r.b.Tensor(x), 1, 0)
		neg := r.mul(r.b.Const(complement(pos)), r.add(y, r.scalar(y, a.Alpha)))
		return r.mul(g, r.add(neg, r.b.Const(pos)))
	})
	// 1 above 0; e^(x/alpha) = y/alpha + 1 at and below it.
	celuRule = unaryRule(func(r rb, x, y, g Value, a CeluAttrs) Value {
		pos := above(r.b.Tensor(x), 1, 0)
		neg := r.mul(r.b.Const(complement(pos)), r.add(r.scale(y, 1/a.Alpha), r.scalar(y, 1)))
		return r.mul(g, r.add(neg, r.b.Const(pos)))
	})
	// x/3 + ½ on [−3, 3], 1 above.
	hardswishRule = unaryRule(func(r rb, x, y, g Value, _ Attrs) Value {
		t := r.b.Tensor(x)
		hi, lo := above(t, 1, 3), above(t, -1, 3) // x > 3, x < −3
		mid := tensor.Must(tensor.Ones(t.Device(), t.DType(), t.Shape()...))
		mid = sub(mid, hi)
		mid = sub(mid, lo)
		slope := r.add(r.scale(x, 1.0/3), r.scalar(x, 0.5))
		return r.mul(g, r.add(r.mul(slope, r.b.Const(mid)), r.b.Const(hi)))
	})
	// t + x·σ(x)·(1 − t²), t = tanh(softplus(x)).
	mishRule = unaryRule(func(r rb, x, y, g Value, _ Attrs) Value {
		t := r.un(TanhOp, r.op(SoftplusOp, SoftplusAttrs{Beta: 1, Threshold: math.Inf(1)}, x))
		sech2 := r.sub(r.scalar(t, 1), r.mul(t, t))
		return r.mul(g, r.add(t, r.mul(r.mul(x, r.un(SigmoidOp, x)), sech2)))
	})
)

// Relu returns max(x, 0) elementwise; relu(NaN) is NaN.
func Relu[V Operand[E], E any](x V) V { return call(ReluOp, nil, x) }

func relu(x *tensor.Tensor) *tensor.Tensor { return unary("ops.Relu", "relu", x) }

// ReluBackward returns the gradient of Relu: g where x > 0 and 0 elsewhere
// (the subgradient at 0 is 0, as in PyTorch).
func ReluBackward(x, g *tensor.Tensor) *tensor.Tensor {
	return unaryGrad("ops.ReluBackward", "relu", x, g)
}

// DefaultLeakySlope is the slope PyTorch's leaky_relu uses by default.
const DefaultLeakySlope = 0.01

func checkSlope(op string, alpha float64) {
	if !(alpha >= 0) || math.IsInf(alpha, 0) {
		tensor.Panicf(op, tensor.ErrArgument, "slope %v; want a finite slope ≥ 0 (for a learned or negative slope use Prelu)", alpha)
	}
}

// LeakyRelu returns x where x > 0 and alpha·x where x ≤ 0. alpha must be
// finite and ≥ 0 (DefaultLeakySlope is PyTorch's default).
func LeakyRelu[V Operand[E], E any](x V, slope float64) V {
	return call(LeakyReluOp, LeakyReluAttrs{Slope: slope}, x)
}

func leakyRelu(x *tensor.Tensor, alpha float64) *tensor.Tensor {
	checkSlope("ops.LeakyRelu", alpha)
	return unary("ops.LeakyRelu", "leaky_relu", x, alpha)
}

// LeakyReluBackward returns the gradient of LeakyRelu: g where x > 0, and
// alpha·g where x ≤ 0.
func LeakyReluBackward(x, g *tensor.Tensor, alpha float64) *tensor.Tensor {
	checkSlope("ops.LeakyReluBackward", alpha)
	return unaryGrad("ops.LeakyReluBackward", "leaky_relu", x, g, alpha)
}

// Sigmoid returns 1/(1 + e⁻ˣ), computed from e^−|x| so that it neither
// overflows nor loses its small values at large |x|.
func Sigmoid[V Operand[E], E any](x V) V { return call(SigmoidOp, nil, x) }

func sigmoid(x *tensor.Tensor) *tensor.Tensor { return unary("ops.Sigmoid", "sigmoid", x) }

// SigmoidBackward returns the gradient of Sigmoid: g·σ(x)·σ(−x).
func SigmoidBackward(x, g *tensor.Tensor) *tensor.Tensor {
	return unaryGrad("ops.SigmoidBackward", "sigmoid", x, g)
}

// Tanh returns the hyperbolic tangent, ±1 (never NaN) at large |x|.
func Tanh[V Operand[E], E any](x V) V { return call(TanhOp, nil, x) }

func tanh(x *tensor.Tensor) *tensor.Tensor { return unary("ops.Tanh", "tanh", x) }

// TanhBackward returns the gradient of Tanh: g·(1 − tanh² x).
func TanhBackward(x, g *tensor.Tensor) *tensor.Tensor {
	return unaryGrad("ops.TanhBackward", "tanh", x, g)
}

// Gelu returns the exact GELU, x·Φ(x) with Φ the standard normal
// distribution function (through erf; WGSL's is a Chebyshev fit with a
// relative error below 1.2e-7). It is 0, not NaN, at −Inf.
func Gelu[V Operand[E], E any](x V) V { return call(GeluOp, nil, x) }

func gelu(x *tensor.Tensor) *tensor.Tensor { return unary("ops.Gelu", "gelu", x) }

// GeluBackward returns the gradient of Gelu: g·(Φ(x) + x·φ(x)).
func GeluBackward(x, g *tensor.Tensor) *tensor.Tensor {
	return unaryGrad("ops.GeluBackward", "gelu", x, g)
}

// GeluTanh returns the tanh approximation of GELU,
// x/2·(1 + tanh(√(2/π)·(x + 0.044715·x³))), PyTorch's approximate="tanh".
func GeluTanh[V Operand[E], E any](x V) V { return call(GeluTanhOp, nil, x) }

func geluTanh(x *tensor.Tensor) *tensor.Tensor { return unary("ops.GeluTanh", "gelu_tanh", x) }

// GeluTanhBackward returns the gradient of GeluTanh.
func GeluTanhBackward(x, g *tensor.Tensor) *tensor.Tensor {
	return unaryGrad("ops.GeluTanhBackward", "gelu_tanh", x, g)
}

// above returns 1 where k·x > c and 0 elsewhere (NaN at NaN), a constant
// mask for a rule's piecewise derivative.
func above(x *tensor.Tensor, k, c float64) *tensor.Tensor {
	kx := scaleBy(x, k)
	defer kx.Release()
	d := shiftBy(kx, -c)
	defer d.Release()
	s := sign(d)
	defer s.Release()
	return relu(s)
}

// complement returns 1 − m.
func complement(m *tensor.Tensor) *tensor.Tensor {
	one := scalarOf(m, 1)
	defer one.Release()
	return sub(one, m)
}

// withAttrs returns c with attributes a.
func withAttrs(c Case, a Attrs) Case {
	c.Attrs = a
	return c
}

// normalDensity returns φ(x) = e^(−x²/2)/√(2π) in table ops.
func normalDensity(r rb, x Value) Value {
	return r.scale(r.un(ExpOp, r.scale(r.mul(x, x), -0.5)), 0.3989422804014327)
}

// preluRule is prelu's backward in table ops: g where x > 0 and alpha·g
// elsewhere for x; the sum of g·x where x ≤ 0 for alpha (a constant mask
// of x's sign).
func preluRule(b Builder, in []Value, _, g Value, _ Attrs) []Value {
	r := rb{b}
	x, alpha := in[0], in[1]
	as := alpha.Shape()
	view := []int{}
	if device.Numel(as) != 1 || len(as) > 1 {
		view = ones(len(x.Shape()) - 1)
		view[0] = as[0]
	}
	av := r.reshape(alpha, view)
	pos := above(b.Tensor(x), 1, 0)
	neg := b.Const(complement(pos))
	gx := r.mul(g, r.add(b.Const(pos), r.mul(neg, av)))
	ga := r.reshape(r.sumTo(r.mul(g, r.mul(neg, x)), view), as)
	return []Value{gx, ga}
}

// Ndtr returns Φ(x), the standard normal distribution function, as
// torch.special.ndtr: erfc(−x/√2)/2 (WGSL's erfc a Chebyshev fit with a
// relative error below 1.2e-7).
func Ndtr[V Operand[E], E any](x V) V { return call(NdtrOp, nil, x) }

func ndtr(x *tensor.Tensor) *tensor.Tensor { return unary("ops.Ndtr", "ndtr", x) }

// NdtrBackward returns the gradient of Ndtr: g·φ(x), φ(x) = e^(−x²/2)/√(2π).
func NdtrBackward(x, g *tensor.Tensor) *tensor.Tensor {
	return unaryGrad("ops.NdtrBackward", "ndtr", x, g)
}

// Silu returns x·σ(x) (swish), as PyTorch's silu: NaN at −Inf.
func Silu[V Operand[E], E any](x V) V { return call(SiluOp, nil, x) }

func silu(x *tensor.Tensor) *tensor.Tensor { return unary("ops.Silu", "silu", x) }

// SiluBackward returns the gradient of Silu: g·σ(x)·(1 + x·(1 − σ(x))).
func SiluBackward(x, g *tensor.Tensor) *tensor.Tensor {
	return unaryGrad("ops.SiluBackward", "silu", x, g)
}

// PyTorch's defaults for Softplus.
const (
	DefaultSoftplusBeta      = 1.0
	DefaultSoftplusThreshold = 20.0
)

func checkSoftplus(op string, beta, threshold float64) {
	if beta == 0 || math.IsNaN(beta) || math.IsInf(beta, 0) || math.IsNaN(threshold) {
		tensor.Panicf(op, tensor.ErrArgument, "beta %v, threshold %v; want a finite, nonzero beta and a threshold that is not NaN", beta, threshold)
	}
}

// Softplus returns ln(1 + e^(β·x))/β, and x itself where β·x > threshold,
// as PyTorch's softplus (DefaultSoftplusBeta, DefaultSoftplusThreshold).
// It is computed as max(z, 0) + ln(1 + e^−|z|) with z = β·x, so it
// neither overflows nor loses its small values far below 0.
func Softplus[V Operand[E], E any](x V, beta, threshold float64) V {
	return call(SoftplusOp, SoftplusAttrs{Beta: beta, Threshold: threshold}, x)
}

func softplus(x *tensor.Tensor, beta, threshold float64) *tensor.Tensor {
	checkSoftplus("ops.Softplus", beta, threshold)
	return unary("ops.Softplus", "softplus", x, beta, threshold)
}

// SoftplusBackward returns the gradient of Softplus: g·σ(β·x), and g where
// β·x > threshold.
func SoftplusBackward(x, g *tensor.Tensor, beta, threshold float64) *tensor.Tensor {
	checkSoftplus("ops.SoftplusBackward", beta, threshold)
	return unaryGrad("ops.SoftplusBackward", "softplus", x, g, beta, threshold)
}

func softplusCases() []Case {
	def := SoftplusAttrs{Beta: DefaultSoftplusBeta, Threshold: DefaultSoftplusThreshold}
	far := values("far below 0, relative", []float64{-10, -20, -50, -80}, false)
	far.ATol = 1e-300
	return unaryCases(moderate, specials, def, true, withAttrs(far, def),
		withAttrs(values("±20, ±100", []float64{20, -20, 19.5, 20.5, 100, -100}, true), def),
		Case{Name: "(4,5) beta=2 threshold=1", Inputs: []Input{{Shape: sh(4, 5), Domain: Domain{Lo: -3, Hi: 3, Kinks: []float64{0.5}, Gap: 0.02}}}, Attrs: SoftplusAttrs{Beta: 2, Threshold: 1}},
		Case{Name: "(4,5) beta=-0.5", Inputs: []Input{{Shape: sh(4, 5), Domain: moderate}}, Attrs: SoftplusAttrs{Beta: -0.5, Threshold: DefaultSoftplusThreshold}},
		Case{Name: "special values threshold=+Inf", Inputs: []Input{{Shape: sh(len(specials)), Domain: Domain{Values: specials}}}, Attrs: SoftplusAttrs{Beta: 1, Threshold: math.Inf(1)}, NoFD: true})
}

// nearZeroNoFD is nearZero with attributes a and without finite
// differences: elu's and celu's second derivatives jump at 0, so central
// differences across it are off by O(h) there.
func nearZeroNoFD(a Attrs) Case {
	c := withAttrs(nearZero(), a)
	c.NoFD = true
	return c
}

// DefaultEluAlpha is PyTorch's default alpha for Elu.
const DefaultEluAlpha = 1.0

// checkAlpha returns alpha, and panics unless it is finite, and nonzero
// where it divides (celu's).
func checkAlpha(op string, alpha float64, nonzero bool) float64 {
	switch {
	case math.IsNaN(alpha) || math.IsInf(alpha, 0):
		tensor.Panicf(op, tensor.ErrArgument, "alpha %v; want a finite alpha", alpha)
	case nonzero && alpha == 0:
		tensor.Panicf(op, tensor.ErrArgument, "alpha 0; want a finite, nonzero alpha")
	}
	return alpha
}

// Elu returns x where x > 0 and alpha·(eˣ − 1) elsewhere, as PyTorch's elu
// (DefaultEluAlpha); alpha must be finite.
func Elu[V Operand[E], E any](x V, alpha float64) V { return call(EluOp, EluAttrs{Alpha: alpha}, x) }

func elu(x *tensor.Tensor, alpha float64) *tensor.Tensor {
	return unary("ops.Elu", "elu", x, checkAlpha("ops.Elu", alpha, false))
}

// EluBackward returns the gradient of Elu: g where x > 0, g·alpha·eˣ
// elsewhere.
func EluBackward(x, g *tensor.Tensor, alpha float64) *tensor.Tensor {
	return unaryGrad("ops.EluBackward", "elu", x, g, checkAlpha("ops.EluBackward", alpha, false))
}

// DefaultCeluAlpha is PyTorch's default alpha for Celu.
const DefaultCeluAlpha = 1.0

// Celu returns x where x > 0 and alpha·(e^(x/alpha) − 1) elsewhere, as
// PyTorch's celu (DefaultCeluAlpha); alpha must be finite and nonzero.
func Celu[V Operand[E], E any](x V, alpha float64) V { return call(CeluOp, CeluAttrs{Alpha: alpha}, x) }

func celu(x *tensor.Tensor, alpha float64) *tensor.Tensor {
	return unary("ops.Celu", "celu", x, checkAlpha("ops.Celu", alpha, true))
}

// CeluBackward returns the gradient of Celu: g where x > 0, g·e^(x/alpha)
// elsewhere.
func CeluBackward(x, g *tensor.Tensor, alpha float64) *tensor.Tensor {
	return unaryGrad("ops.CeluBackward", "celu", x, g, checkAlpha("ops.CeluBackward", alpha, true))
}

// Hardswish returns x·min(max(x + 3, 0), 6)/6, as PyTorch's hardswish
// (NaN at −Inf, where the product is −Inf·0).
func Hardswish[V Operand[E], E any](x V) V { return call(HardswishOp, nil, x) }

func hardswish(x *tensor.Tensor) *tensor.Tensor { return unary("ops.Hardswish", "hardswish", x) }

// HardswishBackward returns the gradient of Hardswish: 0 for x < −3,
// g·(x/3 + ½) for −3 ≤ x ≤ 3 and g above, PyTorch's choice at the kinks.
func HardswishBackward(x, g *tensor.Tensor) *tensor.Tensor {
	return unaryGrad("ops.HardswishBackward", "hardswish", x, g)
}

// Mish returns x·tanh(softplus(x)), as PyTorch's mish (NaN at −Inf).
func Mish[V Operand[E], E any](x V) V { return call(MishOp, nil, x) }

func mish(x *tensor.Tensor) *tensor.Tensor { return unary("ops.Mish", "mish", x) }

// MishBackward returns the gradient of Mish:
// g·(t + x·σ(x)·(1 − t²)), t = tanh(softplus(x)).
func MishBackward(x, g *tensor.Tensor) *tensor.Tensor {
	return unaryGrad("ops.MishBackward", "mish", x, g)
}

// leakyBwd is leaky_relu's Backward, which its Rule reuses.
var leakyBwd = bwd(func(in []*T, g *T, a LeakyReluAttrs) []*T {
	return []*T{LeakyReluBackward(in[0], g, a.Slope)}
})

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

// preluAlpha returns alpha as a view that broadcasts against x: one slope
// for every element, or one per channel along x's axis 1.
func preluAlpha(op string, x, alpha *tensor.Tensor) *tensor.Tensor {
	operands(op, x, alpha)
	if alpha.Len() == 1 && alpha.Rank() <= 1 {
		return alpha.Reshape()
	}
	if alpha.Rank() != 1 || x.Rank() < 2 || alpha.Dim(0) != x.Dim(1) {
		tensor.Panicf(op, tensor.ErrShape, "alpha has shape %v for x of shape %v; want one slope ([] or [1]) or one per channel ([C] with x of shape [N, C, ...])", alpha.Shape(), x.Shape())
	}
	s := ones(x.Rank() - 1)
	s[0] = alpha.Dim(0)
	return alpha.Reshape(s...)
}

// Prelu returns x where x > 0 and alpha·x where x ≤ 0, with one learned
// slope (alpha of shape [] or [1]) or one per channel (alpha of shape [C],
// x of shape [N, C, ...]), as PyTorch's prelu.
func Prelu[V Operand[E], E any](x, alpha V) V { return call(PreluOp, nil, x, alpha) }

func prelu(x, alpha *tensor.Tensor) *tensor.Tensor {
	a := preluAlpha("ops.Prelu", x, alpha)
	defer a.Release()
	return binary("ops.Prelu", device.Prelu, x, a)
}

// PreluBackward returns the gradients of Prelu: for x, g where x > 0 and
// alpha·g elsewhere; for alpha, the sum of x·g where x ≤ 0, shaped like alpha.
func PreluBackward(x, alpha, g *tensor.Tensor) (gx, galpha *tensor.Tensor) {
	const op = "ops.PreluBackward"
	a := preluAlpha(op, x, alpha)
	defer a.Release()
	gx, ga := binaryBackward(op, device.Prelu, x, a, g)
	defer ga.Release()
	return gx, ga.Reshape(alpha.Shape()...)
}

// softmax checks the arguments of a softmax along axis of x; a 0-D x is
// one row of one element.
func softmaxArgs(op string, x *tensor.Tensor, axis int) (dev device.Device, dt device.DType, shape []int, ax int) {
	dev = operands(op, x)
	dt = floats(op, x)
	shape = x.Shape()
	if len(shape) == 0 {
		shape = []int{1}
	}
	return dev, dt, shape, normAxis(op, axis, len(shape))
}

func softmax(op string, x *tensor.Tensor, axis int, log bool) *tensor.Tensor {
	dev, dt, shape, ax := softmaxArgs(op, x, axis)
	out, ok := output(dev, dt, x.Shape(), x)
	if ok && x.Len() > 0 { // an empty x's rows may be more than a kernel could walk
		dev.Softmax(out.Buffer(), x.Buffer(), shape, ax, log)
	}
	return out
}

func softmaxBackward(op string, x, g *tensor.Tensor, axis int, log bool) *tensor.Tensor {
	dev, dt, shape, ax := softmaxArgs(op, x, axis)
	operands(op, x, g)
	floats(op, x, g)
	sameShape(op, "upstream gradient", g, x.Shape())
	y := softmax(op, x, axis, log)
	defer y.Release()
	out, ok := output(dev, dt, x.Shape(), y, g)
	if ok && x.Len() > 0 {
		dev.SoftmaxGrad(out.Buffer(), y.Buffer(), g.Buffer(), shape, ax, log)
	}
	return out
}

// Softmax returns exp(x)/Σ exp(x) along axis (negative axes count from the
// end), computed stably by subtracting each row's maximum: finite for
// logits of any size, NaN for a row holding NaN or +Inf, or only −Inf.
func Softmax[V Operand[E], E any](x V, axis int) V { return call(SoftmaxOp, AxisAttrs{Axis: axis}, x) }

func softmaxOf(x *tensor.Tensor, axis int) *tensor.Tensor {
	return softmax("ops.Softmax", x, axis, false)
}

// SoftmaxBackward returns the gradient of Softmax, y·(g − Σ g·y) along the
// axis with y = Softmax(x, axis): O(n) per row. A row of one element has
// gradient 0.
func SoftmaxBackward(x, g *tensor.Tensor, axis int) *tensor.Tensor {
	return softmaxBackward("ops.SoftmaxBackward", x, g, axis, false)
}

// LogSoftmax returns x − log Σ exp(x) along axis, stably (the log-sum-exp
// is taken after subtracting each row's maximum).
func LogSoftmax[V Operand[E], E any](x V, axis int) V {
	return call(LogSoftmaxOp, AxisAttrs{Axis: axis}, x)
}

func logSoftmax(x *tensor.Tensor, axis int) *tensor.Tensor {
	return softmax("ops.LogSoftmax", x, axis, true)
}

// LogSoftmaxBackward returns the gradient of LogSoftmax, g − softmax(x)·Σ g
// along the axis.
func LogSoftmaxBackward(x, g *tensor.Tensor, axis int) *tensor.Tensor {
	return softmaxBackward("ops.LogSoftmaxBackward", x, g, axis, true)
}

// SGD updates w in place by one step of stochastic gradient descent,
// w ← w − lr·g, on w's device.
func SGD(w, g *tensor.Tensor, lr float64) {
	Axpy(w, g, -lr)
}

// Axpy sets y ← y + alpha·x in place.
func Axpy(y, x *tensor.Tensor, alpha float64) {
	const op = "ops.Axpy"
	dev := operands(op, y, x)
	floats(op, y, x)
	sameShape(op, "x", x, y.Shape())
	if x.Buffer() != nil && x.Buffer() == y.Buffer() {
		tensor.Panicf(op, tensor.ErrArgument, "x and y share memory; an in-place update needs distinct tensors")
	}
	if err := x.Err(); err != nil {
		y.SetErr(err)
	}
	if y.Err() != nil {
		return
	}
	dev.Axpy(y.Buffer(), x.Buffer(), alpha)
}

// LeakyReluAttrs are leaky_relu's: the slope below 0 (PyTorch's
// negative_slope, by default 0.01).
type LeakyReluAttrs struct{ Slope float64 }

func (LeakyReluAttrs) isAttrs() {}

// EluAttrs are elu's: the scale of eˣ − 1 below 0 (PyTorch's
// alpha, by default 1).
type EluAttrs struct{ Alpha float64 }

func (EluAttrs) isAttrs() {}

// SoftplusAttrs are softplus's β (PyTorch's default 1) and the
// threshold above which β·x returns x (default 20).
type SoftplusAttrs struct{ Beta, Threshold float64 }

func (SoftplusAttrs) isAttrs() {}

// CeluAttrs are celu's: alpha, the scale of e^(x/alpha) − 1 below 0
// (PyTorch's default 1).
type CeluAttrs struct{ Alpha float64 }

func (CeluAttrs) isAttrs() {}
