// Package nn holds layers for training with autograd: Linear, Conv1d,
// Conv2d, ConvTranspose2d, MaxPool2d, AvgPool2d, AdaptiveAvgPool2d,
// Upsample, Flatten, Dropout, BatchNorm, LayerNorm, GroupNorm, RMSNorm,
// Embedding, MultiheadAttention, Transformer (a pre-norm encoder layer),
// the activations as layers, Residual and Sequential. Parameters are initialised
// as PyTorch's defaults do (Kaiming uniform: weights and biases in
// ±1/√fan_in; a normalisation's weight 1 and bias 0), from a seed, so a
// seed gives the same network on every device. Layers run on their
// parameters' device; Train switches Dropout, BatchNorm and the layers
// holding dropout between training and evaluation.
package nn

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/tensor"
	"github.com/x448/float16"
)

// Layer is one stage of a network.
type Layer interface {
	// Forward applies the layer to x.
	Forward(x *autograd.Var) *autograd.Var
	// Params returns the layer's parameters (none for most).
	Params() []*autograd.Var
}

// uniform returns a parameter of the given shape drawn from U(−bound,
// bound) with the seed.
func uniform(dev device.Device, dt device.DType, bound float64, seed uint64, shape ...int) (*autograd.Var, error) {
	t, err := tensor.Uniform(dev, dt, -bound, bound, seed, shape...)
	if err != nil {
		return nil, err
	}
	return autograd.Leaf(t, true), nil
}

// LinearLayer is x·Wᵀ + b.
type LinearLayer struct{ W, B *autograd.Var }

// Linear returns a linear layer of in→out features, initialised from seed.
func Linear(dev device.Device, dt device.DType, in, out int, seed uint64) (*LinearLayer, error) {
	bound := 1 / math.Sqrt(float64(max(in, 1)))
	w, err := uniform(dev, dt, bound, seed, out, in)
	if err != nil {
		return nil, err
	}
	b, err := uniform(dev, dt, bound, seed+1, out)
	if err != nil {
		return nil, err
	}
	return &LinearLayer{W: w, B: b}, nil
}

// Forward returns x·Wᵀ + b.
// A float16 x (mixed precision) computes with float16 copies of W and b.
func (l *LinearLayer) Forward(x *autograd.Var) *autograd.Var {
	return ops.Linear(x, like(l.W, x), like(l.B, x))
}

// like returns p in x's dtype: a layer given float16 inputs (mixed
// precision) computes with float16 copies of its float32 parameters,
// whose gradients come back float32 through the cast.
func like(p, x *autograd.Var) *autograd.Var {
	if p == nil || p.Value().DType() == x.Value().DType() {
		return p
	}
	return ops.Cast(p, x.Value().DType())
}

// Params returns W and b.
func (l *LinearLayer) Params() []*autograd.Var { return []*autograd.Var{l.W, l.B} }

// Conv2dLayer is a 2-D convolution with bias.
type Conv2dLayer struct {
	W, B   *autograd.Var
	Window ops.Window
}

// Conv2d returns a convolution of in→out channels with a k×k kernel,
// stride 1, no padding (change Window for others), from seed.
func Conv2d(dev device.Device, dt device.DType, in, out, k int, seed uint64) (*Conv2dLayer, error) {
	bound := 1 / math.Sqrt(float64(max(in*k*k, 1)))
	w, err := uniform(dev, dt, bound, seed, out, in, k, k)
	if err != nil {
		return nil, err
	}
	b, err := uniform(dev, dt, bound, seed+1, out)
	if err != nil {
		return nil, err
	}
	return &Conv2dLayer{W: w, B: b, Window: ops.Window{Stride: [2]int{1, 1}}}, nil
}

// Forward convolves x. A float16 x (mixed precision) computes with
// float16 copies of W and b.
func (c *Conv2dLayer) Forward(x *autograd.Var) *autograd.Var {
	return ops.Conv2d(x, like(c.W, x), like(c.B, x), c.Window)
}

// Params returns W and b.
func (c *Conv2dLayer) Params() []*autograd.Var { return []*autograd.Var{c.W, c.B} }

// Func is a layer without parameters: a function of its input.
type Func func(x *autograd.Var) *autograd.Var

// Forward applies f.
func (f Func) Forward(x *autograd.Var) *autograd.Var { return f(x) }

// Params returns none.
func (f Func) Params() []*autograd.Var { return nil }

// ReluLayer is the ReLU layer's type (see Relu).
type ReluLayer struct{}

