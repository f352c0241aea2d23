package optim

import (
	"math"
	"slices"

	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/tensor"
)

// Scaler is dynamic loss scaling for mixed-precision training, as
// PyTorch's GradScaler: float16 activations and gradients underflow
// where float32 ones would not, so the loss is multiplied by the scale
// before backward and the (float32) gradients of the master weights are
// divided by it before the optimiser's step. When a gradient is Inf or
// NaN (the scale was too large), the step is skipped and the scale
// multiplied by Backoff; after Interval good steps in a row it is
// multiplied by Growth.
//
// The scale and the check for Inf and NaN live on the device, as in
// PyTorch's fused optimisers: a step reads nothing back, and the host
// records the next step while the device runs this one. Stats reads the
// scale and the count of skipped steps back. Each optimiser counts the
// steps it skipped on the device, and its step numbers leave them out
// (Adam's bias corrections, SGD's first step), as PyTorch's fused
// optimisers do; Optimizer.Steps counts the steps attempted.
//
// A mixed-precision step: cast the batch to float16 (the nn layers then
// compute with float16 copies of their float32 parameters), cast the
// logits back to float32 for the loss, then
//
//	s.ScaleLoss(loss).Backward()
//	s.Step(opt)
//	opt.ZeroGrad()
//
// To clip or inspect the gradients, call s.Unscale(opt) before Step.
type Scaler struct {
	Scale    float64 // the loss scale to start from (PyTorch's init_scale); read before the first step only
	Growth   float64 // the factor after Interval good steps
	Backoff  float64 // the factor after a step with Inf or NaN gradients
	Interval int     // good steps in a row before growing

	scale, state *tensor.Tensor      // on the device: the scale, and device.ScaleFound, ScaleGood, ScaleSkipped
	unscaled     map[*Optimizer]bool // optimisers whose gradients Unscale divided this step
}

// NewScaler returns a scaler with PyTorch's defaults: scale 65536,
// growth 2 every 2000 good steps, backoff 0.5.
func NewScaler() *Scaler {
	return &Scaler{Scale: 65536, Growth: 2, Backoff: 0.5, Interval: 2000}
}

// check panics unless the scaler's settings can work.
func (s *Scaler) check(op string) {
	if s.scale == nil && (!(s.Scale > 0) || math.IsInf(s.Scale, 0)) {
		tensor.Panicf(op, tensor.ErrArgument, "loss scale %v; want a positive finite scale", s.Scale)
	}
	if err := ops.CheckScaling(op, s.params()); err != nil {
		panic(err)
	}
}

func (s *Scaler) params() device.ScaleParams {
	return device.ScaleParams{Growth: s.Growth, Backoff: s.Backoff, Interval: s.Interval}
}

// init creates the device's scale and state from Scale, in dtype dt
// (float32 or float64), at the first use.
func (s *Scaler) init(dev device.Device, dt device.DType) error {
	if s.scale != nil {
		return nil
	}
	scale, err := tensor.Scalar(dev, dt, s.Scale)
	if err != nil {
		return err
	}
	state, err := tensor.Zeros(dev, dt, device.ScaleStateLen)
	if err != nil {
		scale.Release()
		return err
	}
	s.scale, s.state = scale, state
	return nil
}

// ScaleLoss returns loss·scale, to call Backward on.
func (s *Scaler) ScaleLoss(loss *autograd.Var) *autograd.Var {
	const op = "optim.Scaler.ScaleLoss"
	s.check(op)
	v := loss.Value()
	if dt := v.DType(); dt != device.Float32 && dt != device.Float64 {
		tensor.Panicf(op, tensor.ErrDType, "a %v loss; want float32 or float64, the dtype of the master weights' gradients (cast the logits or the loss with ops.Cast)", dt)
	}
	if err := s.init(v.Device(), v.DType()); err != nil {
		return ops.Mul(loss, autograd.Temp(tensor.Failed(v.Device(), v.DType(), err)))
	}
	return ops.Mul(loss, autograd.Leaf(s.scale, false))
}

// Unscale divides the gradients of o's parameters by the scale in
// place, and notes on the device whether any is Inf or NaN, as PyTorch's
// GradScaler.unscale_: call it before clipping or reading the
// gradients; Step then steps without dividing them again.
func (s *Scaler) Unscale(o *Optimizer) {
	const op = "optim.Scaler.Unscale"
	s.check(op)
	if s.unscaled[o] {
		tensor.Panicf(op, tensor.ErrArgument, "the gradients were unscaled already this step")
	}
	var grads []*tensor.Tensor
	for _, p := range o.params {
		g := p.Grad()
		if g == nil {
			continue
		}
		if err := s.init(g.Device(), g.DType()); err != nil {
			g.SetErr(err)
			continue
		}
		grads = append(grads, g)
	}
	if len(grads) > 0 {
		ops.UnscaleAll(grads, s.scale, s.state)
	}
	if s.unscaled == nil {
		s.unscaled = map[*Optimizer]bool{}
	}
	s.unscaled[o] = true
}

// Step steps each optimiser on the unscaled gradients of its
// parameters, steps the device skips where any of their gradients is
// Inf or NaN, then updates the scale once (PyTorch's GradScaler.step for
// each, then update): nothing is read back. Optimisers sharing a loss
// take one Step together, at most device.MaxScaledOptimizers of them
// (more, or one given twice, panics with ErrArgument). It
// returns the error of a runtime failure of the device, if any.
func (s *Scaler) Step(os ...*Optimizer) error {
	const op = "optim.Scaler.Step"
	s.check(op)
	if len(os) > device.MaxScaledOptimizers {
		tensor.Panicf(op, tensor.ErrArgument, "%d optimisers; a step takes at most %d", len(os), device.MaxScaledOptimizers)
	}
	for i, o := range os {
		if o == nil || slices.Contains(os[:i], o) {
			tensor.Panicf(op, tensor.ErrArgument, "optimiser %d is nil or given twice", i)
		}
	}
	for _, o := range os {
		if !s.unscaled[o] {
			s.Unscale(o)
		}
	}
	for _, o := range os {
		delete(s.unscaled, o)
	}
	if s.state == nil { // no gradients: nothing to step
		return nil
	}
	for _, o := range os {
		o.step(s.state)
	}
	counts := make([]*tensor.Tensor, 0, len(os))
	for _, o := range os {
		if o.skipped != nil {
			counts = append(counts, o.skipped)
		}
	}
	ops.UpdateScale(s.scale, s.state, counts, s.params())
	return s.state.Err()
}

// Stats reads back the loss scale and the number of steps skipped so
// far: a wait for the device. Before the first step it returns Scale and
// 0.
func (s *Scaler) Stats() (scale float64, skipped int, err error) {
	if s.scale == nil {
		return s.Scale, 0, nil
	}
	sc, err := s.scale.Float64s()
	if err != nil {
		return 0, 0, err
	}
	st, err := s.state.Float64s()
	if err != nil {
		return 0, 0, err
	}
	return sc[0], int(st[device.ScaleSkipped]), nil
}

// Release frees the scaler's device memory; a later step starts again
// from Scale.
func (s *Scaler) Release() {
	if s.scale != nil {
		s.scale.Release()
		s.state.Release()
		s.scale, s.state = nil, nil
	}
}
