package autograd

import (
	"fmt"
	"slices"

	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/tensor"
)

// Var is a tensor on the tape: a leaf (a parameter or an input) or the
// output of a recorded op. Its gradient accumulates in Grad.
type Var struct {
	t        *tensor.Tensor
	grad     *tensor.Tensor
	requires bool
	keep     bool  // Retain: backward leaves its value alone
	temp     bool  // Temp: backward releases this leaf's value once used
	noGrad   bool  // NoGrad, or computed from such a variable: never recorded
	node     *node // the op that made it; nil for a leaf
	hook     func(*Var)
}

// node is one recorded op: the table entry, its attributes (with the
// inputs that need a gradient) and inputs.
type node struct {
	op    *ops.Op
	attrs ops.Backprop
	in    []*Var
	saved *ops.Saved // what the op's Save kept for its backward
	freed bool       // backward consumed it and released what it held
}

// Leaf returns t as a leaf of the tape; requiresGrad says whether Backward
// computes its gradient (parameters: true; data: false, at no cost).
func Leaf(t *tensor.Tensor, requiresGrad bool) *Var {
	if t == nil {
		tensor.Panicf("autograd.Leaf", tensor.ErrArgument, "nil tensor")
	}
	return &Var{t: t, requires: requiresGrad}
}

// Temp returns t as a leaf that requires no gradient and belongs to the
// graph: Backward releases it once the ops that read it are
// differentiated (a dropout mask, say).
func Temp(t *tensor.Tensor) *Var {
	v := Leaf(t, false)
	v.temp = true
	return v
}

// Value returns the variable's tensor. After Backward has consumed the
// graph, an intermediate's value (an op's result, with or without a
// gradient, that a recorded op read) is released unless Retain was called.
func (v *Var) Value() *tensor.Tensor { v.notNil("autograd.Var.Value"); return v.t }

// notNil panics with ErrArgument, naming op, for a nil variable (a layer
// given nil, say).
func (v *Var) notNil(op string) {
	if v == nil {
		tensor.Panicf(op, tensor.ErrArgument, "nil variable")
	}
}

// Grad returns the gradient accumulated by Backward, or nil.
func (v *Var) Grad() *tensor.Tensor { v.notNil("autograd.Var.Grad"); return v.grad }

// RequiresGrad reports whether Backward computes the variable's gradient.
func (v *Var) RequiresGrad() bool { v.notNil("autograd.Var.RequiresGrad"); return v.requires }

// SetRequiresGrad sets whether Backward computes the gradient of a leaf
// (PyTorch's requires_grad_: freezing a parameter, or thawing it); off,
// it releases the gradient accumulated. On an op's result it panics
// with ErrArgument. It returns v.
func (v *Var) SetRequiresGrad(on bool) *Var {
	v.notNil("autograd.Var.SetRequiresGrad")
	if v.node != nil {
		tensor.Panicf("autograd.Var.SetRequiresGrad", tensor.ErrArgument, "not a leaf: the result of %s", v.node.op.Name)
	}
	v.requires = on
	if !on {
		v.ZeroGrad()
	}
	return v
}

// ZeroGrad releases the accumulated gradient.
func (v *Var) ZeroGrad() {
	v.grad.Release()
	v.grad = nil
}

// SetGrad replaces the accumulated gradient by g, shaped and typed like
// the value (nil: none), releasing the old one; the variable owns g from
// then on. A gradient averaged across processes (package dist) is
// installed so.
func (v *Var) SetGrad(g *tensor.Tensor) {
	v.notNil("autograd.Var.SetGrad")
	if g != nil && (g.DType() != v.t.DType() || !slices.Equal(g.Shape(), v.t.Shape())) {
		tensor.Panicf("autograd.Var.SetGrad", tensor.ErrShape, "gradient %v %v for a value %v %v; want the value's shape and dtype", g.Shape(), g.DType(), v.t.Shape(), v.t.DType())
	}
	if g != v.grad {
		v.grad.Release()
	}
	v.grad = g
}

