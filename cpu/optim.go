package cpu

import (
	"math"

	"github.com/extensor/extensor/device"
)

// Step runs an optimiser step of each parameter in turn, element by element, following PyTorch's
// torch.optim formulas line by line: in float64 for float64 parameters,
// and in float32 for the others, as PyTorch and the WebGPU kernel compute
// them (the hyper-parameters and Adam's bias corrections, scalars of the
// step, are computed in float64 and rounded once).
func (d *Device) Step(op device.Optimizer, params, grads []device.Buffer, state [][]device.Buffer, h device.StepParams) {
	for i, param := range params {
		p := buf(param)
		done := updating(append([]device.Buffer{param, h.Scaling, h.Skipped}, state[i]...)...)
		if p.dt == device.Float64 {
			step[float64](op, p, buf(grads[i]), state[i], h)
		} else {
			step[float32](op, p, buf(grads[i]), state[i], h)
		}
		done()
	}
}

// step is Step computing in F.
func step[F float32 | float64](op device.Optimizer, p, g *buffer, state []device.Buffer, h device.StepParams) {
	st := make([][]F, len(state))
	for i, s := range state {
		st[i] = elems[F](buf(s))
	}
	first := h.FirstStep
	if h.Scaling != nil { // loss scaling: skipped steps are not counted
		sc := buf(h.Scaling)
		if sc.at(device.ScaleFound) != 0 {
			return
		}
		h.T -= int(buf(h.Skipped).at(0))
		first = h.T == 1
	}
	lr, wd := F(h.LR), F(h.WeightDecay)
	mom, damp := F(h.Momentum), F(h.Dampening)
	b1, b2, eps := F(h.Beta1), F(h.Beta2), F(h.Eps)
	// Adam's bias corrections, the same for every element.
	bc1 := 1 - math.Pow(h.Beta1, float64(h.T))
	bc2 := 1 - math.Pow(h.Beta2, float64(h.T))
	stepSize, bc2Root := F(h.LR/bc1), F(math.Sqrt(bc2))
	ps, gs := elems[F](p), elems[F](g)
	for i := range ps {
		w, gi := ps[i], gs[i]
		switch op {
		case device.SGD:
			if wd != 0 {
				gi += wd * w
			}
			if mom != 0 {
				b := gi
				if !first {
					b = mom*st[0][i] + (1-damp)*gi
				}
				st[0][i] = b
				if h.Nesterov {
					gi += mom * b
				} else {
					gi = b
				}
			}
			ps[i] = w - lr*gi
		case device.Adam:
			if wd != 0 {
				if h.Decoupled {
					w *= 1 - lr*wd
				} else {
					gi += wd * w
				}
			}
			m := b1*st[0][i] + (1-b1)*gi
			v := b2*st[1][i] + (1-b2)*gi*gi
			st[0][i], st[1][i] = m, v
			if h.AMSGrad {
				v = max(st[2][i], v)
				st[2][i] = v
			}
			ps[i] = w - stepSize*m/(F(math.Sqrt(float64(v)))/bc2Root+eps)
		}
	}
}

// elems returns b's elements as F's: b is float32 or float64, as F.
func elems[F float32 | float64](b *buffer) []F {
	if s, ok := any(b.f32).([]F); ok {
		return s
	}
	return any(b.f64).([]F)
}

// Unscale multiplies each gradient's elements by the reciprocal of the
// scale, in float32 (float64 for float64 gradients), and flags a result
// that is Inf or NaN.
func (d *Device) Unscale(grads []device.Buffer, scale, state device.Buffer) {
	for _, grad := range grads {
		g := buf(grad)
		done := updating(grad, state)
		var found bool
		if g.dt == device.Float64 {
			found = unscale[float64](g, buf(scale))
		} else {
			found = unscale[float32](g, buf(scale))
		}
		if found {
			buf(state).set(device.ScaleFound, 1)
		}
		done()
	}
}

// unscale is Unscale computing in F, reporting whether it found an Inf or
// NaN.
func unscale[F float32 | float64](g, scale *buffer) bool {
	inv := 1 / F(scale.at(0))
	found := false
	for i := range g.Len() {
		v := float64(F(g.at(i)) * inv)
		g.set(i, v)
		found = found || math.IsNaN(v) || math.IsInf(v, 0)
	}
	return found
}

// SquaredNorm sums the squares of every element of xs in float64 and
// stores the sum in out, rounded to its dtype.
func (d *Device) SquaredNorm(out device.Buffer, xs []device.Buffer) {
	sum := 0.0
	for _, x := range xs {
		b := buf(x)
		done := updating(x)
		for i := range b.Len() {
			v := b.at(i)
			sum += v * v
		}
		done()
	}
	defer updating(out)()
	buf(out).set(0, sum)
}

// Scale multiplies each element of xs by s's, in their dtype (float32,
// or float64).
func (d *Device) Scale(xs []device.Buffer, s device.Buffer) {
	for _, x := range xs {
		b := buf(x)
		done := updating(x, s)
		if b.dt == device.Float64 {
			scale[float64](b, buf(s))
		} else {
			scale[float32](b, buf(s))
		}
		done()
	}
}

// scale is Scale computing in F.
func scale[F float32 | float64](x, s *buffer) {
	f := F(s.at(0))
	for i := range x.Len() {
		x.set(i, float64(F(x.at(i))*f))
	}
}

// UpdateScale is the scaler's end of a step, computed in float32 as the
// scale is stored.
func (d *Device) UpdateScale(scale, state device.Buffer, skipped []device.Buffer, p device.ScaleParams) {
	sc, st := buf(scale), buf(state)
	defer updating(append([]device.Buffer{scale, state}, skipped...)...)()
	s := float32(sc.at(0))
	if st.at(device.ScaleFound) != 0 {
		sc.set(0, float64(s*float32(p.Backoff)))
		st.set(device.ScaleGood, 0)
		st.set(device.ScaleSkipped, st.at(device.ScaleSkipped)+1)
		for _, k := range skipped {
			buf(k).set(0, buf(k).at(0)+1)
		}
	} else if good := st.at(device.ScaleGood) + 1; good >= float64(p.Interval) {
		if grown := s * float32(p.Growth); !math.IsInf(float64(grown), 0) {
			sc.set(0, float64(grown))
		}
		st.set(device.ScaleGood, 0)
	} else {
		st.set(device.ScaleGood, good)
	}
	st.set(device.ScaleFound, 0)
}
