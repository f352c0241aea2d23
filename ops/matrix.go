package ops

import (
	"github.com/extensor/extensor/tensor"
)

func matrix(op, what string, t *tensor.Tensor) (rows, cols int) {
	if t.Rank() != 2 {
		tensor.Panicf(op, tensor.ErrShape, "%s has shape %v; want a 2-D matrix", what, t.Shape())
	}
	return t.Dim(0), t.Dim(1)
}

// MatMul returns the matrix product a·b of an m×k and a k×n matrix.
func MatMul(a, b *tensor.Tensor) *tensor.Tensor {
	const op = "ops.MatMul"
	dev := operands(op, a, b)
	dt := floats(op, a, b)
	m, k := matrix(op, "a", a)
	k2, n := matrix(op, "b", b)
	if k != k2 {
		tensor.Panicf(op, tensor.ErrShape, "inner dimensions differ: a is %v, b is %v; want a m×k and b k×n", a.Shape(), b.Shape())
	}
	out, ok := output(dev, dt, []int{m, n}, a, b)
	if ok {
		dev.MatMul(out.Buffer(), a.Buffer(), b.Buffer(), m, k, n, false, false)
		keep(out, a, b)
	}
	return out
}

// MatMulBackward returns the gradients of MatMul: ga = g·bᵀ and gb = aᵀ·g,
// for the m×n upstream gradient g.
func MatMulBackward(a, b, g *tensor.Tensor) (ga, gb *tensor.Tensor) {
	return matMulGrad("ops.MatMulBackward", a, b, g, true), matMulGrad("ops.MatMulBackward", a, b, g, false)
}

// MatMulBackwardA returns only the gradient of MatMul with respect to a.
func MatMulBackwardA(a, b, g *tensor.Tensor) *tensor.Tensor {
	return matMulGrad("ops.MatMulBackwardA", a, b, g, true)
}

// MatMulBackwardB returns only the gradient of MatMul with respect to b,
// sparing the product for a when it needs none (a network's input, say).
func MatMulBackwardB(a, b, g *tensor.Tensor) *tensor.Tensor {
	return matMulGrad("ops.MatMulBackwardB", a, b, g, false)
}

func matMulGrad(op string, a, b, g *tensor.Tensor, wrtA bool) *tensor.Tensor {
	dev := operands(op, a, b, g)
	dt := floats(op, a, b, g)
	m, k := matrix(op, "a", a)
	k2, n := matrix(op, "b", b)
	if k != k2 {
		tensor.Panicf(op, tensor.ErrShape, "inner dimensions differ: a is %v, b is %v", a.Shape(), b.Shape())
	}
	sameShape(op, "upstream gradient", g, []int{m, n})
	if wrtA {
		ga, ok := output(dev, dt, []int{m, k}, a, b, g)
		if ok {
			dev.MatMul(ga.Buffer(), g.Buffer(), b.Buffer(), m, n, k, false, true)
			keep(ga, g, b)
		}
		return ga
	}
	gb, ok := output(dev, dt, []int{k, n}, a, b, g)
	if ok {
		dev.MatMul(gb.Buffer(), a.Buffer(), g.Buffer(), k, m, n, true, false)
		keep(gb, a, g)
	}
	return gb
}

// Transpose returns the transpose of a 2-D matrix.
func Transpose(x *tensor.Tensor) *tensor.Tensor {
	const op = "ops.Transpose"
	dev := operands(op, x)
	dt := floats(op, x)
	r, c := matrix(op, "x", x)
	out, ok := output(dev, dt, []int{c, r}, x)
	if ok {
		dev.Transpose(out.Buffer(), x.Buffer(), r, c)
		keep(out, x)
	}
	return out
}

// TransposeBackward returns the gradient of Transpose with respect to x:
// the transpose of g.
func TransposeBackward(x, g *tensor.Tensor) *tensor.Tensor {
	const op = "ops.TransposeBackward"
	operands(op, x, g)
	floats(op, x, g)
	r, c := matrix(op, "x", x)
	sameShape(op, "upstream gradient", g, []int{c, r})
	return Transpose(g)
}
