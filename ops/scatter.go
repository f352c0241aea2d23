package ops

import (
	"fmt"
	"slices"

	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/tensor"
)

// gather and scatter_add along an axis: each op's functions, table entry
// and second-order rule. Both run on the gather family's rows form
// (device.Take with K): the axis moved last, each row of x takes (or
// receives) its indices' elements. The scatter is deterministic: each
// element of the result sums what its row's indices send it, in index
// order, with no atomics.

// The entries of axisGathers. Each var is an op's handle, by which autograd.Apply
// and the rules reach it.
var (
	GatherOp = &Op{Name: "gather", Family: "gather, strided", Doc: "out[…, i, …] = x[…, idx[…, i, …], …] along an axis, idx int32 of x's rank and no larger off the axis (PyTorch's gather); gradient scatter-added back; an index out of range gives NaN and an error at the readback.",
		Forward:  fwd(func(in []*T, a AxisAttrs) *T { return gather(in[0], a.Axis, in[1]) }),
		Backward: bwd(func(in []*T, g *T, a AxisAttrs) []*T { return []*T{GatherBackward(in[0], a.Axis, in[1], g), nil} }),
		Cases:    gatherCases()}
	ScatterAddOp = &Op{Name: "scatter_add", Family: "gather, strided, binary", Doc: "x plus src[…, i, …] added at x[…, idx[…, i, …], …] along an axis, repeated indices summed (PyTorch's scatter_add; src no smaller than idx, which is no larger than x off the axis); gradients g for x, g gathered for src; an index out of range adds nowhere and gives an error at the readback.",
		Forward: fwd(func(in []*T, a AxisAttrs) *T { return scatterAdd(in[0], a.Axis, in[1], in[2]) }),
		Backward: bwd(func(in []*T, g *T, a AxisAttrs) []*T {
			gx, gs := ScatterAddBackward(in[0], a.Axis, in[1], in[2], g)
			return []*T{gx, nil, gs}
		}),
		Cases: scatterAddCases()}
)

// axisGathers are gather and scatter_add, in the coverage table's order.
var axisGathers = []*Op{
	GatherOp.with(gatherRule),
	ScatterAddOp.with(scatterAddRule),
}

var (
	// gather's gradient is the scatter_add of g into zeros.
	gatherRule = rule(func(b Builder, in []Value, _, g Value, a AxisAttrs) []Value {
		return []Value{rb{b}.op(ScatterAddOp, AxisAttrs{Axis: a.Axis}, zerosLike(b, in[0]), in[1], g), nil}
	})
	// scatter_add's: g for x, g gathered (zeros past idx) for src.
	scatterAddRule = rule(func(b Builder, in []Value, _, g Value, a AxisAttrs) []Value {
		r := rb{b}
		gs := r.op(GatherOp, AxisAttrs{Axis: a.Axis}, g, in[1])
		if pads := padsTo(in[1].Shape(), in[2].Shape()); pads != nil {
			gs = r.op(PadOp, PadAttrs{Pads: pads}, gs)
		}
		return []Value{g, nil, gs}
	})
)

// padsTo returns the pads that take shape from to shape to (each axis no
// shorter), or nil if they are equal.
func padsTo(from, to []int) [][2]int {
	if slices.Equal(from, to) {
		return nil
	}
	pads := make([][2]int, len(to))
	for k := range to {
		pads[k][1] = to[k] - from[k]
	}
	return pads
}

// axisRows is a checked gather or scatter along an axis: the
// permutation that moves the axis last, and the row count, the length of
// x's rows and the indices a row.
type axisRows struct {
	ax         int
	perm, inv  []int
	m, c, k    int
	idxShape   []int
	movedShape []int // idx's shape with the axis last
}

// axisArgs checks x and idx of a gather or scatter along axis: int32
// indices of x's rank, no larger than x off the axis.
func axisArgs(op string, x *T, axis int, idx *T) axisRows {
	operands(op, x, idx)
	floats(op, x)
	if idx.DType() != device.Int32 {
		tensor.Panicf(op, tensor.ErrDType, "indices are %v; want int32", idx.DType())
	}
	if x.Rank() == 0 || idx.Rank() != x.Rank() {
		tensor.Panicf(op, tensor.ErrShape, "x of shape %v, indices of shape %v; want indices of x's rank ≥ 1", x.Shape(), idx.Shape())
	}
	a := axisRows{ax: normAxis(op, axis, x.Rank()), idxShape: idx.Shape()}
	for d, n := range a.idxShape {
		if d != a.ax && n > x.Dim(d) {
			tensor.Panicf(op, tensor.ErrShape, "indices of shape %v for x of shape %v along axis %d; want indices no larger than x off the axis", a.idxShape, x.Shape(), a.ax)
		}
	}
	for d := range x.Rank() {
		if d != a.ax {
			a.perm = append(a.perm, d)
		}
	}
	a.perm = append(a.perm, a.ax)
	a.inv = make([]int, len(a.perm))
	for k, p := range a.perm {
		a.inv[p] = k
	}
	a.movedShape = permuted(a.idxShape, a.perm)
	a.c, a.k = x.Dim(a.ax), a.idxShape[a.ax]
	a.m = device.Numel(a.movedShape[:len(a.movedShape)-1])
	return a
}

