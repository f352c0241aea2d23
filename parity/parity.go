package parity

import (
	"errors"
	"strings"

	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/internal/half"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/tensor"
)

// Default tolerances.
const (
	RTol   = 1e-4 // WebGPU (and CPU float32) against CPU float64
	ATol   = 1e-5
	FDRTol = 1e-6 // CPU float64 backward against finite differences
	FDATol = 1e-8
)

// Case is one parity check: a case of an op of the table.
type Case struct {
	Op *ops.Op
	ops.Case
	// Torch, when set, is PyTorch's values on the case, which Check
	// compares every run with.
	Torch *Reference
	// HalfGrads: the float16 check compares the gradients on every
	// device, not only the CPU's (each op's gradient kernels in float16
	// are compiled at their first dispatch: a few cases an op cover them).
	HalfGrads bool
}

// LargeInput is the size from which Check calls a case large: an input
// of more elements than this (ops.LargeLen's cases, among others).
const LargeInput = 1 << 20

// Large reports whether an input of c has more than LargeInput elements.
// Check runs a large case on the CPU in float64 only (its reference),
// and not in float16.
func (c *Case) Large() bool {
	return slices.ContainsFunc(c.Inputs, func(in ops.Input) bool { return device.Numel(in.Shape) > LargeInput })
}

// Name returns "op/case".
func (c *Case) Name() string { return c.Op.Name + "/" + c.Case.Name }

// Specs returns every case of every op of ops.Table, in the table's order.
func Specs() []Case {
	var cs []Case
	for _, op := range ops.Table() {
		for _, c := range op.Cases {
			cs = append(cs, Case{Op: op, Case: c})
		}
	}
	return cs
}

// Status is the outcome of one check of a case.
type Status uint8

// The outcomes.
const (
	NotRun Status = iota // skipped, e.g. no WebGPU adapter
	Pass
	Fail
	NotApplicable // the op has no backward, or the case is too large
	Refused       // the op refuses float16 inputs with a clear error, as it should
)

// Result holds the outcome of each check of a case.
type Result struct {
	Op, Family, Case                   string
	CPUFwd, CPUBwd, GPUFwd, GPUBwd, FD Status
	// Rule: the op's Grad rule, run eagerly on both backends, agrees
	// with its Backward on CPU float64 (cases with finite differences).
	Rule Status
	// Half: the op given float16 inputs on both backends either refuses
	// them (an ErrDType naming float16) or computes what it computes on
	// their values in float64, within float16's precision.
	Half Status
	// Torch: every run agrees with PyTorch's values (cases with them).
	Torch Status
}

// run is one evaluation of a case on a device in a dtype.
type run struct {
	out      []float64
	outShape []int
	grads    [][]float64
	gshapes  [][]int
	// out32 and grads32 are out and grads rounded to float32, set by
	// round32 on the float64 run that the others are compared with.
	out32   []float64
	grads32 [][]float64
}

// round32 sets r.out32 and r.grads32.
func (r *run) round32() {
	r.out32 = toFloat32(r.out)
	r.grads32 = make([][]float64, len(r.grads))
	for i, g := range r.grads {
		r.grads32[i] = toFloat32(g)
	}
}

