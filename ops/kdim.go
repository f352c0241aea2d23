package ops

import (
	"slices"

	"github.com/extensor/extensor/tensor"
)

// This file gives cross_entropy and nll PyTorch's K-dimensional form:
// input (N, C, d1, …, dK) with class indices (N, d1, …, dK) or
// probabilities of the input's shape, the loss of each of the N·d1·…·dK
// positions over its C classes (segmentation, sequence models). The
// positions are taken as rows, channels last, of the losses over N×C
// inputs; the per-position losses (NoReduction) come back (N, d1, …, dK).

// classPerm returns the order that moves axis 1 of a rank-r tensor last,
// and its inverse.
func classPerm(rank int) (perm, inverse []int) {
	perm = append([]int{0}, make([]int, 0, rank-1)...)
	for i := 2; i < rank; i++ {
		perm = append(perm, i)
	}
	perm = append(perm, 1)
	inverse = make([]int, rank)
	for i, p := range perm {
		inverse[p] = i
	}
	return perm, inverse
}

// classRows returns a K-dimensional class loss's inputs as rows (the
// input and a probability target permuted channels last and flattened to
// [M, C], class indices flattened to [M]; class weights as they are) and
// the shape of the per-position losses; nil rows for inputs of rank 2 or
// less, which are rows already.
func classRows(op string, in []*T) (rows []*T, lossShape []int) {
	x, t := in[0], in[1]
	if x == nil || t == nil || x.Rank() <= 2 {
		return nil, nil
	}
	xs := x.Shape()
	lossShape = append([]int{xs[0]}, xs[2:]...)
	if t.DType().IsFloat() {
		if !equal(t.Shape(), xs) {
			tensor.Panicf(op, tensor.ErrShape, "input %v, target probabilities %v; want the target of the input's shape", xs, t.Shape())
		}
	} else if !equal(t.Shape(), lossShape) {
		tensor.Panicf(op, tensor.ErrShape, "input %v (N, C, d1, …), target class indices %v; want them %v (N, d1, …)", xs, t.Shape(), lossShape)
	}
	perm, _ := classPerm(x.Rank())
	asRows := func(v *T) *T {
		p := permuteOf(v, perm)
		defer p.Release()
		return p.Reshape(-1, xs[1])
	}
	rows = append([]*T{asRows(x)}, in[2:]...)
	if t.DType().IsFloat() {
		rows = slices.Insert(rows, 1, asRows(t))
	} else {
		rows = slices.Insert(rows, 1, t.Reshape(-1))
	}
	return rows, lossShape
}

// fromRows returns the gradient of rows [M, C] as the K-dimensional
// input of shape xs.
func fromRows(g *T, xs []int) *T {
	if g == nil {
		return nil
	}
	_, inverse := classPerm(len(xs))
	lead := append([]int{xs[0]}, xs[2:]...)
	v := g.Reshape(append(lead, xs[1])...)
	defer v.Release()
	return permuteOf(v, inverse)
}

// kForward computes the class loss f on in, K-dimensional inputs as rows.
func kForward(op string, in []*T, r Reduction, f func(in []*T) *T) *T {
	rows, shape := classRows(op, in)
	if rows == nil {
		return f(in)
	}
	y := f(rows)
	if r != NoReduction {
		return y
	}
	defer y.Release()
	return Clone(y.Reshape(shape...))
}

// kBackward computes the class loss's gradients df on in for the
// upstream gradient g, K-dimensional inputs as rows.
func kBackward(op string, in []*T, g *T, r Reduction, df func(in []*T, g *T) []*T) []*T {
	rows, _ := classRows(op, in)
	if rows == nil {
		return df(in, g)
	}
	if r == NoReduction {
		g = g.Reshape(-1)
	}
	gs := df(rows, g)
	xs := in[0].Shape()
	for i := range min(2, len(gs)) {
		if gs[i] != nil && gs[i].DType().IsFloat() && gs[i].Rank() == 2 {
			rg := gs[i]
			gs[i] = fromRows(rg, xs)
			rg.Release()
		}
	}
	return gs
}

// kRule is rule for K-dimensional inputs: rule over the rows, its
// gradients permuted back.
func kRule(rule Rule) Rule {
	return func(b Builder, in []Value, out, g Value, a Attrs) []Value {
		xs := in[0].Shape()
		if len(xs) <= 2 {
			return rule(b, in, out, g, a)
		}
		r := rb{b}
		perm, inverse := classPerm(len(xs))
		lead := append([]int{xs[0]}, xs[2:]...)
		asRows := func(v Value) Value {
			return r.reshape(r.op(PermuteOp, PermuteAttrs{Perm: perm}, v), []int{-1, xs[1]})
		}
		rows := append([]Value{asRows(in[0])}, in[1:]...)
		probs := b.Tensor(in[1]).DType().IsFloat()
		if probs {
			rows[1] = asRows(in[1])
		} else {
			rows[1] = r.reshape(in[1], []int{-1})
		}
		if attrsAs[CrossEntropyAttrs](a).Reduction == NoReduction {
			g = r.reshape(g, []int{-1})
		}
		gs := rule(b, rows, nil, g, a)
		back := func(v Value) Value {
			return r.op(PermuteOp, PermuteAttrs{Perm: inverse}, r.reshape(v, append(append([]int{}, lead...), xs[1])))
		}
		gs[0] = back(gs[0])
		if probs && len(gs) > 1 && gs[1] != nil {
			gs[1] = back(gs[1])
		}
		return gs
	}
}
