// Package optim holds the optimisers that train autograd variables: SGD
// (momentum, dampening, Nesterov, weight decay), Adam and AdamW
// (bias-corrected, AMSGrad optional), as PyTorch's torch.optim computes
// them, and learning-rate schedules. Each step runs fused WGSL kernels
// (ops.StepAll), each stepping a group of parameters of one dtype,
// reading the parameters, their gradients and their state and writing
// them in place; the state lives on the parameter's device. Scaler adds dynamic loss scaling for
// mixed-precision training.
package optim

import (
	"fmt"
	"math"
	"slices"
	"unicode/utf8"

	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/tensor"
)

// Optimizer updates parameters from their gradients.
type Optimizer struct {
	params []*autograd.Var
	kind   device.Optimizer
	// Hyper are the hyper-parameters; LR may be changed between steps
	// (Schedule does).
	Hyper device.StepParams
	state [][]*tensor.Tensor
	steps int
	// skipped counts, on the device, the steps a Scaler skipped (made at
	// the first scaled step); offset is the count of skipped steps read
	// back when a plain step or Release ended the scaled ones.
	skipped *tensor.Tensor
	offset  int
}

// SGD returns PyTorch's SGD over params with learning rate lr and the
// momentum, dampening, Nesterov flag and weight decay of h (h.LR is set
// to lr).
func SGD(params []*autograd.Var, lr float64, h device.StepParams) *Optimizer {
	h.LR = lr
	return newOptimizer(params, device.SGD, h)
}

// Adam returns PyTorch's Adam over params with learning rate lr and its
// defaults β = (0.9, 0.999), ε = 1e-8, no weight decay.
func Adam(params []*autograd.Var, lr float64) *Optimizer {
	return newOptimizer(params, device.Adam, device.StepParams{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8})
}

// AdamW returns PyTorch's AdamW: Adam with weight decay wd decoupled from
// the gradient (PyTorch's default wd is 0.01).
func AdamW(params []*autograd.Var, lr, wd float64) *Optimizer {
	return newOptimizer(params, device.Adam, device.StepParams{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: wd, Decoupled: true})
}

func newOptimizer(params []*autograd.Var, kind device.Optimizer, h device.StepParams) *Optimizer {
	if err := ops.CheckHyper("optim", kind, h); err != nil {
		panic(err)
	}
	for i, p := range params {
		if p == nil || !p.RequiresGrad() {
			tensor.Panicf("optim", tensor.ErrArgument, "parameter %d requires no gradient; want leaves made with autograd.Leaf(t, true)", i)
		}
	}
	return &Optimizer{params: params, kind: kind, Hyper: h, state: make([][]*tensor.Tensor, len(params))}
}

// Params returns the parameters.
func (o *Optimizer) Params() []*autograd.Var { return o.params }

// Steps returns the number of steps attempted: under a Scaler, the steps
// it skipped on the device included (their count stays on the device,
// and Adam's bias corrections and SGD's first step leave them out).
func (o *Optimizer) Steps() int { return o.steps }

// Step updates every parameter that has a gradient, in one call of
// ops.StepAll (a kernel a group of parameters on WebGPU). The
// state is created (zeros) at the first step that needs it. A parameter
// on another device than its state or gradient panics, naming both.
func (o *Optimizer) Step() { o.step(nil) }

// step is Step, under loss scaling when scaling (a Scaler's state) is
// not nil.
func (o *Optimizer) step(scaling *tensor.Tensor) {
	switch {
	case scaling == nil:
		o.foldSkipped()
	case o.skipped == nil:
		z, err := tensor.Zeros(scaling.Device(), scaling.DType(), 1)
		if err != nil {
			scaling.SetErr(err)
			return
		}
		o.skipped = z
	}
	o.steps++
	h := o.Hyper
	h.T = o.steps - o.offset
	h.FirstStep = h.T == 1
	var ws, gs []*tensor.Tensor
	var st [][]*tensor.Tensor
	for i, p := range o.params {
		g := p.Grad()
		if g == nil {
			continue
		}
		w := p.Value()
		if o.state[i] == nil {
			if err := o.newState(i, w, h); err != nil {
				w.SetErr(err) // this parameter fails; the others step
				continue
			}
		}
		ws, gs, st = append(ws, w), append(gs, g), append(st, o.state[i])
	}
	if len(ws) == 0 {
		return
	}
	if scaling != nil {
		ops.ScaledStepAll(o.kind, ws, gs, st, h, scaling, o.skipped)
	} else {
		ops.StepAll(o.kind, ws, gs, st, h)
	}
}

// newState makes the state of parameter i, of value w: zeros, or none
// and an error.
func (o *Optimizer) newState(i int, w *tensor.Tensor, h device.StepParams) error {
	st := make([]*tensor.Tensor, ops.StateLen(o.kind, h))
	for k := range st {
		z, err := tensor.Zeros(w.Device(), w.DType(), w.Shape()...)
		if err != nil {
			for _, t := range st[:k] {
				t.Release()
			}
			return err
		}
		st[k] = z
	}
	o.state[i] = st
	return nil
}

// ZeroGrad releases every parameter's gradient.
func (o *Optimizer) ZeroGrad() {
	for _, p := range o.params {
		p.ZeroGrad()
	}
}

