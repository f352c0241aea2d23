//go:build cgo || js

package webgpu

import (
	"fmt"
	"math"
	"slices"

	"github.com/extensor/extensor/device"
)

// maxStepGroup bounds the tensors one dispatch of the update family's
// grouped kernels takes (and so the kernel's size, and its variants:
// one a group size); cpuStepGroup bounds them on CPU adapters, where an
// invocation loads from every tensor's binding, the lanes of the others
// masked (the switch on the tensor is no branch in llvmpipe): a sum of
// squares over 16 tensors took longer than 16 dispatches of one
// (docs/kernel-choices.md).
const (
	maxStepGroup = 16
	cpuStepGroup = 4
)

// stepGroupOf returns the most tensors a group of d takes.
func (d *Device) stepGroupOf() int {
	if d.loopLimited {
		return cpuStepGroup
	}
	return maxStepGroup
}

// Step runs one fused optimiser step of each parameter: a dispatch,
// reading the gradients and updating the parameters and their state in
// place, for each group of parameters (inGroups; PyTorch's multi-tensor
// apply).
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
	sets := make([][]*buffer, len(params))
	for i, param := range params {
		sets[i] = []*buffer{d.buf(grads[i]), d.buf(param)}
		for _, s := range state[i][:per-2] {
			sets[i] = append(sets[i], d.buf(s))
		}
	}
	d.inGroups(sets, 1, extra, func(group [][]*buffer) { d.stepGroup(op, h, group, extra) })
}

// inGroups calls run for each group of sets (each the buffers of one
// tensor a kernel takes, its tensor's at key), in order, and so that the
// device's storage bindings hold a group, extra, the parameters' binding
// and one spare: up to stepGroupOf sets, each whose tensor has elements,
// once the open chain has run where it binds any of them. A
// set one of whose buffers (or extra's) is too large to bind whole, or
// failed, is a group of its own, and a group ends before a set that
// shares a buffer with one in it, so that the sets' work keeps its
// order.
func (d *Device) inGroups(sets [][]*buffer, key int, extra []*buffer, run func([][]*buffer)) {
	if len(sets) == 0 {
		return
	}
	// A failure the open chain meets is the tensor's it writes alone.
	if d.chain != nil && (d.chain.bindsAnyOf(extra) || slices.ContainsFunc(sets, d.chain.bindsAnyOf)) {
		d.flushChain()
	}
	// A binding spare beside the parameters': wgpu's Metal backend binds
	// the buffers' sizes in one of its own.
	bindable := min(int(d.limits.MaxStorageBuffersPerShaderStage)-2, maxBindings) - len(extra)
	room := max(1, min(d.stepGroupOf(), bindable/len(sets[0])))
	limit := d.limits.MaxStorageBufferBindingSize
	var group [][]*buffer
	flush := func() {
		if len(group) > 0 {
			run(group)
		}
		group = group[:0]
	}
	for _, set := range sets {
		if set[key].n == 0 {
			continue
		}
		alone := slices.ContainsFunc(slices.Concat(set, extra), func(b *buffer) bool {
			return b.bindSize() > limit || b.resource != nil && b.failed != nil
		})
		if alone || len(group) == room || slices.ContainsFunc(group, func(g []*buffer) bool { return sharesBuffer(g, set) }) {
			flush()
		}
		group = append(group, set)
		if alone {
			flush()
		}
	}
	flush()
}

// sharesBuffer reports whether a and b bind a buffer in common.
func sharesBuffer(a, b []*buffer) bool {
	return slices.ContainsFunc(a, func(x *buffer) bool {
		return slices.ContainsFunc(b, func(y *buffer) bool { return x.b == y.b })
	})
}

// starts returns the first items of a group's tensors, laid one after
// another by vec4s (each at key in its set) from multiples of align in
// a group of more than one, their lengths, and the items in all.
func starts(group [][]*buffer, key, align int) (first, lens [maxStepGroup]uint32, n uint32) {
	for k, g := range group {
		if len(group) > 1 {
			n = (n + uint32(align) - 1) / uint32(align) * uint32(align)
		}
		first[k], lens[k] = n, uint32(g[key].n)
		n += uint32(vecs(g[key].n))
	}
	return first, lens, n
}

