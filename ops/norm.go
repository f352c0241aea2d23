package ops

import (
	"math"
	"slices"

	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/tensor"
)

// The normalisations: each op's functions, table entry and second-order
// rule. They normalise x over its last axes, those of a normalized shape,
// and apply the optional elementwise affine transform, in one kernel of
// the norm family (device.Normalizer); the backward's kernel gives x's
// gradient and g·x̂, which w's gradient sums.

// The entries of norms. Each var is an op's handle, by which autograd.Apply
// and the rules reach it.
var (
	LayerNormOp = &Op{Name: "layer_norm", Family: "norm", Doc: "(x − mean)/√(var + eps)·w + b over the last axes (the normalized shape), biased variance, w and b optional; eps = 1e-5.",
		Forward: fwd(func(in []*T, a NormAttrs) *T { return layerNorm(in[0], a.Shape, opt(in, 1), opt(in, 2), a.Eps) }),
		Backward: func(in []*T, g *T, at Attrs) []*T {
			a := attrsAs[NormAttrs](at)
			gx, gw, gb := normBackward("ops.LayerNormBackward", in[0], a.Shape, opt(in, 1), opt(in, 2), g, a.Eps, true)
			return []*T{gx, gw, gb}[:len(in)]
		},
		Cases: normCases(true)}
	RMSNormOp = &Op{Name: "rms_norm", Family: "norm", Doc: "x/√(mean(x²) + eps)·w over the last axes (the normalized shape), w optional; PyTorch's default eps is the dtype's machine epsilon.",
		Forward: fwd(func(in []*T, a NormAttrs) *T { return rmsNorm(in[0], a.Shape, opt(in, 1), a.Eps) }),
		Backward: func(in []*T, g *T, at Attrs) []*T {
			a := attrsAs[NormAttrs](at)
			gx, gw, _ := normBackward("ops.RMSNormBackward", in[0], a.Shape, opt(in, 1), nil, g, a.Eps, false)
			return []*T{gx, gw}[:len(in)]
		},
		Cases: normCases(false)}
)

// norms are the normalisation ops, in the coverage table's order.
var norms = []*Op{
	LayerNormOp.with(normRule(true)),
	RMSNormOp.with(normRule(false)),
}

// opt returns in[i], or nil where there are not so many inputs.
func opt(in []*T, i int) *T {
	if i < len(in) {
		return in[i]
	}
	return nil
}

// DefaultLayerNormEps is PyTorch's default eps for LayerNorm.
const DefaultLayerNormEps = 1e-5

// normArgs checks a normalisation's arguments and returns x's device and
// dtype and its rows and row length.
func normArgs(op string, x *T, shape []int, w, b *T, eps float64) (dev device.Device, dt device.DType, rows, n int) {
	ts := []*T{x}
	for _, p := range []*T{w, b} {
		if p != nil {
			ts = append(ts, p)
		}
	}
	dev = operands(op, ts...)
	dt = floats(op, ts...)
	xs := x.Shape()
	if len(shape) == 0 || len(shape) > len(xs) || !slices.Equal(xs[len(xs)-len(shape):], shape) {
		tensor.Panicf(op, tensor.ErrShape, "normalized shape %v for x of shape %v; want one or more of x's last dimensions", shape, xs)
	}
	for _, p := range []struct {
		name string
		t    *T
	}{{"weight", w}, {"bias", b}} {
		if p.t != nil {
			sameShape(op, p.name, p.t, shape)
		}
	}
	if !(eps >= 0) || math.IsInf(eps, 0) {
		tensor.Panicf(op, tensor.ErrArgument, "eps %v; want a finite eps ≥ 0", eps)
	}
	n = device.Numel(shape)
	return dev, dt, device.Numel(xs[:len(xs)-len(shape)]), n
}

