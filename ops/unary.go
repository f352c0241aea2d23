package ops

import (
	"math"

	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/tensor"
)

// Every unary op maps NaN to NaN, and its gradient at NaN is NaN.

func unary(op string, kind device.UnaryOp, x *tensor.Tensor, p ...float64) *tensor.Tensor {
	dev, out, ok := unaryOutput(op, x, nil)
	if ok {
		dev.Unary(kind, out.Buffer(), x.Buffer(), p...)
		keep(out, x)
	}
	return out
}

func unaryGrad(op string, kind device.UnaryOp, x, g *tensor.Tensor, p ...float64) *tensor.Tensor {
	dev, out, ok := unaryOutput(op, x, g)
	if ok {
		dev.UnaryGrad(kind, out.Buffer(), x.Buffer(), g.Buffer(), p...)
		keep(out, x, g)
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
func Neg(x *tensor.Tensor) *tensor.Tensor { return unary("ops.Neg", device.Neg, x) }

// NegBackward returns the gradient of Neg: −g.
func NegBackward(x, g *tensor.Tensor) *tensor.Tensor {
	return unaryGrad("ops.NegBackward", device.Neg, x, g)
}

// Exp returns eˣ elementwise.
func Exp(x *tensor.Tensor) *tensor.Tensor { return unary("ops.Exp", device.Exp, x) }

// ExpBackward returns the gradient of Exp: g·eˣ.
func ExpBackward(x, g *tensor.Tensor) *tensor.Tensor {
	return unaryGrad("ops.ExpBackward", device.Exp, x, g)
}

// Log returns the natural logarithm: −Inf at 0, NaN below 0.
func Log(x *tensor.Tensor) *tensor.Tensor { return unary("ops.Log", device.Log, x) }

// LogBackward returns the gradient of Log, g/(x + ε) with
// ε = device.DivEpsilon = 1e-10, finite at 0.
func LogBackward(x, g *tensor.Tensor) *tensor.Tensor {
	return unaryGrad("ops.LogBackward", device.Log, x, g)
}

// Log2 returns the base-2 logarithm: −Inf at 0, NaN below 0.
func Log2(x *tensor.Tensor) *tensor.Tensor { return unary("ops.Log2", device.Log2, x) }

// Log2Backward returns the gradient of Log2, g/(x·ln 2 + ε), ε = 1e-10.
func Log2Backward(x, g *tensor.Tensor) *tensor.Tensor {
	return unaryGrad("ops.Log2Backward", device.Log2, x, g)
}

// Log10 returns the base-10 logarithm: −Inf at 0, NaN below 0.
func Log10(x *tensor.Tensor) *tensor.Tensor { return unary("ops.Log10", device.Log10, x) }

// Log10Backward returns the gradient of Log10, g/(x·ln 10 + ε), ε = 1e-10.
func Log10Backward(x, g *tensor.Tensor) *tensor.Tensor {
	return unaryGrad("ops.Log10Backward", device.Log10, x, g)
}

// Sqrt returns the square root: NaN below 0.
func Sqrt(x *tensor.Tensor) *tensor.Tensor { return unary("ops.Sqrt", device.Sqrt, x) }

// SqrtBackward returns the gradient of Sqrt, g/(2√x + ε), ε = 1e-10,
// finite at 0.
func SqrtBackward(x, g *tensor.Tensor) *tensor.Tensor {
	return unaryGrad("ops.SqrtBackward", device.Sqrt, x, g)
}

// Abs returns |x|.
func Abs(x *tensor.Tensor) *tensor.Tensor { return unary("ops.Abs", device.Abs, x) }

// AbsBackward returns the gradient of Abs, g·sign(x): 0 at the kink x = 0,
// as in PyTorch.
func AbsBackward(x, g *tensor.Tensor) *tensor.Tensor {
	return unaryGrad("ops.AbsBackward", device.Abs, x, g)
}

// Sign returns −1, 0 or 1 by the sign of x (0 for ±0), and NaN at NaN,
// as NumPy's sign and every elementwise op here. PyTorch returns 0 there,
// a divergence from NumPy its issue tracker keeps open (#41245).
func Sign(x *tensor.Tensor) *tensor.Tensor { return unary("ops.Sign", device.Sign, x) }

// SignBackward returns the gradient of Sign: zeros.
func SignBackward(x, g *tensor.Tensor) *tensor.Tensor {
	return unaryGrad("ops.SignBackward", device.Sign, x, g)
}

// Sin returns the sine (NaN at ±Inf).
func Sin(x *tensor.Tensor) *tensor.Tensor { return unary("ops.Sin", device.Sin, x) }

// SinBackward returns the gradient of Sin: g·cos x.
func SinBackward(x, g *tensor.Tensor) *tensor.Tensor {
	return unaryGrad("ops.SinBackward", device.Sin, x, g)
}

// Cos returns the cosine (NaN at ±Inf).
func Cos(x *tensor.Tensor) *tensor.Tensor { return unary("ops.Cos", device.Cos, x) }

// CosBackward returns the gradient of Cos: −g·sin x.
func CosBackward(x, g *tensor.Tensor) *tensor.Tensor {
	return unaryGrad("ops.CosBackward", device.Cos, x, g)
}

// Ceil rounds up to an integer.
func Ceil(x *tensor.Tensor) *tensor.Tensor { return unary("ops.Ceil", device.Ceil, x) }

// CeilBackward returns the gradient of Ceil: zeros.
func CeilBackward(x, g *tensor.Tensor) *tensor.Tensor {
	return unaryGrad("ops.CeilBackward", device.Ceil, x, g)
}

// Floor rounds down to an integer.
func Floor(x *tensor.Tensor) *tensor.Tensor { return unary("ops.Floor", device.Floor, x) }

// FloorBackward returns the gradient of Floor: zeros.
func FloorBackward(x, g *tensor.Tensor) *tensor.Tensor {
	return unaryGrad("ops.FloorBackward", device.Floor, x, g)
}

// Round rounds to the nearest integer, halves to even (2.5 → 2), as
// PyTorch and NumPy do.
func Round(x *tensor.Tensor) *tensor.Tensor { return unary("ops.Round", device.Round, x) }

// RoundBackward returns the gradient of Round: zeros.
func RoundBackward(x, g *tensor.Tensor) *tensor.Tensor {
	return unaryGrad("ops.RoundBackward", device.Round, x, g)
}

// Trunc rounds toward zero.
func Trunc(x *tensor.Tensor) *tensor.Tensor { return unary("ops.Trunc", device.Trunc, x) }

// TruncBackward returns the gradient of Trunc: zeros.
func TruncBackward(x, g *tensor.Tensor) *tensor.Tensor {
	return unaryGrad("ops.TruncBackward", device.Trunc, x, g)
}

// Relu returns max(x, 0) elementwise; relu(NaN) is NaN.
func Relu(x *tensor.Tensor) *tensor.Tensor { return unary("ops.Relu", device.Relu, x) }

// ReluBackward returns the gradient of Relu: g where x > 0 and 0 elsewhere
// (the subgradient at 0 is 0, as in PyTorch).
func ReluBackward(x, g *tensor.Tensor) *tensor.Tensor {
	return unaryGrad("ops.ReluBackward", device.Relu, x, g)
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
func LeakyRelu(x *tensor.Tensor, alpha float64) *tensor.Tensor {
	checkSlope("ops.LeakyRelu", alpha)
	return unary("ops.LeakyRelu", device.LeakyRelu, x, alpha)
}

// LeakyReluBackward returns the gradient of LeakyRelu: g where x > 0, and
// alpha·g where x ≤ 0.
func LeakyReluBackward(x, g *tensor.Tensor, alpha float64) *tensor.Tensor {
	checkSlope("ops.LeakyReluBackward", alpha)
	return unaryGrad("ops.LeakyReluBackward", device.LeakyRelu, x, g, alpha)
}

// Sigmoid returns 1/(1 + e⁻ˣ), computed from e^−|x| so that it neither
// overflows nor loses its small values at large |x|.
func Sigmoid(x *tensor.Tensor) *tensor.Tensor { return unary("ops.Sigmoid", device.Sigmoid, x) }

// SigmoidBackward returns the gradient of Sigmoid: g·σ(x)·σ(−x).
func SigmoidBackward(x, g *tensor.Tensor) *tensor.Tensor {
	return unaryGrad("ops.SigmoidBackward", device.Sigmoid, x, g)
}

// Tanh returns the hyperbolic tangent, ±1 (never NaN) at large |x|.
func Tanh(x *tensor.Tensor) *tensor.Tensor { return unary("ops.Tanh", device.Tanh, x) }

// TanhBackward returns the gradient of Tanh: g·(1 − tanh² x).
func TanhBackward(x, g *tensor.Tensor) *tensor.Tensor {
	return unaryGrad("ops.TanhBackward", device.Tanh, x, g)
}

// Gelu returns the exact GELU, x·Φ(x) with Φ the standard normal
// distribution function (through erf; WGSL's is a Chebyshev fit with a
// relative error below 1.2e-7). It is 0, not NaN, at −Inf.
func Gelu(x *tensor.Tensor) *tensor.Tensor { return unary("ops.Gelu", device.Gelu, x) }

// GeluBackward returns the gradient of Gelu: g·(Φ(x) + x·φ(x)).
func GeluBackward(x, g *tensor.Tensor) *tensor.Tensor {
	return unaryGrad("ops.GeluBackward", device.Gelu, x, g)
}

// GeluTanh returns the tanh approximation of GELU,
// x/2·(1 + tanh(√(2/π)·(x + 0.044715·x³))), PyTorch's approximate="tanh".
func GeluTanh(x *tensor.Tensor) *tensor.Tensor { return unary("ops.GeluTanh", device.GeluTanh, x) }

// GeluTanhBackward returns the gradient of GeluTanh.
func GeluTanhBackward(x, g *tensor.Tensor) *tensor.Tensor {
	return unaryGrad("ops.GeluTanhBackward", device.GeluTanh, x, g)
}

func checkBounds(op string, lo, hi float64) {
	if !(lo <= hi) {
		tensor.Panicf(op, tensor.ErrArgument, "bounds [%v, %v]; want lo ≤ hi", lo, hi)
	}
}

// Clip clamps x to [lo, hi]; lo > hi (or a NaN bound) panics with
// ErrArgument. NaN stays NaN.
func Clip(x *tensor.Tensor, lo, hi float64) *tensor.Tensor {
	checkBounds("ops.Clip", lo, hi)
	return unary("ops.Clip", device.Clip, x, lo, hi)
}

// ClipBackward returns the gradient of Clip: g where lo ≤ x ≤ hi (both
// bounds inclusive) and 0 elsewhere.
func ClipBackward(x, g *tensor.Tensor, lo, hi float64) *tensor.Tensor {
	checkBounds("ops.ClipBackward", lo, hi)
	return unaryGrad("ops.ClipBackward", device.Clip, x, g, lo, hi)
}

// PowScalar returns xᵉ for a real exponent e, with the special cases of
// IEEE 754's pow: a negative base with an integer exponent is defined
// ((−2)³ = −8), with any other exponent NaN; x⁰ is 1 for every x, NaN
// included, as in PyTorch.
func PowScalar(x *tensor.Tensor, e float64) *tensor.Tensor {
	if e == 0 {
		return constant("ops.PowScalar", x, nil, 1)
	}
	return unary("ops.PowScalar", device.PowScalar, x, e)
}

// PowScalarBackward returns the gradient of PowScalar: g·e·xᵉ⁻¹, and 0
// for e = 0 (x⁰ is 1 everywhere), as in PyTorch.
func PowScalarBackward(x, g *tensor.Tensor, e float64) *tensor.Tensor {
	if e == 0 {
		return constant("ops.PowScalarBackward", x, g, 0)
	}
	return unaryGrad("ops.PowScalarBackward", device.PowScalar, x, g, e)
}

// constant returns v shaped like x, checking x and g (nil for a forward)
// as unary and unaryGrad do.
func constant(op string, x, g *tensor.Tensor, v float64) *tensor.Tensor {
	dev, out, ok := unaryOutput(op, x, g)
	if ok && out.Len() > 0 {
		dev.Fill(out.Buffer(), v)
		keep(out)
	}
	return out
}
