package cpu

import (
	"fmt"
	"math"

	"github.com/extensor/extensor/device"
)

// binaryFn is the CPU twin of a binary op: its value and g times its
// partial derivatives with respect to a and b.
type binaryFn struct {
	f      func(a, b float64) float64
	da, db func(a, b, g float64) float64
}

func zero3(_, _, _ float64) float64 { return 0 }

// extremumGrad is the gradient of max(a, b) for a: g where a > b, g/2
// at a tie, 0 where a < b, and g at NaN (PyTorch's).
func extremumGrad(a, b, g float64) float64 {
	switch {
	case a < b:
		return 0
	case a == b:
		return g / 2
	}
	return g
}

// bceClamp is the probability as BCE uses it, within [ε, 1 − ε].
func bceClamp(p float64) float64 {
	return math.Min(math.Max(p, device.BCEClamp), 1-device.BCEClamp)
}

var binaryFns = map[device.BinaryOp]binaryFn{
	device.Add: {
		func(a, b float64) float64 { return a + b },
		func(_, _, g float64) float64 { return g },
		func(_, _, g float64) float64 { return g }},
	device.Sub: {
		func(a, b float64) float64 { return a - b },
		func(_, _, g float64) float64 { return g },
		func(_, _, g float64) float64 { return -g }},
	device.Mul: {
		func(a, b float64) float64 { return a * b },
		func(_, b, g float64) float64 { return g * b },
		func(a, _, g float64) float64 { return g * a }},
	device.Div: {
		func(a, b float64) float64 { return a / b },
		func(_, b, g float64) float64 { return g / b },
		func(a, b, g float64) float64 { return -g * (a / b) / b }},
	device.Pow: {
		math.Pow,
		func(a, b, g float64) float64 { return g * b * math.Pow(a, b-1) },
		func(a, b, g float64) float64 {
			if a <= 0 {
				return 0
			}
			return g * math.Pow(a, b) * math.Log(a)
		}},
	device.FloorDiv: {
		// ⌊a/b⌋ as PyTorch and Python take it, which derive it from the
		// remainder fmod(a, b): NaN for a = ±Inf (b ≠ 0), and −1 for a
		// finite a ≠ 0 against an infinite b of the other sign.
		func(a, b float64) float64 {
			switch {
			case math.IsInf(a, 0) && b != 0:
				return math.NaN()
			case math.IsInf(b, 0) && !math.IsInf(a, 0) && !math.IsNaN(a) && a != 0 && math.Signbit(a) != math.Signbit(b):
				return -1
			}
			return math.Floor(a / b)
		},
		zero3, zero3},
	device.Mod: {
		func(a, b float64) float64 {
			r := math.Mod(a, b)
			if r != 0 && (r < 0) != (b < 0) {
				r += b
			}
			return r
		},
		func(_, _, g float64) float64 { return g },
		func(a, b, g float64) float64 { return -g * math.Floor(a/b) }},
	device.Prelu: {
		func(x, alpha float64) float64 {
			if x > 0 {
				return x
			}
			return alpha * x
		},
		func(x, alpha, g float64) float64 {
			if x > 0 {
				return g
			}
			return alpha * g
		},
		func(x, _, g float64) float64 {
			if x > 0 {
				return 0
			}
			return x * g
		}},
	"maximum": {
		func(a, b float64) float64 {
			if math.IsNaN(a) || math.IsNaN(b) {
				return math.NaN()
			}
			return math.Max(a, b)
		},
		func(a, b, g float64) float64 { return extremumGrad(a, b, g) },
		func(a, b, g float64) float64 { return extremumGrad(b, a, g) }},
	"minimum": {
		func(a, b float64) float64 {
			if math.IsNaN(a) || math.IsNaN(b) {
				return math.NaN()
			}
			return math.Min(a, b)
		},
		func(a, b, g float64) float64 { return extremumGrad(-a, -b, g) },
		func(a, b, g float64) float64 { return extremumGrad(-b, -a, g) }},
	device.Equal: {
		func(a, b float64) float64 {
			if a == b {
				return 1
			}
			return 0
		},
		zero3, zero3},
	device.SquaredDiff: {
		func(a, b float64) float64 { return math.Pow(a-b, 2) },
		func(a, b, g float64) float64 { return 2 * (a - b) * g },
		func(a, b, g float64) float64 { return 2 * (b - a) * g }},
	device.BCE: {
		func(p, y float64) float64 {
			q := bceClamp(p)
			return -y*math.Log(q) - (1-y)*math.Log1p(-q)
		},
		func(p, y, g float64) float64 {
			q := bceClamp(p)
			return g * (q - y) / (q * (1 - q))
		},
		func(p, _, g float64) float64 {
			q := bceClamp(p)
			return g * (math.Log1p(-q) - math.Log(q))
		}},
	device.BCELogits: {
		// −y·ln σ(x) − (1−y)·ln σ(−x) = (1−y)·x + ln(1 + e^−x), with
		// ln σ(x) = −log1p(e^−x); written as PyTorch does, so that ±∞
		// give its results (+∞ at x = +∞ for y < 1, NaN at x = −∞).
		func(x, y float64) float64 {
			return (1-y)*x + softplus(-x)
		},
		func(x, y, g float64) float64 { return g * (sigmoid(x) - y) },
		func(x, _, g float64) float64 { return -g * x }},
}

