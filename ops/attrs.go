package ops

import (
	"fmt"

	"github.com/extensor/extensor/tensor"
)

// Attrs are an op's arguments other than tensors: a value of the op's own
// attribute type (ClipAttrs for clip; each entry's Doc and autograd
// function say which), or nil for an op that has none, or to take its
// type's zero value (not PyTorch's defaults: elu's nil is alpha 0; the
// ops' functions and autograd's name every argument). An op given
// attributes of another type, or any where it takes none, panics with
// ErrArgument naming the types. Only the types of this package are Attrs.
type Attrs interface{ isAttrs() }

// The attribute types that several groups of ops share; the others
// are beside their ops.
type (
	// AxisAttrs name one axis (negative counts from the end): softmax,
	// log_softmax, concat, stack, unsqueeze, index_select, gather,
	// scatter_add.
	AxisAttrs struct{ Axis int }
	// ReduceAttrs are a reduction's axes (nil: every axis) and whether
	// the reduced axes stay with size 1: sum, mean, max, min, logsumexp.
	ReduceAttrs struct {
		Axes     []int
		Keepdims bool
	}
	// LossAttrs are a loss's reduction: mse, bce, bce_with_logits.
	LossAttrs struct{ Reduction Reduction }
	// ShapeAttrs are a target shape: reshape, broadcast_to, sum_to,
	// adaptive_avg_pool2d's output size.
	ShapeAttrs struct{ Shape []int }
)

func (AxisAttrs) isAttrs()   {}
func (ReduceAttrs) isAttrs() {}
func (LossAttrs) isAttrs()   {}
func (ShapeAttrs) isAttrs()  {}
func (Window) isAttrs()      {}
func (Backprop) isAttrs()    {}

// Backprop is what a tape hands an op's Backward as its attributes: the
// op's own, which inputs need a gradient (nil: all; ops whose gradients
// cost a kernel of their own, matmul, linear and conv2d, skip the others
// and return nil for them) and what the op's Save kept (nil: Backward
// computes it again).
type Backprop struct {
	Attrs Attrs
	Need  []bool
	Saved *Saved
}

// backprop returns a's Backprop, or one holding a alone.
func backprop(a Attrs) Backprop {
	if b, ok := a.(Backprop); ok {
		return b
	}
	return Backprop{Attrs: a}
}

// needs reports whether input i needs a gradient.
func (b Backprop) needs(i int) bool { return b.Need == nil || i >= len(b.Need) || b.Need[i] }

// attrsAs returns a, or the op's attributes within a Backprop, as the
// op's type A: its zero value for nil; another type panics.
func attrsAs[A Attrs](a Attrs) A {
	if b, ok := a.(Backprop); ok {
		a = b.Attrs
	}
	var zero A
	if a == nil {
		return zero
	}
	v, ok := a.(A)
	if !ok {
		panic(&tensor.Error{Op: "ops.Attrs", Kind: tensor.ErrArgument, Msg: fmt.Sprintf("attributes of type %T; want %T", a, zero)})
	}
	return v
}

// noAttrs panics unless a, or the attributes within a Backprop, is nil:
// the check of the ops that take no attributes.
func noAttrs(a Attrs) {
	if b, ok := a.(Backprop); ok {
		a = b.Attrs
	}
	if a != nil {
		panic(&tensor.Error{Op: "ops.Attrs", Kind: tensor.ErrArgument, Msg: fmt.Sprintf("attributes of type %T; the op takes none", a)})
	}
}

// fwd adapts a forward function of the op's attribute type A to the
// table's.
func fwd[A Attrs](f func(in []*T, a A) *T) func([]*T, Attrs) *T {
	return func(in []*T, a Attrs) *T { return f(in, attrsAs[A](a)) }
}

// bwd adapts a backward function of the op's attribute type A to the
// table's.
func bwd[A Attrs](f func(in []*T, g *T, a A) []*T) func([]*T, *T, Attrs) []*T {
	return func(in []*T, g *T, a Attrs) []*T { return f(in, g, attrsAs[A](a)) }
}

// rule adapts a Rule of the op's attribute type A to the table's.
func rule[A Attrs](f func(b Builder, in []Value, out, g Value, a A) []Value) Rule {
	return func(b Builder, in []Value, out, g Value, a Attrs) []Value { return f(b, in, out, g, attrsAs[A](a)) }
}
