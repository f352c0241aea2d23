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
	tests := []struct {
		name string
		fn   func()
		op   string
		kind error
		says string // a fragment the message must hold
	}{
		{"Exp of int32", func() { ops.Exp(i23) }, "ops.Exp", tensor.ErrDType, "int32"},
		{"Sigmoid of int32", func() { ops.Sigmoid(i23) }, "ops.Sigmoid", tensor.ErrDType, "want float32 or float64"},
		{"Pow of int32", func() { ops.Pow(m23, i23) }, "ops.Pow", tensor.ErrDType, "int32"},
		{"MaxAxes of int32", func() { ops.MaxAxes(i23, nil, false) }, "ops.MaxAxes", tensor.ErrDType, "int32"},
		{"ArgMax of int32", func() { ops.ArgMax(i23) }, "ops.ArgMax", tensor.ErrDType, "int32"},
		{"Softmax of int32", func() { ops.Softmax(i23, 0) }, "ops.Softmax", tensor.ErrDType, "int32"},
		{"SumAxes axis 2 of rank 2", func() { ops.SumAxes(m23, []int{0, 2}, false) }, "ops.SumAxes", tensor.ErrArgument, "axis 2 out of range for rank 2"},
		{"MaxAxes repeated axis", func() { ops.MaxAxes(m23, []int{1, -1}, false) }, "ops.MaxAxes", tensor.ErrArgument, "repeat"},
		{"MinAxis axis -3", func() { ops.MinAxis(m23, -3, true) }, "ops.MinAxis", tensor.ErrArgument, "axis -3"},
		{"Softmax axis 2 of rank 2", func() { ops.Softmax(m23, 2) }, "ops.Softmax", tensor.ErrArgument, "axis 2"},
		{"LogSoftmaxBackward axis", func() { ops.LogSoftmaxBackward(m23, m23, -3) }, "ops.LogSoftmaxBackward", tensor.ErrArgument, "axis -3"},
		{"ArgMaxAxis axis 2", func() { ops.ArgMaxAxis(m23, 2, false) }, "ops.ArgMaxAxis", tensor.ErrArgument, "axis 2"},
		{"ExpBackward g shape", func() { ops.ExpBackward(m23, m32) }, "ops.ExpBackward", tensor.ErrShape, "[3 2]; want [2 3]"},
		{"GeluBackward g shape", func() { ops.GeluBackward(m23, v3) }, "ops.GeluBackward", tensor.ErrShape, "upstream gradient"},
		{"PowBackward g shape", func() { ops.PowBackward(m23, v3, v3) }, "ops.PowBackward", tensor.ErrShape, "upstream gradient"},
		{"SoftmaxBackward g shape", func() { ops.SoftmaxBackward(m23, m32, 1) }, "ops.SoftmaxBackward", tensor.ErrShape, "upstream gradient"},
		{"MaxAxesBackward g shape", func() { ops.MaxAxesBackward(m23, m23, []int{1}, false) }, "ops.MaxAxesBackward", tensor.ErrShape, "want [2]"},
		{"MeanAxesBackward keepdims shape", func() { ops.MeanAxesBackward(m23, v3, []int{0}, true) }, "ops.MeanAxesBackward", tensor.ErrShape, "want [1 3]"},
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
		{"Mod broadcast", func() { ops.Mod(m23, f(2)) }, "ops.Mod", tensor.ErrShape, "do not broadcast"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { errtest.Panics(t, tt.fn, tt.op, tt.kind, tt.says) })
	}
	if err := dev.Sync(); err != nil {
		t.Errorf("the refused calls left a runtime failure: %v", err)
	}
}