// region returns t narrowed to the index shape off the axis (and along
// it too when all), t itself when it fits already; the caller releases
// what differs from t.
func (a axisRows) region(t *T, all bool) *T {
	out := t
	for d, n := range a.idxShape {
		if (d != a.ax || all) && t.Dim(d) != n {
			next := Narrow(out, d, 0, n)
			if out != t {
				out.Release()
			}
			out = next
		}
	}
	return out
}

// moved returns t with the axis last, as contiguous rows [m, length].
func (a axisRows) moved(t *T) *T {
	p := permuteOf(t, a.perm)
	defer p.Release()
	return p.Reshape(a.m, t.Dim(a.ax))
}

// back returns rows [m, n] (the axis last) in the axis's place, of the
// index shape with the axis n long.
func (a axisRows) back(rows *T, n int) *T {
	s := slices.Clone(a.movedShape)
	s[len(s)-1] = n
	v := rows.Reshape(s...)
	defer v.Release()
	return permuteOf(v, a.inv)
}

// Gather returns PyTorch's gather of x along axis: out has idx's shape
// and out[…, i, …] = x[…, idx[…, i, …], …], idx int32 of x's rank, no
// larger than x off the axis. An index outside the axis gives NaN and is
// reported, naming the op, by the next readback or Sync.
func Gather[V Operand[E], E any](x V, axis int, idx V) V {
	return call(GatherOp, AxisAttrs{Axis: axis}, x, idx)
}

func gather(x *T, axis int, idx *T) *T {
	const op = "ops.Gather"
	a := axisArgs(op, x, axis, idx)
	dev := x.Device()
	if a.m*a.k == 0 {
		return filled(dev, x.DType(), a.idxShape, 0, x, idx)
	}
	xs := a.region(x, false)
	if xs != x {
		defer xs.Release()
	}
	xr, ir := a.moved(xs), a.moved(idx)
	defer xr.Release()
	defer ir.Release()
	rows, ok := output(dev, x.DType(), []int{a.m, a.k}, xr, ir)
	if ok {
		dev.Gather(rows.Buffer(), xr.Buffer(), ir.Buffer(), device.Take{Site: op, N: a.m, C: a.c, K: a.k, Scale: 1})
	}
	defer rows.Release()
	return a.back(rows, a.k)
}

// scattered returns src's region (idx's shape) scatter-added into zeros
// of x's shape along the axis.
func scattered(op string, a axisRows, x, idx, src *T) *T {
	dev := x.Device()
	if a.m*a.k == 0 {
		return filled(dev, x.DType(), x.Shape(), 0, x, idx, src)
	}
	ss := a.region(src, true)
	if ss != src {
		defer ss.Release()
	}
	sr, ir := a.moved(ss), a.moved(idx)
	defer sr.Release()
	defer ir.Release()
	take := device.Take{Site: op, N: a.m, C: a.c, K: a.k, Scale: 1}
	rows, ok := output(dev, x.DType(), []int{a.m, a.c}, sr, ir)
	if ok && a.c == 0 {
		// No element to receive, so no kernel to meet the indices, all
		// out of range: a gather of them reports the first.
		taken, ok := output(dev, x.DType(), []int{a.m, a.k}, sr, ir)
		if ok {
			dev.Gather(taken.Buffer(), rows.Buffer(), ir.Buffer(), take)
		}
		taken.Release()
	} else if ok {
		dev.GatherGrad(rows.Buffer(), ir.Buffer(), sr.Buffer(), take)
	}
	defer rows.Release()
	part := a.back(rows, a.c)
	pads := padsTo(part.Shape(), x.Shape())
	if pads == nil {
		return part
	}
	defer part.Release()
	return pad(part, pads, 0)
}

// GatherBackward returns the gradient of Gather for x: g scatter-added
// where Gather took from, zeros elsewhere.
func GatherBackward(x *T, axis int, idx, g *T) *T {
	const op = "ops.GatherBackward"
	a := axisArgs(op, x, axis, idx)
	operands(op, x, g)
	sameDType(op, x, g)
	sameShape(op, "upstream gradient", g, a.idxShape)
	return scattered(op, a, x, idx, g)
}

