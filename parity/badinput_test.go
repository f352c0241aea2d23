package parity_test

import (
	"math"
	"testing"

	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/internal/errtest"
	"github.com/extensor/extensor/internal/gputest"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/tensor"
)

// TestBadInput checks, on each backend, that the catalogue's ops refuse
// arguments they cannot accept with a *tensor.Error that names the op, is
// of the right kind and says what was given.
func TestBadInput(t *testing.T) {
	devs := []device.Device{cpu.New()}
	if g := gputest.OrNil(t); g != nil {
		devs = append(devs, g)
	}
	for _, dev := range devs {
		t.Run(dev.Name(), func(t *testing.T) { badInput(t, dev) })
	}
}

func badInput(t *testing.T, dev device.Device) {
	f := func(shape ...int) *tensor.Tensor {
		x := tensor.Must(tensor.Uniform(dev, device.Float32, -1, 1, 1, shape...))
		t.Cleanup(x.Release)
		return x
	}
	i := func(vals ...int32) *tensor.Tensor {
		x := tensor.Must(tensor.FromInt32(dev, vals))
		t.Cleanup(x.Release)
		return x
	}
	m23, m32, v3, s := f(2, 3), f(3, 2), f(3), f()
	i23 := tensor.Must(tensor.FromInt32(dev, make([]int32, 6), 2, 3))
	t.Cleanup(i23.Release)
	empty := f(0)
	h23 := ops.Cast(m23, device.Float16)
	t.Cleanup(h23.Release)
	s1 := ops.Window{Stride: [2]int{1, 1}}
	tests := []struct {
		name string
		fn   func()
		op   string
		kind error
		says string // a fragment the message must hold
	}{
		{"Exp of int32", func() { ops.Exp(i23) }, "ops.Exp", tensor.ErrDType, "int32"},
		{"Step of float16", func() { ops.Step(device.SGD, h23, h23, nil, device.StepParams{LR: 0.1}) }, "ops.Step", tensor.ErrDType, "float16, which ops.Step does not take (it updates float32 master weights); convert it with ops.Cast"},
		{"ReluBackward of float16 and float32", func() { ops.ReluBackward(h23, m23) }, "ops.ReluBackward", tensor.ErrDType, "operand 0 is float16 but operand 1 is float32"},
		{"Add of float16 and float32", func() { ops.Add(m23, h23) }, "ops.Add", tensor.ErrDType, "operand 0 is float32 but operand 1 is float16"},
		{"Add of float16 and float32 broadcasting", func() { ops.Add(h23, v3) }, "ops.Add", tensor.ErrDType, "operand 0 is float16 but operand 1 is float32"},
		{"MatMul of float16", func() { ops.MatMul(h23, m32) }, "ops.MatMul", tensor.ErrDType, "float16"},
		{"Cast of int32", func() { ops.Cast(i23, device.Float16) }, "ops.Cast", tensor.ErrDType, "cast from int32 to float16"},
		{"Sigmoid of int32", func() { ops.Sigmoid(i23) }, "ops.Sigmoid", tensor.ErrDType, "want float32 or float64"},
		{"LayerNorm over a shape not x's last", func() { ops.LayerNorm(m23, []int{2}, nil, nil, 1e-5) }, "ops.LayerNorm", tensor.ErrShape, "normalized shape [2] for x of shape [2 3]"},
		{"LayerNorm with a weight of another shape", func() { ops.LayerNorm(m23, []int{3}, m23, nil, 1e-5) }, "ops.LayerNorm", tensor.ErrShape, "weight"},
		{"RMSNorm with a NaN eps", func() { ops.RMSNorm(m23, []int{3}, nil, math.NaN()) }, "ops.RMSNorm", tensor.ErrArgument, "want a finite eps ≥ 0"},
		{"Where of shapes that do not broadcast", func() { ops.Where(m23, m32, m23) }, "ops.Where", tensor.ErrShape, "do not broadcast together"},
		{"MaskedFill with a mask larger than x", func() { ops.MaskedFill(v3, m23, 0) }, "ops.MaskedFill", tensor.ErrShape, "want a mask that broadcasts to x's shape"},
		{"Softplus with beta 0", func() { ops.Softplus(m23, 0, 20) }, "ops.Softplus", tensor.ErrArgument, "nonzero beta"},
		{"Elu with an infinite alpha", func() { ops.Elu(m23, math.Inf(1)) }, "ops.Elu", tensor.ErrArgument, "want a finite alpha"},
		{"Celu with alpha 0", func() { ops.Celu(m23, 0) }, "ops.Celu", tensor.ErrArgument, "finite, nonzero alpha"},
		{"CeluBackward with a NaN alpha", func() { ops.CeluBackward(m23, m23, math.NaN()) }, "ops.CeluBackward", tensor.ErrArgument, "want a finite alpha"},
		{"Var with a NaN correction", func() { ops.Var(m23, nil, math.NaN(), false) }, "ops.Var", tensor.ErrArgument, "want a finite correction"},
		{"Cumsum along a missing axis", func() { ops.Cumsum(m23, 2) }, "ops.Cumsum", tensor.ErrArgument, "axis 2 out of range for rank 2"},
		{"IndexSelect with float indices", func() { ops.IndexSelect(m23, 0, v3) }, "ops.IndexSelect", tensor.ErrArgument, "want 1-D int32"},
		{"OneHot of float32", func() { ops.OneHot(v3, 3, device.Float32) }, "ops.OneHot", tensor.ErrDType, "want int32"},
		{"OneHot to int32", func() { ops.OneHot(i(0, 1), 3, device.Int32) }, "ops.OneHot", tensor.ErrDType, "want a floating-point dtype"},
		{"OneHot of no classes", func() { ops.OneHot(i(0, 1), 0, device.Float32) }, "ops.OneHot", tensor.ErrArgument, "0 classes"},
		{"BatchNorm of a vector", func() { ops.BatchNorm(v3, nil, nil, 1e-5) }, "ops.BatchNorm", tensor.ErrShape, "want [N, C, …]"},
		{"Tril of a vector", func() { ops.Tril(v3, 0) }, "ops.Tril", tensor.ErrShape, "want at least 2 axes"},
		{"HuberLoss with a negative delta", func() { ops.HuberLoss(m23, m23, -1, ops.MeanReduction) }, "ops.HuberLoss", tensor.ErrArgument, "want a finite delta ≥ 0"},
		{"CrossEntropyLossSmoothed past 1", func() { ops.CrossEntropyLossSmoothed(m23, i(0, 1), ops.MeanReduction, 1.5) }, "ops.CrossEntropyLossSmoothed", tensor.ErrArgument, "want it in [0, 1]"},
		{"Conv1d of a matrix", func() { ops.Conv1d(m23, m23, nil, ops.Window{}) }, "ops.Conv1d", tensor.ErrShape, "want x [N, C, L]"},
		{"Pow of int32", func() { ops.Pow(m23, i23) }, "ops.Pow", tensor.ErrDType, "int32"},
		{"Max of int32", func() { ops.Max(i23) }, "ops.Max", tensor.ErrDType, "int32"},
		{"ArgMax of int32", func() { ops.ArgMax(i23) }, "ops.ArgMax", tensor.ErrDType, "int32"},
		{"Softmax of int32", func() { ops.Softmax(i23, 0) }, "ops.Softmax", tensor.ErrDType, "int32"},
		{"Sum axis 2 of rank 2", func() { ops.Sum(m23, 0, 2) }, "ops.Sum", tensor.ErrArgument, "axis 2 out of range for rank 2"},
		{"Max repeated axis", func() { ops.Max(m23, 1, -1) }, "ops.Max", tensor.ErrArgument, "repeat"},
		{"Min axis -3", func() { ops.MinKeepdims(m23, -3) }, "ops.Min", tensor.ErrArgument, "axis -3"},
		{"Softmax axis 2 of rank 2", func() { ops.Softmax(m23, 2) }, "ops.Softmax", tensor.ErrArgument, "axis 2"},
		{"LogSoftmaxBackward axis", func() { ops.LogSoftmaxBackward(m23, m23, -3) }, "ops.LogSoftmaxBackward", tensor.ErrArgument, "axis -3"},
		{"ArgMaxAxis axis 2", func() { ops.ArgMaxAxis(m23, 2, false) }, "ops.ArgMaxAxis", tensor.ErrArgument, "axis 2"},
		{"ExpBackward g shape", func() { ops.ExpBackward(m23, m32) }, "ops.ExpBackward", tensor.ErrShape, "[3 2]; want [2 3]"},
		{"GeluBackward g shape", func() { ops.GeluBackward(m23, v3) }, "ops.GeluBackward", tensor.ErrShape, "upstream gradient"},
		{"PowBackward g shape", func() { ops.PowBackward(m23, v3, v3) }, "ops.PowBackward", tensor.ErrShape, "upstream gradient"},
		{"SoftmaxBackward g shape", func() { ops.SoftmaxBackward(m23, m32, 1) }, "ops.SoftmaxBackward", tensor.ErrShape, "upstream gradient"},
		{"MaxBackward g shape", func() { ops.MaxBackward(m23, m23, []int{1}, false) }, "ops.MaxBackward", tensor.ErrShape, "want [2]"},
		{"MeanBackward keepdims shape", func() { ops.MeanBackward(m23, v3, []int{0}, true) }, "ops.MeanBackward", tensor.ErrShape, "want [1 3]"},
		{"MSELossBackward g not 0-D", func() { ops.MSELossBackward(m23, m23, v3, ops.MeanReduction) }, "ops.MSELossBackward", tensor.ErrShape, "want []"},
		{"BCELossBackward none g shape", func() { ops.BCELossBackward(m23, m23, s, ops.NoReduction) }, "ops.BCELossBackward", tensor.ErrShape, "want [2 3]"},
		{"Clip lo > hi", func() { ops.Clip(m23, 1, -1) }, "ops.Clip", tensor.ErrArgument, "want lo ≤ hi"},
		{"ClipBackward lo > hi", func() { ops.ClipBackward(m23, m23, 0.5, 0) }, "ops.ClipBackward", tensor.ErrArgument, "[0.5, 0]"},
		{"LeakyRelu negative slope", func() { ops.LeakyRelu(m23, -0.1) }, "ops.LeakyRelu", tensor.ErrArgument, "slope -0.1"},
		{"LeakyReluBackward NaN slope", func() { ops.LeakyReluBackward(m23, m23, math.NaN()) }, "ops.LeakyReluBackward", tensor.ErrArgument, "slope NaN"},
		{"Prelu alpha per wrong channel", func() { ops.Prelu(m23, f(2)) }, "ops.Prelu", tensor.ErrShape, "one per channel"},
		{"Max of empty", func() { ops.Max(empty) }, "ops.Max", tensor.ErrShape, "empty"},
		{"ArgMin of empty", func() { ops.ArgMin(empty) }, "ops.ArgMin", tensor.ErrShape, "empty"},
		{"MSELoss shapes", func() { ops.MSELoss(m23, m32, ops.SumReduction) }, "ops.MSELoss", tensor.ErrShape, "target has shape [3 2]"},
		{"BCEWithLogitsLoss reduction", func() { ops.BCEWithLogitsLoss(m23, m23, ops.Reduction(7)) }, "ops.BCEWithLogitsLoss", tensor.ErrArgument, "reduction 7"},
		{"CrossEntropyLoss labels shape", func() { ops.CrossEntropyLoss(m23, i(0, 1, 2), ops.MeanReduction) }, "ops.CrossEntropyLoss", tensor.ErrShape, "want [2]"},
		{"CrossEntropyLoss probabilities shape", func() { ops.CrossEntropyLoss(m23, m32, ops.MeanReduction) }, "ops.CrossEntropyLoss", tensor.ErrShape, "target probabilities"},
		{"NLLLoss float targets", func() { ops.NLLLoss(m23, v3, ops.MeanReduction) }, "ops.NLLLoss", tensor.ErrDType, "int32 class indices"},
		{"CrossEntropyLoss K-dim labels shape", func() { ops.CrossEntropyLoss(f(2, 3, 4), i(0, 1, 2, 0, 1, 2, 0, 1), ops.MeanReduction) }, "ops.CrossEntropyLoss", tensor.ErrShape, "want them [2 4] (N, d1, …)"},
		{"CrossEntropyLoss K-dim probabilities shape", func() { ops.CrossEntropyLoss(f(2, 3, 4), f(2, 4, 3), ops.NoReduction) }, "ops.CrossEntropyLoss", tensor.ErrShape, "want the target of the input's shape"},
		{"NLLLoss K-dim labels shape", func() { ops.NLLLoss(f(2, 3, 4), i(0, 1), ops.SumReduction) }, "ops.NLLLoss", tensor.ErrShape, "want them [2 4]"},
		{"ConvTranspose2d output padding", func() {
			ops.ConvTranspose2d(f(1, 1, 3, 3), f(1, 1, 2, 2), nil, ops.Window{Stride: [2]int{2, 1}, Dilation: [2]int{1, 3}}, [2]int{1, 3})
		}, "ops.ConvTranspose2d", tensor.ErrArgument, "want 0 ≤ output padding < max(stride, dilation)"},
		{"Mod broadcast", func() { ops.Mod(m23, f(2)) }, "ops.Mod", tensor.ErrShape, "do not broadcast"},
		{"MatMul inner dims", func() { ops.MatMul(m23, m23) }, "ops.MatMul", tensor.ErrShape, "inner dimensions differ: a has shape [2 3], b [2 3]"},
		{"MatMul vector inner dims", func() { ops.MatMul(m23, f(2)) }, "ops.MatMul", tensor.ErrShape, "b's first (b is 1-D)"},
		{"MatMul batch dims", func() { ops.MatMul(f(2, 2, 3), f(3, 3, 2)) }, "ops.MatMul", tensor.ErrShape, "batch dimensions of a [2 2 3] and b [3 3 2] do not broadcast"},
		{"MatMul 0-D", func() { ops.MatMul(m23, s) }, "ops.MatMul", tensor.ErrShape, "rank ≥ 1"},
		{"MatMulBackward g shape", func() { ops.MatMulBackward(f(4, 2, 3), m32, f(4, 2, 3)) }, "ops.MatMulBackward", tensor.ErrShape, "want [4 2 2]"},
		{"Linear in features", func() { ops.Linear(m23, f(4, 2), nil) }, "ops.Linear", tensor.ErrShape, "want x's last dimension 2"},
		{"Linear bias", func() { ops.Linear(m23, f(4, 3), f(3)) }, "ops.Linear", tensor.ErrShape, "bias has shape [3]; want [4]"},
		{"Conv2d channels", func() { ops.Conv2d(f(1, 3, 5, 5), f(2, 2, 3, 3), nil, s1) }, "ops.Conv2d", tensor.ErrShape, "want weight's second dimension 3"},
		{"Conv2d kernel larger than input", func() { ops.Conv2d(f(1, 1, 2, 2), f(1, 1, 3, 3), nil, s1) }, "ops.Conv2d", tensor.ErrShape, "no larger than the padded input"},
		{"Conv2d stride 0", func() { ops.Conv2d(f(1, 1, 5, 5), f(1, 1, 3, 3), nil, ops.Window{}) }, "ops.Conv2d", tensor.ErrArgument, "stride 0; want ≥ 1"},
		{"Conv2d groups", func() { ops.Conv2d(f(1, 3, 5, 5), f(2, 1, 3, 3), nil, ops.Window{Stride: [2]int{1, 1}, Groups: 2}) }, "ops.Conv2d", tensor.ErrArgument, "2 groups for 3 input"},
		{"Conv2d 3-D x", func() { ops.Conv2d(f(3, 5, 5), f(2, 3, 3, 3), nil, s1) }, "ops.Conv2d", tensor.ErrShape, "want NCHW images"},
		{"Conv2dBackward g shape", func() { ops.Conv2dBackward(f(1, 1, 5, 5), f(1, 1, 3, 3), nil, f(1, 1, 5, 5), s1) }, "ops.Conv2dBackward", tensor.ErrShape, "want [1 1 3 3]"},
		{"MaxPool2d padding", func() {
			ops.MaxPool2d(f(1, 1, 5, 5), ops.Window{Kernel: [2]int{2, 2}, Stride: [2]int{2, 2}, Padding: [2]int{2, 2}})
		}, "ops.MaxPool2d", tensor.ErrArgument, "at most half the kernel"},
		{"AvgPool2d dilation", func() {
			ops.AvgPool2d(f(1, 1, 5, 5), ops.Window{Kernel: [2]int{2, 2}, Stride: [2]int{1, 1}, Dilation: [2]int{2, 2}})
		}, "ops.AvgPool2d", tensor.ErrArgument, "avg_pool2d has none"},
		{"MaxPool2d no kernel", func() { ops.MaxPool2d(f(1, 1, 5, 5), s1) }, "ops.MaxPool2d", tensor.ErrShape, "0×0 kernel"},
		{"MaxPool2d of images without rows", func() {
			ops.MaxPool2d(f(1, 2, 0, 9), ops.Window{Kernel: [2]int{2, 3}, Stride: [2]int{3, 4}, Padding: [2]int{1, 1}})
		}, "ops.MaxPool2d", tensor.ErrShape, "images of 0×9"},
		{"Embedding float indices", func() { ops.Embedding(v3, m23) }, "ops.Embedding", tensor.ErrDType, "want int32"},
		{"Embedding 1-D table", func() { ops.Embedding(i(0, 1), v3) }, "ops.Embedding", tensor.ErrShape, "want [rows, features]"},
		{"EmbeddingBackward g shape", func() { ops.EmbeddingBackward(i(0, 1), m23, m32) }, "ops.EmbeddingBackward", tensor.ErrShape, "want [2 3]"},
		{"ClipGradValue negative", func() { ops.ClipGradValue([]*tensor.Tensor{m23}, -1) }, "ops.ClipGradValue", tensor.ErrArgument, "limit -1"},
		{"ClipGradNorm zero", func() { ops.ClipGradNorm([]*tensor.Tensor{m23}, 0) }, "ops.ClipGradNorm", tensor.ErrArgument, "max norm 0"},
		{"ClipGradNorm int32", func() { ops.ClipGradNorm([]*tensor.Tensor{m23, i23}, 1) }, "ops.ClipGradNorm", tensor.ErrDType, "gradient 1 is int32"},
		{"Dot lengths", func() { ops.Dot(v3, f(2)) }, "ops.Dot", tensor.ErrShape, "a has 3 elements, b 2"},
		{"Outer matrix", func() { ops.Outer(m23, v3) }, "ops.Outer", tensor.ErrShape, "want a 1-D vector"},
		{"Narrow length", func() { ops.Narrow(m23, 1, 0, -1) }, "ops.Narrow", tensor.ErrArgument, "length -1"},
		{"Unscale state shape", func() { ops.Unscale(m23, f(), f(2)) }, "ops.Unscale", tensor.ErrShape, "the scaler's state has shape [2]; want [3]"},
		{"Unscale scale of 2", func() { ops.Unscale(m23, f(2), f(3)) }, "ops.Unscale", tensor.ErrShape, "scale has shape [2]; want one element"},
		{"Unscale float16", func() { ops.Unscale(h23, f(), f(3)) }, "ops.Unscale", tensor.ErrDType, "float16"},
		{"UpdateScale backoff 1", func() { ops.UpdateScale(f(), f(3), nil, device.ScaleParams{Growth: 2, Backoff: 1, Interval: 1}) }, "ops.UpdateScale", tensor.ErrArgument, "backoff factor 1"},
		{"UpdateScale interval 0", func() { ops.UpdateScale(f(), f(3), nil, device.ScaleParams{Growth: 2, Backoff: 0.5}) }, "ops.UpdateScale", tensor.ErrArgument, "growth interval 0"},
		{"UpdateScale 7 optimisers", func() {
			ops.UpdateScale(f(), f(3), []*tensor.Tensor{f(1), f(1), f(1), f(1), f(1), f(1), f(1)}, device.ScaleParams{Growth: 2, Backoff: 0.5, Interval: 1})
		}, "ops.UpdateScale", tensor.ErrArgument, "7 optimisers"},
		{"UpdateScale count of 2", func() {
			ops.UpdateScale(f(), f(3), []*tensor.Tensor{f(2)}, device.ScaleParams{Growth: 2, Backoff: 0.5, Interval: 1})
		}, "ops.UpdateScale", tensor.ErrShape, "count of skipped steps has shape [2]"},
		{"ScaledStep state of 4", func() { ops.ScaledStep(device.SGD, m23, f(2, 3), nil, device.StepParams{LR: 0.1}, f(4), f(1)) }, "ops.ScaledStep", tensor.ErrShape, "the scaler's state has shape [4]; want [3]"},
		{"Step with a scaler's state", func() { ops.Step(device.SGD, m23, f(2, 3), nil, device.StepParams{LR: 0.1, Scaling: f(3).Buffer()}) }, "ops.Step", tensor.ErrArgument, "step with ScaledStep"},
		{"Step negative learning rate", func() { ops.Step(device.SGD, m23, f(2, 3), nil, device.StepParams{LR: -1}) }, "ops.Step", tensor.ErrArgument, "learning rate -1"},
		{"Step gradient a view of the parameter", func() { ops.Step(device.SGD, m23, m23.Reshape(2, 3), nil, device.StepParams{LR: 1}) }, "ops.Step", tensor.ErrArgument, "shares the parameter's memory"},
		{"StepAll lists of unequal lengths", func() {
			ops.StepAll(device.SGD, []*tensor.Tensor{m23, f(2, 3)}, []*tensor.Tensor{f(2, 3)}, [][]*tensor.Tensor{nil, nil}, device.StepParams{LR: 0.1})
		}, "ops.StepAll", tensor.ErrArgument, "2 parameters, 1 gradients and 2 states"},
		{"StepAll a parameter's gradient shape", func() {
			ops.StepAll(device.SGD, []*tensor.Tensor{m23, f(2, 3)}, []*tensor.Tensor{f(2, 3), m32}, [][]*tensor.Tensor{nil, nil}, device.StepParams{LR: 0.1})
		}, "ops.StepAll", tensor.ErrShape, "parameter 1: gradient has shape [3 2]; want [2 3]"},
		{"UnscaleAll a gradient of float16", func() { ops.UnscaleAll([]*tensor.Tensor{m23, h23}, f(), f(3)) }, "ops.UnscaleAll", tensor.ErrDType, "float16"},
		{"Step state a view of the gradient", func() {
			g := f(2, 3)
			ops.Step(device.Adam, m23, g, []*tensor.Tensor{f(2, 3), g.Reshape(2, 3)}, device.StepParams{LR: 0.1, Beta1: 0.9, Beta2: 0.9, T: 1})
		}, "ops.Step", tensor.ErrArgument, "operands 1 and 3 share memory"},
		{"Step β1 = 1", func() {
			ops.Step(device.Adam, m23, f(2, 3), []*tensor.Tensor{f(2, 3), f(2, 3)}, device.StepParams{LR: 0.1, Beta1: 1, Beta2: 0.9, T: 1})
		}, "ops.Step", tensor.ErrArgument, "β1 1"},
		{"Step state count", func() {
			ops.Step(device.Adam, m23, f(2, 3), nil, device.StepParams{LR: 0.1, Beta1: 0.9, Beta2: 0.9, T: 1})
		}, "ops.Step", tensor.ErrArgument, "0 state tensors; this step needs 2"},
		{"Step gradient shape", func() { ops.Step(device.SGD, m23, m32, nil, device.StepParams{LR: 0.1}) }, "ops.Step", tensor.ErrShape, "gradient has shape [3 2]; want [2 3]"},
		{"Permute not a permutation", func() { ops.Permute(m23, 1, 1) }, "ops.Permute", tensor.ErrArgument, "[1 1] is not a permutation of 0…1"},
		{"Permute rank", func() { ops.Permute(m23, 0, 1, 2) }, "ops.Permute", tensor.ErrArgument, "for rank 2"},
		{"PermuteBackward g shape", func() { ops.PermuteBackward(m23, m23, []int{1, 0}) }, "ops.PermuteBackward", tensor.ErrShape, "want [3 2]"},
		{"TransposeBackward g dtype", func() { ops.TransposeBackward(m23, i(1, 2, 3, 4, 5, 6).Reshape(3, 2)) }, "ops.TransposeBackward", tensor.ErrDType, "int32"},
		{"Slice step 0", func() { ops.Slice(m23, 1, 0, 3, 0) }, "ops.Slice", tensor.ErrArgument, "want a step ≥ 1"},
		{"Slice axis", func() { ops.Slice(m23, 2, 0, 1, 1) }, "ops.Slice", tensor.ErrArgument, "axis 2"},
		{"SliceBackward g shape", func() { ops.SliceBackward(m23, m23, 1, 0, 2, 1) }, "ops.SliceBackward", tensor.ErrShape, "want [2 2]"},
		{"Pad negative", func() { ops.Pad(m23, [][2]int{{0, 0}, {-1, 0}}, 0) }, "ops.Pad", tensor.ErrArgument, "negative padding on axis 1"},
		{"Pad count", func() { ops.Pad(m23, [][2]int{{1, 1}}, 0) }, "ops.Pad", tensor.ErrArgument, "1 pads for a tensor of shape [2 3]"},
		{"Concat shapes", func() { ops.Concat([]*tensor.Tensor{m23, m32}, 0) }, "ops.Concat", tensor.ErrShape, "equal sizes except on axis 0"},
		{"Concat dtypes", func() { ops.Concat([]*tensor.Tensor{m23, i23}, 0) }, "ops.Concat", tensor.ErrDType, "int32"},
		{"Concat 0-D", func() { ops.Concat([]*tensor.Tensor{s, s}, 0) }, "ops.Concat", tensor.ErrShape, "0-D"},
		{"Concat nothing", func() { ops.Concat([]*tensor.Tensor(nil), 0) }, "ops.Concat", tensor.ErrArgument, "no tensors"},
		{"Stack shapes", func() { ops.Stack([]*tensor.Tensor{m23, m32}, 0) }, "ops.Stack", tensor.ErrShape, "want one shape"},
		{"Squeeze size 3", func() { ops.Squeeze(m23, 1) }, "ops.Squeeze", tensor.ErrShape, "size 3; want size 1"},
		{"Flatten start after end", func() { ops.Flatten(m23, 1, 0) }, "ops.Flatten", tensor.ErrArgument, "comes after"},
		{"Reshape count", func() { ops.Reshape(m23, 4) }, "ops.Reshape", tensor.ErrShape, "6 values do not fill shape [4]"},
		{"Reshape count overflowing int", func() { ops.Reshape(f(8), 4, 1<<62+2) }, "ops.Reshape", tensor.ErrShape, "more elements than an int counts"},
		{"Reshape inferred, count overflowing int", func() { ops.Reshape(f(8), -1, 1<<62, 8) }, "ops.Reshape", tensor.ErrShape, "more elements than an int counts"},
		{"Pad by MaxInt", func() { ops.Pad(f(2, 1), [][2]int{{0, 0}, {math.MaxInt, 0}}, 0) }, "ops.Pad", tensor.ErrArgument, "more elements than an int counts"},
		{"PadBackward by MaxInt", func() { ops.PadBackward(f(2, 1), f(2, 1), [][2]int{{math.MaxInt, math.MaxInt}, {0, 0}}) }, "ops.PadBackward", tensor.ErrArgument, "more elements than an int counts"},
		{"Concat nil operand", func() { ops.Concat([]*tensor.Tensor{m23, nil}, 0) }, "ops.Concat", tensor.ErrArgument, "operand 1 is nil"},
		{"Concat nil first operand", func() { ops.Concat([]*tensor.Tensor{nil, m23}, 0) }, "ops.Concat", tensor.ErrArgument, "operand 0 is nil"},
		{"ConcatBackward nil operand", func() { ops.ConcatBackward([]*tensor.Tensor{nil}, m23, 0) }, "ops.ConcatBackward", tensor.ErrArgument, "operand 0 is nil"},
		{"Stack nil operand", func() { ops.Stack([]*tensor.Tensor{m23, nil}, 0) }, "ops.Stack", tensor.ErrArgument, "operand 1 is nil"},
		{"Concat sizes overflowing int", func() { ops.Concat([]*tensor.Tensor{f(0, 1<<62), f(0, 1<<62)}, 1) }, "ops.Concat", tensor.ErrShape, "more elements than an int counts"},
		{"Flatten overflowing int", func() { ops.Flatten(f(0, 1<<40, 1<<40), 1, 2) }, "ops.Flatten", tensor.ErrShape, "more elements than an int counts"},
		{"Conv2d padding overflowing int", func() {
			ops.Conv2d(f(1, 1, 5, 5), f(1, 1, 3, 3), nil, ops.Window{Stride: [2]int{1, 1}, Padding: [2]int{math.MaxInt / 2, 0}})
		}, "ops.Conv2d", tensor.ErrArgument, "past 2³¹−1"},
		{"Conv2d dilation overflowing int", func() {
			ops.Conv2d(f(1, 1, 5, 5), f(1, 1, 3, 3), nil, ops.Window{Stride: [2]int{1, 1}, Dilation: [2]int{1, math.MaxInt}})
		}, "ops.Conv2d", tensor.ErrArgument, "past 2³¹−1"},
		{"MaxPool2d stride past 32 bits", func() {
			ops.MaxPool2d(f(1, 1, 5, 5), ops.Window{Kernel: [2]int{2, 2}, Stride: [2]int{1 << 40, 1}})
		}, "ops.MaxPool2d", tensor.ErrArgument, "past 2³¹−1"},
		{"Attention of D 4 and D 3", func() { ops.ScaledDotProductAttention(f(2, 3, 4), f(2, 5, 3), f(2, 5, 4), nil, ops.AttentionAttrs{}) },
			"ops.ScaledDotProductAttention", tensor.ErrShape, "want [..., Lq, D], [..., Lk, D], [..., Lk, DV] with the same batch axes"},
		{"Attention of a vector", func() { ops.ScaledDotProductAttention(v3, v3, v3, nil, ops.AttentionAttrs{}) },
			"ops.ScaledDotProductAttention", tensor.ErrShape, "of one rank ≥ 2"},
		{"Attention dropout 1", func() { ops.ScaledDotProductAttention(m23, m23, m23, nil, ops.AttentionAttrs{Dropout: 1}) },
			"ops.ScaledDotProductAttention", tensor.ErrArgument, "dropout 1; want 0 ≤ p < 1"},
		{"Attention mask not broadcasting", func() { ops.ScaledDotProductAttention(m23, m23, m23, f(3, 2), ops.AttentionAttrs{}) },
			"ops.ScaledDotProductAttention", tensor.ErrShape, "mask [3 2] for scores [..., Lq, Lk] of shape [2 2]"},
		{"Attention NaN scale", func() { ops.ScaledDotProductAttention(m23, m23, m23, nil, ops.AttentionAttrs{Scale: math.NaN()}) },
			"ops.ScaledDotProductAttention", tensor.ErrArgument, "want a finite scale"},
		{"AttentionBackward upstream of the wrong shape", func() { ops.ScaledDotProductAttentionBackward(m23, m23, m23, ops.Attention{}, m32) },
			"ops.ScaledDotProductAttentionBackward", tensor.ErrShape, "upstream gradient has shape [3 2]; want [2 3]"},
		{"MultiHeadAttention in heads not dividing E", func() { ops.MultiHeadAttention(f(5, 24), nil, ops.MultiHeadAttrs{Heads: 5}) },
			"ops.MultiHeadAttention", tensor.ErrShape, "qkv [5 24] in 5 heads; want [..., L, 3·E], E > 0 a multiple of the heads"},
		{"MultiHeadAttention of a vector", func() { ops.MultiHeadAttention(f(24), nil, ops.MultiHeadAttrs{Heads: 2}) },
			"ops.MultiHeadAttention", tensor.ErrShape, "of rank ≥ 2"},
		{"MultiHeadAttention mask not broadcasting", func() { ops.MultiHeadAttention(f(5, 24), f(4, 5), ops.MultiHeadAttrs{Heads: 2}) },
			"ops.MultiHeadAttention", tensor.ErrShape, "mask [4 5] for scores [..., Lq, Lk] of shape [2 5 5]"},
		{"MultiHeadAttentionBackward upstream of the wrong shape", func() {
			ops.MultiHeadAttentionBackward(f(5, 24), ops.MultiHeadAttrs{Heads: 2}, nil, f(5, 7))
		}, "ops.MultiHeadAttentionBackward", tensor.ErrShape, "upstream gradient has shape [5 7]; want [5 8]"},
		{"Interpolate bicubic", func() { ops.Interpolate(f(1, 1, 2, 2), []int{4, 4}, "bicubic", false) },
			"ops.Interpolate", tensor.ErrArgument, `mode "bicubic"`},
		{"Interpolate to three sizes", func() { ops.Interpolate(f(1, 1, 2, 2), []int{4, 4, 4}, "nearest", false) },
			"ops.Interpolate", tensor.ErrArgument, "want [OH, OW]"},
		{"AdaptiveAvgPool2d of a vector", func() { ops.AdaptiveAvgPool2d(v3, []int{1, 1}) },
			"ops.AdaptiveAvgPool2d", tensor.ErrShape, "want [..., H, W]"},
		{"Gather of float indices", func() { ops.Gather(m23, 1, m23) }, "ops.Gather", tensor.ErrDType, "indices are float32; want int32"},
		{"Gather indices of another rank", func() { ops.Gather(m23, 1, tensor.Must(tensor.FromInt32(dev, []int32{0, 1}))) },
			"ops.Gather", tensor.ErrShape, "want indices of x's rank ≥ 1"},
		{"Gather indices past x off the axis", func() { ops.Gather(m23, 1, tensor.Must(tensor.FromInt32(dev, make([]int32, 3), 3, 1))) },
			"ops.Gather", tensor.ErrShape, "want indices no larger than x off the axis"},
		{"ScatterAdd src smaller than the indices", func() { ops.ScatterAdd(m23, 1, i23, f(2, 2)) },
			"ops.ScatterAdd", tensor.ErrShape, "want src no smaller than the indices"},
		{"CrossEntropy weights of the wrong length", func() {
			ops.CrossEntropyLossWith(m23, tensor.Must(tensor.FromInt32(dev, []int32{0, 1})), f(2), ops.CrossEntropyAttrs{})
		}, "ops.CrossEntropyLossWith", tensor.ErrShape, "class weights has shape [2]; want [3]"},
		{"CrossEntropy ignoring with probabilities", func() {
			ops.CrossEntropyLossWith(m23, m23, nil, ops.CrossEntropyAttrs{Ignore: true, IgnoreIndex: -100})
		}, "ops.CrossEntropyLossWith", tensor.ErrArgument, "want an int32 label with class indices"},
		{"NLL with label smoothing", func() {
			ops.NLLLossWith(m23, tensor.Must(tensor.FromInt32(dev, []int32{0, 1})), nil, ops.CrossEntropyAttrs{LabelSmoothing: 0.1})
		}, "ops.NLLLossWith", tensor.ErrArgument, "nll takes none"},
		{"AdaptiveAvgPool2d of no pixels", func() { ops.AdaptiveAvgPool2d(f(1, 2, 0, 3), []int{1, 1}) },
			"ops.AdaptiveAvgPool2d", tensor.ErrShape, "no pixels to resample"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { errtest.Panics(t, tt.fn, tt.op, tt.kind, tt.says) })
	}
	if err := dev.Sync(); err != nil {
		t.Errorf("the refused calls left a runtime failure: %v", err)
	}
}