// ClipGradNorm scales the gradients of params in place so that their
// global L2 norm is at most maxNorm, as PyTorch's
// torch.nn.utils.clip_grad_norm_(parameters, max_norm), skipping
// parameters without a gradient, and returns the norm before clipping as
// a 0-D tensor on the device (ops.ClipGradNorm, which panics with
// tensor.ErrArgument where no parameter has a gradient).
func ClipGradNorm(params []*autograd.Var, maxNorm float64) *tensor.Tensor {
	var grads []*tensor.Tensor
	for _, p := range params {
		if g := p.Grad(); g != nil {
			grads = append(grads, g)
		}
	}
	return ops.ClipGradNorm(grads, maxNorm)
}

// State returns the optimiser state of parameter i (nil before its first
// step): SGD's momentum buffer, or Adam's m, v (and vmax).
func (o *Optimizer) State(i int) []*tensor.Tensor { return o.state[i] }

// StateDict returns the optimiser's state by name, for checkpoints: for
// parameter i named names[i], "<name>.<k>" for each of its state tensors
// (SGD: momentum; Adam: m, v, vmax), made (zeros) if no step has made it
// yet. The names must be distinct, not empty, and valid UTF-8 (as a
// checkpoint's). Steps and SetSteps carry the step count.
func (o *Optimizer) StateDict(names []string) (map[string]*tensor.Tensor, error) {
	if len(names) != len(o.params) {
		return nil, fmt.Errorf("optim: StateDict: %d names for %d parameters; want one a parameter", len(names), len(o.params))
	}
	if i := slices.Index(names, ""); i >= 0 {
		return nil, fmt.Errorf("optim: StateDict: parameter %d has no name", i)
	}
	if i := slices.IndexFunc(names, func(n string) bool { return !utf8.ValidString(n) }); i >= 0 {
		return nil, fmt.Errorf("optim: StateDict: parameter %d's name %q is not valid UTF-8 (a checkpoint could not hold it)", i, names[i])
	}
	if d := duplicateName(names); d != "" {
		return nil, fmt.Errorf("optim: StateDict: two parameters named %q", d)
	}
	labels := []string{"momentum"}
	if o.kind == device.Adam {
		labels = []string{"m", "v", "vmax"}
	}
	d := map[string]*tensor.Tensor{}
	for i, p := range o.params {
		if o.state[i] == nil {
			w := p.Value()
			for range ops.StateLen(o.kind, o.Hyper) {
				z, err := tensor.Zeros(w.Device(), w.DType(), w.Shape()...)
				if err != nil {
					return nil, err
				}
				o.state[i] = append(o.state[i], z)
			}
		}
		for k, t := range o.state[i] {
			d[names[i]+"."+labels[k]] = t
		}
	}
	return d, nil
}

// duplicateName returns a name that names holds twice, or "".
func duplicateName(names []string) string {
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			return n
		}
		seen[n] = true
	}
	return ""
}

// MaxSteps bounds the step count that SetSteps takes: 2⁵³, the counts
// that PyTorch's float step counter holds exactly, far from the
// overflow of the next step's number.
const MaxSteps = 1 << 53

// SetSteps sets the number of steps taken (when resuming from a
// checkpoint: Adam's bias correction depends on it), any count of
// skipped steps forgotten. An n outside [0, MaxSteps] panics with
// ErrArgument.
func (o *Optimizer) SetSteps(n int) {
	if n < 0 || n > MaxSteps {
		tensor.Panicf("optim.SetSteps", tensor.ErrArgument, "%d steps; want 0 to %d", n, MaxSteps)
	}
	o.steps, o.offset = n, 0
	if o.skipped != nil {
		o.skipped.Release()
		o.skipped = nil
	}
}

// foldSkipped ends a run of scaled steps: the device's count of skipped
// steps is read back (a wait) into offset and freed. A failed read
// leaves the steps counted as taken.
func (o *Optimizer) foldSkipped() {
	if o.skipped == nil {
		return
	}
	if v, err := o.skipped.Float64s(); err == nil {
		o.offset += int(v[0])
	}
	o.skipped.Release()
	o.skipped = nil
}

// Release frees the optimiser's state.
func (o *Optimizer) Release() {
	o.foldSkipped()
	for _, st := range o.state {
		for _, t := range st {
			t.Release()
		}
	}
	o.state = make([][]*tensor.Tensor, len(o.params))
}

// A Schedule gives the learning rate of a step, from 0.
type Schedule func(step int) float64

// StepLR multiplies base by gamma every size steps (PyTorch's StepLR).
func StepLR(base float64, size int, gamma float64) Schedule {
	return func(step int) float64 { return base * math.Pow(gamma, float64(step/max(size, 1))) }
}

// Cosine anneals from base to min over total steps (PyTorch's
// CosineAnnealingLR), and stays at min after.
func Cosine(base, min float64, total int) Schedule {
	return func(step int) float64 {
		t := math.Min(float64(step), float64(total)) / float64(max(total, 1))
		return min + (base-min)*(1+math.Cos(math.Pi*t))/2
	}
}

// Warmup ramps the rate linearly from 0 (exclusive) over the first steps,
// then follows s.
func Warmup(s Schedule, steps int) Schedule {
	return func(step int) float64 {
		if step < steps {
			return s(step) * float64(step+1) / float64(steps)
		}
		return s(step)
	}
}

// Schedule sets the learning rate for the next step from s.
func (o *Optimizer) Schedule(s Schedule) { o.Hyper.LR = s(o.steps) }
