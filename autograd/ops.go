package autograd

import (
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/tensor"
)

// The ops of the table as functions of variables, each a line over Apply:
// see package ops for their conventions.

// Add returns a + b, broadcasting.
func Add(a, b *Var) *Var { return Apply(ops.AddOp, nil, a, b) }

// Sub returns a − b, broadcasting.
func Sub(a, b *Var) *Var { return Apply(ops.SubOp, nil, a, b) }

// Mul returns a·b, broadcasting.
func Mul(a, b *Var) *Var { return Apply(ops.MulOp, nil, a, b) }

// Div returns a / b, broadcasting.
func Div(a, b *Var) *Var { return Apply(ops.DivOp, nil, a, b) }

// Neg returns −x.
func Neg(x *Var) *Var { return Apply(ops.NegOp, nil, x) }

// Exp returns eˣ.
func Exp(x *Var) *Var { return Apply(ops.ExpOp, nil, x) }

// Log returns ln x.
func Log(x *Var) *Var { return Apply(ops.LogOp, nil, x) }

// Sqrt returns √x.
func Sqrt(x *Var) *Var { return Apply(ops.SqrtOp, nil, x) }

// Relu returns max(x, 0).
func Relu(x *Var) *Var { return Apply(ops.ReluOp, nil, x) }

// Sigmoid returns 1/(1 + e⁻ˣ).
func Sigmoid(x *Var) *Var { return Apply(ops.SigmoidOp, nil, x) }

// Tanh returns tanh x.
func Tanh(x *Var) *Var { return Apply(ops.TanhOp, nil, x) }

// Gelu returns x·Φ(x).
func Gelu(x *Var) *Var { return Apply(ops.GeluOp, nil, x) }

// Silu returns x·σ(x).
func Silu(x *Var) *Var { return Apply(ops.SiluOp, nil, x) }

// Softplus returns ln(1 + e^(β·x))/β, x where β·x > threshold.
func Softplus(x *Var, beta, threshold float64) *Var {
	return Apply(ops.SoftplusOp, ops.SoftplusAttrs{Beta: beta, Threshold: threshold}, x)
}

// Softmax returns the softmax of x along axis.
func Softmax(x *Var, axis int) *Var { return Apply(ops.SoftmaxOp, ops.AxisAttrs{Axis: axis}, x) }

// LogSoftmax returns the log-softmax of x along axis.
func LogSoftmax(x *Var, axis int) *Var { return Apply(ops.LogSoftmaxOp, ops.AxisAttrs{Axis: axis}, x) }

// Sum returns the sum over axes (every axis when none).
func Sum(x *Var, axes ...int) *Var { return Apply(ops.SumOp, ops.ReduceAttrs{Axes: axes}, x) }

// Mean returns the mean over axes (every axis when none).
func Mean(x *Var, axes ...int) *Var { return Apply(ops.MeanOp, ops.ReduceAttrs{Axes: axes}, x) }

// MatMul returns a·b with NumPy's matmul rules.
func MatMul(a, b *Var) *Var { return Apply(ops.MatmulOp, nil, a, b) }

// Reshape returns x viewed with a new shape.
func Reshape(x *Var, shape ...int) *Var { return Apply(ops.ReshapeOp, ops.ShapeAttrs{Shape: shape}, x) }

// Flatten returns x with axes start…end merged.
func Flatten(x *Var, start, end int) *Var {
	return Apply(ops.FlattenOp, ops.FlattenAttrs{Start: start, End: end}, x)
}

// Cast returns x converted to dtype dt (float32 ⇄ float16); its gradient
// is the upstream one cast back to x's dtype.
func Cast(x *Var, dt device.DType) *Var { return Apply(ops.CastOp, ops.CastAttrs{DType: dt}, x) }

// Linear returns x·Wᵀ + b (b may be nil).
func Linear(x, w, b *Var) *Var {
	if b == nil {
		return Apply(ops.LinearOp, nil, x, w)
	}
	return Apply(ops.LinearOp, nil, x, w, b)
}