// SetGradHook sets h, which Backward calls, on the goroutine running it,
// once it has added its pass's gradient to the leaf's Grad: the
// gradient of that pass is then complete, though the pass goes on with
// the ops before it (PyTorch's post-accumulate-grad hook; package dist
// starts reducing gradients so). nil removes it. On an op's result it
// panics with ErrArgument. It returns v.
func (v *Var) SetGradHook(h func(*Var)) *Var {
	v.notNil("autograd.Var.SetGradHook")
	if v.node != nil {
		tensor.Panicf("autograd.Var.SetGradHook", tensor.ErrArgument, "not a leaf: the result of %s", v.node.op.Name)
	}
	v.hook = h
	return v
}

// ScaleGrad multiplies the accumulated gradient, if any, by f (a loss
// scaler's unscaling, say).
func (v *Var) ScaleGrad(f float64) {
	if v.grad == nil {
		return
	}
	k, err := tensor.Scalar(v.grad.Device(), v.grad.DType(), f)
	if err != nil {
		v.grad.SetErr(err)
		return
	}
	g := ops.Mul(v.grad, k)
	k.Release()
	v.grad.Release()
	v.grad = g
}

// Retain keeps the variable's value alive through Backward (an
// intermediate a caller wants to read afterwards). It returns v.
func (v *Var) Retain() *Var {
	v.keep = true
	return v
}

// Detach returns v's value as a leaf that requires no gradient: what is
// computed from it is not recorded.
func (v *Var) Detach() *Var { v.notNil("autograd.Var.Detach"); return &Var{t: v.t} }

// Release releases the variable's value and gradient.
func (v *Var) Release() {
	v.t.Release()
	v.ZeroGrad()
}

// Apply runs op, an entry of the op table (ops.AddOp, say), on the
// inputs, recording it when an input requires a gradient. It panics with
// a *tensor.Error for bad input, as the ops do.
func Apply(op *ops.Op, a ops.Attrs, in ...*Var) *Var {
	if op == nil {
		tensor.Panicf("autograd.Apply", tensor.ErrArgument, "nil op; want an entry of the op table, such as ops.AddOp")
	}
	if _, ok := a.(ops.Backprop); ok {
		tensor.Panicf("autograd.Apply("+op.Name+")", tensor.ErrArgument, "an ops.Backprop; want the op's own attributes (the tape makes the Backprop)")
	}
	defer func() { // attributes of another type: name the op
		if r := recover(); r != nil {
			if e, ok := r.(*tensor.Error); ok && e.Op == "ops.Attrs" {
				panic(&tensor.Error{Op: "autograd.Apply(" + op.Name + ")", Kind: e.Kind, Msg: e.Msg})
			}
			panic(r)
		}
	}()
	ts := make([]*tensor.Tensor, len(in))
	requires, noGrad := false, false
	for i, v := range in {
		if v == nil {
			tensor.Panicf("autograd."+op.Name, tensor.ErrArgument, "input %d is nil", i)
		}
		ts[i] = v.t
		requires = requires || v.requires
		noGrad = noGrad || v.noGrad
	}
	if noGrad {
		return &Var{t: op.Forward(ts, a), noGrad: true}
	}
	if !requires {
		// A result that needs no gradient (a batch cast to float16, say)
		// is the graph's, like a Temp: Backward releases it once the ops
		// that read it are differentiated.
		return &Var{t: op.Forward(ts, a), temp: true}
	}
	// The op may keep what its backward would compute again (Save).
	out := &Var{requires: true}
	var saved *ops.Saved
	if op.Save != nil {
		out.t, saved = op.Save(ts, a)
	} else {
		out.t = op.Forward(ts, a)
	}
	// Backward skips the gradients of inputs that need none.
	need := make([]bool, len(in))
	for i, v := range in {
		need[i] = v.requires
	}
	out.node = &node{op: op, attrs: ops.Backprop{Attrs: a, Need: need}, in: in, saved: saved}
	return out
}