// Forward applies ReLU.
func (ReluLayer) Forward(x *autograd.Var) *autograd.Var { return ops.Relu(x) }

// Params returns none.
func (ReluLayer) Params() []*autograd.Var { return nil }

// Relu is the ReLU layer. In a Sequential, a Relu directly followed by a
// MaxPool2d runs after the pooling instead (see Sequential.Forward).
var Relu ReluLayer

// Tanh is the tanh layer.
var Tanh = Func(ops.Tanh[*autograd.Var])

// Sigmoid is the sigmoid layer.
var Sigmoid = Func(ops.Sigmoid[*autograd.Var])

// Gelu is the GELU layer.
var Gelu = Func(ops.Gelu[*autograd.Var])

// NormLayer is a LayerNorm or an RMSNorm over the last axes of its input
// (Shape), with an elementwise affine transform: W (PyTorch's weight,
// ones at first) and, for a LayerNorm, B (bias, zeros at first).
type NormLayer struct {
	W, B   *autograd.Var
	Shape  []int
	Eps    float64
	Center bool // LayerNorm; false: RMSNorm
}

// LayerNorm returns PyTorch's LayerNorm over the last axes, of the given
// shape, with eps 1e-5 and an affine transform.
func LayerNorm(dev device.Device, dt device.DType, shape ...int) (*NormLayer, error) {
	w, err := tensor.Ones(dev, dt, shape...)
	if err != nil {
		return nil, err
	}
	b, err := tensor.Zeros(dev, dt, shape...)
	if err != nil {
		w.Release()
		return nil, err
	}
	return &NormLayer{W: autograd.Leaf(w, true), B: autograd.Leaf(b, true), Shape: shape, Eps: ops.DefaultLayerNormEps, Center: true}, nil
}

// RMSNorm returns PyTorch's RMSNorm over the last axes, of the given shape,
// with a weight and PyTorch's default eps: the dtype's machine epsilon
// (that of float32 for float16, which computes in float32).
func RMSNorm(dev device.Device, dt device.DType, shape ...int) (*NormLayer, error) {
	w, err := tensor.Ones(dev, dt, shape...)
	if err != nil {
		return nil, err
	}
	eps := 0x1p-23
	if dt == device.Float64 {
		eps = 0x1p-52
	}
	return &NormLayer{W: autograd.Leaf(w, true), Shape: shape, Eps: eps}, nil
}

// Forward normalises x. A float16 x (mixed precision) computes with
// float16 copies of W and B.
func (l *NormLayer) Forward(x *autograd.Var) *autograd.Var {
	if l.Center {
		return ops.LayerNorm(x, l.Shape, like(l.W, x), like(l.B, x), l.Eps)
	}
	return ops.RMSNorm(x, l.Shape, like(l.W, x), l.Eps)
}

// Params returns W and, for a LayerNorm, B.
func (l *NormLayer) Params() []*autograd.Var {
	if l.B == nil {
		return []*autograd.Var{l.W}
	}
	return []*autograd.Var{l.W, l.B}
}

// BatchNormLayer is PyTorch's BatchNorm1d or BatchNorm2d over the channels
// (axis 1) of its input: in training, the batch's statistics normalise
// and the running ones follow them with Momentum (the running variance
// unbiased, as PyTorch); in evaluation, the running ones normalise. W
// (weight) starts at ones and B (bias) at zeros.
type BatchNormLayer struct {
	W, B                    *autograd.Var
	RunningMean, RunningVar *tensor.Tensor
	NumBatchesTracked       int
	Momentum, Eps           float64
	Training                bool
}

// BatchNorm returns a batch normalisation of c channels, for inputs (N,
// C) or (N, C, L) as BatchNorm1d, or (N, C, H, W) as BatchNorm2d, with
// PyTorch's defaults: momentum 0.1, eps 1e-5, training.
func BatchNorm(dev device.Device, dt device.DType, c int) (*BatchNormLayer, error) {
	var ts [4]*tensor.Tensor
	for i, v := range []float64{1, 0, 0, 1} {
		t, err := tensor.Full(dev, dt, v, c)
		if err != nil {
			for _, u := range ts[:i] {
				u.Release()
			}
			return nil, err
		}
		ts[i] = t
	}
	return &BatchNormLayer{W: autograd.Leaf(ts[0], true), B: autograd.Leaf(ts[1], true), RunningMean: ts[2], RunningVar: ts[3],
		Momentum: 0.1, Eps: ops.DefaultLayerNormEps, Training: true}, nil
}