// softplus is ln(1 + e^x), computed without overflow.
func softplus(x float64) float64 {
	if x > 0 {
		return x + math.Log1p(math.Exp(-x))
	}
	return math.Log1p(math.Exp(x))
}

func binaryFnOf(op device.BinaryOp) binaryFn {
	f, ok := binaryFns[op]
	if !ok {
		panic(fmt.Sprintf("cpu: unknown binary op %q", op))
	}
	return f
}

// Binary sets dst = op(a, b) with broadcasting.
func (d *Device) Binary(op device.BinaryOp, dst, a, b device.Buffer, l device.Broadcast) {
	o, x, y := buf(dst), buf(a), buf(b)
	f := binaryFnOf(op).f
	if l.SameLayout() { // the common cases without the odometer's calls
		switch {
		case same(device.Float32, o, x, y):
			binarySame(o.f32, x.f32, y.f32, l.Len(), f)
			return
		case same(device.Float64, o, x, y):
			binarySame(o.f64, x.f64, y.f64, l.Len(), f)
			return
		}
	}
	if device.IsRowMajor(l.Shape, l.AStrides) && allZero(l.BStrides) { // x op scalar
		switch {
		case same(device.Float32, o, x, y):
			mapSlice(o.f32, x.f32, l.Len(), func(v float64) float64 { return f(v, float64(y.f32[0])) })
			return
		case same(device.Float64, o, x, y):
			mapSlice(o.f64, x.f64, l.Len(), func(v float64) float64 { return f(v, y.f64[0]) })
			return
		}
	}
	odometer(l.Shape, l.AStrides, l.BStrides, func(i, ia, ib int) {
		o.set(i, f(x.at(ia), y.at(ib)))
	})
}

// BinaryGrad sets dst to the output-shaped gradient with respect to operand wrt.
func (d *Device) BinaryGrad(op device.BinaryOp, wrt int, dst, g, a, b device.Buffer, l device.Broadcast) {
	o, gb, x, y := buf(dst), buf(g), buf(a), buf(b)
	df := binaryFnOf(op).da
	if wrt == 1 {
		df = binaryFnOf(op).db
	}
	if l.SameLayout() {
		switch {
		case same(device.Float32, o, gb, x, y):
			binaryGradSame(o.f32, x.f32, y.f32, gb.f32, l.Len(), df)
			return
		case same(device.Float64, o, gb, x, y):
			binaryGradSame(o.f64, x.f64, y.f64, gb.f64, l.Len(), df)
			return
		}
	}
	odometer(l.Shape, l.AStrides, l.BStrides, func(i, ia, ib int) {
		o.set(i, df(x.at(ia), y.at(ib), gb.at(i)))
	})
}

// same reports whether every buffer is of dtype dt.
func same(dt device.DType, bs ...*buffer) bool {
	for _, b := range bs {
		if b.dt != dt {
			return false
		}
	}
	return true
}

// binarySame sets o[i] = f(x[i], y[i]) for i < n, computed in float64.
func binarySame[F float32 | float64](o, x, y []F, n int, f func(a, b float64) float64) {
	x, y = x[:n], y[:n]
	for i, v := range x {
		o[i] = F(f(float64(v), float64(y[i])))
	}
}

// binaryGradSame sets o[i] = df(x[i], y[i], g[i]) for i < n.
func binaryGradSame[F float32 | float64](o, x, y, g []F, n int, df func(a, b, g float64) float64) {
	x, y, g = x[:n], y[:n], g[:n]
	for i, v := range x {
		o[i] = F(df(float64(v), float64(y[i]), float64(g[i])))
	}
}

// allZero reports whether every stride is 0: an operand broadcast from
// one element.
func allZero(strides []int) bool {
	for _, s := range strides {
		if s != 0 {
			return false
		}
	}
	return true
}