// normalize returns x normalised over the normalized shape, times w and
// plus b where they are not nil.
func normalize(op string, x *T, shape []int, w, b *T, eps float64, center bool) *T {
	dev, dt, rows, n := normArgs(op, x, shape, w, b, eps)
	out, ok := output(dev, dt, x.Shape(), given(x, w, b)...)
	if ok && rows*n > 0 {
		dev.Norm(out.Buffer(), x.Buffer(), bufferOf(w), bufferOf(b), rows, n, eps, center)
	}
	return out
}

// given returns the tensors of ts that are not nil.
func given(ts ...*T) []*T {
	return slices.DeleteFunc(ts, func(t *T) bool { return t == nil })
}

// affine returns xh·w + b (w, b may be nil), releasing xh.
func affine(xh, w, b *T) *T {
	y := xh
	if w != nil {
		y = mul(xh, w)
		xh.Release()
	}
	if b != nil {
		z := add(y, b)
		y.Release()
		y = z
	}
	return y
}

// normBackward returns the gradients of a normalisation, all from the
// norm kernel: for x, for w the sum of g·x̂ and for b the sum of g over
// the leading axes (nil for a nil w or b).
func normBackward(op string, x *T, shape []int, w, b, g *T, eps float64, center bool) (gx, gw, gb *T) {
	dev, dt, rows, n := normArgs(op, x, shape, w, b, eps)
	operands(op, x, g)
	floats(op, x, g)
	sameShape(op, "upstream gradient", g, x.Shape())
	if dt == device.Float16 && (w != nil || b != nil) {
		// In float32, each gradient rounded once.
		in, done := wide32(x, w, b, g)
		defer done()
		gx, gw, gb = normBackward(op, in[0], shape, in[1], in[2], in[3], eps, center)
		return narrow16(gx), narrow16(gw), narrow16(gb)
	}
	gx, ok := output(dev, dt, x.Shape(), given(x, w, g)...)
	// One kernel writes every gradient: where one could not be allocated,
	// all fail.
	grads := []*T{gx}
	for _, p := range []*T{w, b} {
		var s *T
		if p != nil {
			var okS bool
			s, okS = output(dev, dt, shape, x, g) // w's and b's values unread
			if ok && !okS {
				for i, t := range grads {
					if t != nil {
						grads[i] = failedAs(t, s.Err())
					}
				}
				ok = false
			} else if !ok && okS {
				s = failedAs(s, grads[0].Err())
			}
		}
		grads = append(grads, s)
	}
	gx, gw, gb = grads[0], grads[1], grads[2]
	if ok {
		dev.NormGrad(gx.Buffer(), bufferOf(gw), bufferOf(gb), x.Buffer(), g.Buffer(), bufferOf(w), rows, n, eps, center)
	}
	return gx, gw, gb
}

// LayerNorm returns PyTorch's layer_norm: x normalised over its last
// axes, those of the normalized shape, to zero mean and unit (biased)
// variance, (x − mean)/√(var + eps), then times w and plus b, each of the
// normalized shape or nil. eps must be finite and ≥ 0
// (DefaultLayerNormEps is PyTorch's default).
func LayerNorm[V Operand[E], E any](x V, shape []int, w, b V, eps float64) V {
	return call(LayerNormOp, NormAttrs{Shape: shape, Eps: eps}, inputs("ops.LayerNorm", []V{x}, w, b)...)
}

func layerNorm(x *T, shape []int, w, b *T, eps float64) *T {
	const op = "ops.LayerNorm"
	if _, dt, _, _ := normArgs(op, x, shape, w, b, eps); dt == device.Float16 && (w != nil || b != nil) {
		in, done := wide32(x, w, b)
		defer done()
		return narrow16(layerNorm(in[0], shape, in[1], in[2], eps))
	}
	return normalize(op, x, shape, w, b, eps, true)
}

// LayerNormBackward returns the gradients of LayerNorm for x, w and b
// (nil for a nil w or b).
func LayerNormBackward(x *T, shape []int, w, b, g *T, eps float64) (gx, gw, gb *T) {
	return normBackward("ops.LayerNormBackward", x, shape, w, b, g, eps, true)
}