// stepGroup records Step's dispatch for a group of parameters, each's
// buffers grad, param and its state, then extra (a scaled step's),
// failing the group's parameters and state where it cannot run.
func (d *Device) stepGroup(op device.Optimizer, h device.StepParams, group [][]*buffer, extra []*buffer) {
	d.outs = d.outs[:0]
	var written []bool
	for _, g := range group {
		for _, b := range g[1:] {
			d.outs = append(d.outs, b.resource)
		}
		written = append(written, flags(1, len(g)-1)...)
	}
	// By vec4s at every length (vecs): 4× fewer invocations, the same loads.
	first, _, n := starts(group, 1, 1)
	bufs, written := slices.Concat(slices.Concat(group...), extra), append(written, make([]bool, len(extra))...)
	t := elemType(false, true)
	scaled := h.Scaling != nil
	var spec updateSpec
	var params any
	switch op {
	case device.SGD:
		spec = updateSpec{Op: "sgd", T: t, Momentum: h.Momentum != 0, First: h.FirstStep, Nesterov: h.Nesterov, Scaled: scaled}
		params = sgdParams{N: n, Starts: first, LR: float32(h.LR), WeightDecay: float32(h.WeightDecay), Momentum: float32(h.Momentum), Dampening: float32(h.Dampening), T: uint32(h.T)}
	case device.Adam:
		spec = updateSpec{Op: "adam", T: t, Decoupled: h.Decoupled, AMSGrad: h.AMSGrad, Scaled: scaled}
		bc1 := 1 - math.Pow(h.Beta1, float64(h.T))
		bc2 := 1 - math.Pow(h.Beta2, float64(h.T))
		params = adamParams{N: n, Starts: first, LR: float32(h.LR), WeightDecay: float32(h.WeightDecay), Beta1: float32(h.Beta1), Beta2: float32(h.Beta2),
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
// dispatch for each group of gradients (inGroups), by vec4s (a lone
// gradient by elements where its length is not a multiple of 4).
func (d *Device) Unscale(grads []device.Buffer, scale, state device.Buffer) {
	d.writing()
	defer d.written()
	d.scaleAll("unscale", grads, []*buffer{d.buf(scale), d.buf(state)})
}

// Scale multiplies each of xs by s's element in place: a dispatch for
// each group of them (inGroups).
func (d *Device) Scale(xs []device.Buffer, s device.Buffer) {
	d.writing()
	defer d.written()
	d.scaleAll("scale", xs, []*buffer{d.buf(s)})
}

// scaleAll runs the update family's kernel op, unscale or scale, on
// xs, in groups, with extra: the scale, and unscale's scaler's state.
func (d *Device) scaleAll(op string, xs []device.Buffer, extra []*buffer) {
	sets := make([][]*buffer, len(xs))
	for i, x := range xs {
		sets[i] = []*buffer{d.buf(x)}
	}
	d.inGroups(sets, 0, extra, func(group [][]*buffer) {
		d.outs = d.outs[:0]
		for _, g := range group {
			d.outs = append(d.outs, g[0].resource)
		}
		written := append(flags(0, len(group)), false) // the scale
		if op == "unscale" {
			d.outs, written = append(d.outs, extra[1].resource), append(written, true)
		}
		bufs := slices.Concat(slices.Concat(group...), extra)
		if len(group) == 1 {
			vec, n := vec4(group[0][0].n)
			k := d.kernel(updateSpec{Op: op, T: elemType(false, vec), U: elemType(true, vec)}, written...)
			d.runItemsWhole(k, 1, itemBytes(vec, "f32"), unscaleParams{N: uint32(n)}, len(extra), bufs...)
			return
		}
		var p unscaleParams
		p.Starts, p.Lens, p.N = starts(group, 0, 1)
		k := d.kernel(updateSpec{Op: op, T: elemType(false, true), U: elemType(true, true), Group: len(group)}, written...)
		d.runItemsWhole(k, 1, itemBytes(true, "f32"), p, len(extra), bufs...)
	})
}

// sumsqFirst is sumsqParams.First's word, and sumsqRun the vec4s an
// invocation of the sum of squares sums (so that its scratch holds a
// sixteenth of the tensors' vec4s, within a binding for 2³¹ elements).
const (
	sumsqFirst = 1
	sumsqRun   = 16
)

// SquaredNorm sets out's element to the sum of the squares of the
// elements of xs: a dispatch for each group of them (inGroups), each
// invocation storing the sum of sumsqRun vec4s in a scratch buffer,
// which one sum then reduces.
func (d *Device) SquaredNorm(out device.Buffer, xs []device.Buffer) {
	d.writing(out)
	defer d.written()
	o := d.buf(out)
	sets := make([][]*buffer, len(xs))
	runs := 0
	for i, x := range xs {
		sets[i] = []*buffer{d.buf(x)}
		if d.failedIn(sets[i]...) {
			return
		}
		runs += (vecs(sets[i][0].n) + sumsqRun - 1) / sumsqRun
	}
	if runs == 0 {
		d.fill(o, 0)
		return
	}
	sums, err := d.alloc(device.Float32, runs)
	if err != nil {
		d.refuse(fmt.Errorf("webgpu: the sums of squares of %d tensors: %v", len(xs), err))
		return
	}
	defer d.free(sums)
	base := uint32(0)
	d.inGroups(sets, 0, []*buffer{sums}, func(group [][]*buffer) {
		var p sumsqParams
		p.Starts, p.Lens, p.N = starts(group, 0, sumsqRun)
		p.Base = base
		base += (p.N + sumsqRun - 1) / sumsqRun
		spec := updateSpec{Op: "sumsq", T: elemType(false, true)}
		if len(group) > 1 {
			spec.Group = len(group)
		}
		k := d.kernel(spec, append(flags(len(group), 0), true)...)
		d.runChunks(k, sumsqRun, itemBytes(true, "f32"), p, 1, sumsqFirst, append(slices.Concat(group...), sums)...)
	})
	d.reduce(device.Sum, o, sums, false, nil, []axis{{size: runs, stride: 1}}, 1)
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
		Starts                               [maxStepGroup]uint32 // a group's parameters' first items
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
	// unscaleParams: N items; a group's tensors' first items and
	// lengths (in elements).
	unscaleParams struct {
		N            uint32
		Starts, Lens [maxStepGroup]uint32
	}
	// sumsqParams: unscaleParams', the index of the dispatch's first
	// sum, Base, and of its first item, First (word sumsqFirst: 0 unless
	// a tensor too large to bind whole is bound a chunk at a time).
	sumsqParams struct {
		N, First, Base uint32
		Starts, Lens   [maxStepGroup]uint32
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
	case "unscale", "scale":
		return unscaleParams{}
	case "sumsq":
		return sumsqParams{}
	}
	return axpyParams{}
}
