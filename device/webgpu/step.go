//go:build cgo || js

package webgpu

import (
	"math"
	"slices"

	"github.com/extensor/extensor/device"
)

// maxStepGroup bounds the parameters one optimiser dispatch steps (and
// so the kernel's size, and its variants: one a group size).
const maxStepGroup = 8

// Step runs one fused optimiser step of each parameter: a dispatch,
// reading the gradients and updating the parameters and their state in
// place, for each group of up to maxStepGroup parameters whose buffers
// the device's storage bindings hold (PyTorch's multi-tensor apply). A
// parameter too large to bind whole, or one whose buffers failed, is
// stepped alone, and a group ends before a parameter any of whose
// buffers it binds already (the parameters are stepped in order).
func (d *Device) Step(op device.Optimizer, params, grads []device.Buffer, state [][]device.Buffer, h device.StepParams) {
	d.writing()
	defer d.written()
	var extra []*buffer
	if h.Scaling != nil { // the scaler's state and the optimiser's count of skips, read
		extra = []*buffer{d.buf(h.Scaling), d.buf(h.Skipped)}
	}
	per := 2 // grad and param, then the state a step reads
	switch {
	case op == device.SGD && h.Momentum != 0:
		per = 3
	case op == device.Adam:
		per = 4 + b2i(h.AMSGrad)
	}
	bindable := min(int(d.limits.MaxStorageBuffersPerShaderStage)-1, maxBindings) - len(extra) // but the parameters' binding
	room := max(1, min(maxStepGroup, bindable/per))
	limit := d.limits.MaxStorageBufferBindingSize
	var group [][]*buffer
	for i, param := range params {
		p := d.buf(param)
		if p.n == 0 {
			continue
		}
		bufs := []*buffer{d.buf(grads[i]), p}
		for _, s := range state[i][:per-2] {
			bufs = append(bufs, d.buf(s))
		}
		alone := slices.ContainsFunc(slices.Concat(bufs, extra), func(b *buffer) bool {
			return b.bindSize() > limit || b.resource != nil && b.failed != nil
		})
		if alone || len(group) == room || slices.ContainsFunc(group, func(g []*buffer) bool { return sharesBuffer(g, bufs) }) {
			d.stepGroup(op, h, group, extra)
			group = group[:0]
		}
		group = append(group, bufs)
		if alone {
			d.stepGroup(op, h, group, extra)
			group = group[:0]
		}
	}
	d.stepGroup(op, h, group, extra)
}

// sharesBuffer reports whether a and b bind a buffer in common.
func sharesBuffer(a, b []*buffer) bool {
	return slices.ContainsFunc(a, func(x *buffer) bool {
		return slices.ContainsFunc(b, func(y *buffer) bool { return x.b == y.b })
	})
}

// stepGroup records Step's dispatch for a group of parameters, each's
// buffers grad, param and its state, then extra (a scaled step's),
// failing the group's parameters and state where it cannot run.
func (d *Device) stepGroup(op device.Optimizer, h device.StepParams, group [][]*buffer, extra []*buffer) {
	if len(group) == 0 {
		return
	}
	d.outs = d.outs[:0]
	var bufs []*buffer
	var written []bool
	var starts [maxStepGroup]uint32
	n := 0 // by vec4s at every length (vecs): 4× fewer invocations, the same loads
	for k, g := range group {
		for _, b := range g[1:] {
			d.outs = append(d.outs, b.resource)
		}
		bufs, written = append(bufs, g...), append(written, flags(1, len(g)-1)...)
		starts[k] = uint32(n)
		n += vecs(g[1].n)
	}
	bufs, written = append(bufs, extra...), append(written, make([]bool, len(extra))...)
	t := elemType(false, true)
	scaled := h.Scaling != nil
	var spec updateSpec
	var params any
	switch op {
	case device.SGD:
		spec = updateSpec{Op: "sgd", T: t, Momentum: h.Momentum != 0, First: h.FirstStep, Nesterov: h.Nesterov, Scaled: scaled}
		params = sgdParams{N: uint32(n), Starts: starts, LR: float32(h.LR), WeightDecay: float32(h.WeightDecay), Momentum: float32(h.Momentum), Dampening: float32(h.Dampening), T: uint32(h.T)}
	case device.Adam:
		spec = updateSpec{Op: "adam", T: t, Decoupled: h.Decoupled, AMSGrad: h.AMSGrad, Scaled: scaled}
		bc1 := 1 - math.Pow(h.Beta1, float64(h.T))
		bc2 := 1 - math.Pow(h.Beta2, float64(h.T))
		params = adamParams{N: uint32(n), Starts: starts, LR: float32(h.LR), WeightDecay: float32(h.WeightDecay), Beta1: float32(h.Beta1), Beta2: float32(h.Beta2),
			Eps: float32(h.Eps), StepSize: float32(h.LR / bc1), Bias2Root: float32(math.Sqrt(bc2)),
			T: uint32(h.T), LnBeta1: lnBeta(h.Beta1), LnBeta2: lnBeta(h.Beta2)}
	}
	if len(group) > 1 {
		spec.Group = len(group)
	}
	k := d.kernel(spec, written...)
	d.runItemsWhole(k, 1, itemBytes(true, "f32"), params, len(extra), bufs...)
}

