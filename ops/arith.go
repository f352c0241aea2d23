package ops

import (
	"slices"

	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/tensor"
)

// BroadcastShapes returns the shape that a and b broadcast to under NumPy's
// rules, and ok=false if they are incompatible.
func BroadcastShapes(a, b []int) (shape []int, ok bool) {
	n := max(len(a), len(b))
	shape = make([]int, n)
	for i := range n {
		da, db := dimFromRight(a, n-1-i), dimFromRight(b, n-1-i)
		switch {
		case da == db || db == 1:
			shape[i] = da
		case da == 1:
			shape[i] = db
		default:
			return nil, false
		}
	}
	return shape, true
}

// dimFromRight returns shape's dimension k places from the right, or 1.
func dimFromRight(shape []int, k int) int {
	if k < len(shape) {
		return shape[len(shape)-1-k]
	}
	return 1
}

// broadcastStrides returns the element strides with which a contiguous
// tensor of shape in is read along each axis of out (0 where broadcast).
func broadcastStrides(in, out []int) []int {
	st := make([]int, len(out))
	s := 1
	for k := 0; k < len(out); k++ {
		ax := len(out) - 1 - k
		if d := dimFromRight(in, k); d != 1 {
			st[ax] = s
			s *= d
		}
	}
	return st
}

func layout(op string, a, b *tensor.Tensor) device.Broadcast {
	shape, ok := BroadcastShapes(a.Shape(), b.Shape())
	if !ok {
		tensor.Panicf(op, tensor.ErrShape, "shapes %v and %v do not broadcast", a.Shape(), b.Shape())
	}
	return device.Broadcast{
		Shape:    shape,
		AStrides: broadcastStrides(a.Shape(), shape),
		BStrides: broadcastStrides(b.Shape(), shape),
	}
}

// collapse returns l with adjacent axes merged where every operand walks
// them as one (stride[i] = stride[i+1]·shape[i+1], broadcast along both
// or along neither) and axes of size 1 dropped: the same elements in the
// same order, for kernels that index fewer axes.
func collapse(l device.Broadcast) device.Broadcast {
	c := device.Broadcast{}
	for i, n := range l.Shape {
		if n == 1 {
			continue
		}
		if k := len(c.Shape) - 1; k >= 0 && c.AStrides[k] == l.AStrides[i]*n && c.BStrides[k] == l.BStrides[i]*n {
			c.Shape[k] *= n
			c.AStrides[k], c.BStrides[k] = l.AStrides[i], l.BStrides[i]
			continue
		}
		c.Shape = append(c.Shape, n)
		c.AStrides = append(c.AStrides, l.AStrides[i])
		c.BStrides = append(c.BStrides, l.BStrides[i])
	}
	if slices.Contains(l.Shape, 0) {
		return l // nothing to index: keep the shape that says so
	}
	if c.Shape == nil {
		c.Shape, c.AStrides, c.BStrides = []int{}, []int{}, []int{}
	}
	return c
}

func binary(op string, kind device.BinaryOp, a, b *tensor.Tensor) *tensor.Tensor {
	dev := operands(op, a, b)
	dt := floats(op, a, b)
	l := layout(op, a, b)
	out, ok := output(dev, dt, l.Shape, a, b)
	if ok {
		dev.Binary(kind, out.Buffer(), a.Buffer(), b.Buffer(), collapse(l))
	}
	return out
}

func binaryBackward(op string, kind device.BinaryOp, a, b, g *tensor.Tensor) (ga, gb *tensor.Tensor) {
	dev := operands(op, a, b, g)
	dt := floats(op, a, b, g)
	l := layout(op, a, b)
	sameShape(op, "upstream gradient", g, l.Shape)
	dl := collapse(l)
	grad := func(wrt int, in *tensor.Tensor) *tensor.Tensor {
		full, ok := output(dev, dt, l.Shape, a, b, g)
		if ok {
			dev.BinaryGrad(kind, wrt, full.Buffer(), g.Buffer(), a.Buffer(), b.Buffer(), dl)
		}
		if equal(in.Shape(), l.Shape) {
			return full
		}
		defer full.Release()
		return sumTo(full, in.Shape())
	}
	return grad(0, a), grad(1, b)
}

