package cpu

import (
	"math"

	"github.com/extensor/extensor/device"
)

// Step runs an optimiser step element by element in float64, following
// PyTorch's torch.optim formulas line by line.
func (d *Device) Step(op device.Optimizer, param, grad device.Buffer, state []device.Buffer, h device.StepParams) {
	p, g := buf(param), buf(grad)
	st := make([]*buffer, len(state))
	for i, s := range state {
		st[i] = buf(s)
	}
	// Adam's bias corrections, the same for every element.
	bc1 := 1 - math.Pow(h.Beta1, float64(h.T))
	bc2 := 1 - math.Pow(h.Beta2, float64(h.T))
	for i := range p.Len() {
		w, gi := p.at(i), g.at(i)
		switch op {
		case device.SGD:
			if h.WeightDecay != 0 {
				gi += h.WeightDecay * w
			}
			if h.Momentum != 0 {
				b := gi
				if !h.FirstStep {
					b = h.Momentum*st[0].at(i) + (1-h.Dampening)*gi
				}
				st[0].set(i, b)
				if h.Nesterov {
					gi += h.Momentum * b
				} else {
					gi = b
				}
			}
			p.set(i, w-h.LR*gi)
		case device.Adam:
			if h.WeightDecay != 0 {
				if h.Decoupled {
					w *= 1 - h.LR*h.WeightDecay
				} else {
					gi += h.WeightDecay * w
				}
			}
			m := h.Beta1*st[0].at(i) + (1-h.Beta1)*gi
			v := h.Beta2*st[1].at(i) + (1-h.Beta2)*gi*gi
			st[0].set(i, m)
			st[1].set(i, v)
			if h.AMSGrad {
				v = math.Max(st[2].at(i), v)
				st[2].set(i, v)
			}
			p.set(i, w-h.LR/bc1*m/(math.Sqrt(v)/math.Sqrt(bc2)+h.Eps))
		}
	}
}
