package ops

import (
	"slices"

	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/tensor"
)

// matrix checks that t, named what in errors, is 2-D and returns its size.
func matrix(op, what string, t *tensor.Tensor) (rows, cols int) {
	if t.Rank() != 2 {
		tensor.Panicf(op, tensor.ErrShape, "%s has shape %v; want a 2-D matrix", what, t.Shape())
	}
	return t.Dim(0), t.Dim(1)
}

// mm is the plan of a matrix product under NumPy's matmul rules.
type mm struct {
	m, k, n int
	batch   []int // the broadcast batch shape
	out     []int // the result's shape: batch, then m and n unless a or b is 1-D
}

// planMatMul checks a and b for MatMul and returns its plan.
func planMatMul(op string, a, b *tensor.Tensor) mm {
	as, bs := a.Shape(), b.Shape()
	if len(as) == 0 || len(bs) == 0 {
		tensor.Panicf(op, tensor.ErrShape, "a has shape %v, b %v; want operands of rank ≥ 1 (multiply by a scalar with Mul)", as, bs)
	}
	var p mm
	p.k = as[len(as)-1]
	if len(as) > 1 {
		p.m = as[len(as)-2]
	} else {
		p.m = 1
	}
	k2 := bs[0]
	if len(bs) > 1 {
		k2, p.n = bs[len(bs)-2], bs[len(bs)-1]
	} else {
		p.n = 1
	}
	if p.k != k2 {
		tensor.Panicf(op, tensor.ErrShape, "inner dimensions differ: a has shape %v, b %v; want a's last dimension equal to b's %s", as, bs,
			map[bool]string{true: "first (b is 1-D)", false: "second-to-last"}[len(bs) == 1])
	}
	batch, ok := BroadcastShapes(batchOf(as), batchOf(bs))
	if !ok {
		tensor.Panicf(op, tensor.ErrShape, "batch dimensions of a %v and b %v do not broadcast", as, bs)
	}
	p.batch = batch
	p.out = slices.Clone(batch)
	if len(as) > 1 {
		p.out = append(p.out, p.m)
	}
	if len(bs) > 1 {
		p.out = append(p.out, p.n)
	}
	return p
}

// batchOf returns the batch dimensions of a matmul operand's shape.
func batchOf(s []int) []int {
	if len(s) <= 2 {
		return nil
	}
	return s[:len(s)-2]
}

// operand is one side of a batched product as the device reads it: a
// contiguous tensor and the stride between its matrices (0: one matrix
// for the whole batch).
type operand struct {
	t      *tensor.Tensor
	stride int
	temp   bool // t is a broadcast copy, to release after use
}

// batched returns x, whose matrices are rows×cols, for a product over the
// batch shape: as it is when its batch is the whole batch or a single
// matrix, else broadcast to the batch.
func batched(x *tensor.Tensor, batch []int, rows, cols int) operand {
	switch xb := batchOf(x.Shape()); {
	case device.Numel(xb) == 1:
		return operand{t: x}
	case equal(xb, batch):
		return operand{t: x, stride: rows * cols}
	default:
		return operand{t: broadcastTo(x, append(slices.Clone(batch), rows, cols)), stride: rows * cols, temp: true}
	}
}

func (o operand) done() {
	if o.temp {
		o.t.Release()
	}
}

// gemm records out = op(a)·op(b) over a batch of count products.
func gemm(dev device.Device, out *tensor.Tensor, a, b operand, s device.GEMM) {
	s.StrideA, s.StrideB = a.stride, b.stride
	dev.MatMul(out.Buffer(), a.t.Buffer(), b.t.Buffer(), s)
	a.done()
	b.done()
}

// MatMul returns the matrix product of a and b under NumPy's matmul rules:
// 2-D operands are an m×k and a k×n matrix; a 1-D a is a row vector and a
// 1-D b a column vector, their added axis dropped from the result; N-D
// operands are batches of matrices in their last two axes, with batch
// axes broadcast, so (2,1,4,3)@(3,3,2) is (2,3,4,2). 0-D operands are an
// error (multiply by a scalar with Mul). The batch runs as one batched
// kernel; a product whose b has one matrix runs as a single matrix product.
func MatMul[V Operand[E], E any](a, b V) V { return call(MatmulOp, nil, a, b) }

func matMul(a, b *tensor.Tensor) *tensor.Tensor {
	const op = "ops.MatMul"
	dev := operands(op, a, b)
	dt := floats(op, a, b)
	p := planMatMul(op, a, b)
	out, ok := output(dev, dt, p.out, a, b)
	if !ok || out.Len() == 0 {
		return out
	}
	count := device.Numel(p.batch)
	oa, ob := batched(a, p.batch, p.m, p.k), batched(b, p.batch, p.k, p.n)
	if ob.stride == 0 && oa.stride != 0 { // a's batch folds into its rows
		gemm(dev, out, operand{t: oa.t, temp: oa.temp}, ob, device.GEMM{Batch: 1, M: count * p.m, K: p.k, N: p.n})
		return out
	}
	gemm(dev, out, oa, ob, device.GEMM{Batch: count, M: p.m, K: p.k, N: p.n})
	return out
}