// Add returns a + b, broadcasting.
func Add[V Operand[E], E any](a, b V) V { return call(AddOp, nil, a, b) }

func add(a, b *tensor.Tensor) *tensor.Tensor { return binary("ops.Add", device.Add, a, b) }

// AddBackward returns the gradients of Add with respect to a and b, given
// the upstream gradient g.
func AddBackward(a, b, g *tensor.Tensor) (ga, gb *tensor.Tensor) {
	return binaryBackward("ops.AddBackward", device.Add, a, b, g)
}

// Sub returns a − b, broadcasting.
func Sub[V Operand[E], E any](a, b V) V { return call(SubOp, nil, a, b) }

func sub(a, b *tensor.Tensor) *tensor.Tensor { return binary("ops.Sub", device.Sub, a, b) }

// SubBackward returns the gradients of Sub with respect to a and b.
func SubBackward(a, b, g *tensor.Tensor) (ga, gb *tensor.Tensor) {
	return binaryBackward("ops.SubBackward", device.Sub, a, b, g)
}

// Mul returns a · b elementwise, broadcasting.
func Mul[V Operand[E], E any](a, b V) V { return call(MulOp, nil, a, b) }

func mul(a, b *tensor.Tensor) *tensor.Tensor { return binary("ops.Mul", device.Mul, a, b) }

// MulBackward returns the gradients of Mul with respect to a and b.
func MulBackward(a, b, g *tensor.Tensor) (ga, gb *tensor.Tensor) {
	return binaryBackward("ops.MulBackward", device.Mul, a, b, g)
}

// Div returns a / b elementwise, broadcasting. Division by zero follows
// IEEE 754 (±Inf or NaN), as in NumPy and PyTorch.
func Div[V Operand[E], E any](a, b V) V { return call(DivOp, nil, a, b) }

func div(a, b *tensor.Tensor) *tensor.Tensor { return binary("ops.Div", device.Div, a, b) }

// DivBackward returns the gradients of Div with respect to a and b,
// g/b and −g·(a/b)/b, PyTorch's: ±Inf or NaN where b = 0.
func DivBackward(a, b, g *tensor.Tensor) (ga, gb *tensor.Tensor) {
	return binaryBackward("ops.DivBackward", device.Div, a, b, g)
}

// Pow returns aᵇ elementwise, broadcasting, for real a and b with the
// special cases of IEEE 754's pow (as Go's math.Pow): a negative base with
// an integer exponent is defined ((−2)³ = −8), with any other exponent NaN.
func Pow[V Operand[E], E any](a, b V) V { return call(PowOp, nil, a, b) }

func pow(a, b *tensor.Tensor) *tensor.Tensor { return binary("ops.Pow", device.Pow, a, b) }

// PowBackward returns the gradients of Pow: g·b·aᵇ⁻¹ for a, and g·aᵇ·ln a
// for b, taken as 0 where a ≤ 0.
func PowBackward(a, b, g *tensor.Tensor) (ga, gb *tensor.Tensor) {
	return binaryBackward("ops.PowBackward", device.Pow, a, b, g)
}

// FloorDivide returns ⌊a / b⌋ elementwise, broadcasting (floor semantics,
// as Python's // and PyTorch's floor_divide, special values included:
// ±Inf // 1 is NaN, −1 // Inf is −1).
func FloorDivide[V Operand[E], E any](a, b V) V { return call(FloorDivideOp, nil, a, b) }

func floorDivide(a, b *tensor.Tensor) *tensor.Tensor {
	return binary("ops.FloorDivide", device.FloorDiv, a, b)
}

// FloorDivideBackward returns the gradients of FloorDivide: zeros.
func FloorDivideBackward(a, b, g *tensor.Tensor) (ga, gb *tensor.Tensor) {
	return binaryBackward("ops.FloorDivideBackward", device.FloorDiv, a, b, g)
}

// Mod returns the remainder of floor division, a − b·⌊a/b⌋, elementwise
// and broadcasting: the result takes the divisor's sign, as Python's % and
// PyTorch's remainder. Mod(a, ±Inf) is a where a has the sign of b, else
// ±Inf; Mod(±Inf, b) and Mod(a, 0) are NaN.
func Mod[V Operand[E], E any](a, b V) V { return call(ModOp, nil, a, b) }