// Backward computes the gradient of v, a 0-D loss, with respect to every
// variable it was computed from that requires one, adding it to their
// Grad (gradients accumulate across calls until ZeroGrad, as in PyTorch).
// It then releases the graph's intermediate values (those not Retained);
// a second Backward through the same graph is an error.
func (v *Var) Backward() error {
	v.notNil("autograd.Var.Backward")
	if v.t.Rank() != 0 {
		return fmt.Errorf("autograd: Backward of a tensor of shape %v; want a 0-D loss, or BackwardWith an upstream gradient", v.t.Shape())
	}
	g, err := tensor.Scalar(v.t.Device(), v.t.DType(), 1)
	if err != nil {
		return err
	}
	defer g.Release()
	return v.BackwardWith(g, false)
}

// BackwardWith is Backward with the upstream gradient g (shaped like v).
// With retain, the graph keeps its intermediate values for another
// backward pass.
func (v *Var) BackwardWith(g *tensor.Tensor, retain bool) (err error) {
	v.notNil("autograd.Var.BackwardWith")
	if !v.requires {
		return fmt.Errorf("autograd: Backward of a variable that requires no gradient")
	}
	order, err := topo(v)
	if err != nil {
		return err
	}
	// How many recorded ops still need each variable's value.
	uses := map[*Var]int{}
	for _, x := range order {
		for _, y := range x.node.in {
			uses[y]++
		}
	}
	grads := map[*Var]*tensor.Tensor{v: g}
	owned := map[*Var]bool{} // gradients this pass made, released once used
	defer func() {
		for x, t := range grads {
			if owned[x] {
				t.Release()
			}
		}
	}()
	return reverse(order, grads, func(x *Var, gx *tensor.Tensor) {
		n := x.node
		gs := n.backward(gx)
		if owned[x] {
			gx.Release()
		}
		delete(grads, x)
		for k, y := range n.in {
			gy := gs[k]
			if gy == nil {
				continue
			}
			if !y.requires {
				gy.Release()
				continue
			}
			if y.node == nil { // a leaf: accumulate into Grad
				if y.grad == nil {
					y.grad = gy
				} else {
					s := ops.Add(y.grad, gy)
					y.grad.Release()
					gy.Release()
					y.grad = s
				}
				continue
			}
			if prev, ok := grads[y]; ok {
				s := ops.Add(prev, gy)
				if owned[y] {
					prev.Release()
				}
				gy.Release()
				gy = s
			}
			grads[y], owned[y] = gy, true
		}
		if !retain {
			n.freed = true
			n.saved.Release()
			n.saved = nil
		}
		for _, y := range n.in {
			if uses[y]--; uses[y] != 0 {
				continue
			}
			if !retain && (y.node != nil || y.temp) && !y.keep && y != v {
				y.t.Release()
			}
			if y.hook != nil && y.requires {
				y.hook(y) // its gradient is complete
			}
		}
	})
}

// backward runs the node's Backward given its output's gradient gx.
func (n *node) backward(gx *tensor.Tensor) []*tensor.Tensor {
	if n.op.Backward == nil {
		tensor.Panicf("autograd.Backward", tensor.ErrArgument, "op %q has no gradient", n.op.Name)
	}
	in := make([]*tensor.Tensor, len(n.in))
	for k, y := range n.in {
		in[k] = y.t
	}
	a := n.attrs
	a.Saved = n.saved
	return n.op.Backward(in, gx, a)
}

// topo returns the recorded variables that v depends on, v last, each
// after its inputs, or an error if the graph was already consumed.
func topo(v *Var) ([]*Var, error) {
	var order []*Var
	seen := map[*Var]bool{}
	var visit func(x *Var) error
	visit = func(x *Var) error {
		if x.node == nil || seen[x] {
			return nil
		}
		if x.node.freed {
			return fmt.Errorf("autograd: Backward through a graph already consumed by an earlier Backward (op %q); pass retain to keep it", x.node.op.Name)
		}
		seen[x] = true
		for _, y := range x.node.in {
			if err := visit(y); err != nil {
				return err
			}
		}
		order = append(order, x)
		return nil
	}
	return order, visit(v)
}
