package autograd

import (
	"fmt"

	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/tensor"
)

// Shape returns the shape of the variable's value.
func (v *Var) Shape() []int { v.notNil("autograd.Var.Shape"); return v.t.Shape() }

// Grad returns the gradients of y, a 0-D variable, with respect to each
// variable of wrt, as torch.autograd.grad does; it leaves Grad alone and
// keeps the graph (it releases nothing). With create, the computation of
// the gradients is itself recorded, through the ops' Grad rules, so the
// gradients are variables that can be differentiated again: a
// Hessian-vector product H·v is Grad of Sum(Mul(Grad(y, x, true), v)).
// An op without a rule is an error when create is set, as is a variable of
// wrt that y does not depend on.
func Grad(y *Var, wrt []*Var, create bool) ([]*Var, error) {
	y.notNil("autograd.Grad")
	if y.t.Rank() != 0 {
		return nil, fmt.Errorf("autograd: Grad of a tensor of shape %v; want a 0-D value", y.t.Shape())
	}
	one, err := tensor.Scalar(y.t.Device(), y.t.DType(), 1)
	if err != nil {
		return nil, err
	}
	return GradWith(y, Leaf(tensor.Join(one, y.t), false), wrt, create)
}

// GradWith is Grad with the upstream gradient g (shaped like y), for a y
// of any shape.
func GradWith(y, g *Var, wrt []*Var, create bool) (gs []*Var, err error) {
	y.notNil("autograd.GradWith")
	g.notNil("autograd.GradWith")
	if !y.requires {
		return nil, fmt.Errorf("autograd: Grad of a variable that requires no gradient")
	}
	order, err := topo(y)
	if err != nil {
		return nil, err
	}
	grads := map[*Var]*Var{y: g}
	err = reverse(order, grads, func(x, gx *Var) {
		for k, gy := range inputGrads(x, gx, create) {
			in := x.node.in[k]
			if gy == nil || !in.requires {
				continue
			}
			if prev, ok := grads[in]; ok {
				gy = ops.Add(prev, gy)
			}
			grads[in] = gy
		}
	})
	if err != nil {
		return nil, err
	}
	gs = make([]*Var, len(wrt))
	for i, w := range wrt {
		if gs[i] = grads[w]; gs[i] == nil {
			return nil, fmt.Errorf("autograd: Grad with respect to variable %d (shape %v), which the output does not depend on", i, w.Shape())
		}
	}
	return gs, nil
}

// inputGrads differentiates x's op given x's gradient gx: by its Backward
// on tensors, or (create) by recording its Grad rule.
func inputGrads(x, gx *Var, create bool) []*Var {
	n := x.node
	if !create {
		var gs []*Var
		for _, t := range n.backward(gx.t) {
			var v *Var
			if t != nil {
				v = Leaf(t, false)
			}
			gs = append(gs, v)
		}
		return gs
	}
	if n.op.Grad == nil {
		tensor.Panicf("autograd.Grad", tensor.ErrArgument, "op %q has no gradient rule: its gradient cannot be differentiated (create)", n.op.Name)
	}
	in := make([]ops.Value, len(n.in))
	for k, y := range n.in {
		in[k] = y
	}
	var gs []*Var
	for _, v := range n.op.Grad(tape{}, in, x, gx, n.attrs) {
		var g *Var
		if v != nil {
			g = v.(*Var)
		}
		gs = append(gs, g)
	}
	return gs
}

// tape is the ops.Builder that records a rule's ops on the tape.
type tape struct{}

func (tape) Apply(op *ops.Op, a ops.Attrs, in ...ops.Value) ops.Value {
	vs := make([]*Var, len(in))
	for i, v := range in {
		vs[i] = v.(*Var)
	}
	return Apply(op, a, vs...)
}

func (tape) Const(t *tensor.Tensor) ops.Value { return Leaf(t, false) }

func (tape) Tensor(v ops.Value) *tensor.Tensor { return v.(*Var).t }

// reverse calls visit, inside tensor.Maybe, on each variable of order that
// has a gradient in grads, from last to first.
func reverse[G any](order []*Var, grads map[*Var]G, visit func(x *Var, g G)) error {
	return tensor.Maybe(func() {
		for i := len(order) - 1; i >= 0; i-- {
			if g, ok := grads[order[i]]; ok {
				visit(order[i], g)
			}
		}
	})
}

// Builder returns the tape as an ops.Builder: the op functions (ops.Add,
// ops.Linear, ...) given variables apply themselves through it, so they
// run and are recorded by Apply.
func (*Var) Builder() ops.Builder { return tape{} }