func mod(a, b *tensor.Tensor) *tensor.Tensor { return binary("ops.Mod", device.Mod, a, b) }

// ModBackward returns the gradients of Mod: g for a and −g·⌊a/b⌋ for b.
func ModBackward(a, b, g *tensor.Tensor) (ga, gb *tensor.Tensor) {
	return binaryBackward("ops.ModBackward", device.Mod, a, b, g)
}

// SumTo sums x over the axes along which shape was broadcast to x's shape,
// returning a tensor of the given shape: the adjoint of BroadcastTo.
func SumTo[V Operand[E], E any](x V, shape []int) V {
	return call(SumToOp, ShapeAttrs{Shape: shape}, x)
}

func sumTo(x *tensor.Tensor, shape []int) *tensor.Tensor {
	const op = "ops.SumTo"
	dev := operands(op, x)
	dt := floats(op, x)
	xs := x.Shape()
	if b, ok := BroadcastShapes(shape, xs); !ok || !equal(b, xs) {
		tensor.Panicf(op, tensor.ErrShape, "cannot sum %v to %v: %v does not broadcast to %v", xs, shape, shape, xs)
	}
	var axes []int
	for ax := range xs {
		if dimFromRight(shape, len(xs)-1-ax) == 1 && (xs[ax] != 1 || ax < len(xs)-len(shape)) {
			axes = append(axes, ax)
		}
	}
	out, ok := output(dev, dt, shape, x)
	if ok {
		if len(axes) == 0 {
			dev.Copy(out.Buffer(), x.Buffer())
		} else {
			dev.Reduce(device.Sum, out.Buffer(), x.Buffer(), xs, axes)
		}
	}
	return out
}

// SumToBackward returns the gradient of SumTo with respect to x: g
// broadcast back to x's shape.
func SumToBackward(x, g *tensor.Tensor) *tensor.Tensor {
	operands("ops.SumToBackward", x, g)
	floats("ops.SumToBackward", x, g)
	return broadcastTo(g, x.Shape())
}

// BroadcastTo returns x broadcast to shape, as a new contiguous tensor.
func BroadcastTo[V Operand[E], E any](x V, shape []int) V {
	return call(BroadcastToOp, ShapeAttrs{Shape: shape}, x)
}

func broadcastTo(x *tensor.Tensor, shape []int) *tensor.Tensor {
	return scaledBroadcast("ops.BroadcastTo", x, shape, 1)
}

// BroadcastToBackward returns the gradient of BroadcastTo with respect to
// x: g summed back to x's shape.
func BroadcastToBackward(x, g *tensor.Tensor) *tensor.Tensor {
	operands("ops.BroadcastToBackward", x, g)
	floats("ops.BroadcastToBackward", x, g)
	return sumTo(g, x.Shape())
}

// scaledBroadcast returns x broadcast to shape and multiplied by scale.
func scaledBroadcast(op string, x *tensor.Tensor, shape []int, scale float64) *tensor.Tensor {
	dev := operands(op, x)
	dt := floats(op, x)
	if b, ok := BroadcastShapes(x.Shape(), shape); !ok || !equal(b, shape) {
		tensor.Panicf(op, tensor.ErrShape, "cannot broadcast %v to %v", x.Shape(), shape)
	}
	out, ok := output(dev, dt, shape, x)
	if !ok {
		return out
	}
	s, ok := output(dev, dt, nil)
	if !ok {
		return failedAs(out, s.Err())
	}
	defer s.Release()
	dev.Fill(s.Buffer(), scale)
	l := device.Broadcast{Shape: shape, AStrides: broadcastStrides(x.Shape(), shape), BStrides: make([]int, len(shape))}
	dev.Binary(device.Mul, out.Buffer(), x.Buffer(), s.Buffer(), l)
	return out
}

// Clone returns a copy of x on the same device.
func Clone(x *tensor.Tensor) *tensor.Tensor {
	dev := operands("ops.Clone", x)
	out, ok := output(dev, x.DType(), x.Shape(), x)
	if ok {
		dev.Copy(out.Buffer(), x.Buffer())
	}
	return out
}
