package ops

import (
	"fmt"
	"math"

	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/tensor"
)

// The indexing ops: each op's functions, table entry and second-order
// rule. They run on the gather family (embedding's kernels), arange on
// the update family's.

// The entries of indexing. Each var is an op's handle, by which autograd.Apply
// and the rules reach it.
var (
	IndexSelectOp = &Op{Name: "index_select", Family: "gather, strided", Doc: "the entries of x along an axis named by 1-D int32 indices, in their order; gradient accumulates repeated indices; an index out of range gives NaN and an error at the readback.",
		Forward:  fwd(func(in []*T, a AxisAttrs) *T { return indexSelect(in[0], a.Axis, in[1]) }),
		Backward: bwd(func(in []*T, g *T, a AxisAttrs) []*T { return []*T{IndexSelectBackward(in[0], a.Axis, in[1], g), nil} }),
		Cases:    indexSelectCases()}
	OneHotOp = &Op{Name: "one_hot", Family: "gather", Doc: "float32 (or the dtype asked for) rows of classes zeros with a 1 at each int32 index (PyTorch's are int64); an index out of range gives a row of NaN and an error at the readback; no gradient.",
		Forward: fwd(func(in []*T, a OneHotAttrs) *T { return oneHot(in[0], a.Classes, a.DType) }),
		Cases:   oneHotCases()}
	ArangeOp = &Op{Name: "arange", Family: "update", Doc: "tensor.Arange: start, start + step, … before stop, on the device and in the dtype of its one input (whose values are not read), as torch.arange(…, device=x.device, dtype=x.dtype); int32 from integer start and step; no gradient.",
		Forward: fwd(func(in []*T, a RangeAttrs) *T {
			t, err := tensor.Arange(operands("ops.Arange", in[0]), in[0].DType(), a.Start, a.Stop, a.Step)
			if err != nil {
				return tensor.Failed(in[0].Device(), in[0].DType(), err)
			}
			return t
		}),
		Cases: arangeCases()}
)

// indexing are index_select and one_hot, in the coverage table's order.
var indexing = []*Op{
	IndexSelectOp.with(indexSelectRule),
	OneHotOp,
	ArangeOp,
}

// arangeCases are float ranges up and down, fractional steps, an empty
// range, int32 ranges, ranges past 65535×256 elements (and, in int32,
// past 2²⁴, where float32 would round), and an input of special values,
// which arange does not read.
func arangeCases() []Case {
	c := func(start, stop, step float64, isInt bool) Case {
		return Case{Name: fmt.Sprintf("%g,%g,%g", start, stop, step) + map[bool]string{true: " int32"}[isInt],
			Inputs: []Input{{Shape: sh(), Int: isInt, Domain: Domain{Classes: 1}}}, Attrs: RangeAttrs{Start: start, Stop: stop, Step: step}}
	}
	return []Case{c(0, 10, 1, false), c(0, 1, 0.1, false), c(5, -3, -0.5, false), c(-2.5, 7, 0.75, false),
		c(3, 3, 1, false), c(-7, 20, 3, true), c(1000, -1000, -7, true), c(0, 1<<24+300, 1, false), c(0, 1<<24+300, 1, true),
		{Name: "special values in the unread input", Inputs: []Input{{Shape: sh(2), Domain: Domain{Values: []float64{math.NaN(), math.Inf(-1)}}}}, Attrs: RangeAttrs{Start: -1, Stop: 1, Step: 0.5}}}
}

