package ops

import (
	"slices"

	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/tensor"
)

// The shape ops move elements without arithmetic, on tensors of any
// dtype: permutations, slices, padding and concatenation run the strided
// copy kernel; reshape, squeeze, unsqueeze and flatten return views that
// share their input's memory. Each backward returns a gradient shaped
// like its input.

// sameDType checks that ts have one dtype and returns it.
func sameDType(op string, ts ...*tensor.Tensor) device.DType {
	dt := ts[0].DType()
	for i, t := range ts {
		if t.DType() != dt {
			tensor.Panicf(op, tensor.ErrDType, "operand 0 is %v but operand %d is %v", dt, i, t.DType())
		}
	}
	return dt
}

// copyInto records the strided copy of src into dst, both contiguous.
func copyInto(dev device.Device, dst, src *tensor.Tensor, s device.Strided) {
	dev.CopyStrided(dst.Buffer(), src.Buffer(), s)
}

// Permute returns x with its axes reordered: axis k of the result is axis
// perm[k] of x (NumPy's transpose with axes, PyTorch's permute). perm
// must hold each of 0…rank−1 once; negative entries count from the end.
func Permute[V Operand[E], E any](x V, perm ...int) V {
	return call(PermuteOp, PermuteAttrs{Perm: perm}, x)
}

func permuteOf(x *tensor.Tensor, perm []int) *tensor.Tensor {
	return permute("ops.Permute", x, perm)
}

func permute(op string, x *tensor.Tensor, perm []int) *tensor.Tensor {
	dev := operands(op, x)
	p := checkPerm(op, perm, x.Rank())
	xs, st := x.Shape(), device.RowMajor(x.Shape())
	shape, src := make([]int, len(p)), make([]int, len(p))
	for k, a := range p {
		shape[k], src[k] = xs[a], st[a]
	}
	out, ok := output(dev, x.DType(), shape, x)
	if ok {
		copyInto(dev, out, x, device.Strided{Shape: shape, SrcStrides: src, DstStrides: device.RowMajor(shape)})
	}
	return out
}

// checkPerm returns perm with negative entries resolved, or panics if it
// is not a permutation of 0…rank−1.
func checkPerm(op string, perm []int, rank int) []int {
	if len(perm) != rank {
		tensor.Panicf(op, tensor.ErrArgument, "permutation %v has %d entries for rank %d; want a permutation of 0…%d", perm, len(perm), rank, rank-1)
	}
	p := make([]int, rank)
	seen := make([]bool, rank)
	for k, a := range perm {
		if a < 0 {
			a += rank
		}
		if a < 0 || a >= rank || seen[a] {
			tensor.Panicf(op, tensor.ErrArgument, "%v is not a permutation of 0…%d", perm, rank-1)
		}
		seen[a], p[k] = true, a
	}
	return p
}

// PermuteBackward returns the gradient of Permute: g permuted back.
func PermuteBackward(x, g *tensor.Tensor, perm []int) *tensor.Tensor {
	return permuteBackward("ops.PermuteBackward", x, g, perm)
}

func permuteBackward(op string, x, g *tensor.Tensor, perm []int) *tensor.Tensor {
	operands(op, x, g)
	sameDType(op, x, g)
	p := checkPerm(op, perm, x.Rank())
	xs := x.Shape()
	want := make([]int, len(p))
	inv := make([]int, len(p))
	for k, a := range p {
		want[k], inv[a] = xs[a], k
	}
	sameShape(op, "upstream gradient", g, want)
	return permute(op, g, inv)
}

// reversed returns the axes of a tensor of rank r in reverse order.
func reversed(r int) []int {
	p := make([]int, r)
	for k := range p {
		p[k] = r - 1 - k
	}
	return p
}

// Transpose returns x with its axes reversed: the transpose of a matrix,
// and of an N-D tensor as NumPy's x.T. A 0-D or 1-D tensor comes back as
// a copy.
func Transpose[V Operand[E], E any](x V) V { return call(TransposeOp, nil, x) }

