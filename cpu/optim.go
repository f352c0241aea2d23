package cpu

import (
	"math"

	"github.com/extensor/extensor/device"
)

// Step runs an optimiser step element by element, following PyTorch's
// torch.optim formulas line by line: in float64 for float64 parameters,
// and in float32 for the others, as PyTorch and the WebGPU kernel compute
// them (the hyper-parameters and Adam's bias corrections, scalars of the
// step, are computed in float64 and rounded once).
func (d *Device) Step(op device.Optimizer, param, grad device.Buffer, state []device.Buffer, h device.StepParams) {
	p := buf(param)
	if p.dt == device.Float64 {
		step[float64](op, p, buf(grad), state, h)
		return
	}
	step[float32](op, p, buf(grad), state, h)
}

// step is Step computing in F.
func step[F float32 | float64](op device.Optimizer, p, g *buffer, state []device.Buffer, h device.StepParams) {
	st := make([]*buffer, len(state))
	for i, s := range state {
		st[i] = buf(s)
	}
	lr, wd := F(h.LR), F(h.WeightDecay)
	mom, damp := F(h.Momentum), F(h.Dampening)
	b1, b2, eps := F(h.Beta1), F(h.Beta2), F(h.Eps)
	// Adam's bias corrections, the same for every element.
	bc1 := 1 - math.Pow(h.Beta1, float64(h.T))
	bc2 := 1 - math.Pow(h.Beta2, float64(h.T))
	stepSize, bc2Root := F(h.LR/bc1), F(math.Sqrt(bc2))
	for i := range p.Len() {
		w, gi := F(p.at(i)), F(g.at(i))
		switch op {
		case device.SGD:
			if wd != 0 {
				gi += wd * w
			}
			if mom != 0 {
				b := gi
				if !h.FirstStep {
					b = mom*F(st[0].at(i)) + (1-damp)*gi
				}
				st[0].set(i, float64(b))
				if h.Nesterov {
					gi += mom * b
				} else {
					gi = b
				}
			}
			p.set(i, float64(w-lr*gi))
		case device.Adam:
			if wd != 0 {
				if h.Decoupled {
					w *= 1 - lr*wd
				} else {
					gi += wd * w
				}
			}
			m := b1*F(st[0].at(i)) + (1-b1)*gi
			v := b2*F(st[1].at(i)) + (1-b2)*gi*gi
			st[0].set(i, float64(m))
			st[1].set(i, float64(v))
			if h.AMSGrad {
				v = max(F(st[2].at(i)), v)
				st[2].set(i, float64(v))
			}
			p.set(i, float64(w-stepSize*m/(F(math.Sqrt(float64(v)))/bc2Root+eps)))
		}
	}
}