// Forward normalises x. A float16 x (mixed precision) computes with
// float16 copies of W and B; the running statistics stay in their dtype.
//
// In training a batch of one value per channel is refused, as PyTorch
// refuses it: its unbiased variance is NaN, and would make the running
// variance, and so every evaluation after it, NaN. An eps that is not a
// finite value ≥ 0 is refused in evaluation as in training.
func (l *BatchNormLayer) Forward(x *autograd.Var) *autograd.Var {
	const op = "nn.BatchNorm"
	if !(l.Eps >= 0) || math.IsInf(l.Eps, 0) {
		tensor.Panicf(op, tensor.ErrArgument, "eps %v; want a finite eps ≥ 0", l.Eps)
	}
	if !l.Training {
		return l.eval(x)
	}
	if s := x.Value().Shape(); len(s) >= 2 && device.Numel(s) > 0 && device.Numel(s)/s[1] == 1 {
		tensor.Panicf(op, tensor.ErrShape, "input of shape %v in training: one value per channel; want more than one (its variance is not defined)", s)
	}
	y := ops.BatchNorm(x, like(l.W, x), like(l.B, x), l.Eps)
	l.track(x.Value())
	return y
}

// track moves the running statistics toward x's, without a gradient.
func (l *BatchNormLayer) track(x *tensor.Tensor) {
	axes := make([]int, 0, x.Rank()-1)
	for ax := range x.Rank() {
		if ax != 1 {
			axes = append(axes, ax)
		}
	}
	dt := l.RunningMean.DType()
	mean, variance := ops.Mean(x, axes...), ops.Var(x, axes, 1, false)
	for _, s := range []struct {
		run  **tensor.Tensor
		stat *tensor.Tensor
	}{{&l.RunningMean, mean}, {&l.RunningVar, variance}} {
		stat := s.stat
		if stat.DType() != dt {
			stat = ops.Cast(s.stat, dt)
			s.stat.Release()
		}
		keep := tensor.Must(tensor.Scalar(stat.Device(), dt, 1-l.Momentum))
		part := ops.Mul(*s.run, keep)
		ops.Axpy(part, stat, l.Momentum)
		keep.Release()
		stat.Release()
		(*s.run).Release()
		*s.run = part
	}
	l.NumBatchesTracked++
}

// eval returns (x − running mean)/√(running var + eps)·W + B.
func (l *BatchNormLayer) eval(x *autograd.Var) *autograd.Var {
	c := l.RunningMean.Len()
	if s := x.Value().Shape(); len(s) < 2 || s[1] != c {
		tensor.Panicf("nn.BatchNorm", tensor.ErrShape, "input of shape %v in evaluation; want (N, %d, …)", s, c)
	}
	shape := make([]int, x.Value().Rank())
	for i := range shape {
		shape[i] = 1
	}
	shape[1] = c
	eps := tensor.Must(tensor.Scalar(l.RunningVar.Device(), l.RunningVar.DType(), l.Eps))
	ve := ops.Add(l.RunningVar, eps)
	eps.Release()
	rho := ops.PowScalar(ve, -0.5)
	ve.Release()
	stat := func(t *tensor.Tensor) *autograd.Var {
		return like(autograd.Temp(t.Reshape(shape...)), x)
	}
	w, b := ops.Reshape(like(l.W, x), shape...), ops.Reshape(like(l.B, x), shape...)
	xn := ops.Mul(ops.Sub(x, stat(l.RunningMean)), stat(rho))
	rho.Release()
	return ops.Add(ops.Mul(xn, w), b)
}

// Params returns W and B.
func (l *BatchNormLayer) Params() []*autograd.Var { return []*autograd.Var{l.W, l.B} }

// Train sets training (true) or evaluation mode.
func (l *BatchNormLayer) Train(on bool) { l.Training = on }

// SiLU is the SiLU (swish) layer, x·σ(x).
var SiLU = Func(ops.Silu[*autograd.Var])

// Flatten flattens every axis after the first (the batch).
var Flatten = Func(func(x *autograd.Var) *autograd.Var { return ops.Flatten(x, 1, -1) })

// MaxPool2dLayer is a max pooling over the window Win.
type MaxPool2dLayer struct{ Win ops.Window }

// MaxPool2d returns a k×k max pooling of stride k.
func MaxPool2d(k int) MaxPool2dLayer {
	return MaxPool2dLayer{Win: ops.Window{Kernel: [2]int{k, k}, Stride: [2]int{k, k}}}
}