// RMSNorm returns PyTorch's rms_norm: x/√(mean(x²) + eps) over its last
// axes, those of the normalized shape, times w (of the normalized shape,
// or nil). eps must be finite and ≥ 0; PyTorch's default is the dtype's
// machine epsilon (2⁻²³ for float32).
func RMSNorm[V Operand[E], E any](x V, shape []int, w V, eps float64) V {
	return call(RMSNormOp, NormAttrs{Shape: shape, Eps: eps}, inputs("ops.RMSNorm", []V{x}, w)...)
}

func rmsNorm(x *T, shape []int, w *T, eps float64) *T {
	const op = "ops.RMSNorm"
	if _, dt, _, _ := normArgs(op, x, shape, w, nil, eps); dt == device.Float16 && w != nil {
		in, done := wide32(x, w)
		defer done()
		return narrow16(rmsNorm(in[0], shape, in[1], eps))
	}
	return normalize(op, x, shape, w, nil, eps, false)
}

// RMSNormBackward returns the gradients of RMSNorm for x and w (nil for a
// nil w).
func RMSNormBackward(x *T, shape []int, w, g *T, eps float64) (gx, gw *T) {
	gx, gw, _ = normBackward("ops.RMSNormBackward", x, shape, w, nil, g, eps, false)
	return gx, gw
}

// normRule is layer_norm's (center) or rms_norm's backward in table ops
// (normGrads), over the trailing axes of the normalized shape.
func normRule(center bool) Rule {
	return rule(func(b Builder, in []Value, out, g Value, a NormAttrs) []Value {
		rank := len(in[0].Shape())
		var axes []int
		for ax := rank - len(a.Shape); ax < rank; ax++ {
			axes = append(axes, ax)
		}
		return normGrads(rb{b}, in, g, axes, a.Shape, a.Eps, center)
	})
}

// normGrads is a normalisation's backward in table ops over axes, with the
// affine parameters in[1] and in[2] (if any) broadcast as pshape: with
// x̂ = (x − μ)·ρ, ρ = (var + eps)^−½ and ĝ = g·w, the gradient of x is
// ρ·(ĝ − mean(ĝ) − x̂·mean(ĝ·x̂)) (without μ and mean(ĝ) unless center),
// of w the sum of g·x̂ and of b the sum of g.
func normGrads(r rb, in []Value, g Value, axes, pshape []int, eps float64, center bool) []Value {
	x := in[0]
	mean := func(v Value) Value { return r.op(MeanOp, ReduceAttrs{Axes: axes, Keepdims: true}, v) }
	xc := x
	if center {
		xc = r.sub(x, mean(x))
	}
	v := mean(r.mul(xc, xc))
	rho := r.op(PowScalarOp, PowScalarAttrs{Exponent: -0.5}, r.add(v, r.scalar(v, eps)))
	xh := r.mul(xc, rho)
	gh := g
	if len(in) > 1 {
		gh = r.mul(g, r.reshape(in[1], pshape))
	}
	d := r.sub(gh, r.mul(xh, mean(r.mul(gh, xh))))
	if center {
		d = r.sub(d, mean(gh))
	}
	grads := []Value{r.mul(rho, d)}
	if len(in) > 1 {
		grads = append(grads, r.reshape(r.sumTo(r.mul(g, xh), pshape), in[1].Shape()))
	}
	if len(in) > 2 {
		grads = append(grads, r.reshape(r.sumTo(g, pshape), in[2].Shape()))
	}
	return grads
}

