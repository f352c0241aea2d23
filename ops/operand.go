package ops

import (
	"fmt"

	"github.com/extensor/extensor/tensor"
)

// Operand constrains the values the op functions take and return: a
// *tensor.Tensor, computed at once, or a value that records its ops for
// differentiation (a Recorded one: package autograd's *Var), computed at
// once and recorded. E is the type V points to; Go infers both from the
// arguments, so a call reads ops.Add(a, b) either way. A call's values are
// all tensors or all variables; nil stands for an optional input left out
// (Linear's bias, say).
type Operand[E any] interface {
	*E
	Value
}

// A Recorded value is one whose ops are recorded as they run: package
// autograd's *Var. The op functions apply themselves to recorded values
// through the Builder its Builder method returns, so one set of functions
// serves tensors and the tape.
type Recorded interface {
	Value
	Builder() Builder
}

// call applies op, with attributes a, to the inputs: on tensors through
// op.Forward, on recorded values through their Builder. in may end in nil
// inputs, optional ones left out (dropped here, as the table's functions
// expect), but a nil input before one given is an error naming what.
func call[V Operand[E], E any](op *Op, a Attrs, in ...V) V {
	var zero V
	switch z := any(zero).(type) {
	case *tensor.Tensor:
		return any(op.Forward(tensors(in), a)).(V)
	case Recorded:
		vs := make([]Value, len(in))
		for i, v := range in {
			vs[i] = v
		}
		return z.Builder().Apply(op, a, vs...).(V)
	}
	panic(&tensor.Error{Op: "ops." + op.Name, Kind: tensor.ErrArgument,
		Msg: fmt.Sprintf("values of type %T; want *tensor.Tensor or a recorded value (*autograd.Var)", zero)})
}

// callWith is call whose tensors go to f rather than op.Forward: an
// exported function that is the table's op under its own checks and name
// (SoftmaxCrossEntropy is cross_entropy with int32 labels and the mean).
func callWith[V Operand[E], E any](op *Op, a Attrs, f func(in []*T) *T, in ...V) V {
	var zero V
	if _, ok := any(zero).(*T); ok {
		return any(f(tensors(in))).(V)
	}
	return call(op, a, in...)
}

// tensors returns in, values of type *tensor.Tensor, as tensors.
func tensors[V Operand[E], E any](in []V) []*T {
	ts := make([]*T, len(in))
	for i, v := range in {
		ts[i] = any(v).(*T)
	}
	return ts
}

// inputs returns the inputs req followed by the optional ones opt up to
// the last given: the table's functions take an optional input left out
// as absent (Linear's bias). A nil optional input before one given
// panics, naming fn: a norm's bias without its weight, say.
func inputs[V Operand[E], E any](fn string, req []V, opt ...V) []V {
	n := len(opt)
	for n > 0 && opt[n-1] == nil {
		n--
	}
	for i := range n {
		if opt[i] == nil {
			tensor.Panicf(fn, tensor.ErrArgument, "optional input %d is nil but input %d is given (a bias without a weight, say: pass a weight of ones)", len(req)+i, len(req)+n-1)
		}
	}
	return append(req, opt[:n]...)
}