// Conv2d returns the convolution of the NCHW images x with w, plus b
// (may be nil).
func Conv2d(x, w, b *Var, win ops.Window) *Var {
	if b == nil {
		return Apply(ops.Conv2dOp, win, x, w)
	}
	return Apply(ops.Conv2dOp, win, x, w, b)
}

// LayerNorm returns x normalised over its last axes (shape) to zero mean
// and unit variance, times w plus b (either may be nil; b only with w).
func LayerNorm(x, w, b *Var, shape []int, eps float64) *Var {
	return Apply(ops.LayerNormOp, ops.NormAttrs{Shape: shape, Eps: eps}, affineInputs("autograd.LayerNorm", x, w, b)...)
}

// BatchNorm returns x (N, C, …) normalised per channel with the batch's
// statistics, times w plus b ([C], either may be nil; b only with w).
func BatchNorm(x, w, b *Var, eps float64) *Var {
	return Apply(ops.BatchNormOp, ops.NormAttrs{Eps: eps}, affineInputs("autograd.BatchNorm", x, w, b)...)
}

// RMSNorm returns x/√(mean(x²) + eps) over its last axes (shape), times w
// (may be nil).
func RMSNorm(x, w *Var, shape []int, eps float64) *Var {
	return Apply(ops.RMSNormOp, ops.NormAttrs{Shape: shape, Eps: eps}, affineInputs("autograd.RMSNorm", x, w, nil)...)
}

// affineInputs returns x and the affine parameters that are not nil.
func affineInputs(op string, x, w, b *Var) []*Var {
	switch {
	case w == nil && b != nil:
		tensor.Panicf(op, tensor.ErrArgument, "a bias without a weight; pass a weight of ones")
	case w == nil:
		return []*Var{x}
	case b == nil:
		return []*Var{x, w}
	}
	return []*Var{x, w, b}
}

// Where returns a where cond ≠ 0, else b, broadcasting; cond gets no
// gradient.
func Where(cond, a, b *Var) *Var { return Apply(ops.WhereOp, nil, cond, a, b) }

// MaskedFill returns x with value where mask ≠ 0 (an attention mask's
// −Inf, say).
func MaskedFill(x, mask *Var, value float64) *Var {
	return Apply(ops.MaskedFillOp, ops.FillAttrs{Value: value}, x, mask)
}

// MaxPool2d returns the window maxima of x.
func MaxPool2d(x *Var, win ops.Window) *Var { return Apply(ops.MaxPool2dOp, win, x) }

// AvgPool2d returns the window means of x.
func AvgPool2d(x *Var, win ops.Window) *Var { return Apply(ops.AvgPool2dOp, win, x) }

// CrossEntropy returns the cross-entropy of logits with int32 class
// indices (or probabilities), reduced by r.
func CrossEntropy(logits, target *Var, r ops.Reduction) *Var {
	return Apply(ops.CrossEntropyOp, ops.CrossEntropyAttrs{Reduction: r}, logits, target)
}

// CrossEntropyWith returns CrossEntropy with class weights (weight may be
// nil), an ignored label and label smoothing; o.Weight must be nil (the
// weight is the variable, which gets no gradient).
func CrossEntropyWith(logits, target, weight *Var, r ops.Reduction, o ops.ClassOptions) *Var {
	if o.Weight != nil {
		tensor.Panicf("autograd.CrossEntropyWith", tensor.ErrArgument, "o.Weight is set; pass the weights as a variable")
	}
	a := ops.CrossEntropyAttrs{Reduction: r, Ignore: o.Ignore, IgnoreIndex: o.IgnoreIndex, LabelSmoothing: o.LabelSmoothing}
	if weight == nil {
		return Apply(ops.CrossEntropyOp, a, logits, target)
	}
	return Apply(ops.CrossEntropyOp, a, logits, target, weight)
}

// MSE returns the mean squared error (reduced by r).
func MSE(p, t *Var, r ops.Reduction) *Var { return Apply(ops.MSEOp, ops.LossAttrs{Reduction: r}, p, t) }

