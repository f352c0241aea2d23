package ops

import (
	"errors"
	"fmt"
	"math"

	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/tensor"
)

// StateLen returns how many state tensors, shaped like the parameter, an
// optimiser step needs: SGD 1 with momentum (else 0), Adam 2 (3 with
// AMSGrad).
func StateLen(op device.Optimizer, h device.StepParams) int {
	if op == device.Adam {
		return 2 + b2i(h.AMSGrad)
	}
	return b2i(h.Momentum != 0)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Step runs one optimiser step on param in place, as PyTorch's
// torch.optim.SGD or Adam/AdamW compute it (see device.Optimizer): one
// fused kernel reads grad and updates param and its state (zeros before
// the first step; StateLen of them, shaped like param). Hyper-parameters
// that cannot work (a negative learning rate, β outside [0, 1), Nesterov
// without momentum, an Adam step number below 1) panic.
func Step(op device.Optimizer, param, grad *tensor.Tensor, state []*tensor.Tensor, h device.StepParams) {
	StepAll(op, []*tensor.Tensor{param}, []*tensor.Tensor{grad}, [][]*tensor.Tensor{state}, h)
}

// StepAll is Step of each of params, with its gradient grads[i] and its
// state state[i], as though they were stepped one after another, as
// PyTorch's multi-tensor (foreach) optimisers: a device steps many
// parameters of one dtype in one kernel (device.Stepper). A parameter
// whose gradient or state failed fails alone.
func StepAll(op device.Optimizer, params, grads []*tensor.Tensor, state [][]*tensor.Tensor, h device.StepParams) {
	name := stepName("ops.Step", len(params))
	if h.Scaling != nil {
		tensor.Panicf(name, tensor.ErrArgument, "hyper-parameters with a loss scaler's state; step with ScaledStep")
	}
	steps(name, op, params, grads, state, h)
}

// stepName is step's name (ops.Step, ops.ScaledStep, ops.Unscale), or
// its list form's for a call of n tensors but one.
func stepName(step string, n int) string {
	if n == 1 {
		return step
	}
	return step + "All"
}

// steps is StepAll and ScaledStepAll, named name.
func steps(name string, op device.Optimizer, params, grads []*tensor.Tensor, state [][]*tensor.Tensor, h device.StepParams) {
	if len(grads) != len(params) || len(state) != len(params) {
		tensor.Panicf(name, tensor.ErrArgument, "%d parameters, %d gradients and %d states; want one of each a parameter", len(params), len(grads), len(state))
	}
	checkStep(name, op, h)
	if op == device.Adam && h.T < 1 {
		tensor.Panicf(name, tensor.ErrArgument, "step number %d; want ≥ 1", h.T)
	}
	// The parameters by device and dtype, in order.
	type key struct {
		dev device.Device
		dt  device.DType
	}
	var keys []key
	groups := map[key][]int{}
	for i := range params {
		what := ""
		if len(params) > 1 {
			what = fmt.Sprintf("parameter %d: ", i)
		}
		checkParam(name, what, op, params[i], grads[i], state[i], h)
		if ok(params[i], grads[i], state[i]) {
			k := key{params[i].Device(), params[i].DType()}
			if groups[k] == nil {
				keys = append(keys, k)
			}
			groups[k] = append(groups[k], i)
		}
	}
	for _, k := range keys {
		idx := groups[k]
		ps, gs, ss := make([]device.Buffer, len(idx)), make([]device.Buffer, len(idx)), make([][]device.Buffer, len(idx))
		for j, i := range idx {
			ps[j], gs[j] = params[i].Buffer(), grads[i].Buffer()
			for _, t := range state[i] {
				ss[j] = append(ss[j], t.Buffer())
			}
		}
		k.dev.Step(op, ps, gs, ss, h)
	}
}

// checkParam panics unless param, grad and state, named what in op
// site name, are a parameter, its gradient and its state for op.
func checkParam(name, what string, op device.Optimizer, param, grad *tensor.Tensor, state []*tensor.Tensor, h device.StepParams) {
	operands32(name, append([]*tensor.Tensor{param, grad}, state...)...)
	floats32(name, append([]*tensor.Tensor{param, grad}, state...)...)
	ops := append([]*tensor.Tensor{grad}, state...)
	for i, t := range ops {
		sameShape(name, what+map[bool]string{true: "gradient", false: "state"}[i == 0], t, param.Shape())
		if t.Buffer() != nil && t.Buffer() == param.Buffer() {
			tensor.Panicf(name, tensor.ErrArgument, "%soperand %d shares the parameter's memory", what, i+1)
		}
		for k, u := range ops[:i] {
			if t.Buffer() != nil && t.Buffer() == u.Buffer() {
				tensor.Panicf(name, tensor.ErrArgument, "%soperands %d and %d share memory", what, k+1, i+1)
			}
		}
	}
	if n := StateLen(op, h); len(state) != n {
		tensor.Panicf(name, tensor.ErrArgument, "%s%d state tensors; this step needs %d", what, len(state), n)
	}
}

// ok reports whether param may be stepped: it fails with the first
// failure of its gradient or state, else it is stepped unless it failed.
func ok(param, grad *tensor.Tensor, state []*tensor.Tensor) bool {
	for _, t := range append([]*tensor.Tensor{grad}, state...) {
		if err := t.Err(); err != nil {
			param.SetErr(err)
		}
	}
	return param.Err() == nil
}

// ScaledStep is Step under dynamic loss scaling (package optim's
// Scaler): scaling is the scaler's state (device.ScaleStateLen elements
// of param's dtype) and skipped the optimiser's count of the steps it
// skipped (one element, zero at first; UpdateScale counts them). The
// step leaves param and its state as they are where the state's
// ScaleFound is set, and counts its step number without the steps
// skipped (device.StepParams.Scaling). Nothing is read back to the host.
func ScaledStep(op device.Optimizer, param, grad *tensor.Tensor, state []*tensor.Tensor, h device.StepParams, scaling, skipped *tensor.Tensor) {
	ScaledStepAll(op, []*tensor.Tensor{param}, []*tensor.Tensor{grad}, [][]*tensor.Tensor{state}, h, scaling, skipped)
}

// ScaledStepAll is ScaledStep of each of params, as StepAll steps them.
func ScaledStepAll(op device.Optimizer, params, grads []*tensor.Tensor, state [][]*tensor.Tensor, h device.StepParams, scaling, skipped *tensor.Tensor) {
	name := stepName("ops.ScaledStep", len(params))
	operands32(name, scaling, skipped)
	for _, p := range params {
		scalerState(name, p, scaling)
		counter(name, p, skipped)
	}
	if err := errors.Join(scaling.Err(), skipped.Err()); err != nil {
		for _, p := range params {
			p.SetErr(err)
		}
		return
	}
	h.Scaling, h.Skipped = scaling.Buffer(), skipped.Buffer()
	steps(name, op, params, grads, state, h)
}

// counter panics unless c is a count of skipped steps beside t: one
// element, on t's device, of its dtype.
func counter(name string, t, c *tensor.Tensor) {
	operands32(name, t, c)
	floats32(name, t, c)
	single(name, "the count of skipped steps", c)
}

// single panics unless t, named what, has one element.
func single(name, what string, t *tensor.Tensor) {
	if t.Len() != 1 {
		tensor.Panicf(name, tensor.ErrShape, "%s has shape %v; want one element", what, t.Shape())
	}
}

// scalerState panics unless state is a loss scaler's state beside t: on
// its device, of its dtype, with device.ScaleStateLen elements.
func scalerState(name string, t, state *tensor.Tensor) {
	operands32(name, t, state)
	floats32(name, t, state)
	sameShape(name, "the scaler's state", state, []int{device.ScaleStateLen})
}

// Unscale divides grad in place by scale (a tensor of one element) and
// sets state's ScaleFound to 1 where a result is Inf or NaN, on the
// device, as PyTorch's GradScaler.unscale_: state is a loss scaler's
// (device.ScaleStateLen elements, zeros at first); all three share a
// device and a float dtype.
func Unscale(grad, scale, state *tensor.Tensor) {
	UnscaleAll([]*tensor.Tensor{grad}, scale, state)
}

// UnscaleAll is Unscale of each of grads, in order, as PyTorch's
// _amp_foreach_non_finite_check_and_unscale_: a device unscales many
// gradients in one kernel (device.Stepper). A failed gradient fails the
// state, and the gradients after it.
func UnscaleAll(grads []*tensor.Tensor, scale, state *tensor.Tensor) {
	name := stepName("ops.Unscale", len(grads))
	operands32(name, scale, state)
	for _, grad := range grads {
		scalerState(name, grad, state)
		floats32(name, grad, scale)
		single(name, "scale", scale)
		operands32(name, grad, scale)
	}
	err := errors.Join(scale.Err(), state.Err())
	var bufs []device.Buffer
	for _, grad := range grads {
		if err == nil {
			err = grad.Err()
		}
		if err != nil {
			grad.SetErr(err)
			continue
		}
		bufs = append(bufs, grad.Buffer())
	}
	if len(bufs) > 0 {
		scale.Device().Unscale(bufs, scale.Buffer(), state.Buffer())
	}
	if err != nil {
		state.SetErr(err)
	}
}

// UpdateScale ends a step of dynamic loss scaling on the device, as
// PyTorch's GradScaler.update: after a step whose gradients had an Inf
// or NaN (state's ScaleFound) the scale is multiplied by p.Backoff and
// each of skipped (the stepped optimisers' counts, ScaledStep's) counts
// the skip, else after p.Interval good steps in a row the scale is
// multiplied by p.Growth (device.Stepper). Settings that cannot work, or
// more than device.MaxScaledOptimizers counts, panic.
func UpdateScale(scale, state *tensor.Tensor, skipped []*tensor.Tensor, p device.ScaleParams) {
	const name = "ops.UpdateScale"
	scalerState(name, scale, state)
	single(name, "scale", scale)
	if len(skipped) > device.MaxScaledOptimizers {
		tensor.Panicf(name, tensor.ErrArgument, "%d optimisers; a step of loss scaling takes at most %d", len(skipped), device.MaxScaledOptimizers)
	}
	if err := CheckScaling(name, p); err != nil {
		panic(err)
	}
	errs := []error{scale.Err(), state.Err()}
	counts := make([]device.Buffer, len(skipped))
	for i, c := range skipped {
		counter(name, scale, c)
		errs = append(errs, c.Err())
		counts[i] = c.Buffer()
	}
	if err := errors.Join(errs...); err != nil {
		scale.SetErr(err)
		state.SetErr(err)
		return
	}
	scale.Device().UpdateScale(scale.Buffer(), state.Buffer(), counts, p)
}

// CheckScaling returns a *tensor.Error of kind ErrArgument, naming op
// site name, when the settings of dynamic loss scaling cannot work (a
// growth factor below 1 or not finite, a backoff factor outside (0, 1),
// an interval outside [1, 2²⁴], the range the device's count keeps
// exactly).
func CheckScaling(name string, p device.ScaleParams) error {
	switch {
	case !(p.Growth >= 1) || math.IsInf(p.Growth, 0):
		return &tensor.Error{Op: name, Kind: tensor.ErrArgument, Msg: fmt.Sprintf("growth factor %v; want a finite factor ≥ 1", p.Growth)}
	case !(p.Backoff > 0 && p.Backoff < 1):
		return &tensor.Error{Op: name, Kind: tensor.ErrArgument, Msg: fmt.Sprintf("backoff factor %v; want 0 < backoff < 1", p.Backoff)}
	case p.Interval < 1 || p.Interval > 1<<24:
		return &tensor.Error{Op: name, Kind: tensor.ErrArgument, Msg: fmt.Sprintf("growth interval %d; want 1 to 2²⁴", p.Interval)}
	}
	return nil
}

func checkStep(name string, op device.Optimizer, h device.StepParams) {
	if err := CheckHyper(name, op, h); err != nil {
		panic(err)
	}
}

// CheckHyper returns a *tensor.Error of kind ErrArgument, naming op site
// name, when the hyper-parameters h cannot work for optimiser op (a
// negative or non-finite learning rate, β outside [0, 1), Nesterov
// without momentum, an Adam step number below 1 once h.T is set), and
// nil when they can. Step panics with it; package optim checks its
// optimisers' settings with it when they are made.
func CheckHyper(name string, op device.Optimizer, h device.StepParams) error {
	bad := func(what string, v float64) error {
		return &tensor.Error{Op: name, Kind: tensor.ErrArgument, Msg: fmt.Sprintf("%s %v; want a finite value in range", what, v)}
	}
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	switch {
	case !(h.LR >= 0) || !finite(h.LR):
		return bad("learning rate", h.LR)
	case !(h.WeightDecay >= 0) || !finite(h.WeightDecay):
		return bad("weight decay", h.WeightDecay)
	}
	switch op {
	case device.SGD:
		if !(h.Momentum >= 0) || !finite(h.Momentum) {
			return bad("momentum", h.Momentum)
		}
		if !finite(h.Dampening) {
			return bad("dampening", h.Dampening)
		}
		if h.Nesterov && (h.Momentum == 0 || h.Dampening != 0) {
			return &tensor.Error{Op: name, Kind: tensor.ErrArgument, Msg: "Nesterov momentum needs momentum > 0 and no dampening"}
		}
	case device.Adam:
		switch {
		case !(h.Beta1 >= 0 && h.Beta1 < 1):
			return bad("β1", h.Beta1)
		case !(h.Beta2 >= 0 && h.Beta2 < 1):
			return bad("β2", h.Beta2)
		case !(h.Eps >= 0) || !finite(h.Eps):
			return bad("ε", h.Eps)
		case h.T < 0:
			return &tensor.Error{Op: name, Kind: tensor.ErrArgument, Msg: fmt.Sprintf("step number %d; want ≥ 1", h.T)}
		}
	default:
		return &tensor.Error{Op: name, Kind: tensor.ErrArgument, Msg: fmt.Sprintf("unknown optimiser %d", op)}
	}
	return nil
}