func seed(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// draw returns n values from d, rounded to float32 unless int.
func draw(d ops.Domain, n int, isInt bool, r *rand.Rand) []float64 {
	v := make([]float64, n)
	lo, hi := d.Lo, d.Hi
	if lo == 0 && hi == 0 {
		lo, hi = -1, 1
	}
	for j := range v {
		switch {
		case len(d.Values) > 0:
			v[j] = d.Values[j%len(d.Values)]
		case d.Classes > 0:
			v[j] = float64(r.IntN(d.Classes))
		default:
			for {
				v[j] = lo + (hi-lo)*r.Float64()
				if d.Integers {
					v[j] = math.Floor(v[j])
				}
				if !nearKink(v[j], d) {
					break
				}
			}
		}
		if !isInt {
			v[j] = float64(float32(v[j]))
		}
	}
	return v
}

func nearKink(x float64, d ops.Domain) bool {
	for _, k := range d.Kinks {
		if math.Abs(x-k) < d.Gap {
			return true
		}
	}
	return false
}

// inputs draws the case's input values.
func (c *Case) inputs() [][]float64 {
	r := rand.New(rand.NewPCG(seed(c.Name()), 1))
	vals := make([][]float64, len(c.Inputs))
	for i, in := range c.Inputs {
		vals[i] = draw(in.Domain, device.Numel(in.Shape), in.Int, r)
	}
	return vals
}

// upstream draws the upstream gradient for an output shape.
func (c *Case) upstream(shape []int) []float64 {
	r := rand.New(rand.NewPCG(seed(c.Name()), 2))
	g := make([]float64, device.Numel(shape))
	for i := range g {
		g[i] = float64(float32(2*r.Float64() - 1))
	}
	return g
}

func (c *Case) tensors(dev device.Device, dt device.DType, vals [][]float64) ([]*tensor.Tensor, error) {
	ts := make([]*tensor.Tensor, len(vals))
	for i, v := range vals {
		d := dt
		if c.Inputs[i].Int {
			d = device.Int32
		}
		t, err := tensor.FromValues(dev, d, v, c.Inputs[i].Shape...)
		if err != nil {
			release(ts)
			return nil, err
		}
		ts[i] = t
	}
	return ts, nil
}

func release(ts []*tensor.Tensor) {
	for _, t := range ts {
		if t != nil {
			t.Release()
		}
	}
}

// forward evaluates the case's forward pass and reads its output.
func (c *Case) forward(dev device.Device, dt device.DType, vals [][]float64) ([]float64, []int, error) {
	in, err := c.tensors(dev, dt, vals)
	if err != nil {
		return nil, nil, err
	}
	defer release(in)
	var out *tensor.Tensor
	if err := tensor.Maybe(func() { out = c.Op.Forward(in, c.Attrs) }); err != nil {
		return nil, nil, err
	}
	defer out.Release()
	v, err := out.Float64s()
	return v, out.Shape(), err
}

// eval runs forward and, if the case has one, backward with upstream g
// (drawn from the output's shape when nil).
func (c *Case) eval(dev device.Device, dt device.DType, vals [][]float64, g []float64) (*run, []float64, error) {
	in, err := c.tensors(dev, dt, vals)
	if err != nil {
		return nil, nil, err
	}
	defer release(in)
	res := &run{}
	var inner error
	err = tensor.Maybe(func() {
		// As a tape records it: through Save where the op has one, its
		// backward reading what Save kept.
		a := ops.Backprop{Attrs: c.Attrs}
		var out *tensor.Tensor
		if c.Op.Save != nil && c.Op.Backward != nil {
			out, a.Saved = c.Op.Save(in, c.Attrs)
			defer a.Saved.Release()
		} else {
			out = c.Op.Forward(in, c.Attrs)
		}
		defer out.Release()
		if res.out, inner = out.Float64s(); inner != nil {
			return
		}
		res.outShape = out.Shape()
		if c.Op.Backward == nil {
			return
		}
		if g == nil {
			g = c.upstream(res.outShape)
		}
		gt, e := tensor.FromValues(dev, dt, g, res.outShape...)
		if e != nil {
			inner = e
			return
		}
		defer gt.Release()
		grads := c.Op.Backward(in, gt, a)
		defer release(grads)
		for _, gr := range grads {
			if gr == nil {
				res.grads = append(res.grads, nil)
				res.gshapes = append(res.gshapes, nil)
				continue
			}
			v, e := gr.Float64s()
			if e != nil {
				inner = e
				return
			}
			res.grads = append(res.grads, v)
			res.gshapes = append(res.gshapes, gr.Shape())
		}
	})
	if err == nil {
		err = inner
	}
	return res, g, err
}

// Fallback is a second WebGPU device configured otherwise (float16 as
// packed words and subgroups off, say), on which Check runs, where Half
// is set, every case's float16 check and, for the ops Full reports, the
// WebGPU checks too: the device's other paths, tested on the same
// adapter. (Half is unset where the first device's float16 kernels are
// the fallback's: an adapter without WGSL's f16.)
type Fallback struct {
	Device device.Device
	Full   func(*ops.Op) bool
	Half   bool
}

// Check runs every check of c and reports failures on t. gpu may be nil,
// in which case the WebGPU checks are NotRun; fb may be nil. A failure on
// fb fails the WebGPU cell it belongs to.
func Check(t testing.TB, c Case, gpu device.Device, fb *Fallback) Result {
	t.Helper()
	res := Result{Op: c.Op.Name, Family: c.Op.Family, Case: c.Case.Name, FD: NotApplicable, Torch: NotApplicable}
	if c.Op.Backward == nil {
		res.CPUBwd, res.GPUBwd = NotApplicable, NotApplicable
	}
	vals := c.inputs()
	host := cpu.New()
	want, g, err := c.eval(host, device.Float64, vals, nil)
	if err != nil {
		t.Errorf("%s %s: cpu float64: %v", c.Op.Name, c.Case.Name, err)
		res.CPUFwd, res.CPUBwd = Fail, Fail
		return res
	}
	if !c.gradShapesOK(t, "cpu float64", want) {
		res.CPUBwd = Fail
	}
	want.round32()
	// The CPU float64 run is compared rounded to float32, as PyTorch's
	// values are.
	runs := map[string]*run{"cpu float64": {out: want.out32, outShape: want.outShape, grads: want.grads32}}
	large := c.Large()
	if large {
		// The CPU's float32 path is the same loops at every size, and the
		// float16 kernels the float32 ones' specialisations: the op's
		// other cases check them; a large case checks the dispatches and
		// passes that its size makes on WebGPU.
		res.CPUFwd = Pass
		if res.CPUBwd != Fail && c.Op.Backward != nil {
			res.CPUBwd = Pass
		}
	} else {
		res.CPUFwd, res.CPUBwd, runs["cpu float32"] = c.compareRun(t, "cpu float32", host, vals, g, want, res.CPUBwd)
	}
	full := gpu != nil && fb != nil && fb.Full(c.Op)
	if gpu != nil {
		bwd := res.GPUBwd
		res.GPUFwd, res.GPUBwd, runs["webgpu"] = c.compareRun(t, "webgpu", gpu, vals, g, want, bwd)
		if full {
			f, b, r := c.compareRun(t, "webgpu fallbacks", fb.Device, vals, g, want, bwd)
			res.GPUFwd, res.GPUBwd, runs["webgpu fallbacks"] = merge(res.GPUFwd, f), merge(res.GPUBwd, b), r
		}
	}
	if c.Torch != nil {
		res.Torch = c.checkReference(t, c.Torch, vals, g, runs)
	}
	if c.Op.Backward != nil && !c.NoFD {
		res.FD = c.finiteDifferences(t, vals, g, want)
	}
	devs := []device.Device{host, gpu}
	if gpu != nil && fb != nil && fb.Half {
		devs = append(devs, fb.Device)
	}
	res.Half = NotApplicable
	if !large {
		res.Half = c.checkHalf(t, vals, g, devs...)
	}
	res.Rule = NotApplicable
	if c.Op.Grad != nil && !c.NoFD {
		res.Rule = c.checkRule(t, host, device.Float64, vals, g, want, FDRTol, FDATol)
		if gpu != nil && res.Rule == Pass {
			res.Rule = c.checkRule(t, gpu, device.Float32, vals, g, want, RTol, ATol)
			if full && res.Rule == Pass {
				res.Rule = c.checkRule(t, fb.Device, device.Float32, vals, g, want, RTol, ATol)
			}
		} else if gpu == nil {
			res.Rule = NotRun
		}
	}
	return res
}

// HalfRTol and HalfATol are the tolerances of an op on float16 inputs
// against float64 on the same (float16) values: float16's unit roundoff
// (2⁻¹¹) with room for one rounding of the result, and its smallest
// normal.
const (
	HalfRTol = 1.0 / 1024
	HalfATol = 6.2e-5
)

// HalfGradRTol is the relative tolerance of a gradient on float16 values
// against float64 on the same values: a backward rounds each of the two
// or three ops it runs to float16 and sums in them (a broadcast's, a
// product's), so it gets four roundings' room, and as absolute
// tolerance 2⁻¹⁰ of the gradient's largest magnitude (see halfGradATol),
// where its sums cancel.
const HalfGradRTol = 4.0 / 1024

// halfGradATol returns the absolute tolerance of a float16 gradient
// whose float64 values are want: 2⁻¹⁰ of their largest finite
// magnitude, at least HalfATol.
func halfGradATol(want []float64) float64 {
	most := 0.0
	for _, w := range want {
		if !math.IsInf(w, 0) && !math.IsNaN(w) {
			most = max(most, math.Abs(w))
		}
	}
	return max(HalfATol, most/1024)
}

// checkHalf runs the case on float16 inputs (vals rounded to float16),
// forward and, where the op has one, backward for an upstream gradient
// rounded to float16 (on the CPU, and on the others where HalfGrads is
// set), on the devices (the CPU first; nil ones skipped), and requires
// all to compute it or all to refuse it. What they compute
// is compared with the CPU's float64 run on the same values, rounded to
// float16.
func (c *Case) checkHalf(t testing.TB, vals [][]float64, g []float64, devs ...device.Device) Status {
	t.Helper()
	rounded := make([][]float64, len(c.Inputs))
	for i, v := range vals {
		rounded[i] = v
		if !c.Inputs[i].Int {
			rounded[i] = toHalf(v)
		}
	}
	var gh []float64
	if g != nil {
		gh = toHalf(g)
	}
	// The float64 reference, computed once a device computes the case
	// (an op that refuses float16 needs none). With no floating-point
	// input, nothing is float16: the result (an int32 arange, say) is
	// compared as it is.
	var want *run
	var err error
	reference := func() {
		if want != nil || err != nil {
			return
		}
		if want, _, err = c.eval(cpu.New(), device.Float64, rounded, gh); err != nil {
			return
		}
		if slices.ContainsFunc(c.Inputs, func(in ops.Input) bool { return !in.Int }) {
			want.out = toHalf(want.out)
			for i := range want.grads {
				want.grads[i] = toHalf(want.grads[i])
			}
		}
	}
	status := Refused
	for k, dev := range devs {
		if dev == nil {
			continue
		}
		var got *run
		var ferr error
		if k == 0 || c.HalfGrads {
			got, _, ferr = c.eval(dev, device.Float16, rounded, gh)
		} else {
			got = &run{}
			got.out, _, ferr = c.forward(dev, device.Float16, rounded)
		}
		if ferr == nil {
			reference()
		}
		var te *tensor.Error
		switch {
		case ferr == nil && err == nil:
			if status == Refused && k > 0 {
				t.Errorf("%s %s: float16: the cpu refuses it but %s computes it", c.Op.Name, c.Case.Name, dev)
				return Fail
			}
			where := fmt.Sprintf("%s %s: %s float16", c.Op.Name, c.Case.Name, dev)
			if !Close(t, where+" forward", got.out, want.out, HalfRTol, HalfATol) {
				return Fail
			}
			for i, in := range c.Inputs {
				if c.Op.Backward == nil || in.Int || in.NoGrad || got.grads == nil {
					continue
				}
				if !Close(t, fmt.Sprintf("%s gradient %d", where, i), got.grads[i], want.grads[i], HalfGradRTol, halfGradATol(want.grads[i])) {
					return Fail
				}
			}
			status = Pass
		case errors.As(ferr, &te) && errors.Is(ferr, tensor.ErrDType) && strings.Contains(ferr.Error(), "float16"):
			if status == Pass {
				t.Errorf("%s %s: float16: the cpu computes it but %s refuses it: %v", c.Op.Name, c.Case.Name, dev, ferr)
				return Fail
			}
		default:
			t.Errorf("%s %s: %s float16: %v (float64: %v); want a result or an ErrDType naming float16", c.Op.Name, c.Case.Name, dev, ferr, err)
			return Fail
		}
	}
	return status
}

// toHalf rounds v to float16 (a float16 result's expected value).
func toHalf(v []float64) []float64 {
	r := make([]float64, len(v))
	for i, x := range v {
		r[i] = float64(half.ToFloat32(half.FromFloat32(float32(x))))
	}
	return r
}

// checkRule evaluates the op's Grad rule eagerly on dev and compares its
// gradients with the CPU float64 Backward's.
func (c *Case) checkRule(t testing.TB, dev device.Device, dt device.DType, vals [][]float64, g []float64, want *run, rtol, atol float64) Status {
	t.Helper()
	where := fmt.Sprintf("%s %s: rule on %s %v", c.Op.Name, c.Case.Name, dev.Name(), dt)
	in, err := c.tensors(dev, dt, vals)
	if err != nil {
		t.Errorf("%s: %v", where, err)
		return Fail
	}
	defer release(in)
	status := Pass
	err = tensor.Maybe(func() {
		out := c.Op.Forward(in, c.Attrs)
		gt := tensor.Must(tensor.FromValues(dev, dt, g, out.Shape()...))
		vs := make([]ops.Value, len(in))
		for i, x := range in {
			vs[i] = x
		}
		gs := c.Op.Grad(ops.Eager{}, vs, out, gt, c.Attrs)
		for i := range c.Inputs {
			if c.Inputs[i].Int || c.Inputs[i].NoGrad {
				continue
			}
			gr := gs[i].(*tensor.Tensor)
			if !slices.Equal(gr.Shape(), c.Inputs[i].Shape) {
				t.Errorf("%s: gradient %d has shape %v; input has shape %v", where, i, gr.Shape(), c.Inputs[i].Shape)
				status = Fail
				continue
			}
			v, e := gr.Float64s()
			if e != nil {
				t.Errorf("%s: %v", where, e)
				status = Fail
			} else if !Close(t, fmt.Sprintf("%s: gradient %d", where, i), v, want.grads32[i], rtol, max(atol, 1e-7)) {
				status = Fail
			}
		}
	})
	if err != nil {
		t.Errorf("%s: %v", where, err)
		return Fail
	}
	return status
}

// gradShapesOK checks that every gradient has its input's shape.
func (c *Case) gradShapesOK(t testing.TB, where string, r *run) bool {
	t.Helper()
	if c.Op.Backward == nil {
		return true
	}
	ok := len(r.grads) == len(c.Inputs)
	if !ok {
		t.Errorf("%s %s: %s: backward returned %d gradients for %d inputs", c.Op.Name, c.Case.Name, where, len(r.grads), len(c.Inputs))
		return false
	}
	for i, in := range c.Inputs {
		switch {
		case (in.Int || in.NoGrad) && r.grads[i] != nil:
			t.Errorf("%s %s: %s: input %d, which takes no gradient, got one", c.Op.Name, c.Case.Name, where, i)
			ok = false
		case !in.Int && !in.NoGrad && !slices.Equal(r.gshapes[i], in.Shape):
			t.Errorf("%s %s: %s: gradient %d has shape %v; input has shape %v", c.Op.Name, c.Case.Name, where, i, r.gshapes[i], in.Shape)
			ok = false
		}
	}
	return ok
}

// compareRun evaluates the case in float32 on dev and compares it with the
// CPU float64 run; it returns the run too (nil if it failed).
func (c *Case) compareRun(t testing.TB, where string, dev device.Device, vals [][]float64, g []float64, want *run, bwdSoFar Status) (fwd, bwd Status, got *run) {
	t.Helper()
	got, _, err := c.eval(dev, device.Float32, vals, g)
	if err != nil {
		t.Errorf("%s %s: %s: %v", c.Op.Name, c.Case.Name, where, err)
		return Fail, Fail, nil
	}
	rtol, atol := c.RTol, c.ATol
	if rtol == 0 {
		rtol = RTol
	}
	if atol == 0 {
		atol = ATol
	}
	// A float32 result is compared with the float64 one rounded to
	// float32, so that overflow to ±Inf counts as agreement.
	fwd = Pass
	if !slices.Equal(got.outShape, want.outShape) {
		t.Errorf("%s %s: %s: output shape %v; cpu float64 gives %v", c.Op.Name, c.Case.Name, where, got.outShape, want.outShape)
		fwd = Fail
	} else if !Close(t, fmt.Sprintf("%s %s: %s forward", c.Op.Name, c.Case.Name, where), got.out, want.out32, rtol, atol) {
		fwd = Fail
	}
	if c.Op.Backward == nil {
		return fwd, NotApplicable, got
	}
	bwd = Pass
	if bwdSoFar == Fail || !c.gradShapesOK(t, where, got) {
		bwd = Fail
	}
	for i := range c.Inputs {
		if c.Inputs[i].Int || c.Inputs[i].NoGrad || bwd == Fail {
			continue
		}
		if !Close(t, fmt.Sprintf("%s %s: %s gradient %d", c.Op.Name, c.Case.Name, where, i), got.grads[i], want.grads32[i], rtol, atol) {
			bwd = Fail
		}
	}
	return fwd, bwd, got
}
