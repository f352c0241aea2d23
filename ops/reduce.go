package ops

import (
	"slices"

	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/tensor"
)

// reduceAxes checks and normalises the axes of a reduction of x (nil:
// every axis; negative axes count from the end) and returns them sorted,
// with the output's shape and the shape with the reduced axes kept as 1.
func reduceAxes(op string, x *tensor.Tensor, axes []int, keepdims bool) (ax, shape, kshape []int) {
	rank := x.Rank()
	if axes == nil {
		ax = allAxes(rank)
	} else {
		for _, a := range axes {
			ax = append(ax, normAxis(op, a, rank))
		}
		slices.Sort(ax)
		if len(slices.Compact(slices.Clone(ax))) != len(ax) {
			tensor.Panicf(op, tensor.ErrArgument, "axes %v repeat an axis", axes)
		}
	}
	kshape = x.Shape()
	for _, a := range ax {
		kshape[a] = 1
	}
	if keepdims {
		return ax, kshape, kshape
	}
	for i, d := range x.Shape() {
		if !slices.Contains(ax, i) {
			shape = append(shape, d)
		}
	}
	return ax, dims(shape), kshape
}

func dims(s []int) []int { return append([]int{}, s...) }

func allAxes(rank int) []int {
	axes := make([]int, rank)
	for i := range axes {
		axes[i] = i
	}
	return axes
}

// reducedCount is the number of elements folded into each output.
func reducedCount(x *tensor.Tensor, ax []int) int {
	n := 1
	for _, a := range ax {
		n *= x.Dim(a)
	}
	return n
}

func reduction(op string, kind device.ReduceOp, x *tensor.Tensor, axes []int, keepdims bool) *tensor.Tensor {
	dev := operands(op, x)
	dt := floats(op, x)
	ax, shape, _ := reduceAxes(op, x, axes, keepdims)
	if (kind == device.Max || kind == device.Min) && reducedCount(x, ax) == 0 && device.Numel(shape) > 0 {
		tensor.Panicf(op, tensor.ErrShape, "cannot reduce the empty axes %v of %v: %v has no identity", ax, x.Shape(), kind)
	}
	out, ok := output(dev, dt, shape, x)
	if ok {
		dev.Reduce(kind, out.Buffer(), x.Buffer(), x.Shape(), ax)
	}
	return out
}

// sumBackward broadcasts g back over the reduced axes, times scale (1 for
// Sum, 1/count for Mean).
func sumBackward(op string, x, g *tensor.Tensor, axes []int, keepdims, mean bool) *tensor.Tensor {
	operands(op, x, g)
	floats(op, x, g)
	ax, shape, kshape := reduceAxes(op, x, axes, keepdims)
	sameShape(op, "upstream gradient", g, shape)
	scale := 1.0
	if mean {
		scale = 1 / float64(reducedCount(x, ax)) // +Inf for nothing: the mean of nothing is NaN
	}
	gk := g.Reshape(kshape...)
	defer gk.Release()
	return scaledBroadcast(op, gk, x.Shape(), scale)
}

// extremumBackward routes g to the elements equal to the max (or min),
// split equally among ties: mask·g/count, mask = (x == max).
func extremumBackward(op string, kind device.ReduceOp, x, g *tensor.Tensor, axes []int, keepdims bool) *tensor.Tensor {
	operands(op, x, g)
	floats(op, x, g)
	ax, shape, kshape := reduceAxes(op, x, axes, keepdims)
	sameShape(op, "upstream gradient", g, shape)
	m := reduction(op, kind, x, ax, true)
	defer m.Release()
	mask := binary(op, device.Equal, x, m)
	defer mask.Release()
	count := reduction(op, device.Sum, mask, ax, true)
	defer count.Release()
	gk := g.Reshape(kshape...)
	defer gk.Release()
	share := binary(op, device.Div, gk, count)
	defer share.Release()
	return binary(op, device.Mul, mask, share)
}

// Sum returns the sum of x over axes (negative axes count from the end;
// none: every axis, a 0-D result), the axes dropped; 0 over an empty set.
func Sum[V Operand[E], E any](x V, axes ...int) V { return call(SumOp, ReduceAttrs{Axes: axes}, x) }

// SumKeepdims is Sum keeping the reduced axes, of size 1 (PyTorch's
// keepdim=True).
func SumKeepdims[V Operand[E], E any](x V, axes ...int) V {
	return call(SumOp, ReduceAttrs{Axes: axes, Keepdims: true}, x)
}

// SumBackward returns the gradient of Sum (keepdims false) or SumKeepdims
// over axes (nil: every axis): g broadcast to x's shape.
func SumBackward(x, g *T, axes []int, keepdims bool) *T {
	return sumBackward("ops.SumBackward", x, g, axes, keepdims, false)
}

func sum(x *T, axes []int, keepdims bool) *T {
	return reduction("ops.Sum", device.Sum, x, axes, keepdims)
}

// Mean returns the mean of x over axes (none: every axis), as Sum; NaN
// over an empty set, as in PyTorch.
func Mean[V Operand[E], E any](x V, axes ...int) V { return call(MeanOp, ReduceAttrs{Axes: axes}, x) }

// MeanKeepdims is Mean keeping the reduced axes, of size 1.
func MeanKeepdims[V Operand[E], E any](x V, axes ...int) V {
	return call(MeanOp, ReduceAttrs{Axes: axes, Keepdims: true}, x)
}

