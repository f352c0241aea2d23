package ops

import (
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
	const name = "ops.Step"
	dev := operands32(name, append([]*tensor.Tensor{param, grad}, state...)...)
	floats32(name, append([]*tensor.Tensor{param, grad}, state...)...)
	for i, t := range append([]*tensor.Tensor{grad}, state...) {
		sameShape(name, map[bool]string{true: "gradient", false: "state"}[i == 0], t, param.Shape())
		if t.Buffer() != nil && t.Buffer() == param.Buffer() {
			tensor.Panicf(name, tensor.ErrArgument, "operand %d shares the parameter's memory", i+1)
		}
	}
	checkStep(name, op, h)
	if n := StateLen(op, h); len(state) != n {
		tensor.Panicf(name, tensor.ErrArgument, "%d state tensors; this step needs %d", len(state), n)
	}
	for _, t := range append([]*tensor.Tensor{grad}, state...) {
		if err := t.Err(); err != nil {
			param.SetErr(err)
		}
	}
	if param.Err() != nil {
		return
	}
	bufs := make([]device.Buffer, len(state))
	for i, t := range state {
		bufs[i] = t.Buffer()
	}
	dev.Step(op, param.Buffer(), grad.Buffer(), bufs, h)
	keep(param, grad)
	keep(state...)
}

func checkStep(name string, op device.Optimizer, h device.StepParams) {
	bad := func(what string, v float64) {
		tensor.Panicf(name, tensor.ErrArgument, "%s %v; want a finite value in range", what, v)
	}
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	switch {
	case !(h.LR >= 0) || !finite(h.LR):
		bad("learning rate", h.LR)
	case !(h.WeightDecay >= 0) || !finite(h.WeightDecay):
		bad("weight decay", h.WeightDecay)
	}
	switch op {
	case device.SGD:
		if !(h.Momentum >= 0) || !finite(h.Momentum) {
			bad("momentum", h.Momentum)
		}
		if h.Nesterov && (h.Momentum == 0 || h.Dampening != 0) {
			tensor.Panicf(name, tensor.ErrArgument, "Nesterov momentum needs momentum > 0 and no dampening")
		}
	case device.Adam:
		switch {
		case !(h.Beta1 >= 0 && h.Beta1 < 1):
			bad("β1", h.Beta1)
		case !(h.Beta2 >= 0 && h.Beta2 < 1):
			bad("β2", h.Beta2)
		case !(h.Eps >= 0) || !finite(h.Eps):
			bad("ε", h.Eps)
		case h.T < 1:
			tensor.Panicf(name, tensor.ErrArgument, "step number %d; want ≥ 1", h.T)
		}
	default:
		tensor.Panicf(name, tensor.ErrArgument, "unknown optimiser %d", op)
	}
}
