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

// Sum returns the sum of all elements of x as a 0-D tensor; 0 for an
// empty x.
func Sum(x *tensor.Tensor) *tensor.Tensor { return reduction("ops.Sum", device.Sum, x, nil, false) }

// SumBackward returns the gradient of Sum: the 0-D g broadcast to x's shape.
func SumBackward(x, g *tensor.Tensor) *tensor.Tensor {
	return sumBackward("ops.SumBackward", x, g, nil, false, false)
}

// SumAxis returns the sum of x over one axis (negative axes count from the
// end). With keepdims the axis stays with size 1.
func SumAxis(x *tensor.Tensor, axis int, keepdims bool) *tensor.Tensor {
	return reduction("ops.SumAxis", device.Sum, x, []int{axis}, keepdims)
}

// SumAxisBackward returns the gradient of SumAxis.
func SumAxisBackward(x, g *tensor.Tensor, axis int, keepdims bool) *tensor.Tensor {
	return sumBackward("ops.SumAxisBackward", x, g, []int{axis}, keepdims, false)
}

// SumAxes returns the sum of x over a set of axes (nil: every axis).
func SumAxes(x *tensor.Tensor, axes []int, keepdims bool) *tensor.Tensor {
	return reduction("ops.SumAxes", device.Sum, x, axes, keepdims)
}

// SumAxesBackward returns the gradient of SumAxes.
func SumAxesBackward(x, g *tensor.Tensor, axes []int, keepdims bool) *tensor.Tensor {
	return sumBackward("ops.SumAxesBackward", x, g, axes, keepdims, false)
}

// Mean returns the mean of all elements of x as a 0-D tensor; NaN for an
// empty x, as in PyTorch.
func Mean(x *tensor.Tensor) *tensor.Tensor { return reduction("ops.Mean", device.Mean, x, nil, false) }

// MeanBackward returns the gradient of Mean: g/len(x) everywhere.
func MeanBackward(x, g *tensor.Tensor) *tensor.Tensor {
	return sumBackward("ops.MeanBackward", x, g, nil, false, true)
}

// MeanAxis returns the mean of x over one axis.
func MeanAxis(x *tensor.Tensor, axis int, keepdims bool) *tensor.Tensor {
	return reduction("ops.MeanAxis", device.Mean, x, []int{axis}, keepdims)
}

// MeanAxisBackward returns the gradient of MeanAxis.
func MeanAxisBackward(x, g *tensor.Tensor, axis int, keepdims bool) *tensor.Tensor {
	return sumBackward("ops.MeanAxisBackward", x, g, []int{axis}, keepdims, true)
}

// MeanAxes returns the mean of x over a set of axes (nil: every axis).
func MeanAxes(x *tensor.Tensor, axes []int, keepdims bool) *tensor.Tensor {
	return reduction("ops.MeanAxes", device.Mean, x, axes, keepdims)
}

// MeanAxesBackward returns the gradient of MeanAxes.
func MeanAxesBackward(x, g *tensor.Tensor, axes []int, keepdims bool) *tensor.Tensor {
	return sumBackward("ops.MeanAxesBackward", x, g, axes, keepdims, true)
}

// Max returns the largest element of x as a 0-D tensor: NaN if x holds a
// NaN. An empty x panics with ErrShape (a maximum of nothing has no value).
func Max(x *tensor.Tensor) *tensor.Tensor { return reduction("ops.Max", device.Max, x, nil, false) }

// MaxBackward returns the gradient of Max: g split equally among the
// elements equal to the maximum ([1, 3, 2, 3] → [0, g/2, 0, g/2]), as
// PyTorch's amax does.
func MaxBackward(x, g *tensor.Tensor) *tensor.Tensor {
	return extremumBackward("ops.MaxBackward", device.Max, x, g, nil, false)
}

// MaxAxis returns the maximum of x over one axis.
func MaxAxis(x *tensor.Tensor, axis int, keepdims bool) *tensor.Tensor {
	return reduction("ops.MaxAxis", device.Max, x, []int{axis}, keepdims)
}

// MaxAxisBackward returns the gradient of MaxAxis, split among ties.
func MaxAxisBackward(x, g *tensor.Tensor, axis int, keepdims bool) *tensor.Tensor {
	return extremumBackward("ops.MaxAxisBackward", device.Max, x, g, []int{axis}, keepdims)
}

// MaxAxes returns the maximum of x over a set of axes (nil: every axis).
func MaxAxes(x *tensor.Tensor, axes []int, keepdims bool) *tensor.Tensor {
	return reduction("ops.MaxAxes", device.Max, x, axes, keepdims)
}

// MaxAxesBackward returns the gradient of MaxAxes, split among ties.
func MaxAxesBackward(x, g *tensor.Tensor, axes []int, keepdims bool) *tensor.Tensor {
	return extremumBackward("ops.MaxAxesBackward", device.Max, x, g, axes, keepdims)
}

// Min returns the smallest element of x as a 0-D tensor, as Max does.
func Min(x *tensor.Tensor) *tensor.Tensor { return reduction("ops.Min", device.Min, x, nil, false) }

// MinBackward returns the gradient of Min, split equally among ties.
func MinBackward(x, g *tensor.Tensor) *tensor.Tensor {
	return extremumBackward("ops.MinBackward", device.Min, x, g, nil, false)
}

// MinAxis returns the minimum of x over one axis.
func MinAxis(x *tensor.Tensor, axis int, keepdims bool) *tensor.Tensor {
	return reduction("ops.MinAxis", device.Min, x, []int{axis}, keepdims)
}

// MinAxisBackward returns the gradient of MinAxis, split among ties.
func MinAxisBackward(x, g *tensor.Tensor, axis int, keepdims bool) *tensor.Tensor {
	return extremumBackward("ops.MinAxisBackward", device.Min, x, g, []int{axis}, keepdims)
}

// MinAxes returns the minimum of x over a set of axes (nil: every axis).
func MinAxes(x *tensor.Tensor, axes []int, keepdims bool) *tensor.Tensor {
	return reduction("ops.MinAxes", device.Min, x, axes, keepdims)
}

// MinAxesBackward returns the gradient of MinAxes, split among ties.
func MinAxesBackward(x, g *tensor.Tensor, axes []int, keepdims bool) *tensor.Tensor {
	return extremumBackward("ops.MinAxesBackward", device.Min, x, g, axes, keepdims)
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
func ArgMax(x *tensor.Tensor) *tensor.Tensor {
	return argReduce("ops.ArgMax", device.ArgMax, x, 0, true, false)
}

// ArgMaxAxis returns the int32 indices of the largest elements along one
// axis, the first among ties.
func ArgMaxAxis(x *tensor.Tensor, axis int, keepdims bool) *tensor.Tensor {
	return argReduce("ops.ArgMaxAxis", device.ArgMax, x, axis, false, keepdims)
}

// ArgMin returns the int32 index of the smallest element of the flattened
// x, the first among ties (and the first NaN, if any).
func ArgMin(x *tensor.Tensor) *tensor.Tensor {
	return argReduce("ops.ArgMin", device.ArgMin, x, 0, true, false)
}

// ArgMinAxis returns the int32 indices of the smallest elements along one
// axis, the first among ties.
func ArgMinAxis(x *tensor.Tensor, axis int, keepdims bool) *tensor.Tensor {
	return argReduce("ops.ArgMinAxis", device.ArgMin, x, axis, false, keepdims)
}
