package ops_test

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/tensor"
)

// Regressions for bugs found in review.

func TestSoftmaxCrossEntropyFailedInputIsScalar(t *testing.T) {
	e := newEnv(t)
	boom := errors.New("boom")
	loss := e.keep(ops.SoftmaxCrossEntropy(tensor.Failed(e.dev, device.Float32, boom, 4, 3), e.i32([]float64{0, 1, 2, 0}, 4)))
	if s := loss.Shape(); len(s) != 0 {
		t.Errorf("loss of a failed input has shape %v; want []", s)
	}
}

func TestNilOperandOfFullReduction(t *testing.T) {
	for name, f := range map[string]func(){
		"ops.Sum":  func() { ops.Sum[*tensor.Tensor](nil) },
		"ops.Mean": func() { ops.Mean[*tensor.Tensor](nil) },
	} {
		err := tensor.Maybe(f)
		var te *tensor.Error
		if !errors.Is(err, tensor.ErrArgument) || !errors.As(err, &te) || te.Op != name {
			t.Errorf("%s(nil): %v; want a %s ErrArgument", name, err, name)
		}
	}
}

func TestBackwardDTypeMismatch(t *testing.T) {
	e := newEnv(t)
	x64 := e.f64(iota(6), 2, 3)
	g32s := e.f32([]float64{1}, []int{}...)
	g32row := e.f32(iota(3), 3)
	g32t := e.f32(iota(6), 3, 2)
	g32x := e.f32(iota(6), 2, 3)
	for name, f := range map[string]func(){
		"ops.SumBackward":         func() { ops.SumBackward(x64, g32s, nil, false) },
		"ops.MeanBackward":        func() { ops.MeanBackward(x64, g32s, nil, false) },
		"ops.SumBackward axis 0":  func() { ops.SumBackward(x64, g32row, []int{0}, false) },
		"ops.MeanBackward axis 0": func() { ops.MeanBackward(x64, g32row, []int{0}, false) },
		"ops.TransposeBackward":   func() { ops.TransposeBackward(x64, g32t) },
		"ops.SumToBackward":       func() { ops.SumToBackward(x64, g32x) },
		"ops.BroadcastToBackward": func() { ops.BroadcastToBackward(x64, g32x) },
	} {
		err := tensor.Maybe(f)
		if !errors.Is(err, tensor.ErrDType) {
			t.Errorf("%s with float64 x and float32 g: %v; want ErrDType", name, err)
		}
	}
}

func TestScalarResultsStayScalarAcrossDevices(t *testing.T) {
	e := newEnv(t)
	s := e.keep(ops.Sum(e.f32(iota(4), 4)))
	moved, err := s.To(e.dev)
	if err != nil {
		t.Fatal(err)
	}
	defer moved.Release()
	if !slices.Equal(moved.Shape(), []int{}) {
		t.Errorf("Sum(x).To(dev) has shape %v; want []", moved.Shape())
	}
}

// TestPyTorchSpecialValues checks the special values where PyTorch's
// answer is not the naive formula's: x⁰ is 1 with a zero gradient, NaN
// included; ±Inf // 1 is NaN and a finite x // ±Inf of the other sign
// −1, as Python's //. (Parity holds the WebGPU kernels to the CPU's.)
func TestPyTorchSpecialValues(t *testing.T) {
	e := newEnv(t)
	nan, inf := math.NaN(), math.Inf(1)
	x := e.f32([]float64{nan, inf, -inf, 0, -2}, 5)
	check(t, "pow_scalar(x, 0)", e.keep(ops.PowScalar(x, 0)), []int{5}, []float64{1, 1, 1, 1, 1}, 0)
	check(t, "pow_scalar'(x, 0)", e.keep(ops.PowScalarBackward(x, e.f32([]float64{1, 1, 1, 1, 1}, 5), 0)), []int{5}, []float64{0, 0, 0, 0, 0}, 0)
	a := e.f32([]float64{inf, -inf, -1, 1, -1, 1, inf, 2}, 8)
	b := e.f32([]float64{1, 1, inf, inf, -inf, -inf, 0, inf}, 8)
	check(t, "floor_divide", e.keep(ops.FloorDivide(a, b)), []int{8}, []float64{nan, nan, -1, 0, 0, -1, inf, 0}, 0)
}
