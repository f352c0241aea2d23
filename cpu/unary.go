package cpu

import (
	"fmt"
	"math"

	"github.com/extensor/extensor/device"
)

// unaryFn is the CPU twin of a unary op: its value and g times its
// derivative at x, given the op's scalar parameters a and b. They are
// written from Go's math package, independently of the WGSL.
type unaryFn struct {
	f  func(x, a, b float64) float64
	df func(x, g, a, b float64) float64
}

func zeroGrad(_, _, _, _ float64) float64 { return 0 }

// logGrad is g/(x·ln(base)).
func logGrad(lnBase float64) func(x, g, a, b float64) float64 {
	return func(x, g, _, _ float64) float64 { return g / (x * lnBase) }
}

func sigmoid(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

// phi is the standard normal density, phiCDF its distribution function.
func phi(x float64) float64    { return math.Exp(-x*x/2) / math.Sqrt(2*math.Pi) }
func phiCDF(x float64) float64 { return math.Erfc(-x/math.Sqrt2) / 2 }

// geluTanhInner is √(2/π)·(x + 0.044715·x³).
func geluTanhInner(x float64) float64 { return math.Sqrt(2/math.Pi) * (x + 0.044715*x*x*x) }

var unaryFns = map[device.UnaryOp]unaryFn{
	"neg": {
		func(x, _, _ float64) float64 { return -x },
		func(_, g, _, _ float64) float64 { return -g }},
	"exp": {
		func(x, _, _ float64) float64 { return math.Exp(x) },
		func(x, g, _, _ float64) float64 { return g * math.Exp(x) }},
	"log": {
		func(x, _, _ float64) float64 { return math.Log(x) },
		logGrad(1)},
	"log2": {
		func(x, _, _ float64) float64 { return math.Log2(x) },
		logGrad(math.Ln2)},
	"log10": {
		func(x, _, _ float64) float64 { return math.Log10(x) },
		logGrad(math.Ln10)},
	"sqrt": {
		func(x, _, _ float64) float64 { return math.Sqrt(x) },
		func(x, g, _, _ float64) float64 { return g / (2 * math.Sqrt(x)) }},
	"abs": {
		func(x, _, _ float64) float64 { return math.Abs(x) },
		func(x, g, _, _ float64) float64 {
			switch {
			case x > 0:
				return g
			case x < 0:
				return -g
			}
			return 0
		}},
	"sign": {
		func(x, _, _ float64) float64 {
			switch {
			case x > 0:
				return 1
			case x < 0:
				return -1
			}
			return 0
		},
		zeroGrad},
	"sin": {
		func(x, _, _ float64) float64 { return math.Sin(x) },
		func(x, g, _, _ float64) float64 { return g * math.Cos(x) }},
	"cos": {
		func(x, _, _ float64) float64 { return math.Cos(x) },
		func(x, g, _, _ float64) float64 { return -g * math.Sin(x) }},
	"ceil":  {func(x, _, _ float64) float64 { return math.Ceil(x) }, zeroGrad},
	"floor": {func(x, _, _ float64) float64 { return math.Floor(x) }, zeroGrad},
	"round": {func(x, _, _ float64) float64 { return math.RoundToEven(x) }, zeroGrad},
	"trunc": {func(x, _, _ float64) float64 { return math.Trunc(x) }, zeroGrad},
	"relu": {
		func(x, _, _ float64) float64 { return math.Max(x, 0) },
		func(x, g, _, _ float64) float64 {
			if x > 0 {
				return g
			}
			return 0
		}},
	"leaky_relu": {
		func(x, alpha, _ float64) float64 { return math.Max(x, 0) + alpha*math.Min(x, 0) },
		func(x, g, alpha, _ float64) float64 {
			if x > 0 {
				return g
			}
			return alpha * g
		}},
	"sigmoid": {
		func(x, _, _ float64) float64 { return sigmoid(x) },
		func(x, g, _, _ float64) float64 { return g * sigmoid(x) * sigmoid(-x) }},
	"tanh": {
		func(x, _, _ float64) float64 { return math.Tanh(x) },
		func(x, g, _, _ float64) float64 {
			c := math.Cosh(x)
			return g / (c * c)
		}},
	"gelu": {
		func(x, _, _ float64) float64 {
			if c := phiCDF(x); c != 0 {
				return x * c
			}
			return 0
		},
		func(x, g, _, _ float64) float64 {
			d := phiCDF(x)
			if p := phi(x); p != 0 {
				d += x * p
			}
			return g * d
		}},
	"gelu_tanh": {
		func(x, _, _ float64) float64 {
			if s := 1 + math.Tanh(geluTanhInner(x)); s != 0 {
				return x / 2 * s
			}
			return 0
		},
		func(x, g, _, _ float64) float64 {
			t := math.Tanh(geluTanhInner(x))
			d := (1 + t) / 2
			if sech2 := 1 - t*t; sech2 != 0 {
				d += x / 2 * sech2 * math.Sqrt(2/math.Pi) * (1 + 3*0.044715*x*x)
			}
			return g * d
		}},
	"ndtr": {
		func(x, _, _ float64) float64 { return phiCDF(x) },
		func(x, g, _, _ float64) float64 { return g * phi(x) }},
	"silu": {
		func(x, _, _ float64) float64 { return x / (1 + math.Exp(-x)) },
		func(x, g, _, _ float64) float64 {
			s := 1 / (1 + math.Exp(-x))
			return g * s * (1 + x*(1-s))
		}},
	"softplus": {
		func(x, beta, threshold float64) float64 {
			if beta*x > threshold {
				return x
			}
			return softplus(beta*x) / beta
		},
		func(x, g, beta, threshold float64) float64 {
			if beta*x > threshold {
				return g
			}
			return g / (1 + math.Exp(-beta*x))
		}},
	"elu": {
		func(x, alpha, _ float64) float64 {
			if x > 0 {
				return x
			}
			return alpha * math.Expm1(x)
		},
		func(x, g, alpha, _ float64) float64 {
			if x > 0 {
				return g
			}
			return g * alpha * math.Exp(x)
		}},
	"celu": {
		func(x, alpha, _ float64) float64 {
			if x > 0 {
				return x
			}
			return alpha * math.Expm1(x/alpha)
		},
		func(x, g, alpha, _ float64) float64 {
			if x > 0 {
				return g
			}
			return g * math.Exp(x/alpha)
		}},
	"hardswish": {
		func(x, _, _ float64) float64 { return x * math.Min(math.Max(x+3, 0), 6) / 6 },
		func(x, g, _, _ float64) float64 {
			switch {
			case x < -3:
				return 0
			case x <= 3:
				return g * (x/3 + 0.5)
			}
			return g
		}},
	"mish": {
		func(x, _, _ float64) float64 { return x * math.Tanh(softplus(x)) },
		func(x, g, _, _ float64) float64 {
			sp := softplus(x)
			c := math.Cosh(sp)
			return g * (math.Tanh(sp) + x*sigmoid(x)/(c*c))
		}},
	"clip": {
		func(x, lo, hi float64) float64 { return math.Min(math.Max(x, lo), hi) },
		func(x, g, lo, hi float64) float64 {
			if lo <= x && x <= hi {
				return g
			}
			return 0
		}},
	"pow_scalar": {
		func(x, e, _ float64) float64 { return math.Pow(x, e) },
		func(x, g, e, _ float64) float64 { return g * e * math.Pow(x, e-1) }},
}

func unaryFnOf(op device.UnaryOp) unaryFn {
	f, ok := unaryFns[op]
	if !ok {
		panic(fmt.Sprintf("cpu: unknown unary op %q", op))
	}
	return f
}

// params returns the two scalar parameters, zero where not given.
func params(p []float64) (a, b float64) {
	if len(p) > 0 {
		a = p[0]
	}
	if len(p) > 1 {
		b = p[1]
	}
	return a, b
}

// Unary sets dst = op(x; p); NaN maps to NaN.
func (d *Device) Unary(op device.UnaryOp, dst, x device.Buffer, p ...float64) {
	o, in, f := buf(dst), buf(x), unaryFnOf(op).f
	a, b := params(p)
	fv := func(v float64) float64 {
		if math.IsNaN(v) {
			return v
		}
		return f(v, a, b)
	}
	switch { // the common cases without at's and set's calls
	case same(device.Float32, o, in):
		mapSlice(o.f32, in.f32, o.Len(), fv)
		return
	case same(device.Float64, o, in):
		mapSlice(o.f64, in.f64, o.Len(), fv)
		return
	}
	for i := range o.Len() {
		v := in.at(i)
		if !math.IsNaN(v) {
			v = f(v, a, b)
		}
		o.set(i, v)
	}
}

// UnaryGrad sets dx = dy·op'(x; p); the gradient at NaN is NaN.
func (d *Device) UnaryGrad(op device.UnaryOp, dx, x, dy device.Buffer, p ...float64) {
	o, in, g, df := buf(dx), buf(x), buf(dy), unaryFnOf(op).df
	a, b := params(p)
	df2 := func(v, d float64) float64 { return df(v, d, a, b) }
	switch {
	case same(device.Float32, o, in, g):
		binarySame(o.f32, in.f32, g.f32, len(o.f32), nanFirst(df2))
		return
	case same(device.Float64, o, in, g):
		binarySame(o.f64, in.f64, g.f64, len(o.f64), nanFirst(df2))
		return
	}
	for i := range o.Len() {
		v := in.at(i)
		if !math.IsNaN(v) {
			v = df(v, g.at(i), a, b)
		}
		o.set(i, v)
	}
}

// mapSlice sets o[i] = f(x[i]) for i < n, computed in float64.
func mapSlice[F float32 | float64](o, x []F, n int, f func(float64) float64) {
	for i, v := range x[:n] {
		o[i] = F(f(float64(v)))
	}
}

// nanFirst returns df where x is a number and NaN where it is NaN.
func nanFirst(df func(x, g float64) float64) func(x, g float64) float64 {
	return func(x, g float64) float64 {
		if math.IsNaN(x) {
			return x
		}
		return df(x, g)
	}
}
