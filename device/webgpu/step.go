//go:build cgo || js

package webgpu

import (
	"math"

	"github.com/extensor/extensor/device"
)

// Step runs one fused optimiser step: one dispatch reading the gradient
// and updating the parameter and its state in place.
func (d *Device) Step(op device.Optimizer, param, grad device.Buffer, state []device.Buffer, h device.StepParams) {
	d.writing(append([]device.Buffer{param}, state...)...)
	defer d.written()
	p := d.buf(param)
	if p.n == 0 {
		return
	}
	bufs := []*buffer{d.buf(grad), p}
	for _, s := range state {
		bufs = append(bufs, d.buf(s))
	}
	// By vec4s at every length (vecs): 4× fewer invocations, the same loads.
	n := vecs(p.n)
	t := elemType(false, true)
	scaled := h.Scaling != nil
	var spec updateSpec
	var params any
	switch op {
	case device.SGD:
		momentum := h.Momentum != 0
		spec = updateSpec{Op: "sgd", T: t, Momentum: momentum, First: h.FirstStep, Nesterov: h.Nesterov, Scaled: scaled}
		params = sgdParams{N: uint32(n), LR: float32(h.LR), WeightDecay: float32(h.WeightDecay), Momentum: float32(h.Momentum), Dampening: float32(h.Dampening), T: uint32(h.T)}
		bufs = bufs[:2+b2i(momentum)]
	case device.Adam:
		spec = updateSpec{Op: "adam", T: t, Decoupled: h.Decoupled, AMSGrad: h.AMSGrad, Scaled: scaled}
		bc1 := 1 - math.Pow(h.Beta1, float64(h.T))
		bc2 := 1 - math.Pow(h.Beta2, float64(h.T))
		params = adamParams{N: uint32(n), LR: float32(h.LR), WeightDecay: float32(h.WeightDecay), Beta1: float32(h.Beta1), Beta2: float32(h.Beta2),
			Eps: float32(h.Eps), StepSize: float32(h.LR / bc1), Bias2Root: float32(math.Sqrt(bc2)),
			T: uint32(h.T), LnBeta1: lnBeta(h.Beta1), LnBeta2: lnBeta(h.Beta2)}
		bufs = bufs[:2+2+b2i(h.AMSGrad)]
	}
	written := flags(1, len(bufs)-1)
	if scaled { // the scaler's state and the optimiser's count of skips, read
		bufs, written = append(bufs, d.buf(h.Scaling), d.buf(h.Skipped)), append(written, false, false)
	}
	k := d.kernel(spec, written...)
	d.runItemsWhole(k, 1, itemBytes(true, "f32"), params, 2*b2i(scaled), bufs...)
}

// lnBeta is ln β for a scaled Adam's bias corrections, finite for β = 0
// (e⁻¹⁰⁴ is 0 in float32).
func lnBeta(b float64) float32 { return float32(max(math.Log(b), -104)) }

// Unscale multiplies grad by the reciprocal of scale's element in place,
// flagging an Inf or NaN result in the scaler's state.
func (d *Device) Unscale(grad, scale, state device.Buffer) {
	d.writing(grad, state)
	defer d.written()
	g := d.buf(grad)
	if g.n == 0 {
		return
	}
	vec, n := vec4(g.n)
	spec := updateSpec{Op: "unscale", T: elemType(false, vec), U: elemType(true, vec)}
	k := d.kernel(spec, true, false, true)
	d.runItemsWhole(k, 1, itemBytes(vec, "f32"), axpyParams{N: uint32(n)}, 2, g, d.buf(scale), d.buf(state))
}

// UpdateScale ends a step of dynamic loss scaling: one invocation.
func (d *Device) UpdateScale(scale, state device.Buffer, skipped []device.Buffer, p device.ScaleParams) {
	d.writing(scale, state)
	defer d.written()
	bufs := []*buffer{d.buf(scale), d.buf(state)}
	for _, k := range skipped {
		bufs = append(bufs, d.buf(k))
	}
	written := make([]bool, len(bufs))
	for i := range written {
		written[i] = true
	}
	k := d.kernel(updateSpec{Op: "scale_update", T: "f32", Counts: len(skipped)}, written...)
	d.runItemsWhole(k, 1, 4, scaleParams{N: 1, Growth: float32(p.Growth), Backoff: float32(p.Backoff), Interval: uint32(p.Interval)}, len(bufs), bufs...)
}

// The update family's parameters (shaders/update.wgsl), each over N
// elements (of its spec's T).
type (
	// fillParams: every element gets Bits.
	fillParams struct{ N, Bits uint32 }
	// arangeParams: element i (First + the dispatch's item i) is Start +
	// i·Step (float32 bits, or int32's).
	arangeParams struct{ N, Start, Step, First uint32 }
	// sgdParams: PyTorch's SGD.
	// T, the step number, is read by scaled steps (StepParams.Scaling)
	// alone.
	sgdParams struct {
		N                                    uint32
		LR, WeightDecay, Momentum, Dampening float32
		T                                    uint32
	}
	// adamParams: PyTorch's Adam; StepSize is LR/(1 − β1ᵗ) and Bias2Root
	// √(1 − β2ᵗ). A scaled step (StepParams.Scaling) computes them from T,
	// less the steps skipped, and ln β1, ln β2.
	adamParams struct {
		N                                                       uint32
		LR, WeightDecay, Beta1, Beta2, Eps, StepSize, Bias2Root float32
		T                                                       uint32
		LnBeta1, LnBeta2                                        float32
	}
	// scaleParams: the settings of dynamic loss scaling (N is 1).
	scaleParams struct {
		N               uint32
		Growth, Backoff float32
		Interval        uint32
	}
	// axpyParams: y += Alpha·x.
	axpyParams struct {
		N     uint32
		Alpha float32
	}
)

func (s updateSpec) params() any {
	switch s.Op {
	case "fill":
		return fillParams{}
	case "arange":
		return arangeParams{}
	case "sgd":
		return sgdParams{}
	case "adam":
		return adamParams{}
	case "scale_update":
		return scaleParams{}
	}
	return axpyParams{}
}
