package ops

import (
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/tensor"
)

func reduce(op string, kind device.ReduceOp, x *tensor.Tensor, axes []int, shape []int) *tensor.Tensor {
	dev := operands(op, x)
	dt := floats(op, x)
	out, ok := output(dev, dt, shape, x)
	if ok {
		dev.Reduce(kind, out.Buffer(), x.Buffer(), x.Shape(), axes)
	}
	return out
}

func allAxes(rank int) []int {
	axes := make([]int, rank)
	for i := range axes {
		axes[i] = i
	}
	return axes
}

// axisShape returns x's shape reduced over axis, with or without keepdims.
func axisShape(x *tensor.Tensor, axis int, keepdims bool) []int {
	s := x.Shape()
	if keepdims {
		s[axis] = 1
		return s
	}
	return append(s[:axis], s[axis+1:]...)
}

// Sum returns the sum of all elements of x as a 0-D tensor.
func Sum(x *tensor.Tensor) *tensor.Tensor {
	operands("ops.Sum", x)
	return reduce("ops.Sum", device.Sum, x, allAxes(x.Rank()), nil)
}

// SumBackward returns the gradient of Sum with respect to x, given the 0-D
// upstream gradient g.
func SumBackward(x, g *tensor.Tensor) *tensor.Tensor {
	return allBackward("ops.SumBackward", x, g, 1)
}

// Mean returns the mean of all elements of x as a 0-D tensor.
func Mean(x *tensor.Tensor) *tensor.Tensor {
	operands("ops.Mean", x)
	return reduce("ops.Mean", device.Mean, x, allAxes(x.Rank()), nil)
}

// MeanBackward returns the gradient of Mean with respect to x.
func MeanBackward(x, g *tensor.Tensor) *tensor.Tensor {
	return allBackward("ops.MeanBackward", x, g, 1/float64(max(x.Len(), 1)))
}

// allBackward broadcasts the 0-D gradient g of a full reduction of x back
// to x's shape, times scale.
func allBackward(op string, x, g *tensor.Tensor, scale float64) *tensor.Tensor {
	operands(op, x, g)
	floats(op, x, g)
	sameShape(op, "upstream gradient", g, nil)
	return scaledBroadcast(op, g, x.Shape(), scale)
}

// SumAxis returns the sum of x over one axis (negative axes count from the
// end). With keepdims the axis stays with size 1.
func SumAxis(x *tensor.Tensor, axis int, keepdims bool) *tensor.Tensor {
	const op = "ops.SumAxis"
	operands(op, x)
	ax := normAxis(op, axis, x.Rank())
	return reduce(op, device.Sum, x, []int{ax}, axisShape(x, ax, keepdims))
}

// SumAxisBackward returns the gradient of SumAxis with respect to x.
func SumAxisBackward(x, g *tensor.Tensor, axis int, keepdims bool) *tensor.Tensor {
	return axisBackward("ops.SumAxisBackward", x, g, axis, keepdims, false)
}

// MeanAxis returns the mean of x over one axis.
func MeanAxis(x *tensor.Tensor, axis int, keepdims bool) *tensor.Tensor {
	const op = "ops.MeanAxis"
	operands(op, x)
	ax := normAxis(op, axis, x.Rank())
	return reduce(op, device.Mean, x, []int{ax}, axisShape(x, ax, keepdims))
}

// MeanAxisBackward returns the gradient of MeanAxis with respect to x.
func MeanAxisBackward(x, g *tensor.Tensor, axis int, keepdims bool) *tensor.Tensor {
	return axisBackward("ops.MeanAxisBackward", x, g, axis, keepdims, true)
}

func axisBackward(op string, x, g *tensor.Tensor, axis int, keepdims, mean bool) *tensor.Tensor {
	operands(op, x, g)
	floats(op, x, g)
	ax := normAxis(op, axis, x.Rank())
	sameShape(op, "upstream gradient", g, axisShape(x, ax, keepdims))
	scale := 1.0
	if mean {
		scale = 1 / float64(max(x.Dim(ax), 1))
	}
	gk := g.Reshape(axisShape(x, ax, true)...)
	defer gk.Release()
	return scaledBroadcast(op, gk, x.Shape(), scale)
}