// lnBeta is ln β for a scaled Adam's bias corrections, finite for β = 0
// (e⁻¹⁰⁴ is 0 in float32).
func lnBeta(b float64) float32 { return float32(max(math.Log(b), -104)) }

// Unscale multiplies each of grads by the reciprocal of scale's element
// in place, flagging an Inf or NaN result in the scaler's state: a
// dispatch for each group of up to maxStepGroup gradients the device's
// storage bindings hold, by vec4s (a lone gradient by elements where its
// length is not a multiple of 4). A gradient too large to bind whole,
// or one that failed, is unscaled alone, and a group ends before a
// gradient it binds already.
func (d *Device) Unscale(grads []device.Buffer, scale, state device.Buffer) {
	d.writing()
	defer d.written()
	extra := []*buffer{d.buf(scale), d.buf(state)}
	room := max(1, min(maxStepGroup, min(int(d.limits.MaxStorageBuffersPerShaderStage)-1, maxBindings)-len(extra)))
	limit := d.limits.MaxStorageBufferBindingSize
	var group []*buffer
	for _, grad := range grads {
		g := d.buf(grad)
		if g.n == 0 {
			continue
		}
		alone := slices.ContainsFunc([]*buffer{g, extra[0], extra[1]}, func(b *buffer) bool {
			return b.bindSize() > limit || b.resource != nil && b.failed != nil
		})
		if alone || len(group) == room || slices.ContainsFunc(group, func(b *buffer) bool { return b.b == g.b }) {
			d.unscaleGroup(group, extra)
			group = group[:0]
		}
		group = append(group, g)
		if alone {
			d.unscaleGroup(group, extra)
			group = group[:0]
		}
	}
	d.unscaleGroup(group, extra)
}

// unscaleGroup records Unscale's dispatch for a group of gradients, then
// extra (the scale and the scaler's state), failing the gradients and
// the state where it cannot run.
func (d *Device) unscaleGroup(group, extra []*buffer) {
	if len(group) == 0 {
		return
	}
	d.outs = d.outs[:0]
	for _, g := range group {
		d.outs = append(d.outs, g.resource)
	}
	d.outs = append(d.outs, extra[1].resource)
	written := append(flags(0, len(group)), false, true)
	if len(group) == 1 {
		vec, n := vec4(group[0].n)
		spec := updateSpec{Op: "unscale", T: elemType(false, vec), U: elemType(true, vec)}
		k := d.kernel(spec, written...)
		d.runItemsWhole(k, 1, itemBytes(vec, "f32"), unscaleParams{N: uint32(n)}, 2, slices.Concat(group, extra)...)
		return
	}
	var p unscaleParams
	for k, g := range group {
		p.Starts[k], p.Lens[k] = p.N, uint32(g.n)
		p.N += uint32(vecs(g.n))
	}
	spec := updateSpec{Op: "unscale", T: elemType(false, true), U: elemType(true, true), Group: len(group)}
	k := d.kernel(spec, written...)
	d.runItemsWhole(k, 1, itemBytes(true, "f32"), p, 2, slices.Concat(group, extra)...)
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
		Starts                               [maxStepGroup]uint32 // each parameter's first item, in a group's dispatch
		LR, WeightDecay, Momentum, Dampening float32
		T                                    uint32
	}
	// adamParams: PyTorch's Adam; StepSize is LR/(1 − β1ᵗ) and Bias2Root
	// √(1 − β2ᵗ). A scaled step (StepParams.Scaling) computes them from T,
	// less the steps skipped, and ln β1, ln β2.
	adamParams struct {
		N                                                       uint32
		Starts                                                  [maxStepGroup]uint32 // as sgdParams'
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
	// unscaleParams: N items; a group's gradients' first items and
	// lengths (in elements).
	unscaleParams struct {
		N            uint32
		Starts, Lens [maxStepGroup]uint32
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
	case "unscale":
		return unscaleParams{}
	}
	return axpyParams{}
}