// Forward applies the pooling.
func (p MaxPool2dLayer) Forward(x *autograd.Var) *autograd.Var { return ops.MaxPool2d(x, p.Win) }

// Params returns none.
func (MaxPool2dLayer) Params() []*autograd.Var { return nil }

// AvgPool2d returns a k×k average pooling of stride k.
func AvgPool2d(k int) Func {
	win := ops.Window{Kernel: [2]int{k, k}, Stride: [2]int{k, k}}
	return func(x *autograd.Var) *autograd.Var { return ops.AvgPool2d(x, win) }
}

// DropoutLayer zeroes each element with probability P while training and
// scales the rest by 1/(1−P); in evaluation it is the identity. Its masks
// come from a seeded generator on the host, so runs repeat exactly.
type DropoutLayer struct {
	P        float64
	Training bool
	rng      *rand.Rand
}

// Dropout returns a dropout layer in training mode.
func Dropout(p float64, seed uint64) *DropoutLayer {
	if !(p >= 0 && p < 1) {
		tensor.Panicf("nn.Dropout", tensor.ErrArgument, "probability %v; want 0 ≤ p < 1", p)
	}
	return &DropoutLayer{P: p, Training: true, rng: rand.New(rand.NewPCG(seed, 0x0d))}
}

// Forward applies the layer; a nil x panics with ErrArgument, in
// evaluation too.
func (d *DropoutLayer) Forward(x *autograd.Var) *autograd.Var {
	notNil("nn.Dropout.Forward", x)
	if !d.Training || d.P == 0 {
		return x
	}
	v := x.Value()
	m, err := d.mask(v)
	if err != nil {
		m = tensor.Failed(v.Device(), v.DType(), err, v.Shape()...)
	}
	return ops.Mul(x, autograd.Temp(m))
}

// mask draws the next mask for v: 1/(1−P) where kept, 0 where dropped,
// made in v's dtype on the host (no per-element conversion for float32
// and float16), uploaded to v's device.
func (d *DropoutLayer) mask(v *tensor.Tensor) (*tensor.Tensor, error) {
	keep := 1 / (1 - d.P)
	n := v.Len()
	switch v.DType() {
	case device.Float32:
		m, k := make([]float32, n), float32(keep)
		for i := range m {
			if d.rng.Float64() >= d.P {
				m[i] = k
			}
		}
		return tensor.FromFloat32(v.Device(), m, v.Shape()...)
	case device.Float16:
		m, k := make([]uint16, n), float16.Fromfloat32(float32(keep)).Bits()
		for i := range m {
			if d.rng.Float64() >= d.P {
				m[i] = k
			}
		}
		return tensor.FromFloat16Bits(v.Device(), m, v.Shape()...)
	}
	m := make([]float64, n)
	for i := range m {
		if d.rng.Float64() >= d.P {
			m[i] = keep
		}
	}
	return tensor.FromValues(v.Device(), v.DType(), m, v.Shape()...)
}

// Params returns none.
func (d *DropoutLayer) Params() []*autograd.Var { return nil }

// Train sets training (true) or evaluation mode.
func (d *DropoutLayer) Train(on bool) { d.Training = on }

// Sequential applies its layers in order.
type Sequential []Layer

// notNil panics with ErrArgument, naming op, if x is nil: layers that
// may return their input as it is check it first.
func notNil(op string, x *autograd.Var) {
	if x == nil {
		tensor.Panicf(op, tensor.ErrArgument, "input is nil")
	}
}

// check panics with ErrArgument, naming op, if a layer of s is nil.
func (s Sequential) check(op string) {
	for i, l := range s {
		if l == nil {
			tensor.Panicf(op, tensor.ErrArgument, "layer %d of %d is nil", i, len(s))
		}
	}
}

// Forward applies every layer, in order but for one exchange: a Relu
// directly followed by a MaxPool2d runs as the pooling, then the ReLU.
// A maximum commutes with ReLU, a non-decreasing function that keeps
// positive values as they are, so the result is the same bit for bit,
// and so is every gradient (a window's maximum is at the same first
// position unless it is at most 0, where ReLU's gradient is 0 either way;
// NaN wins in both), but one: at a NaN input that its window's pooling
// does not pick (an earlier NaN won), the gradient is 0, as PyTorch's
// ReLU gives it, not NaN. The ReLU then runs over the pooled tensor, a
// quarter of the elements for 2×2 windows, forward and backward
// (docs/kernel-choices.md, convolutions).
func (s Sequential) Forward(x *autograd.Var) *autograd.Var {
	s.check("nn.Sequential.Forward")
	notNil("nn.Sequential.Forward", x)
	for i := 0; i < len(s); i++ {
		if _, ok := s[i].(ReluLayer); ok && i+1 < len(s) {
			if p, ok := s[i+1].(MaxPool2dLayer); ok {
				x = ops.Relu(p.Forward(x))
				i++
				continue
			}
		}
		x = s[i].Forward(x)
	}
	return x
}

