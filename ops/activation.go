package ops

import (
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/tensor"
)

// preluAlpha returns alpha as a view that broadcasts against x: one slope
// for every element, or one per channel along x's axis 1.
func preluAlpha(op string, x, alpha *tensor.Tensor) *tensor.Tensor {
	operands(op, x, alpha)
	if alpha.Len() == 1 && alpha.Rank() <= 1 {
		return alpha.Reshape()
	}
	if alpha.Rank() != 1 || x.Rank() < 2 || alpha.Dim(0) != x.Dim(1) {
		tensor.Panicf(op, tensor.ErrShape, "alpha has shape %v for x of shape %v; want one slope ([] or [1]) or one per channel ([C] with x of shape [N, C, ...])", alpha.Shape(), x.Shape())
	}
	s := ones(x.Rank() - 1)
	s[0] = alpha.Dim(0)
	return alpha.Reshape(s...)
}

// Prelu returns x where x > 0 and alpha·x where x ≤ 0, with one learned
// slope (alpha of shape [] or [1]) or one per channel (alpha of shape [C],
// x of shape [N, C, ...]), as PyTorch's prelu.
func Prelu(x, alpha *tensor.Tensor) *tensor.Tensor {
	a := preluAlpha("ops.Prelu", x, alpha)
	defer a.Release()
	return binary("ops.Prelu", device.Prelu, x, a)
}

// PreluBackward returns the gradients of Prelu: for x, g where x > 0 and
// alpha·g elsewhere; for alpha, the sum of x·g where x ≤ 0, shaped like alpha.
func PreluBackward(x, alpha, g *tensor.Tensor) (gx, galpha *tensor.Tensor) {
	const op = "ops.PreluBackward"
	a := preluAlpha(op, x, alpha)
	defer a.Release()
	gx, ga := binaryBackward(op, device.Prelu, x, a, g)
	defer ga.Release()
	return gx, ga.Reshape(alpha.Shape()...)
}

// softmax checks the arguments of a softmax along axis of x; a 0-D x is
// one row of one element.
func softmaxArgs(op string, x *tensor.Tensor, axis int) (dev device.Device, dt device.DType, shape []int, ax int) {
	dev = operands(op, x)
	dt = floats(op, x)
	shape = x.Shape()
	if len(shape) == 0 {
		shape = []int{1}
	}
	return dev, dt, shape, normAxis(op, axis, len(shape))
}

func softmax(op string, x *tensor.Tensor, axis int, log bool) *tensor.Tensor {
	dev, dt, shape, ax := softmaxArgs(op, x, axis)
	out, ok := output(dev, dt, x.Shape(), x)
	if ok && x.Len() > 0 { // an empty x's rows may be more than a kernel could walk
		dev.Softmax(out.Buffer(), x.Buffer(), shape, ax, log)
		keep(out, x)
	}
	return out
}

func softmaxBackward(op string, x, g *tensor.Tensor, axis int, log bool) *tensor.Tensor {
	dev, dt, shape, ax := softmaxArgs(op, x, axis)
	operands(op, x, g)
	floats(op, x, g)
	sameShape(op, "upstream gradient", g, x.Shape())
	y := softmax(op, x, axis, log)
	defer y.Release()
	out, ok := output(dev, dt, x.Shape(), y, g)
	if ok && x.Len() > 0 {
		dev.SoftmaxGrad(out.Buffer(), y.Buffer(), g.Buffer(), shape, ax, log)
		keep(out, y, g)
	}
	return out
}

// Softmax returns exp(x)/Σ exp(x) along axis (negative axes count from the
// end), computed stably by subtracting each row's maximum: finite for
// logits of any size, NaN for a row holding NaN or +Inf, or only −Inf.
func Softmax(x *tensor.Tensor, axis int) *tensor.Tensor {
	return softmax("ops.Softmax", x, axis, false)
}

// SoftmaxBackward returns the gradient of Softmax, y·(g − Σ g·y) along the
// axis with y = Softmax(x, axis): O(n) per row. A row of one element has
// gradient 0.
func SoftmaxBackward(x, g *tensor.Tensor, axis int) *tensor.Tensor {
	return softmaxBackward("ops.SoftmaxBackward", x, g, axis, false)
}

// LogSoftmax returns x − log Σ exp(x) along axis, stably (the log-sum-exp
// is taken after subtracting each row's maximum).
func LogSoftmax(x *tensor.Tensor, axis int) *tensor.Tensor {
	return softmax("ops.LogSoftmax", x, axis, true)
}

// LogSoftmaxBackward returns the gradient of LogSoftmax, g − softmax(x)·Σ g
// along the axis.
func LogSoftmaxBackward(x, g *tensor.Tensor, axis int) *tensor.Tensor {
	return softmaxBackward("ops.LogSoftmaxBackward", x, g, axis, true)
}

// SGD updates w in place by one step of stochastic gradient descent,
// w ← w − lr·g, on w's device.
func SGD(w, g *tensor.Tensor, lr float64) {
	Axpy(w, g, -lr)
}

// Axpy sets y ← y + alpha·x in place.
func Axpy(y, x *tensor.Tensor, alpha float64) {
	const op = "ops.Axpy"
	dev := operands(op, y, x)
	floats(op, y, x)
	sameShape(op, "x", x, y.Shape())
	if x.Buffer() != nil && x.Buffer() == y.Buffer() {
		tensor.Panicf(op, tensor.ErrArgument, "x and y share memory; an in-place update needs distinct tensors")
	}
	if err := x.Err(); err != nil {
		y.SetErr(err)
	}
	if y.Err() != nil {
		return
	}
	dev.Axpy(y.Buffer(), x.Buffer(), alpha)
	keep(y, x)
}