func transpose(x *tensor.Tensor) *tensor.Tensor {
	operands("ops.Transpose", x)
	return permute("ops.Transpose", x, reversed(x.Rank()))
}

// TransposeBackward returns the gradient of Transpose: g transposed.
func TransposeBackward(x, g *tensor.Tensor) *tensor.Tensor {
	operands("ops.TransposeBackward", x, g)
	return permuteBackward("ops.TransposeBackward", x, g, reversed(x.Rank()))
}

// sliceRange resolves Python slice bounds on a dimension of size n: start
// and stop count from the end when negative and are clamped to [0, n];
// step must be positive. It returns start and the slice's length.
func sliceRange(op string, n, start, stop, step int) (from, length int) {
	if step <= 0 {
		tensor.Panicf(op, tensor.ErrArgument, "step %d; want a step ≥ 1", step)
	}
	clamp := func(i int) int {
		if i < 0 {
			i += n
		}
		return min(max(i, 0), n)
	}
	from, to := clamp(start), clamp(stop)
	if to <= from {
		return from, 0
	}
	return from, (to-from-1)/step + 1 // ⌈(to − from)/step⌉ without overflow
}

// sliceStride returns the stride, along a sliced axis of stride st, of a
// slice of n elements step apart. With n ≤ 1 the step never moves, and
// the stride is st: a huge step must not overflow it.
func sliceStride(st, n, step int) int {
	if n <= 1 {
		return st
	}
	return st * step // (n − 1)·step < the axis's size: no overflow
}

// Slice returns the elements start, start+step, … before stop of x along
// axis, as Python's x[start:stop:step]: negative bounds count from the
// end, bounds past the ends are clamped, and step must be at least 1.
// The result is a copy.
func Slice[V Operand[E], E any](x V, axis, start, stop, step int) V {
	return call(SliceOp, SliceAttrs{Axis: axis, Start: start, Stop: stop, Step: step}, x)
}

func slice(x *tensor.Tensor, axis, start, stop, step int) *tensor.Tensor {
	const op = "ops.Slice"
	dev := operands(op, x)
	ax := normAxis(op, axis, x.Rank())
	from, n := sliceRange(op, x.Dim(ax), start, stop, step)
	shape := x.Shape()
	shape[ax] = n
	src := device.RowMajor(x.Shape())
	off := from * src[ax]
	src[ax] = sliceStride(src[ax], n, step)
	out, ok := output(dev, x.DType(), shape, x)
	if ok {
		copyInto(dev, out, x, device.Strided{Shape: shape, SrcStrides: src, DstStrides: device.RowMajor(shape), SrcOffset: off})
	}
	return out
}

// Narrow returns length elements of x from start along axis (PyTorch's
// narrow): Slice with step 1. Its gradient is SliceBackward's with stop
// start+length and step 1.
func Narrow[V Operand[E], E any](x V, axis, start, length int) V {
	if length < 0 {
		tensor.Panicf("ops.Narrow", tensor.ErrArgument, "length %d; want ≥ 0", length)
	}
	a := SliceAttrs{Axis: axis, Start: start, Stop: start + length, Step: 1}
	return callWith(SliceOp, a, func(in []*T) *T {
		return as("ops.Narrow", func() *T { return slice(in[0], axis, start, start+length, 1) })
	}, x)
}

// SliceBackward returns the gradient of Slice: g scattered into zeros
// shaped like x, at the positions the slice took.
func SliceBackward(x, g *tensor.Tensor, axis, start, stop, step int) *tensor.Tensor {
	const op = "ops.SliceBackward"
	dev := operands(op, x, g)
	dt := sameDType(op, x, g)
	ax := normAxis(op, axis, x.Rank())
	from, n := sliceRange(op, x.Dim(ax), start, stop, step)
	shape := x.Shape()
	shape[ax] = n
	sameShape(op, "upstream gradient", g, shape)
	dst := device.RowMajor(x.Shape())
	off := from * dst[ax]
	dst[ax] = sliceStride(dst[ax], n, step)
	out, ok := output(dev, dt, x.Shape(), x, g)
	if ok {
		dev.Fill(out.Buffer(), 0)
		copyInto(dev, out, g, device.Strided{Shape: shape, SrcStrides: device.RowMajor(shape), DstStrides: dst, DstOffset: off})
	}
	return out
}