// ScatterAdd returns PyTorch's scatter_add: x with src[…, i, …] added at
// x[…, idx[…, i, …], …] along axis, for every position of idx (src no
// smaller than idx; idx no larger than x off the axis), repeated indices
// summed in index order (float16 in float32, rounded once). An index
// outside the axis adds nowhere and is reported by the next readback or
// Sync.
func ScatterAdd[V Operand[E], E any](x V, axis int, idx, src V) V {
	return call(ScatterAddOp, AxisAttrs{Axis: axis}, x, idx, src)
}

func scatterAdd(x *T, axis int, idx, src *T) *T {
	const op = "ops.ScatterAdd"
	a := scatterArgs(op, x, axis, idx, src)
	if x.DType() == device.Float16 { // the sums and x added in float32, rounded once
		in, done := wide32(x, src)
		defer done()
		return narrow16(scatterAdd(in[0], axis, idx, in[1]))
	}
	s := scattered(op, a, x, idx, src)
	defer s.Release()
	return add(x, s)
}

// scatterArgs checks scatter_add's arguments.
func scatterArgs(op string, x *T, axis int, idx, src *T) axisRows {
	a := axisArgs(op, x, axis, idx)
	operands(op, x, src)
	sameDType(op, x, src)
	if src.Rank() != idx.Rank() {
		tensor.Panicf(op, tensor.ErrShape, "src of shape %v for indices of shape %v; want src no smaller than the indices", src.Shape(), idx.Shape())
	}
	for d, n := range a.idxShape {
		if src.Dim(d) < n {
			tensor.Panicf(op, tensor.ErrShape, "src of shape %v for indices of shape %v; want src no smaller than the indices", src.Shape(), idx.Shape())
		}
	}
	return a
}

// ScatterAddBackward returns the gradients of ScatterAdd for x (g) and
// for src (g gathered at the indices, zeros past them).
func ScatterAddBackward(x *T, axis int, idx, src, g *T) (gx, gsrc *T) {
	const op = "ops.ScatterAddBackward"
	scatterArgs(op, x, axis, idx, src)
	operands(op, x, g)
	sameDType(op, x, g)
	sameShape(op, "upstream gradient", g, x.Shape())
	gx = Clone(g)
	gsrc = as(op, func() *T { return gather(g, axis, idx) })
	if pads := padsTo(gsrc.Shape(), src.Shape()); pads != nil {
		p := pad(gsrc, pads, 0)
		gsrc.Release()
		gsrc = p
	}
	return gx, gsrc
}

func gatherCases() []Case {
	c := func(x []int, axis int, idx []int, classes int) Case {
		return Case{Name: fmt.Sprintf("%s axis=%d idx %s", ShapeName(x), axis, ShapeName(idx)),
			Inputs: []Input{{Shape: x}, {Shape: idx, Int: true, Domain: Domain{Classes: classes}}}, Attrs: AxisAttrs{Axis: axis}}
	}
	special := c(sh(3, 5), 1, sh(3, 4), 5)
	special.Name, special.NoFD = "special values "+special.Name, true
	special.Inputs[0].Domain = Domain{Values: finiteSpecials}
	big := c(sh(64, 300), 1, sh(64, 200), 300)
	big.NoFD = true
	return []Case{c(sh(3, 4), 0, sh(2, 4), 3), c(sh(3, 5), 1, sh(3, 2), 5), c(sh(2, 3, 4), 1, sh(2, 5, 4), 3),
		c(sh(4, 3, 2), -1, sh(2, 3, 1), 2), c(sh(6), 0, sh(9), 6), c(sh(3, 4), 1, sh(0, 4), 4), special, big}
}

func scatterAddCases() []Case {
	c := func(x []int, axis int, idx []int, classes int, src []int) Case {
		return Case{Name: fmt.Sprintf("%s axis=%d idx %s src %s", ShapeName(x), axis, ShapeName(idx), ShapeName(src)),
			Inputs: []Input{{Shape: x}, {Shape: idx, Int: true, Domain: Domain{Classes: classes}}, {Shape: src}}, Attrs: AxisAttrs{Axis: axis}}
	}
	special := c(sh(3, 5), 1, sh(3, 4), 5, sh(3, 4))
	special.Name, special.NoFD = "special values "+special.Name, true
	special.Inputs[2].Domain = Domain{Values: finiteSpecials}
	big := c(sh(64, 300), 1, sh(64, 200), 300, sh(64, 200))
	big.NoFD = true
	return []Case{c(sh(3, 4), 0, sh(2, 4), 3, sh(2, 4)), c(sh(3, 5), 1, sh(3, 6), 5, sh(3, 6)), c(sh(2, 3, 4), 2, sh(2, 2, 3), 4, sh(2, 3, 5)),
		c(sh(6), 0, sh(9), 6, sh(9)), c(sh(3, 4), 1, sh(0, 4), 4, sh(2, 4)), special, big}
}