// ScaledDotProductAttention returns softmax(q·kᵀ·scale + mask)·v through
// the fused attention kernels (ops.ScaledDotProductAttention); mask may
// be nil. a's other fields apply; its Mask must be nil (the mask is the
// variable).
func ScaledDotProductAttention(q, k, v, mask *Var, a ops.Attention) *Var {
	if a.Mask != nil {
		tensor.Panicf("autograd.ScaledDotProductAttention", tensor.ErrArgument, "a.Mask is set; pass the mask as a variable")
	}
	at := ops.AttentionAttrs{Causal: a.Causal, Scale: a.Scale, Dropout: a.Dropout, Seed: a.Seed, BoolMask: a.BoolMask}
	if mask == nil {
		return Apply(ops.ScaledDotProductAttentionOp, at, q, k, v)
	}
	return Apply(ops.ScaledDotProductAttentionOp, at, q, k, v, mask)
}

// Embedding returns the rows of table named by the int32 indices idx.
func Embedding(idx, table *Var) *Var { return Apply(ops.EmbeddingOp, nil, idx, table) }

// Slice returns x[start:stop:step] along axis (Python's bounds).
func Slice(x *Var, axis, start, stop, step int) *Var {
	return Apply(ops.SliceOp, ops.SliceAttrs{Axis: axis, Start: start, Stop: stop, Step: step}, x)
}

// Permute returns x with axis k of the result axis perm[k] of x.
func Permute(x *Var, perm ...int) *Var { return Apply(ops.PermuteOp, ops.PermuteAttrs{Perm: perm}, x) }

// Interpolate returns x [..., H, W] resized to size [OH, OW] by mode
// ("nearest" or "bilinear"; ops.Interpolate).
func Interpolate(x *Var, size []int, mode string, alignCorners bool) *Var {
	return Apply(ops.InterpolateOp, ops.InterpolateAttrs{Shape: size, Mode: mode, AlignCorners: alignCorners}, x)
}

// AdaptiveAvgPool2d returns the means of x [..., H, W] over size [OH, OW]
// windows (ops.AdaptiveAvgPool2d).
func AdaptiveAvgPool2d(x *Var, size []int) *Var {
	return Apply(ops.AdaptiveAvgPool2dOp, ops.ShapeAttrs{Shape: size}, x)
}

// GroupNorm returns x (N, C, …) normalised over groups of channels, times
// w plus b ([C], either may be nil; b only with w).
func GroupNorm(x, w, b *Var, groups int, eps float64) *Var {
	return Apply(ops.GroupNormOp, ops.GroupNormAttrs{Groups: groups, Eps: eps}, affineInputs("autograd.GroupNorm", x, w, b)...)
}

// Gather returns x's elements along axis named by the int32 indices idx
// (ops.Gather).
func Gather(x *Var, axis int, idx *Var) *Var {
	return Apply(ops.GatherOp, ops.AxisAttrs{Axis: axis}, x, idx)
}

// ScatterAdd returns x with src added at the int32 indices idx along axis
// (ops.ScatterAdd).
func ScatterAdd(x *Var, axis int, idx, src *Var) *Var {
	return Apply(ops.ScatterAddOp, ops.AxisAttrs{Axis: axis}, x, idx, src)
}

// Conv1d returns the NCL convolution of x with w and b (b may be nil).
func Conv1d(x, w, b *Var, win ops.Window) *Var {
	if b == nil {
		return Apply(ops.Conv1dOp, win, x, w)
	}
	return Apply(ops.Conv1dOp, win, x, w, b)
}

// ConvTranspose2d returns the transposed convolution of x with w and b
// (b may be nil; ops.ConvTranspose2d).
func ConvTranspose2d(x, w, b *Var, win ops.Window, outPad [2]int) *Var {
	a := ops.ConvTransposeAttrs{Window: win, OutputPadding: outPad}
	if b == nil {
		return Apply(ops.ConvTranspose2dOp, a, x, w)
	}
	return Apply(ops.ConvTranspose2dOp, a, x, w, b)
}
