package ops

import (
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/tensor"
)

// Relu returns max(x, 0) elementwise.
func Relu(x *tensor.Tensor) *tensor.Tensor {
	const op = "ops.Relu"
	dev := operands(op, x)
	dt := floats(op, x)
	out, ok := output(dev, dt, x.Shape(), x)
	if ok {
		dev.Unary(device.Relu, out.Buffer(), x.Buffer())
	}
	return out
}

// ReluBackward returns the gradient of Relu with respect to x: g where
// x > 0 and 0 elsewhere (the subgradient at 0 is 0, as in PyTorch).
func ReluBackward(x, g *tensor.Tensor) *tensor.Tensor {
	const op = "ops.ReluBackward"
	dev := operands(op, x, g)
	dt := floats(op, x, g)
	sameShape(op, "upstream gradient", g, x.Shape())
	out, ok := output(dev, dt, x.Shape(), x, g)
	if ok {
		dev.UnaryGrad(device.Relu, out.Buffer(), x.Buffer(), g.Buffer())
	}
	return out
}

func checkXent(op string, logits, labels *tensor.Tensor) (dev device.Device, dt device.DType, n, c int) {
	dev = operands(op, logits, labels)
	dt = floats(op, logits)
	n, c = matrix(op, "logits", logits)
	if labels.DType() != device.Int32 {
		tensor.Panicf(op, tensor.ErrDType, "labels are %v; want int32 class indices", labels.DType())
	}
	sameShape(op, "labels", labels, []int{n})
	if c == 0 {
		tensor.Panicf(op, tensor.ErrShape, "logits %v have no classes", logits.Shape())
	}
	return dev, dt, n, c
}

// SoftmaxCrossEntropy returns the mean over the batch of the cross-entropy
// between softmax(logits) and the int32 class labels, as a 0-D tensor.
// logits is N×C and labels has N entries in [0, C). It is computed with a
// log-sum-exp, so it is stable for large logits; a label outside [0, C)
// makes the loss NaN (it cannot be checked without waiting for the device).
func SoftmaxCrossEntropy(logits, labels *tensor.Tensor) *tensor.Tensor {
	const op = "ops.SoftmaxCrossEntropy"
	dev, dt, n, c := checkXent(op, logits, labels)
	rows, ok := output(dev, dt, []int{n}, logits, labels)
	if !ok {
		return tensor.Failed(dev, dt, rows.Err())
	}
	defer rows.Release()
	dev.SoftmaxCrossEntropy(rows.Buffer(), logits.Buffer(), labels.Buffer(), n, c)
	return reduce(op, device.Mean, rows, []int{0}, nil)
}

// SoftmaxCrossEntropyBackward returns the gradient of SoftmaxCrossEntropy
// with respect to the logits, (softmax(logits) − onehot(labels))·g/N, for
// the 0-D upstream gradient g. Labels get no gradient.
func SoftmaxCrossEntropyBackward(logits, labels, g *tensor.Tensor) *tensor.Tensor {
	const op = "ops.SoftmaxCrossEntropyBackward"
	dev, dt, n, c := checkXent(op, logits, labels)
	operands(op, logits, g)
	floats(op, logits, g)
	sameShape(op, "upstream gradient", g, nil)
	out, ok := output(dev, dt, logits.Shape(), logits, labels, g)
	if ok {
		dev.SoftmaxCrossEntropyGrad(out.Buffer(), logits.Buffer(), labels.Buffer(), g.Buffer(), n, c)
	}
	return out
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
}
