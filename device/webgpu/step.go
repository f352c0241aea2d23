//go:build cgo || js

package webgpu

import (
	"math"

	"github.com/extensor/extensor/device"
)

// Step runs one fused optimiser step: one dispatch reading the gradient
// and updating the parameter and its state in place.
func (d *Device) Step(op device.Optimizer, param, grad device.Buffer, state []device.Buffer, h device.StepParams) {
	d.mu.Lock()
	defer d.mu.Unlock()
	p := d.buf(param)
	if p.n == 0 {
		return
	}
	bufs := []*buffer{d.buf(grad), p}
	for _, s := range state {
		bufs = append(bufs, d.buf(s))
	}
	// vec4s where the count allows: 4× fewer invocations, the same loads.
	vec, n := vec4(p.n)
	t := elemType(false, vec)
	var spec updateSpec
	var params []uint32
	switch op {
	case device.SGD:
		momentum := h.Momentum != 0
		spec = updateSpec{Op: "sgd", T: t, Momentum: momentum, First: h.FirstStep, Nesterov: h.Nesterov}
		params = []uint32{uint32(n), f32bits(h.LR), f32bits(h.WeightDecay), f32bits(h.Momentum), f32bits(h.Dampening)}
		bufs = bufs[:2+b2i(momentum)]
	case device.Adam:
		spec = updateSpec{Op: "adam", T: t, Decoupled: h.Decoupled, AMSGrad: h.AMSGrad}
		bc1 := 1 - math.Pow(h.Beta1, float64(h.T))
		bc2 := 1 - math.Pow(h.Beta2, float64(h.T))
		params = []uint32{uint32(n), f32bits(h.LR), f32bits(h.WeightDecay), f32bits(h.Beta1), f32bits(h.Beta2), f32bits(h.Eps),
			f32bits(h.LR / bc1), f32bits(math.Sqrt(bc2))}
		bufs = bufs[:2+2+b2i(h.AMSGrad)]
	}
	k := d.kernel(spec, flags(1, len(bufs)-1)...)
	d.runItems(k, 1, itemBytes(vec, "f32"), params, bufs...)
}