// normCases are the parity cases of layer_norm (center) or rms_norm.
func normCases(center bool) []Case {
	dom := anyReal
	eps := DefaultLayerNormEps
	if !center {
		// x/|x| near 0: keep the single-element rows away from it.
		dom = Domain{Lo: -2, Hi: 2, Kinks: []float64{0}, Gap: 0.3}
		eps = 0x1p-23
	}
	c := func(x, norm []int, params int, e float64) Case {
		in := []Input{{Shape: x, Domain: dom}}
		name := ShapeName(x) + " over " + ShapeName(norm)
		for i := range params {
			in = append(in, Input{Shape: norm, Domain: Domain{Lo: 0.5, Hi: 1.5}})
			if i == 0 {
				name += " w"
			} else {
				name += " b"
			}
		}
		return Case{Name: name, Inputs: in, Attrs: NormAttrs{Shape: norm, Eps: e}}
	}
	params := 2
	if !center {
		params = 1
	}
	cs := []Case{
		c(sh(3, 5), sh(5), 0, eps),
		c(sh(3, 5), sh(5), params, eps),
		c(sh(2, 3, 4), sh(3, 4), params, eps),
		c(sh(2, 3, 4), sh(2, 3, 4), 1, eps),
		c(sh(4, 1), sh(1), params, eps),
		c(sh(0, 5), sh(5), params, eps),
		c(sh(7), sh(7), 0, eps),
	}
	wide := c(sh(3, 6), sh(6), params, 0.1)
	wide.Name = "(3,6) over (6,) eps=0.1"
	big := c(sh(129, 128), sh(128), params, eps)
	big.NoFD = true
	// Rows a workgroup holds in registers (WebGPU's one-pass kernel): a
	// whole number of vec4s an invocation, and not.
	long := c(sh(9, 1024), sh(1024), params, eps)
	ragged := c(sh(5, 532), sh(532), 0, eps)
	// The affine transform (and w's gradient) on the invocations' last,
	// partly filled vec4s; more elements than parity.ReferenceLimit, so
	// checked against the float64 reference, not PyTorch's.
	raggedW := c(sh(9, 532), sh(532), params, eps)
	long.NoFD, ragged.NoFD, raggedW.NoFD = true, true, true
	special := c(sh(3, 5), sh(5), params, eps)
	special.Name, special.NoFD = "special values (3,5) over (5,)", true
	special.Inputs[0].Domain = Domain{Values: finiteSpecials}
	// Rows of a large mean and a small spread (naive sums in float32 keep
	// an error of the order of the spread), and rows whose squares
	// overflow float32; each on the one-pass kernel and on the other.
	offset := c(sh(3, 1024), sh(1024), params, eps)
	offset.Name, offset.NoFD = "large mean (3,1024) over (1024,)", true
	offset.Inputs[0].Domain = largeMean
	offset.ATol = 3e-5 // the weight's gradient sums x̂'s error over the rows
	huge := c(sh(2, 1024), sh(1024), 0, eps)
	huge.Name, huge.NoFD = "huge (2,1024) over (1024,)", true
	huge.Inputs[0].Domain = Domain{Values: hugeValues}
	hugeRow := c(sh(2, 5), sh(5), 0, eps)
	hugeRow.Name, hugeRow.NoFD = "huge (2,5) over (5,)", true
	hugeRow.Inputs[0].Domain = Domain{Values: hugeValues}
	return append(cs, wide, big, long, ragged, raggedW, special, offset, huge, hugeRow)
}

// largeMean draws values of a mean 170 times their σ: the mean held as
// one float32 (as PyTorch's) is within half an ulp, 4·10⁻⁶, of its value,
// which the normalised values keep, 7·10⁻⁶ of σ, within the default
// tolerances.
var largeMean = Domain{Lo: 100, Hi: 102}

// hugeValues are values whose squares overflow float32.
var hugeValues = []float64{3e38, -3e38, 1e38, -2e38, 2.5e38}

// NormAttrs are layer_norm's and rms_norm's normalized shape (the
// trailing axes), and the ε added to the variance (also batch_norm's,
// which reads Eps alone).
type NormAttrs struct {
	Shape []int
	Eps   float64
}

func (NormAttrs) isAttrs() {}