// MeanBackward returns the gradient of Mean or MeanKeepdims over axes:
// g divided by the count, broadcast to x's shape.
func MeanBackward(x, g *T, axes []int, keepdims bool) *T {
	return sumBackward("ops.MeanBackward", x, g, axes, keepdims, true)
}

func mean(x *T, axes []int, keepdims bool) *T {
	return reduction("ops.Mean", device.Mean, x, axes, keepdims)
}

// Max returns the maximum of x over axes (none: every axis), as Sum:
// NaN where a NaN is reduced. An empty set panics with ErrShape (a
// maximum of nothing has no value). PyTorch's amax.
func Max[V Operand[E], E any](x V, axes ...int) V { return call(MaxOp, ReduceAttrs{Axes: axes}, x) }

// MaxKeepdims is Max keeping the reduced axes, of size 1.
func MaxKeepdims[V Operand[E], E any](x V, axes ...int) V {
	return call(MaxOp, ReduceAttrs{Axes: axes, Keepdims: true}, x)
}

// MaxBackward returns the gradient of Max or MaxKeepdims over axes: g
// split equally among the elements equal to the maximum ([1, 3, 2, 3] →
// [0, g/2, 0, g/2]), as PyTorch's amax does.
func MaxBackward(x, g *T, axes []int, keepdims bool) *T {
	return extremumBackward("ops.MaxBackward", device.Max, x, g, axes, keepdims)
}

func maxOf(x *T, axes []int, keepdims bool) *T {
	return reduction("ops.Max", device.Max, x, axes, keepdims)
}

// Min returns the minimum of x over axes, as Max.
func Min[V Operand[E], E any](x V, axes ...int) V { return call(MinOp, ReduceAttrs{Axes: axes}, x) }

// MinKeepdims is Min keeping the reduced axes, of size 1.
func MinKeepdims[V Operand[E], E any](x V, axes ...int) V {
	return call(MinOp, ReduceAttrs{Axes: axes, Keepdims: true}, x)
}

// MinBackward returns the gradient of Min or MinKeepdims, split equally
// among ties.
func MinBackward(x, g *T, axes []int, keepdims bool) *T {
	return extremumBackward("ops.MinBackward", device.Min, x, g, axes, keepdims)
}

func minOf(x *T, axes []int, keepdims bool) *T {
	return reduction("ops.Min", device.Min, x, axes, keepdims)
}

// argReduce returns int32 indices of x's maximum (or minimum) along axis,
// or into the flattened x when all is set.
func argReduce(op string, kind device.ReduceOp, x *tensor.Tensor, axis int, all, keepdims bool) *tensor.Tensor {
	dev := operands(op, x)
	floats(op, x)
	src, ax := x, axis
	if all {
		src, ax = x.Reshape(x.Len()), 0
		defer src.Release()
	}
	axes, shape, _ := reduceAxes(op, src, []int{ax}, keepdims)
	if all {
		shape = []int{}
		if keepdims {
			shape = ones(x.Rank())
		}
	}
	if src.Dim(axes[0]) == 0 {
		tensor.Panicf(op, tensor.ErrShape, "cannot take the %v of an empty axis of %v", kind, x.Shape())
	}
	out, ok := output(dev, device.Int32, shape, x)
	if ok {
		dev.Reduce(kind, out.Buffer(), src.Buffer(), src.Shape(), axes)
	}
	return out
}

func ones(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = 1
	}
	return s
}

// ArgMax returns the int32 index of the largest element of the flattened
// x, as a 0-D tensor: the first among ties, and the first NaN if any (NaN
// counts as the largest value, as in PyTorch). It has no gradient.
func ArgMax[V Operand[E], E any](x V) V { return call(ArgmaxOp, ArgAttrs{All: true}, x) }

// ArgMaxAxis returns the int32 indices of the largest elements along one
// axis, the first among ties; with keepdims the axis stays, of size 1.
func ArgMaxAxis[V Operand[E], E any](x V, axis int, keepdims bool) V {
	return call(ArgmaxOp, ArgAttrs{Axis: axis, Keepdims: keepdims}, x)
}

// ArgMin returns the int32 index of the smallest element of the flattened
// x, the first among ties (and the first NaN, if any).
func ArgMin[V Operand[E], E any](x V) V { return call(ArgminOp, ArgAttrs{All: true}, x) }

// ArgMinAxis returns the int32 indices of the smallest elements along one
// axis, the first among ties.
func ArgMinAxis[V Operand[E], E any](x V, axis int, keepdims bool) V {
	return call(ArgminOp, ArgAttrs{Axis: axis, Keepdims: keepdims}, x)
}

func argMax(x *T, a ArgAttrs) *T {
	if a.All {
		return argReduce("ops.ArgMax", device.ArgMax, x, 0, true, false)
	}
	return argReduce("ops.ArgMaxAxis", device.ArgMax, x, a.Axis, false, a.Keepdims)
}

func argMin(x *T, a ArgAttrs) *T {
	if a.All {
		return argReduce("ops.ArgMin", device.ArgMin, x, 0, true, false)
	}
	return argReduce("ops.ArgMinAxis", device.ArgMin, x, a.Axis, false, a.Keepdims)
}