// MatMulBackward returns the gradients of MatMul: ga = g·bᵀ and gb = aᵀ·g
// for each product of the batch, each summed over the batch axes along
// which its operand was broadcast, and shaped like a and b.
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
	p := planMatMul(op, a, b)
	sameShape(op, "upstream gradient", g, p.out)
	count := device.Numel(p.batch)
	gs := operand{t: g, stride: p.m * p.n} // g as its batch of m×n matrices
	shape := func(r, c int) []int { return append(slices.Clone(p.batch), r, c) }
	if wrtA {
		full, ok := output(dev, dt, shape(p.m, p.k), a, b, g)
		switch {
		case !ok || full.Len() == 0:
		case batchFree(b): // ga = g·bᵀ for every row of the batch at once
			gemm(dev, full, operand{t: g}, operand{t: b}, device.GEMM{Batch: 1, M: count * p.m, K: p.n, N: p.k, TransB: true})
		default:
			gemm(dev, full, gs, batched(b, p.batch, p.k, p.n), device.GEMM{Batch: count, M: p.m, K: p.n, N: p.k, TransB: true})
		}
		return sumBatch(full, a, ok)
	}
	if batchFree(b) {
		// gb = Σᵢ aᵢᵀ·gᵢ = Aᵀ·G with the batch's rows stacked: one product.
		out, ok := output(dev, dt, []int{p.k, p.n}, a, b, g)
		if ok && out.Len() > 0 {
			ab := batched(a, p.batch, p.m, p.k)
			gemm(dev, out, operand{t: ab.t, temp: ab.temp}, operand{t: g}, device.GEMM{Batch: 1, M: p.k, K: count * p.m, N: p.n, TransA: true})
		}
		return viewAs(out, b)
	}
	full, ok := output(dev, dt, shape(p.k, p.n), a, b, g)
	if ok && full.Len() > 0 {
		gemm(dev, full, batched(a, p.batch, p.m, p.k), gs, device.GEMM{Batch: count, M: p.k, K: p.m, N: p.n, TransA: true})
	}
	return sumBatch(full, b, ok)
}

// batchFree reports whether x holds a single matrix (or vector).
func batchFree(x *tensor.Tensor) bool { return device.Numel(batchOf(x.Shape())) == 1 }

// sumBatch returns full, the gradient of x for every product of the batch
// (batch, r, c), summed over the batch axes along which x was broadcast
// and shaped like x.
func sumBatch(full, x *tensor.Tensor, ok bool) *tensor.Tensor {
	fs := full.Shape()
	nb := len(batchOf(x.Shape()))
	if !ok {
		return tensor.Failed(full.Device(), full.DType(), full.Err(), x.Shape()...)
	}
	if len(fs)-2 == nb && equal(fs[:nb], x.Shape()[:nb]) {
		return viewAs(full, x)
	}
	// Sum to x's batch, with full's rank: 1 on the axes x lacks.
	to := slices.Clone(fs)
	for i := range len(fs) - 2 {
		if j := i - (len(fs) - 2 - nb); j < 0 {
			to[i] = 1
		} else {
			to[i] = x.Shape()[j]
		}
	}
	s := sumTo(full, to)
	full.Release()
	return viewAs(s, x)
}

// viewAs returns t viewed in x's shape (a gradient of x).
func viewAs(t, x *tensor.Tensor) *tensor.Tensor {
	if equal(t.Shape(), x.Shape()) {
		return t
	}
	v := t.Reshape(x.Shape()...)
	t.Release()
	return v
}

// vector checks that t, named what in errors, is 1-D and returns its length.
func vector(op, what string, t *tensor.Tensor) int {
	if t.Rank() != 1 {
		tensor.Panicf(op, tensor.ErrShape, "%s has shape %v; want a 1-D vector", what, t.Shape())
	}
	return t.Dim(0)
}

// Dot returns the inner product Σ aᵢ·bᵢ of two vectors of one length, as
// a 0-D tensor (MatMul of two vectors).
func Dot[V Operand[E], E any](a, b V) V { return call(DotOp, nil, a, b) }

func dot(a, b *tensor.Tensor) *tensor.Tensor {
	const op = "ops.Dot"
	operands(op, a, b)
	if n, m := vector(op, "a", a), vector(op, "b", b); n != m {
		tensor.Panicf(op, tensor.ErrShape, "a has %d elements, b %d; want equal lengths", n, m)
	}
	return as(op, func() *tensor.Tensor { return matMul(a, b) })
}

// DotBackward returns the gradients of Dot for the 0-D upstream gradient
// g: g·b and g·a.
func DotBackward(a, b, g *tensor.Tensor) (ga, gb *tensor.Tensor) {
	const op = "ops.DotBackward"
	operands(op, a, b, g)
	vector(op, "a", a)
	vector(op, "b", b)
	var x, y *tensor.Tensor
	as(op, func() *tensor.Tensor { x, y = MatMulBackward(a, b, g); return nil })
	return x, y
}

// Outer returns the outer product of the vectors a (m) and b (n): the m×n
// matrix aᵢ·bⱼ.
func Outer[V Operand[E], E any](a, b V) V { return call(OuterOp, nil, a, b) }

func outer(a, b *tensor.Tensor) *tensor.Tensor {
	const op = "ops.Outer"
	operands(op, a, b)
	m, n := vector(op, "a", a), vector(op, "b", b)
	return as(op, func() *tensor.Tensor {
		col, row := a.Reshape(m, 1), b.Reshape(1, n)
		defer col.Release()
		defer row.Release()
		return matMul(col, row)
	})
}

// OuterBackward returns the gradients of Outer for the m×n upstream
// gradient g: g·b and gᵀ·a.
func OuterBackward(a, b, g *tensor.Tensor) (ga, gb *tensor.Tensor) {
	const op = "ops.OuterBackward"
	operands(op, a, b, g)
	m, n := vector(op, "a", a), vector(op, "b", b)
	as(op, func() *tensor.Tensor {
		col, row := a.Reshape(m, 1), b.Reshape(1, n)
		defer col.Release()
		defer row.Release()
		gc, gr := MatMulBackward(col, row, g)
		ga, gb = viewAs(gc, a), viewAs(gr, b)
		return nil
	})
	return ga, gb
}
