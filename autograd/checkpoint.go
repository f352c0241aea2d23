package autograd

import (
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/tensor"
)

// Checkpoint returns fn(x) without keeping fn's intermediate values
// (gradient checkpointing): the forward pass runs fn unrecorded and keeps
// only its output; Backward runs fn again, recording, and differentiates
// that. Peak memory falls by the intermediates of fn at the cost of a
// second forward pass. The gradients are those of fn(x) itself, bit for
// bit on the CPU; fn must compute the same thing each time it runs (a
// dropout inside it would draw a new mask). Parameters that fn uses
// receive their gradients as usual.
func Checkpoint(fn func(x *Var) *Var, x *Var) *Var {
	fresh := false
	y := tensor.Tidy(func(s *tensor.Scope) *tensor.Tensor {
		out := fn((&Var{t: s.Use(x.t)}).NoGrad()).Value()
		fresh = s.Owns(out)
		return out
	})
	if fresh { // computed here, not a tensor fn returned from elsewhere
		tensor.Join(y, x.t)
	}
	if x.noGrad {
		return &Var{t: y, noGrad: true}
	}
	seg := &ops.Op{Name: "checkpoint", Backward: func(in []*tensor.Tensor, g *tensor.Tensor, _ ops.Attrs) []*tensor.Tensor {
		xv := Leaf(in[0], x.requires)
		out := fn(xv)
		defer out.t.Release()
		if out.noGrad {
			tensor.Panicf("autograd.Checkpoint", tensor.ErrArgument, "fn's result reads a NoGrad variable, so no gradient reaches x or the parameters; Detach what fn captures")
		}
		if out.requires {
			if err := out.BackwardWith(g, false); err != nil {
				tensor.Panicf("autograd.Checkpoint", tensor.ErrArgument, "%v", err)
			}
		}
		return []*tensor.Tensor{xv.grad}
	}}
	// The segment may read parameters that require gradients: record it
	// whatever x requires.
	return &Var{t: y, requires: true, node: &node{op: seg, in: []*Var{x}}}
}
