package ops

import (
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/tensor"
)

// Every unary op maps NaN to NaN, and its gradient at NaN is NaN.

func unary(op string, kind device.UnaryOp, x *tensor.Tensor, p ...float64) *tensor.Tensor {
	dev, out, ok := unaryOutput(op, x, nil)
	if ok {
		dev.Unary(kind, out.Buffer(), x.Buffer(), p...)
	}
	return out
}

func unaryGrad(op string, kind device.UnaryOp, x, g *tensor.Tensor, p ...float64) *tensor.Tensor {
	dev, out, ok := unaryOutput(op, x, g)
	if ok {
		dev.UnaryGrad(kind, out.Buffer(), x.Buffer(), g.Buffer(), p...)
	}
	return out
}

// unaryOutput checks x and the upstream gradient g (nil for a forward)
// and returns their device and a result shaped like x, ok unless an input
// had failed.
func unaryOutput(op string, x, g *tensor.Tensor) (dev device.Device, out *tensor.Tensor, ok bool) {
	in := []*tensor.Tensor{x}
	if g != nil {
		in = append(in, g)
	}
	dev = operands(op, in...)
	dt := floats(op, in...)
	if g != nil {
		sameShape(op, "upstream gradient", g, x.Shape())
	}
	out, ok = output(dev, dt, x.Shape(), in...)
	return dev, out, ok
}

// Neg returns −x.
func Neg[V Operand[E], E any](x V) V { return call(NegOp, nil, x) }

func neg(x *tensor.Tensor) *tensor.Tensor { return unary("ops.Neg", "neg", x) }

// NegBackward returns the gradient of Neg: −g.
func NegBackward(x, g *tensor.Tensor) *tensor.Tensor {
	return unaryGrad("ops.NegBackward", "neg", x, g)
}

// Exp returns eˣ elementwise.
func Exp[V Operand[E], E any](x V) V { return call(ExpOp, nil, x) }

func exp(x *tensor.Tensor) *tensor.Tensor { return unary("ops.Exp", "exp", x) }

// ExpBackward returns the gradient of Exp: g·eˣ.
func ExpBackward(x, g *tensor.Tensor) *tensor.Tensor {
	return unaryGrad("ops.ExpBackward", "exp", x, g)
}

// Log returns the natural logarithm: −Inf at 0, NaN below 0.
func Log[V Operand[E], E any](x V) V { return call(LogOp, nil, x) }

func log(x *tensor.Tensor) *tensor.Tensor { return unary("ops.Log", "log", x) }

// LogBackward returns the gradient of Log, g/x: ±Inf or NaN at 0.
func LogBackward(x, g *tensor.Tensor) *tensor.Tensor {
	return unaryGrad("ops.LogBackward", "log", x, g)
}

// Log2 returns the base-2 logarithm: −Inf at 0, NaN below 0.
func Log2[V Operand[E], E any](x V) V { return call(Log2Op, nil, x) }

func log2(x *tensor.Tensor) *tensor.Tensor { return unary("ops.Log2", "log2", x) }

// Log2Backward returns the gradient of Log2, g/(x·ln 2).
func Log2Backward(x, g *tensor.Tensor) *tensor.Tensor {
	return unaryGrad("ops.Log2Backward", "log2", x, g)
}

// Log10 returns the base-10 logarithm: −Inf at 0, NaN below 0.
func Log10[V Operand[E], E any](x V) V { return call(Log10Op, nil, x) }

func log10(x *tensor.Tensor) *tensor.Tensor { return unary("ops.Log10", "log10", x) }

// Log10Backward returns the gradient of Log10, g/(x·ln 10).
func Log10Backward(x, g *tensor.Tensor) *tensor.Tensor {
	return unaryGrad("ops.Log10Backward", "log10", x, g)
}

// Sqrt returns the square root: NaN below 0.
func Sqrt[V Operand[E], E any](x V) V { return call(SqrtOp, nil, x) }

func sqrt(x *tensor.Tensor) *tensor.Tensor { return unary("ops.Sqrt", "sqrt", x) }

// SqrtBackward returns the gradient of Sqrt, g/(2√x): ±Inf or NaN at 0.
func SqrtBackward(x, g *tensor.Tensor) *tensor.Tensor {
	return unaryGrad("ops.SqrtBackward", "sqrt", x, g)
}

// Abs returns |x|.
func Abs[V Operand[E], E any](x V) V { return call(AbsOp, nil, x) }

func abs(x *tensor.Tensor) *tensor.Tensor { return unary("ops.Abs", "abs", x) }

// AbsBackward returns the gradient of Abs, g·sign(x): 0 at the kink x = 0,
// as in PyTorch.
func AbsBackward(x, g *tensor.Tensor) *tensor.Tensor {
	return unaryGrad("ops.AbsBackward", "abs", x, g)
}

// Sign returns −1, 0 or 1 by the sign of x (0 for ±0), and NaN at NaN,
// as NumPy's sign and every elementwise op here. PyTorch returns 0 there,
// a divergence from NumPy its issue tracker keeps open (#41245).
func Sign[V Operand[E], E any](x V) V { return call(SignOp, nil, x) }

func sign(x *tensor.Tensor) *tensor.Tensor { return unary("ops.Sign", "sign", x) }

// SignBackward returns the gradient of Sign: zeros.
func SignBackward(x, g *tensor.Tensor) *tensor.Tensor {
	return unaryGrad("ops.SignBackward", "sign", x, g)
}

// Sin returns the sine (NaN at ±Inf).
func Sin[V Operand[E], E any](x V) V { return call(SinOp, nil, x) }

func sin(x *tensor.Tensor) *tensor.Tensor { return unary("ops.Sin", "sin", x) }

