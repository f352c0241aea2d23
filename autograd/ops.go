package autograd

import (
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/ops"
)

// The ops of the table as functions of variables, each a line over Apply:
// see package ops for their conventions.

// Add returns a + b, broadcasting.
func Add(a, b *Var) *Var { return Apply("add", ops.Attrs{}, a, b) }

// Sub returns a − b, broadcasting.
func Sub(a, b *Var) *Var { return Apply("sub", ops.Attrs{}, a, b) }

// Mul returns a·b, broadcasting.
func Mul(a, b *Var) *Var { return Apply("mul", ops.Attrs{}, a, b) }

// Div returns a / b, broadcasting.
func Div(a, b *Var) *Var { return Apply("div", ops.Attrs{}, a, b) }

// Neg returns −x.
func Neg(x *Var) *Var { return Apply("neg", ops.Attrs{}, x) }

// Exp returns eˣ.
func Exp(x *Var) *Var { return Apply("exp", ops.Attrs{}, x) }

// Log returns ln x.
func Log(x *Var) *Var { return Apply("log", ops.Attrs{}, x) }

// Sqrt returns √x.
func Sqrt(x *Var) *Var { return Apply("sqrt", ops.Attrs{}, x) }

// Relu returns max(x, 0).
func Relu(x *Var) *Var { return Apply("relu", ops.Attrs{}, x) }

// Sigmoid returns 1/(1 + e⁻ˣ).
func Sigmoid(x *Var) *Var { return Apply("sigmoid", ops.Attrs{}, x) }

// Tanh returns tanh x.
func Tanh(x *Var) *Var { return Apply("tanh", ops.Attrs{}, x) }

// Gelu returns x·Φ(x).
func Gelu(x *Var) *Var { return Apply("gelu", ops.Attrs{}, x) }

// Softmax returns the softmax of x along axis.
func Softmax(x *Var, axis int) *Var { return Apply("softmax", ops.Attrs{Axis: axis}, x) }

// LogSoftmax returns the log-softmax of x along axis.
func LogSoftmax(x *Var, axis int) *Var { return Apply("log_softmax", ops.Attrs{Axis: axis}, x) }

// Sum returns the sum over axes (every axis when none).
func Sum(x *Var, axes ...int) *Var { return Apply("sum", ops.Attrs{Axes: axes}, x) }

// Mean returns the mean over axes (every axis when none).
func Mean(x *Var, axes ...int) *Var { return Apply("mean", ops.Attrs{Axes: axes}, x) }

// MatMul returns a·b with NumPy's matmul rules.
func MatMul(a, b *Var) *Var { return Apply("matmul", ops.Attrs{}, a, b) }

// Reshape returns x viewed with a new shape.
func Reshape(x *Var, shape ...int) *Var { return Apply("reshape", ops.Attrs{Shape: shape}, x) }

// Flatten returns x with axes start…end merged.
func Flatten(x *Var, start, end int) *Var {
	return Apply("flatten", ops.Attrs{Start: start, Stop: end}, x)
}

// Cast returns x converted to dtype dt (float32 ⇄ float16); its gradient
// is the upstream one cast back to x's dtype.
func Cast(x *Var, dt device.DType) *Var { return Apply("cast", ops.Attrs{DType: dt}, x) }

// Linear returns x·Wᵀ + b (b may be nil).
func Linear(x, w, b *Var) *Var {
	if b == nil {
		return Apply("linear", ops.Attrs{}, x, w)
	}
	return Apply("linear", ops.Attrs{}, x, w, b)
}

// Conv2d returns the convolution of the NCHW images x with w, plus b
// (may be nil).
func Conv2d(x, w, b *Var, win ops.Window) *Var {
	if b == nil {
		return Apply("conv2d", ops.Attrs{Window: win}, x, w)
	}
	return Apply("conv2d", ops.Attrs{Window: win}, x, w, b)
}

// MaxPool2d returns the window maxima of x.
func MaxPool2d(x *Var, win ops.Window) *Var { return Apply("max_pool2d", ops.Attrs{Window: win}, x) }

// AvgPool2d returns the window means of x.
func AvgPool2d(x *Var, win ops.Window) *Var { return Apply("avg_pool2d", ops.Attrs{Window: win}, x) }

// CrossEntropy returns the cross-entropy of logits with int32 class
// indices (or probabilities), reduced by r.
func CrossEntropy(logits, target *Var, r ops.Reduction) *Var {
	return Apply("cross_entropy", ops.Attrs{Reduction: r}, logits, target)
}

// MSE returns the mean squared error (reduced by r).
func MSE(p, t *Var, r ops.Reduction) *Var { return Apply("mse", ops.Attrs{Reduction: r}, p, t) }
