package optim

import (
	"math"

	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/tensor"
)

// Scaler is dynamic loss scaling for mixed-precision training, as
// PyTorch's GradScaler: float16 activations and gradients underflow
// where float32 ones would not, so the loss is multiplied by Scale before
// backward and the (float32) gradients of the master weights are divided
// by it before the optimiser's step. When a gradient is Inf or NaN (the
// scale was too large), the step is skipped and the scale multiplied by
// Backoff; after Interval good steps in a row it is multiplied by Growth.
//
// A mixed-precision step: cast the batch to float16 (the nn layers then
// compute with float16 copies of their float32 parameters), cast the
// logits back to float32 for the loss, then
//
//	s.ScaleLoss(loss).Backward()
//	s.Step(opt)
//	opt.ZeroGrad()
type Scaler struct {
	Scale    float64 // the loss scale
	Growth   float64 // the factor after Interval good steps
	Backoff  float64 // the factor after a step with Inf or NaN gradients
	Interval int     // good steps in a row before growing
	good     int     // good steps since the last change
	skipped  int     // steps skipped
}

// NewScaler returns a scaler with PyTorch's defaults: scale 65536,
// growth 2 every 2000 good steps, backoff 0.5.
func NewScaler() *Scaler {
	return &Scaler{Scale: 65536, Growth: 2, Backoff: 0.5, Interval: 2000}
}

// check panics unless the scaler's settings can work.
func (s *Scaler) check(op string) {
	switch {
	case !(s.Scale > 0) || math.IsInf(s.Scale, 0):
		tensor.Panicf(op, tensor.ErrArgument, "loss scale %v; want a positive finite scale", s.Scale)
	case !(s.Growth >= 1) || math.IsInf(s.Growth, 0):
		tensor.Panicf(op, tensor.ErrArgument, "growth factor %v; want a finite factor ≥ 1", s.Growth)
	case !(s.Backoff > 0 && s.Backoff < 1):
		tensor.Panicf(op, tensor.ErrArgument, "backoff factor %v; want 0 < backoff < 1", s.Backoff)
	case s.Interval < 1:
		tensor.Panicf(op, tensor.ErrArgument, "growth interval %d; want at least 1", s.Interval)
	}
}

// ScaleLoss returns loss·Scale, to call Backward on.
func (s *Scaler) ScaleLoss(loss *autograd.Var) *autograd.Var {
	const op = "optim.Scaler.ScaleLoss"
	s.check(op)
	v := loss.Value()
	k, err := tensor.Scalar(v.Device(), v.DType(), s.Scale)
	if err != nil {
		k = tensor.Failed(v.Device(), v.DType(), err)
	}
	return ops.Mul(loss, autograd.Temp(k))
}

// Skipped returns how many steps Step has skipped.
func (s *Scaler) Skipped() int { return s.skipped }

// Step steps o on the unscaled gradients of its parameters, or skips the
// step when any gradient is Inf or NaN; then it adjusts the scale, and
// reports whether it stepped. Finding an Inf or NaN reads one number back
// from the device (the sum of every gradient), not one per tensor. A
// runtime failure of the device is returned, the step skipped.
func (s *Scaler) Step(o *Optimizer) (bool, error) {
	const op = "optim.Scaler.Step"
	s.check(op)
	var total *tensor.Tensor
	for _, p := range o.params {
		g := p.Grad()
		if g == nil {
			continue
		}
		sum := ops.Sum(g)
		if total == nil {
			total = sum
			continue
		}
		t := ops.Add(total, sum)
		total.Release()
		sum.Release()
		total = t
	}
	if total == nil { // no gradients: nothing to step
		return false, nil
	}
	v, err := total.Float64s()
	total.Release()
	if err != nil {
		return false, err
	}
	if math.IsNaN(v[0]) || math.IsInf(v[0], 0) {
		s.skipped++
		s.good = 0
		s.Scale *= s.Backoff
		return false, nil
	}
	for _, p := range o.params {
		p.ScaleGrad(1 / s.Scale)
	}
	o.Step()
	s.good++
	if s.good >= s.Interval {
		s.good = 0
		s.Scale *= s.Growth
	}
	return true, nil
}