// indexSelectRule is index_select's backward in table ops: the rows of g,
// with the axis first, scattered into the table by a one-hot product.
var indexSelectRule = rule(func(b Builder, in []Value, _, g Value, a AxisAttrs) []Value {
	r := rb{b}
	x, idx := b.Tensor(in[0]), b.Tensor(in[1])
	ax, perm, inv := axisFirst("ops.IndexSelect", x, a.Axis)
	ids, err := idx.Int32s()
	if err != nil {
		panic(err)
	}
	rows := x.Dim(ax)
	hot := make([]float64, rows*len(ids)) // [rows, len(ids)]: the one-hot's transpose
	for i, k := range ids {
		if k >= 0 && int(k) < rows {
			hot[int(k)*len(ids)+i] = 1
		}
	}
	gs := g.Shape()
	gp := r.op(PermuteOp, PermuteAttrs{Perm: perm}, g)
	moved := permuted(gs, perm)
	g2 := r.reshape(gp, []int{len(ids), device.Numel(moved[1:])})
	h := b.Const(tensor.Must(tensor.FromValues(x.Device(), x.DType(), hot, rows, len(ids))))
	t := r.matmul(h, g2)
	back := append([]int{rows}, moved[1:]...)
	return []Value{r.op(PermuteOp, PermuteAttrs{Perm: inv}, r.reshape(t, back)), nil}
})

// axisFirst returns axis of x normalised, the permutation that moves it
// first and the inverse permutation.
func axisFirst(op string, x *T, axis int) (ax int, perm, inv []int) {
	if x.Rank() == 0 {
		tensor.Panicf(op, tensor.ErrShape, "x is 0-D; want an axis to index")
	}
	ax = normAxis(op, axis, x.Rank())
	perm = append([]int{ax}, allAxes(x.Rank())...)
	perm = append(perm[:ax+1], perm[ax+2:]...)
	inv = make([]int, len(perm))
	for k, p := range perm {
		inv[p] = k
	}
	return ax, perm, inv
}

// permuted returns shape s permuted by perm.
func permuted(s, perm []int) []int {
	out := make([]int, len(perm))
	for k, p := range perm {
		out[k] = s[p]
	}
	return out
}

// indexArgs checks index_select's indices: 1-D int32.
func indexArgs(op string, x, idx *T) {
	operands(op, x, idx)
	floats(op, x)
	if idx.DType() != device.Int32 || idx.Rank() != 1 {
		tensor.Panicf(op, tensor.ErrArgument, "indices are %v of shape %v; want 1-D int32", idx.DType(), idx.Shape())
	}
}

// IndexSelect returns the entries of x along axis named by the 1-D int32
// indices idx, in their order, as PyTorch's index_select: x's shape with
// the axis's length replaced by idx's. An index outside the axis gives NaN
// and is reported, naming the op, by the next readback or Sync.
func IndexSelect[V Operand[E], E any](x V, axis int, idx V) V {
	return call(IndexSelectOp, AxisAttrs{Axis: axis}, x, idx)
}

func indexSelect(x *T, axis int, idx *T) *T {
	const op = "ops.IndexSelect"
	indexArgs(op, x, idx)
	_, perm, inv := axisFirst(op, x, axis)
	xp := permuteOf(x, perm)
	defer xp.Release()
	s := xp.Shape()
	table := xp.Reshape(s[0], device.Numel(s[1:]))
	defer table.Release()
	e := embeddingAs(op, idx, table)
	defer e.Release()
	return permuteOf(e.Reshape(append([]int{idx.Len()}, s[1:]...)...), inv)
}

// IndexSelectBackward returns the gradient of IndexSelect for x: each row
// of g (along the axis) added to the entry its index named; the indices
// get none.
func IndexSelectBackward(x *T, axis int, idx, g *T) *T {
	const op = "ops.IndexSelectBackward"
	indexArgs(op, x, idx)
	operands(op, x, g)
	floats(op, x, g)
	ax, perm, inv := axisFirst(op, x, axis)
	want := x.Shape()
	want[ax] = idx.Len()
	sameShape(op, "upstream gradient", g, want)
	gp := permuteOf(g, perm)
	defer gp.Release()
	moved := permuted(x.Shape(), perm)
	rest := device.Numel(moved[1:])
	g2 := gp.Reshape(idx.Len(), rest)
	defer g2.Release()
	gt := embeddingGradAs(op, idx, moved[0], rest, g2)
	defer gt.Release()
	return permuteOf(gt.Reshape(moved...), inv)
}