// Pad returns x padded with value: pads[k] = {before, after} elements on
// each side of axis k (NumPy's pad with constant mode, one pair per axis
// from the first). Pads are not negative: crop with Slice.
func Pad[V Operand[E], E any](x V, pads [][2]int, value float64) V {
	return call(PadOp, PadAttrs{Pads: pads, Value: value}, x)
}

func pad(x *tensor.Tensor, pads [][2]int, value float64) *tensor.Tensor {
	const op = "ops.Pad"
	dev := operands(op, x)
	shape, off := padShape(op, x, pads)
	out, ok := output(dev, x.DType(), shape, x)
	if ok {
		dev.Fill(out.Buffer(), value)
		copyInto(dev, out, x, device.Strided{Shape: x.Shape(), SrcStrides: device.RowMajor(x.Shape()), DstStrides: device.RowMajor(shape), DstOffset: off})
	}
	return out
}

// padShape checks pads and returns the padded shape and the offset of x's
// first element in it.
func padShape(op string, x *tensor.Tensor, pads [][2]int) (shape []int, off int) {
	if len(pads) != x.Rank() {
		tensor.Panicf(op, tensor.ErrArgument, "%d pads for a tensor of shape %v; want one {before, after} per axis", len(pads), x.Shape())
	}
	shape = x.Shape()
	for k, p := range pads {
		if p[0] < 0 || p[1] < 0 {
			tensor.Panicf(op, tensor.ErrArgument, "pads %v: negative padding on axis %d; want pads ≥ 0 (crop with Slice)", pads, k)
		}
		n, ok1 := device.CheckedAdd(shape[k], p[0])
		n, ok2 := device.CheckedAdd(n, p[1])
		if !ok1 || !ok2 {
			tensor.Panicf(op, tensor.ErrArgument, "pads %v: axis %d of shape %v padded has more elements than an int counts", pads, k, x.Shape())
		}
		shape[k] = n
	}
	if _, err := device.CheckNumel(shape); err != nil {
		return shape, 0 // the output fails with ErrOutOfMemory; no offset to compute
	}
	st := device.RowMajor(shape)
	for k, p := range pads {
		off += p[0] * st[k]
	}
	return shape, off
}

// PadBackward returns the gradient of Pad: the part of g over x.
func PadBackward(x, g *tensor.Tensor, pads [][2]int) *tensor.Tensor {
	const op = "ops.PadBackward"
	dev := operands(op, x, g)
	dt := sameDType(op, x, g)
	shape, off := padShape(op, x, pads)
	sameShape(op, "upstream gradient", g, shape)
	out, ok := output(dev, dt, x.Shape(), x, g)
	if ok {
		copyInto(dev, out, g, device.Strided{Shape: x.Shape(), SrcStrides: device.RowMajor(shape), DstStrides: device.RowMajor(x.Shape()), SrcOffset: off})
	}
	return out
}

// concatShape checks that xs can be joined along axis and returns the
// joined shape and the normalised axis.
func concatShape(op string, xs []*tensor.Tensor, axis int) (shape []int, ax int) {
	if len(xs) == 0 {
		tensor.Panicf(op, tensor.ErrArgument, "no tensors to join")
	}
	operands(op, xs...)
	if xs[0].Rank() == 0 {
		tensor.Panicf(op, tensor.ErrShape, "operand 0 is 0-D; want tensors of rank ≥ 1 (Stack joins scalars)")
	}
	ax = normAxis(op, axis, xs[0].Rank())
	shape = xs[0].Shape()
	shape[ax] = 0
	for i, x := range xs {
		s := x.Shape()
		if len(s) != len(shape) {
			tensor.Panicf(op, tensor.ErrShape, "operand %d has shape %v, operand 0 %v; want equal ranks", i, s, xs[0].Shape())
		}
		for k := range s {
			if k != ax && s[k] != shape[k] {
				tensor.Panicf(op, tensor.ErrShape, "operand %d has shape %v, operand 0 %v; want equal sizes except on axis %d", i, s, xs[0].Shape(), ax)
			}
		}
		var ok bool
		if shape[ax], ok = device.CheckedAdd(shape[ax], s[ax]); !ok {
			tensor.Panicf(op, tensor.ErrShape, "operands joined along axis %d have more elements than an int counts (operand %d has shape %v)", ax, i, s)
		}
	}
	return shape, ax
}