// Params returns every layer's parameters, in order.
func (s Sequential) Params() []*autograd.Var {
	s.check("nn.Sequential.Params")
	var ps []*autograd.Var
	for _, l := range s {
		ps = append(ps, l.Params()...)
	}
	return ps
}

// Train sets training (true) or evaluation mode on the layers that have
// one (Dropout, BatchNorm).
func (s Sequential) Train(on bool) {
	s.check("nn.Sequential.Train")
	for _, l := range s {
		if l, ok := l.(Trainer); ok {
			l.Train(on)
		}
	}
}

// ParamNames returns the names of Params, in order, as PyTorch's
// state_dict names them for a Sequential: "<index>.weight" and
// "<index>.bias" for a Linear or Conv2d at that index, "<index>.<name>"
// for a Namer's.
func (s Sequential) ParamNames() []string {
	s.check("nn.Sequential.ParamNames")
	var names []string
	for i, l := range s {
		switch l := l.(type) {
		case Namer:
			for _, n := range l.ParamNames() {
				names = append(names, fmt.Sprintf("%d.%s", i, n))
			}
		case *LinearLayer, *Conv2dLayer:
			names = append(names, fmt.Sprintf("%d.weight", i), fmt.Sprintf("%d.bias", i))
		case *NormLayer:
			for _, name := range []string{"weight", "bias"}[:len(l.Params())] {
				names = append(names, fmt.Sprintf("%d.%s", i, name))
			}
		case *BatchNormLayer:
			names = append(names, fmt.Sprintf("%d.weight", i), fmt.Sprintf("%d.bias", i))
		}
	}
	return names
}

// StateDict returns the parameters' tensors by their ParamNames, and a
// BatchNorm's running statistics as PyTorch names them:
// "<index>.running_mean", "<index>.running_var" and
// "<index>.num_batches_tracked" (PyTorch's is int64; this is a new int32
// 0-D tensor of NumBatchesTracked, which loading into it leaves as it
// is: with a momentum the count changes nothing).
func (s Sequential) StateDict() map[string]*tensor.Tensor {
	s.check("nn.Sequential.StateDict")
	d := map[string]*tensor.Tensor{}
	names := s.ParamNames()
	for i, p := range s.Params() {
		d[names[i]] = p.Value()
	}
	for i, l := range s {
		if bn, ok := l.(*BatchNormLayer); ok {
			d[fmt.Sprintf("%d.running_mean", i)] = bn.RunningMean
			d[fmt.Sprintf("%d.running_var", i)] = bn.RunningVar
			n, err := tensor.Scalar(bn.RunningMean.Device(), device.Int32, float64(bn.NumBatchesTracked))
			if err != nil {
				n = tensor.Failed(bn.RunningMean.Device(), device.Int32, err)
			}
			d[fmt.Sprintf("%d.num_batches_tracked", i)] = n
		}
	}
	return d
}

// UpsampleLayer is PyTorch's Upsample with a size: x [..., H, W] resized
// to Size by Mode ("nearest" or "bilinear"), AlignCorners for bilinear.
type UpsampleLayer struct {
	Size         [2]int
	Mode         string
	AlignCorners bool
}

// Upsample returns an upsampling layer to size [oh, ow].
func Upsample(oh, ow int, mode string, alignCorners bool) UpsampleLayer {
	return UpsampleLayer{Size: [2]int{oh, ow}, Mode: mode, AlignCorners: alignCorners}
}

// Forward resizes x.
func (u UpsampleLayer) Forward(x *autograd.Var) *autograd.Var {
	return ops.Interpolate(x, u.Size[:], u.Mode, u.AlignCorners)
}

// Params returns none.
func (UpsampleLayer) Params() []*autograd.Var { return nil }

// AdaptiveAvgPool2d returns PyTorch's AdaptiveAvgPool2d to [oh, ow].
func AdaptiveAvgPool2d(oh, ow int) Func {
	return func(x *autograd.Var) *autograd.Var { return ops.AdaptiveAvgPool2d(x, []int{oh, ow}) }
}