// embeddingGradAs is EmbeddingBackward for a table of rows×d, reported as op.
func embeddingGradAs(op string, idx *T, rows, d int, g *T) *T {
	dev := operands(op, idx, g)
	out, ok := output(dev, g.DType(), []int{rows, d}, idx, g)
	if ok && out.Len() > 0 {
		dev.GatherGrad(out.Buffer(), idx.Buffer(), g.Buffer(), device.Take{Site: op, N: idx.Len(), C: rows, D: d, Table: true, Scale: 1})
	}
	return out
}

// OneHot returns, for int32 indices idx of any shape, a tensor of idx's
// shape with classes last: 1 at each index and 0 elsewhere, in dtype dt
// (a floating-point dtype; PyTorch's one_hot gives int64). An index
// outside [0, classes) gives a row of NaN and is reported, naming the op,
// by the next readback or Sync.
func OneHot[V Operand[E], E any](idx V, classes int, dt device.DType) V {
	return call(OneHotOp, OneHotAttrs{Classes: classes, DType: dt}, idx)
}

func oneHot(idx *T, classes int, dt device.DType) *T {
	const op = "ops.OneHot"
	dev := operands(op, idx)
	if idx.DType() != device.Int32 {
		tensor.Panicf(op, tensor.ErrDType, "indices are %v; want int32", idx.DType())
	}
	if !dt.IsFloat() || !dev.Supports(dt) {
		tensor.Panicf(op, tensor.ErrDType, "dtype %v; want a floating-point dtype that %s holds", dt, dev.Name())
	}
	if classes < 1 || classes > 1<<24 {
		tensor.Panicf(op, tensor.ErrArgument, "%d classes; want 1 to 2²⁴", classes)
	}
	out, ok := output(dev, dt, append(idx.Shape(), classes), idx)
	if !ok || out.Len() == 0 {
		return out
	}
	ones := filled(dev, dt, []int{idx.Len()}, 1, idx)
	defer ones.Release()
	dev.GatherGrad(out.Buffer(), idx.Buffer(), ones.Buffer(), device.Take{Site: op, N: idx.Len(), C: classes, Scale: 1})
	return out
}

func indexSelectCases() []Case {
	c := func(x []int, axis int, idx []float64) Case {
		return Case{Name: fmt.Sprintf("%s axis=%d %v", ShapeName(x), axis, idx),
			Inputs: []Input{{Shape: x}, {Shape: sh(len(idx)), Int: true, Domain: Domain{Values: idx}}}, Attrs: AxisAttrs{Axis: axis}}
	}
	special := c(sh(3, 5), 1, []float64{4, 0, 0})
	special.Name, special.NoFD = "special values (3,5) axis=1", true
	special.Inputs[0].Domain = Domain{Values: finiteSpecials}
	return []Case{c(sh(5), 0, []float64{4, 0, 2}), c(sh(3, 4), 0, []float64{2, 2, 0, 1}), c(sh(3, 4), 1, []float64{3, 1}),
		c(sh(2, 3, 4), -2, []float64{1, 1, 1}), c(sh(2, 3, 4), 2, nil), c(sh(2, 0), 0, []float64{1}), special}
}

func oneHotCases() []Case {
	c := func(s []int, classes int) Case {
		return Case{Name: fmt.Sprintf("%s classes=%d", ShapeName(s), classes), Inputs: []Input{{Shape: s, Int: true, Domain: Domain{Classes: classes}}},
			Attrs: OneHotAttrs{Classes: classes, DType: device.Float32}}
	}
	half := c(sh(2, 3), 5)
	half.Name, half.Attrs = half.Name+" float16", OneHotAttrs{Classes: 5, DType: device.Float16}
	return []Case{c(sh(5), 3), c(sh(2, 3), 10), c(sh(), 4), c(sh(0), 2), c(sh(300), 1), half}
}

// OneHotAttrs are one_hot's number of classes and result dtype.
type OneHotAttrs struct {
	Classes int
	DType   device.DType
}

func (OneHotAttrs) isAttrs() {}

// RangeAttrs are arange's start, stop and step.
type RangeAttrs struct{ Start, Stop, Step float64 }

func (RangeAttrs) isAttrs() {}