// Concat returns xs joined along axis (NumPy's concatenate, PyTorch's
// cat): equal shapes except along axis, one dtype, one device.
func Concat[V Operand[E], E any](xs []V, axis int) V {
	return call(ConcatOp, AxisAttrs{Axis: axis}, xs...)
}

func concat(xs []*tensor.Tensor, axis int) *tensor.Tensor {
	const op = "ops.Concat"
	shape, ax := concatShape(op, xs, axis)
	dev := operands(op, xs...)
	dt := sameDType(op, xs...)
	out, ok := output(dev, dt, shape, xs...)
	if ok {
		dst := device.RowMajor(shape)
		at := 0
		for _, x := range xs {
			copyInto(dev, out, x, device.Strided{Shape: x.Shape(), SrcStrides: device.RowMajor(x.Shape()), DstStrides: dst, DstOffset: at * dst[ax]})
			at += x.Dim(ax)
		}
	}
	return out
}

// ConcatBackward returns the gradient of Concat for each of xs: the part
// of g along axis that each contributed.
func ConcatBackward(xs []*tensor.Tensor, g *tensor.Tensor, axis int) []*tensor.Tensor {
	const op = "ops.ConcatBackward"
	shape, ax := concatShape(op, xs, axis)
	operands(op, append(slices.Clone(xs), g)...)
	sameShape(op, "upstream gradient", g, shape)
	grads := make([]*tensor.Tensor, len(xs))
	at := 0
	for i, x := range xs {
		grads[i] = slice(g, ax, at, at+x.Dim(ax), 1)
		at += x.Dim(ax)
	}
	return grads
}

// Stack returns xs, of one shape, joined along a new axis at position axis
// (in [−rank−1, rank]; negative counts from the end), as NumPy's stack.
func Stack[V Operand[E], E any](xs []V, axis int) V {
	return call(StackOp, AxisAttrs{Axis: axis}, xs...)
}

func stack(xs []*tensor.Tensor, axis int) *tensor.Tensor {
	const op = "ops.Stack"
	views, ax := stackViews(op, xs, axis)
	return concat(views, ax)
}

// stackViews checks xs and returns them as views with a unit axis at the
// normalised axis.
func stackViews(op string, xs []*tensor.Tensor, axis int) ([]*tensor.Tensor, int) {
	if len(xs) == 0 {
		tensor.Panicf(op, tensor.ErrArgument, "no tensors to stack")
	}
	operands(op, xs...)
	ax := normAxis(op, axis, xs[0].Rank()+1)
	views := make([]*tensor.Tensor, len(xs))
	for i, x := range xs {
		if !equal(x.Shape(), xs[0].Shape()) {
			tensor.Panicf(op, tensor.ErrShape, "operand %d has shape %v, operand 0 %v; want one shape", i, x.Shape(), xs[0].Shape())
		}
		views[i] = unsqueezed(x, ax)
	}
	return views, ax
}

// StackBackward returns the gradient of Stack for each of xs: g's slices
// along axis.
func StackBackward(xs []*tensor.Tensor, g *tensor.Tensor, axis int) []*tensor.Tensor {
	const op = "ops.StackBackward"
	views, ax := stackViews(op, xs, axis)
	grads := ConcatBackward(views, g, ax)
	for i, gr := range grads {
		grads[i] = gr.Reshape(xs[i].Shape()...)
	}
	return grads
}