// SinBackward returns the gradient of Sin: g·cos x.
func SinBackward(x, g *tensor.Tensor) *tensor.Tensor {
	return unaryGrad("ops.SinBackward", "sin", x, g)
}

// Cos returns the cosine (NaN at ±Inf).
func Cos[V Operand[E], E any](x V) V { return call(CosOp, nil, x) }

func cos(x *tensor.Tensor) *tensor.Tensor { return unary("ops.Cos", "cos", x) }

// CosBackward returns the gradient of Cos: −g·sin x.
func CosBackward(x, g *tensor.Tensor) *tensor.Tensor {
	return unaryGrad("ops.CosBackward", "cos", x, g)
}

// Ceil rounds up to an integer.
func Ceil[V Operand[E], E any](x V) V { return call(CeilOp, nil, x) }

func ceil(x *tensor.Tensor) *tensor.Tensor { return unary("ops.Ceil", "ceil", x) }

// CeilBackward returns the gradient of Ceil: zeros.
func CeilBackward(x, g *tensor.Tensor) *tensor.Tensor {
	return unaryGrad("ops.CeilBackward", "ceil", x, g)
}

// Floor rounds down to an integer.
func Floor[V Operand[E], E any](x V) V { return call(FloorOp, nil, x) }

func floor(x *tensor.Tensor) *tensor.Tensor { return unary("ops.Floor", "floor", x) }

// FloorBackward returns the gradient of Floor: zeros.
func FloorBackward(x, g *tensor.Tensor) *tensor.Tensor {
	return unaryGrad("ops.FloorBackward", "floor", x, g)
}

// Round rounds to the nearest integer, halves to even (2.5 → 2), as
// PyTorch and NumPy do.
func Round[V Operand[E], E any](x V) V { return call(RoundOp, nil, x) }

func round(x *tensor.Tensor) *tensor.Tensor { return unary("ops.Round", "round", x) }

// RoundBackward returns the gradient of Round: zeros.
func RoundBackward(x, g *tensor.Tensor) *tensor.Tensor {
	return unaryGrad("ops.RoundBackward", "round", x, g)
}

// Trunc rounds toward zero.
func Trunc[V Operand[E], E any](x V) V { return call(TruncOp, nil, x) }

func trunc(x *tensor.Tensor) *tensor.Tensor { return unary("ops.Trunc", "trunc", x) }

// TruncBackward returns the gradient of Trunc: zeros.
func TruncBackward(x, g *tensor.Tensor) *tensor.Tensor {
	return unaryGrad("ops.TruncBackward", "trunc", x, g)
}

func checkBounds(op string, lo, hi float64) {
	if !(lo <= hi) {
		tensor.Panicf(op, tensor.ErrArgument, "bounds [%v, %v]; want lo ≤ hi", lo, hi)
	}
}

// Clip clamps x to [lo, hi]; lo > hi (or a NaN bound) panics with
// ErrArgument. NaN stays NaN.
func Clip[V Operand[E], E any](x V, lo, hi float64) V {
	return call(ClipOp, ClipAttrs{Lo: lo, Hi: hi}, x)
}

func clip(x *tensor.Tensor, lo, hi float64) *tensor.Tensor {
	checkBounds("ops.Clip", lo, hi)
	return unary("ops.Clip", "clip", x, lo, hi)
}

// ClipBackward returns the gradient of Clip: g where lo ≤ x ≤ hi (both
// bounds inclusive) and 0 elsewhere.
func ClipBackward(x, g *tensor.Tensor, lo, hi float64) *tensor.Tensor {
	checkBounds("ops.ClipBackward", lo, hi)
	return unaryGrad("ops.ClipBackward", "clip", x, g, lo, hi)
}

// PowScalar returns xᵉ for a real exponent e, with the special cases of
// IEEE 754's pow: a negative base with an integer exponent is defined
// ((−2)³ = −8), with any other exponent NaN; x⁰ is 1 for every x, NaN
// included, as in PyTorch.
func PowScalar[V Operand[E], E any](x V, e float64) V {
	return call(PowScalarOp, PowScalarAttrs{Exponent: e}, x)
}

func powScalar(x *tensor.Tensor, e float64) *tensor.Tensor {
	if e == 0 {
		return constant("ops.PowScalar", x, nil, 1)
	}
	return unary("ops.PowScalar", "pow_scalar", x, e)
}

// PowScalarBackward returns the gradient of PowScalar: g·e·xᵉ⁻¹, and 0
// for e = 0 (x⁰ is 1 everywhere), as in PyTorch.
func PowScalarBackward(x, g *tensor.Tensor, e float64) *tensor.Tensor {
	if e == 0 {
		return constant("ops.PowScalarBackward", x, g, 0)
	}
	return unaryGrad("ops.PowScalarBackward", "pow_scalar", x, g, e)
}

// constant returns v shaped like x, checking x and g (nil for a forward)
// as unary and unaryGrad do.
// filled returns a tensor of the given shape holding v: a failed one,
// its error reported at the readback, where an input had failed or the
// allocation fails (never a panic).
func filled(dev device.Device, dt device.DType, shape []int, v float64, inputs ...*tensor.Tensor) *tensor.Tensor {
	out, ok := output(dev, dt, shape, inputs...)
	if ok && out.Len() > 0 {
		dev.Fill(out.Buffer(), v)
	}
	return out
}

func constant(op string, x, g *tensor.Tensor, v float64) *tensor.Tensor {
	dev, out, ok := unaryOutput(op, x, g)
	if ok && out.Len() > 0 {
		dev.Fill(out.Buffer(), v)
	}
	return out
}