// unsqueezed returns a view of x with a unit axis inserted at ax.
func unsqueezed(x *tensor.Tensor, ax int) *tensor.Tensor {
	return x.Reshape(slices.Insert(x.Shape(), ax, 1)...)
}

// Reshape returns a view of x with a new shape of as many elements; one
// dimension may be −1 and is inferred. It shares x's memory (every tensor
// here is contiguous, so every reshape is a view).
func Reshape[V Operand[E], E any](x V, shape ...int) V {
	return call(ReshapeOp, ShapeAttrs{Shape: shape}, x)
}

func reshape(x *tensor.Tensor, shape ...int) *tensor.Tensor {
	operands("ops.Reshape", x)
	return as("ops.Reshape", func() *tensor.Tensor { return x.Reshape(shape...) })
}

// ReshapeBackward returns the gradient of Reshape, Squeeze, Unsqueeze or
// Flatten: g viewed in x's shape.
func ReshapeBackward(x, g *tensor.Tensor) *tensor.Tensor {
	const op = "ops.ReshapeBackward"
	operands(op, x, g)
	if g.Len() != x.Len() {
		tensor.Panicf(op, tensor.ErrShape, "upstream gradient has shape %v (%d elements); want %d elements for %v", g.Shape(), g.Len(), x.Len(), x.Shape())
	}
	return g.Reshape(x.Shape()...)
}

// Squeeze returns a view of x without the given axes, each of size 1;
// without axes, without every axis of size 1.
func Squeeze[V Operand[E], E any](x V, axes ...int) V {
	return call(SqueezeOp, AxesAttrs{Axes: axes}, x)
}

func squeeze(x *tensor.Tensor, axes ...int) *tensor.Tensor {
	const op = "ops.Squeeze"
	operands(op, x)
	s := x.Shape()
	drop := make([]bool, len(s))
	if len(axes) == 0 {
		for k, n := range s {
			drop[k] = n == 1
		}
	}
	for _, a := range axes {
		k := normAxis(op, a, len(s))
		if s[k] != 1 {
			tensor.Panicf(op, tensor.ErrShape, "axis %d of shape %v has size %d; want size 1", a, s, s[k])
		}
		drop[k] = true
	}
	shape := []int{}
	for k, n := range s {
		if !drop[k] {
			shape = append(shape, n)
		}
	}
	return x.Reshape(shape...)
}

// Unsqueeze returns a view of x with a new axis of size 1 at position axis,
// in [−rank−1, rank].
func Unsqueeze[V Operand[E], E any](x V, axis int) V {
	return call(UnsqueezeOp, AxisAttrs{Axis: axis}, x)
}

func unsqueeze(x *tensor.Tensor, axis int) *tensor.Tensor {
	const op = "ops.Unsqueeze"
	operands(op, x)
	return unsqueezed(x, normAxis(op, axis, x.Rank()+1))
}

// Flatten returns a view of x with axes start…end (inclusive; negative
// counts from the end) merged into one, as PyTorch's flatten; a 0-D
// tensor becomes shape [1].
func Flatten[V Operand[E], E any](x V, start, end int) V {
	return call(FlattenOp, FlattenAttrs{Start: start, End: end}, x)
}

func flatten(x *tensor.Tensor, start, end int) *tensor.Tensor {
	const op = "ops.Flatten"
	operands(op, x)
	if x.Rank() == 0 {
		return x.Reshape(1)
	}
	s := x.Shape()
	a, b := normAxis(op, start, len(s)), normAxis(op, end, len(s))
	if a > b {
		tensor.Panicf(op, tensor.ErrArgument, "start axis %d comes after end axis %d (shape %v)", start, end, s)
	}
	merged, err := device.CheckNumel(s[a : b+1])
	if err != nil {
		tensor.Panicf(op, tensor.ErrShape, "axes %d…%d of shape %v merged have more elements than an int counts", a, b, s)
	}
	shape := append(append(slices.Clone(s[:a]), merged), s[b+1:]...)
	return x.Reshape(shape...)
}
