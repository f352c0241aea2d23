package ops_test

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/internal/errtest"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/tensor"
)

// env creates tensors on a cpu device and releases them when the test ends.
type env struct {
	t   *testing.T
	dev device.Device
}

func newEnv(t *testing.T) *env {
	t.Helper()
	dev, err := device.Open("cpu")
	if err != nil {
		t.Fatalf("Open(cpu): %v", err)
	}
	t.Cleanup(func() { dev.Close() })
	return &env{t: t, dev: dev}
}

// keep releases x when the test ends and returns it.
func (e *env) keep(x *tensor.Tensor) *tensor.Tensor {
	e.t.Cleanup(x.Release)
	return x
}

// make returns a tensor of dtype dt holding vals; with no shape it is 0-D.
func (e *env) make(dt device.DType, vals []float64, shape ...int) *tensor.Tensor {
	e.t.Helper()
	if shape == nil {
		shape = []int{}
	}
	x, err := tensor.FromValues(e.dev, dt, vals, shape...)
	if err != nil {
		e.t.Fatal(err)
	}
	return e.keep(x)
}

func (e *env) f64(vals []float64, shape ...int) *tensor.Tensor {
	e.t.Helper()
	return e.make(device.Float64, vals, shape...)
}

func (e *env) f32(vals []float64, shape ...int) *tensor.Tensor {
	e.t.Helper()
	return e.make(device.Float32, vals, shape...)
}

func (e *env) i32(vals []float64, shape ...int) *tensor.Tensor {
	e.t.Helper()
	return e.make(device.Int32, vals, shape...)
}

// uniform returns a float64 tensor of uniform values in [lo, hi).
func (e *env) uniform(lo, hi float64, seed uint64, shape ...int) *tensor.Tensor {
	e.t.Helper()
	if shape == nil {
		shape = []int{}
	}
	x, err := tensor.Uniform(e.dev, device.Float64, lo, hi, seed, shape...)
	if err != nil {
		e.t.Fatal(err)
	}
	return e.keep(x)
}

func iota(n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = float64(i)
	}
	return v
}

func values(t *testing.T, x *tensor.Tensor) []float64 {
	t.Helper()
	v, err := x.Float64s()
	if err != nil {
		t.Fatalf("readback: %v", err)
	}
	return v
}

// approx reports whether got and want agree to within a relative tolerance
// tol (absolute near zero); NaNs agree with NaNs and infinities must match.
func approx(got, want, tol float64) bool {
	switch {
	case math.IsNaN(want):
		return math.IsNaN(got)
	case math.IsInf(want, 0):
		return got == want
	}
	return math.Abs(got-want) <= tol*math.Max(1, math.Abs(want))
}

// check checks x's shape and values.
func check(t *testing.T, what string, x *tensor.Tensor, shape []int, want []float64, tol float64) {
	t.Helper()
	if got := x.Shape(); !slices.Equal(got, shape) {
		t.Errorf("%s: shape %v, want %v", what, got, shape)
		return
	}
	got := values(t, x)
	if len(got) != len(want) {
		t.Fatalf("%s: %d values %v, want %d values %v", what, len(got), got, len(want), want)
	}
	for i := range want {
		if !approx(got[i], want[i], tol) {
			t.Errorf("%s: values %v, want %v (first difference at %d)", what, got, want, i)
			return
		}
	}
}

// naiveXent is log Σ exp(row) − row[y], without stabilisation.
func naiveXent(row []float64, y int) float64 {
	s := 0.0
	for _, v := range row {
		s += math.Exp(v)
	}
	return math.Log(s) - row[y]
}

func TestBroadcastShapes(t *testing.T) {
	tests := []struct {
		a, b []int
		want []int
		ok   bool
	}{
		{[]int{}, []int{}, []int{}, true},
		{[]int{2, 3}, []int{2, 3}, []int{2, 3}, true},
		{[]int{3, 1}, []int{1, 2}, []int{3, 2}, true},
		{[]int{}, []int{3, 4}, []int{3, 4}, true},
		{[]int{3, 4}, []int{}, []int{3, 4}, true},
		{[]int{5}, []int{3, 4, 5}, []int{3, 4, 5}, true},
		{[]int{3, 1, 5}, []int{3, 4, 5}, []int{3, 4, 5}, true},
		{[]int{4, 1}, []int{1, 6}, []int{4, 6}, true},
		{[]int{2, 1, 3}, []int{4, 1}, []int{2, 4, 3}, true},
		{[]int{0}, []int{1}, []int{0}, true},
		{[]int{1}, []int{0}, []int{0}, true},
		{[]int{2, 0}, []int{2, 1}, []int{2, 0}, true},
		{[]int{2, 3}, []int{4}, nil, false},
		{[]int{2, 3}, []int{3, 2}, nil, false},
		{[]int{3}, []int{4, 2}, nil, false},
		{[]int{0}, []int{2}, nil, false},
	}
	for _, tt := range tests {
		got, ok := ops.BroadcastShapes(tt.a, tt.b)
		if ok != tt.ok || (ok && !slices.Equal(got, tt.want)) {
			t.Errorf("BroadcastShapes(%v, %v) = %v, %v; want %v, %v", tt.a, tt.b, got, ok, tt.want, tt.ok)
		}
	}
}

func TestForward(t *testing.T) {
	m23 := []float64{1, 2, 3, 4, 5, 6}
	tests := []struct {
		name  string
		fn    func(e *env) *tensor.Tensor
		shape []int
		want  []float64
	}{
		{"Add same shape", func(e *env) *tensor.Tensor {
			return ops.Add(e.f64([]float64{1, 2, 3, 4}, 2, 2), e.f64([]float64{10, 20, 30, 40}, 2, 2))
		}, []int{2, 2}, []float64{11, 22, 33, 44}},
		{"Add (3,1)+(1,2)", func(e *env) *tensor.Tensor {
			return ops.Add(e.f64([]float64{1, 2, 3}, 3, 1), e.f64([]float64{10, 20}, 1, 2))
		}, []int{3, 2}, []float64{11, 21, 12, 22, 13, 23}},
		{"Add float32 (3,1)+(1,2)", func(e *env) *tensor.Tensor {
			return ops.Add(e.f32([]float64{1, 2, 3}, 3, 1), e.f32([]float64{10, 20}, 1, 2))
		}, []int{3, 2}, []float64{11, 21, 12, 22, 13, 23}},
		{"Add scalar+matrix", func(e *env) *tensor.Tensor {
			return ops.Add(e.f64([]float64{5}), e.f64([]float64{1, 2, 3, 4}, 2, 2))
		}, []int{2, 2}, []float64{6, 7, 8, 9}},
		{"Add matrix+scalar", func(e *env) *tensor.Tensor {
			return ops.Add(e.f32([]float64{1, 2, 3, 4}, 2, 2), e.f32([]float64{-1}))
		}, []int{2, 2}, []float64{0, 1, 2, 3}},
		{"Add scalar+scalar", func(e *env) *tensor.Tensor {
			return ops.Add(e.f64([]float64{1.5}), e.f64([]float64{2}))
		}, []int{}, []float64{3.5}},
		{"Add (2,3)+(3)", func(e *env) *tensor.Tensor {
			return ops.Add(e.f64(m23, 2, 3), e.f64([]float64{10, 20, 30}, 3))
		}, []int{2, 3}, []float64{11, 22, 33, 14, 25, 36}},
		{"Add (2,1,3)+(4,1)", func(e *env) *tensor.Tensor {
			return ops.Add(e.f64(m23, 2, 1, 3), e.f64([]float64{0, 10, 20, 30}, 4, 1))
		}, []int{2, 4, 3}, []float64{
			1, 2, 3, 11, 12, 13, 21, 22, 23, 31, 32, 33,
			4, 5, 6, 14, 15, 16, 24, 25, 26, 34, 35, 36,
		}},
		{"Add empty", func(e *env) *tensor.Tensor {
			return ops.Add(e.f64(nil, 0, 3), e.f64([]float64{1, 2, 3}, 3))
		}, []int{0, 3}, []float64{}},
		{"Sub (2,3)-(2,1)", func(e *env) *tensor.Tensor {
			return ops.Sub(e.f64(m23, 2, 3), e.f64([]float64{1, 10}, 2, 1))
		}, []int{2, 3}, []float64{0, 1, 2, -6, -5, -4}},
		{"Sub scalar-vector", func(e *env) *tensor.Tensor {
			return ops.Sub(e.f64([]float64{10}), e.f64([]float64{1, 2, 3}, 3))
		}, []int{3}, []float64{9, 8, 7}},
		{"Mul (2,1)*(3)", func(e *env) *tensor.Tensor {
			return ops.Mul(e.f64([]float64{2, 3}, 2, 1), e.f64([]float64{1, 10, 100}, 3))
		}, []int{2, 3}, []float64{2, 20, 200, 3, 30, 300}},
		{"Mul float32", func(e *env) *tensor.Tensor {
			return ops.Mul(e.f32([]float64{1.5, -2}, 2), e.f32([]float64{4, 0.25}, 2))
		}, []int{2}, []float64{6, -0.5}},
		{"Div (2,3)/(3)", func(e *env) *tensor.Tensor {
			return ops.Div(e.f64(m23, 2, 3), e.f64([]float64{2, 4, 8}, 3))
		}, []int{2, 3}, []float64{0.5, 0.5, 0.375, 2, 1.25, 0.75}},
		{"Div by zero", func(e *env) *tensor.Tensor {
			return ops.Div(e.f64([]float64{1, -1, 0}, 3), e.f64([]float64{0}))
		}, []int{3}, []float64{math.Inf(1), math.Inf(-1), math.NaN()}},
		{"Sum", func(e *env) *tensor.Tensor { return ops.Sum(e.f64(m23, 2, 3)) }, []int{}, []float64{21}},
		{"Sum float32", func(e *env) *tensor.Tensor { return ops.Sum(e.f32(m23, 3, 2)) }, []int{}, []float64{21}},
		{"Sum 0-D", func(e *env) *tensor.Tensor { return ops.Sum(e.f64([]float64{-4})) }, []int{}, []float64{-4}},
		{"Sum empty", func(e *env) *tensor.Tensor { return ops.Sum(e.f64(nil, 0)) }, []int{}, []float64{0}},
		{"Mean", func(e *env) *tensor.Tensor { return ops.Mean(e.f64(m23, 2, 3)) }, []int{}, []float64{3.5}},
		{"Mean float32 3-D", func(e *env) *tensor.Tensor { return ops.Mean(e.f32(iota(24), 2, 3, 4)) }, []int{}, []float64{11.5}},
		{"Sum 0", func(e *env) *tensor.Tensor { return ops.Sum(e.f64(m23, 2, 3), 0) },
			[]int{3}, []float64{5, 7, 9}},
		{"Sum 0 keepdims", func(e *env) *tensor.Tensor { return ops.SumKeepdims(e.f64(m23, 2, 3), 0) },
			[]int{1, 3}, []float64{5, 7, 9}},
		{"Sum 1", func(e *env) *tensor.Tensor { return ops.Sum(e.f64(m23, 2, 3), 1) },
			[]int{2}, []float64{6, 15}},
		{"Sum -1 keepdims", func(e *env) *tensor.Tensor { return ops.SumKeepdims(e.f64(m23, 2, 3), -1) },
			[]int{2, 1}, []float64{6, 15}},
		{"Sum -2", func(e *env) *tensor.Tensor { return ops.Sum(e.f32(m23, 2, 3), -2) },
			[]int{3}, []float64{5, 7, 9}},
		{"Sum 3-D axis 1", func(e *env) *tensor.Tensor { return ops.Sum(e.f64(iota(24), 2, 3, 4), 1) },
			[]int{2, 4}, []float64{12, 15, 18, 21, 48, 51, 54, 57}},
		{"Sum 3-D axis -1 keepdims", func(e *env) *tensor.Tensor {
			return ops.SumKeepdims(e.f64(iota(24), 2, 3, 4), -1)
		}, []int{2, 3, 1}, []float64{6, 22, 38, 54, 70, 86}},
		{"Sum 1-D", func(e *env) *tensor.Tensor { return ops.Sum(e.f64([]float64{1, 2, 3}, 3), 0) },
			[]int{}, []float64{6}},
		{"Mean 1", func(e *env) *tensor.Tensor { return ops.Mean(e.f64(m23, 2, 3), 1) },
			[]int{2}, []float64{2, 5}},
		{"Mean -2 keepdims", func(e *env) *tensor.Tensor { return ops.MeanKeepdims(e.f64(m23, 2, 3), -2) },
			[]int{1, 3}, []float64{2.5, 3.5, 4.5}},
		{"Mean 3-D axis 0", func(e *env) *tensor.Tensor { return ops.Mean(e.f32(iota(24), 2, 3, 4), 0) },
			[]int{3, 4}, []float64{6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17}},
		{"SumTo (3)", func(e *env) *tensor.Tensor { return ops.SumTo(e.f64(m23, 2, 3), []int{3}) },
			[]int{3}, []float64{5, 7, 9}},
		{"SumTo (1,3)", func(e *env) *tensor.Tensor { return ops.SumTo(e.f64(m23, 2, 3), []int{1, 3}) },
			[]int{1, 3}, []float64{5, 7, 9}},
		{"SumTo (2,1)", func(e *env) *tensor.Tensor { return ops.SumTo(e.f64(m23, 2, 3), []int{2, 1}) },
			[]int{2, 1}, []float64{6, 15}},
		{"SumTo ()", func(e *env) *tensor.Tensor { return ops.SumTo(e.f64(m23, 2, 3), []int{}) },
			[]int{}, []float64{21}},
		{"SumTo same shape", func(e *env) *tensor.Tensor { return ops.SumTo(e.f64(m23, 2, 3), []int{2, 3}) },
			[]int{2, 3}, m23},
		{"SumTo (2,1,3) to (1,3)", func(e *env) *tensor.Tensor { return ops.SumTo(e.f64(m23, 2, 1, 3), []int{1, 3}) },
			[]int{1, 3}, []float64{5, 7, 9}},
		{"BroadcastTo (3) to (2,3)", func(e *env) *tensor.Tensor {
			return ops.BroadcastTo(e.f64([]float64{1, 2, 3}, 3), []int{2, 3})
		}, []int{2, 3}, []float64{1, 2, 3, 1, 2, 3}},
		{"BroadcastTo (2,1) to (2,3)", func(e *env) *tensor.Tensor {
			return ops.BroadcastTo(e.f32([]float64{1, 2}, 2, 1), []int{2, 3})
		}, []int{2, 3}, []float64{1, 1, 1, 2, 2, 2}},
		{"BroadcastTo () to (2,2)", func(e *env) *tensor.Tensor {
			return ops.BroadcastTo(e.f64([]float64{7}), []int{2, 2})
		}, []int{2, 2}, []float64{7, 7, 7, 7}},
		{"Clone", func(e *env) *tensor.Tensor { return ops.Clone(e.f64(m23, 3, 2)) }, []int{3, 2}, m23},
		{"Clone int32", func(e *env) *tensor.Tensor { return ops.Clone(e.i32([]float64{-1, 7}, 2)) }, []int{2}, []float64{-1, 7}},
		{"MatMul 2x3·3x2", func(e *env) *tensor.Tensor {
			return ops.MatMul(e.f64(m23, 2, 3), e.f64([]float64{7, 8, 9, 10, 11, 12}, 3, 2))
		}, []int{2, 2}, []float64{58, 64, 139, 154}},
		{"MatMul float32 2x3·3x2", func(e *env) *tensor.Tensor {
			return ops.MatMul(e.f32(m23, 2, 3), e.f32([]float64{7, 8, 9, 10, 11, 12}, 3, 2))
		}, []int{2, 2}, []float64{58, 64, 139, 154}},
		{"MatMul 3x1·1x2", func(e *env) *tensor.Tensor {
			return ops.MatMul(e.f64([]float64{1, 2, 3}, 3, 1), e.f64([]float64{4, 5}, 1, 2))
		}, []int{3, 2}, []float64{4, 5, 8, 10, 12, 15}},
		{"Transpose", func(e *env) *tensor.Tensor { return ops.Transpose(e.f64(m23, 2, 3)) },
			[]int{3, 2}, []float64{1, 4, 2, 5, 3, 6}},
		{"Relu", func(e *env) *tensor.Tensor { return ops.Relu(e.f64([]float64{-1, 0, 2, -3.5, 4, 0.25}, 2, 3)) },
			[]int{2, 3}, []float64{0, 0, 2, 0, 4, 0.25}},
		{"Relu float32 0-D", func(e *env) *tensor.Tensor { return ops.Relu(e.f32([]float64{-2})) },
			[]int{}, []float64{0}},
		{"SoftmaxCrossEntropy", func(e *env) *tensor.Tensor {
			return ops.SoftmaxCrossEntropy(e.f64([]float64{1, 2, 3, 1, 1, 1}, 2, 3), e.i32([]float64{2, 0}, 2))
		}, []int{}, []float64{(naiveXent([]float64{1, 2, 3}, 2) + math.Log(3)) / 2}},
		{"SoftmaxCrossEntropy float32", func(e *env) *tensor.Tensor {
			return ops.SoftmaxCrossEntropy(e.f32([]float64{0.5, -1, 2, 0}, 1, 4), e.i32([]float64{1}, 1))
		}, []int{}, []float64{naiveXent([]float64{0.5, -1, 2, 0}, 1)}},
		{"SoftmaxCrossEntropy ±1000", func(e *env) *tensor.Tensor {
			return ops.SoftmaxCrossEntropy(e.f64([]float64{1000, -1000, -1000, 1000}, 2, 2), e.i32([]float64{0, 0}, 2))
		}, []int{}, []float64{1000}},
		{"SoftmaxCrossEntropy ±1000 float32", func(e *env) *tensor.Tensor {
			return ops.SoftmaxCrossEntropy(e.f32([]float64{1000, -1000, 1000, 1000}, 2, 2), e.i32([]float64{0, 1}, 2))
		}, []int{}, []float64{math.Log(2) / 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			got := e.keep(tt.fn(e))
			tol := 1e-12
			if got.DType() == device.Float32 {
				tol = 1e-6
			}
			check(t, tt.name, got, tt.shape, tt.want, tol)
		})
	}
}

func TestForwardLeavesInputs(t *testing.T) {
	e := newEnv(t)
	a := e.f64([]float64{-1, 2, -3, 4}, 2, 2)
	b := e.f64([]float64{10, 20}, 2)
	for _, x := range []*tensor.Tensor{
		ops.Add(a, b), ops.Sub(a, b), ops.Mul(a, b), ops.Div(a, b),
		ops.Relu(a), ops.Transpose(a), ops.MatMul(a, a), ops.Clone(a),
		ops.Sum(a), ops.Sum(a, 0), ops.BroadcastTo(b, []int{3, 2}),
	} {
		e.keep(x)
	}
	check(t, "a", a, []int{2, 2}, []float64{-1, 2, -3, 4}, 0)
	check(t, "b", b, []int{2}, []float64{10, 20}, 0)
	// Results have their own memory.
	c := e.keep(ops.Clone(a))
	e.dev.Fill(c.Buffer(), 0)
	check(t, "a after filling its clone", a, []int{2, 2}, []float64{-1, 2, -3, 4}, 0)
}

func TestBackward(t *testing.T) {
	tests := []struct {
		name   string
		fn     func(e *env) []*tensor.Tensor
		shapes [][]int
		want   [][]float64
	}{
		{"AddBackward (3,1)+(1,2)", func(e *env) []*tensor.Tensor {
			ga, gb := ops.AddBackward(e.f64([]float64{1, 2, 3}, 3, 1), e.f64([]float64{10, 20}, 1, 2), e.f64([]float64{1, 2, 3, 4, 5, 6}, 3, 2))
			return []*tensor.Tensor{ga, gb}
		}, [][]int{{3, 1}, {1, 2}}, [][]float64{{3, 7, 11}, {9, 12}}},
		{"SubBackward (3,1)-(1,2)", func(e *env) []*tensor.Tensor {
			ga, gb := ops.SubBackward(e.f64([]float64{1, 2, 3}, 3, 1), e.f64([]float64{10, 20}, 1, 2), e.f64([]float64{1, 2, 3, 4, 5, 6}, 3, 2))
			return []*tensor.Tensor{ga, gb}
		}, [][]int{{3, 1}, {1, 2}}, [][]float64{{3, 7, 11}, {-9, -12}}},
		{"MulBackward (3,1)*(1,2)", func(e *env) []*tensor.Tensor {
			ga, gb := ops.MulBackward(e.f64([]float64{1, 2, 3}, 3, 1), e.f64([]float64{10, 20}, 1, 2), e.f64([]float64{1, 2, 3, 4, 5, 6}, 3, 2))
			return []*tensor.Tensor{ga, gb}
		}, [][]int{{3, 1}, {1, 2}}, [][]float64{{50, 110, 170}, {22, 28}}},
		{"DivBackward (3,1)/(1,2)", func(e *env) []*tensor.Tensor {
			ga, gb := ops.DivBackward(e.f64([]float64{1, 2, 3}, 3, 1), e.f64([]float64{10, 20}, 1, 2), e.f64([]float64{1, 2, 3, 4, 5, 6}, 3, 2))
			return []*tensor.Tensor{ga, gb}
		}, [][]int{{3, 1}, {1, 2}}, [][]float64{
			{1.0/10 + 2.0/20, 3.0/10 + 4.0/20, 5.0/10 + 6.0/20},
			{-22.0 / 100, -28.0 / 400}}},
		{"AddBackward float32 scalar+matrix", func(e *env) []*tensor.Tensor {
			ga, gb := ops.AddBackward(e.f32([]float64{5}), e.f32([]float64{1, 2, 3, 4}, 2, 2), e.f32([]float64{1, 1, 2, 2}, 2, 2))
			return []*tensor.Tensor{ga, gb}
		}, [][]int{{}, {2, 2}}, [][]float64{{6}, {1, 1, 2, 2}}},
		{"MulBackward same shape", func(e *env) []*tensor.Tensor {
			ga, gb := ops.MulBackward(e.f64([]float64{1, 2}, 2), e.f64([]float64{3, 4}, 2), e.f64([]float64{10, 100}, 2))
			return []*tensor.Tensor{ga, gb}
		}, [][]int{{2}, {2}}, [][]float64{{30, 400}, {10, 200}}},
		{"MatMulBackward", func(e *env) []*tensor.Tensor {
			a, b, g := e.f64(iota(7)[1:], 2, 3), e.f64([]float64{7, 8, 9, 10, 11, 12}, 3, 2), e.f64([]float64{1, 2, 3, 4}, 2, 2)
			ga, gb := ops.MatMulBackward(a, b, g)
			return []*tensor.Tensor{ga, gb, ops.MatMulBackwardA(a, b, g), ops.MatMulBackwardB(a, b, g)}
		}, [][]int{{2, 3}, {3, 2}, {2, 3}, {3, 2}}, [][]float64{
			{23, 29, 35, 53, 67, 81},
			{13, 18, 17, 24, 21, 30},
			{23, 29, 35, 53, 67, 81},
			{13, 18, 17, 24, 21, 30},
		}},
		{"MatMulBackward float32", func(e *env) []*tensor.Tensor {
			ga, gb := ops.MatMulBackward(e.f32([]float64{1, 2, 3, 4}, 2, 2), e.f32([]float64{5, 6, 7, 8}, 2, 2), e.f32([]float64{1, 1, 1, 1}, 2, 2))
			return []*tensor.Tensor{ga, gb}
		}, [][]int{{2, 2}, {2, 2}}, [][]float64{{11, 15, 11, 15}, {4, 4, 6, 6}}},
		{"TransposeBackward", func(e *env) []*tensor.Tensor {
			return []*tensor.Tensor{ops.TransposeBackward(e.f64(make([]float64, 6), 2, 3), e.f64(iota(7)[1:], 3, 2))}
		}, [][]int{{2, 3}}, [][]float64{{1, 3, 5, 2, 4, 6}}},
		{"ReluBackward", func(e *env) []*tensor.Tensor {
			return []*tensor.Tensor{ops.ReluBackward(e.f64([]float64{-1, 0, 2, 3}, 2, 2), e.f64([]float64{10, 20, 30, 40}, 2, 2))}
		}, [][]int{{2, 2}}, [][]float64{{0, 0, 30, 40}}},
		{"SumBackward", func(e *env) []*tensor.Tensor {
			return []*tensor.Tensor{ops.SumBackward(e.f64(iota(6), 2, 3), e.f64([]float64{2}), nil, false)}
		}, [][]int{{2, 3}}, [][]float64{{2, 2, 2, 2, 2, 2}}},
		{"MeanBackward", func(e *env) []*tensor.Tensor {
			return []*tensor.Tensor{ops.MeanBackward(e.f32(iota(6), 2, 3), e.f32([]float64{3}), nil, false)}
		}, [][]int{{2, 3}}, [][]float64{{0.5, 0.5, 0.5, 0.5, 0.5, 0.5}}},
		{"SumBackward axis 1", func(e *env) []*tensor.Tensor {
			return []*tensor.Tensor{ops.SumBackward(e.f64(iota(6), 2, 3), e.f64([]float64{1, 2}, 2), []int{1}, false)}
		}, [][]int{{2, 3}}, [][]float64{{1, 1, 1, 2, 2, 2}}},
		{"SumBackward axis 0 keepdims", func(e *env) []*tensor.Tensor {
			return []*tensor.Tensor{ops.SumBackward(e.f64(iota(6), 2, 3), e.f64([]float64{1, 2, 3}, 1, 3), []int{0}, true)}
		}, [][]int{{2, 3}}, [][]float64{{1, 2, 3, 1, 2, 3}}},
		{"SumBackward axis -1 keepdims", func(e *env) []*tensor.Tensor {
			return []*tensor.Tensor{ops.SumBackward(e.f64(iota(6), 2, 3), e.f64([]float64{4, 5}, 2, 1), []int{-1}, true)}
		}, [][]int{{2, 3}}, [][]float64{{4, 4, 4, 5, 5, 5}}},
		{"MeanBackward axis 1", func(e *env) []*tensor.Tensor {
			return []*tensor.Tensor{ops.MeanBackward(e.f64(iota(6), 2, 3), e.f64([]float64{3, 6}, 2), []int{1}, false)}
		}, [][]int{{2, 3}}, [][]float64{{1, 1, 1, 2, 2, 2}}},
		{"MeanBackward axis -2", func(e *env) []*tensor.Tensor {
			return []*tensor.Tensor{ops.MeanBackward(e.f64(iota(6), 2, 3), e.f64([]float64{2, 4, 6}, 3), []int{-2}, false)}
		}, [][]int{{2, 3}}, [][]float64{{1, 2, 3, 1, 2, 3}}},
		{"SumToBackward", func(e *env) []*tensor.Tensor {
			return []*tensor.Tensor{ops.SumToBackward(e.f64(iota(6), 2, 3), e.f64([]float64{1, 2, 3}, 3))}
		}, [][]int{{2, 3}}, [][]float64{{1, 2, 3, 1, 2, 3}}},
		{"BroadcastToBackward", func(e *env) []*tensor.Tensor {
			return []*tensor.Tensor{ops.BroadcastToBackward(e.f64([]float64{0, 0, 0}, 3), e.f64(iota(7)[1:], 2, 3))}
		}, [][]int{{3}}, [][]float64{{5, 7, 9}}},
		{"SoftmaxCrossEntropyBackward", func(e *env) []*tensor.Tensor {
			logits := e.f64([]float64{0, 0, 0, 0, math.Log(2), math.Log(5)}, 2, 3)
			return []*tensor.Tensor{ops.SoftmaxCrossEntropyBackward(logits, e.i32([]float64{1, 2}, 2), e.f64([]float64{2}))}
		}, [][]int{{2, 3}}, [][]float64{{1.0 / 3, -2.0 / 3, 1.0 / 3, 1.0 / 8, 1.0 / 4, -3.0 / 8}}},
		{"SoftmaxCrossEntropyBackward ±1000", func(e *env) []*tensor.Tensor {
			logits := e.f32([]float64{1000, -1000, -1000, 1000}, 2, 2)
			return []*tensor.Tensor{ops.SoftmaxCrossEntropyBackward(logits, e.i32([]float64{0, 0}, 2), e.f32([]float64{1}))}
		}, [][]int{{2, 2}}, [][]float64{{0, 0, -0.5, 0.5}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			got := tt.fn(e)
			if len(got) != len(tt.want) {
				t.Fatalf("%d results, want %d", len(got), len(tt.want))
			}
			for i, g := range got {
				e.keep(g)
				tol := 1e-12
				if g.DType() == device.Float32 {
					tol = 1e-6
				}
				check(t, fmt.Sprintf("result %d", i), g, tt.shapes[i], tt.want[i], tol)
			}
		})
	}
}

// TestBinaryBackwardBroadcast checks, for broadcasting pairs, that each
// gradient has its input's shape and matches central differences of
// Σ g·op(a, b).
func TestBinaryBackwardBroadcast(t *testing.T) {
	type binop struct {
		name     string
		forward  func(a, b *tensor.Tensor) *tensor.Tensor
		backward func(a, b, g *tensor.Tensor) (*tensor.Tensor, *tensor.Tensor)
	}
	binops := []binop{
		{"Add", ops.Add[*tensor.Tensor], ops.AddBackward},
		{"Sub", ops.Sub[*tensor.Tensor], ops.SubBackward},
		{"Mul", ops.Mul[*tensor.Tensor], ops.MulBackward},
		{"Div", ops.Div[*tensor.Tensor], ops.DivBackward},
	}
	pairs := []struct{ a, b, out []int }{
		{[]int{3, 1, 5}, []int{3, 4, 5}, []int{3, 4, 5}},
		{[]int{5}, []int{3, 4, 5}, []int{3, 4, 5}},
		{[]int{}, []int{3, 4}, []int{3, 4}},
		{[]int{4, 1}, []int{1, 6}, []int{4, 6}},
		{[]int{2, 3}, []int{2, 3}, []int{2, 3}},
	}
	for _, op := range binops {
		for _, p := range pairs {
			for _, swap := range []bool{false, true} {
				as, bs := p.a, p.b
				if swap {
					as, bs = bs, as
				}
				t.Run(fmt.Sprintf("%s/%v,%v", op.name, as, bs), func(t *testing.T) {
					e := newEnv(t)
					// Operands in [0.5, 2) keep Div away from zero.
					a, b := e.uniform(0.5, 2, 1, as...), e.uniform(0.5, 2, 2, bs...)
					g := e.uniform(-1, 1, 3, p.out...)
					ga, gb := op.backward(a, b, g)
					e.keep(ga)
					e.keep(gb)
					if !slices.Equal(ga.Shape(), as) || !slices.Equal(gb.Shape(), bs) {
						t.Fatalf("gradient shapes %v and %v, want %v and %v", ga.Shape(), gb.Shape(), as, bs)
					}
					gv := values(t, g)
					av, bv := values(t, a), values(t, b)
					loss := func(av, bv []float64) float64 {
						out := op.forward(e.f64(av, as...), e.f64(bv, bs...))
						defer out.Release()
						s := 0.0
						for i, v := range values(t, out) {
							s += gv[i] * v
						}
						return s
					}
					const h = 1e-6
					numeric := func(x []float64, f func([]float64) float64) []float64 {
						d := make([]float64, len(x))
						for i := range x {
							old := x[i]
							x[i] = old + h
							up := f(x)
							x[i] = old - h
							down := f(x)
							x[i] = old
							d[i] = (up - down) / (2 * h)
						}
						return d
					}
					wantA := numeric(slices.Clone(av), func(x []float64) float64 { return loss(x, bv) })
					wantB := numeric(slices.Clone(bv), func(x []float64) float64 { return loss(av, x) })
					check(t, "gradient of a", ga, as, wantA, 1e-6)
					check(t, "gradient of b", gb, bs, wantB, 1e-6)
				})
			}
		}
	}
}

func TestErrors(t *testing.T) {
	e := newEnv(t)
	other1, other2 := cpu.New(), cpu.New()
	t.Cleanup(func() { other1.Close(); other2.Close() })
	on := func(dev device.Device, vals []float64, shape ...int) *tensor.Tensor {
		x, err := tensor.FromFloat64(dev, vals, shape...)
		if err != nil {
			t.Fatal(err)
		}
		return e.keep(x)
	}

	m23 := e.f64(iota(6), 2, 3)
	m32 := e.f64(iota(6), 3, 2)
	v3 := e.f64(iota(3), 3)
	v4 := e.f64(iota(4), 4)
	s64 := e.f64([]float64{1})
	f23 := e.f32(iota(6), 2, 3)
	s32 := e.f32([]float64{1})
	i23 := e.i32(iota(6), 2, 3)
	labels2 := e.i32([]float64{0, 1}, 2)
	released := e.f64(iota(6), 2, 3)
	released.Release()
	view := m23.Reshape(2, 3)
	t.Cleanup(view.Release)

	tests := []struct {
		name string
		fn   func()
		op   string
		kind error
	}{
		{"Add non-broadcastable", func() { ops.Add(m23, v4) }, "ops.Add", tensor.ErrShape},
		{"LayerNorm bias without weight", func() { ops.LayerNorm(m23, []int{3}, nil, v3, 1e-5) }, "ops.LayerNorm", tensor.ErrArgument},
		{"Linear of a value of no kind", func() { ops.Linear(&stranger{}, &stranger{}, nil) }, "ops.linear", tensor.ErrArgument},
		{"Sub non-broadcastable", func() { ops.Sub(m23, m32) }, "ops.Sub", tensor.ErrShape},
		{"Mul non-broadcastable", func() { ops.Mul(v3, v4) }, "ops.Mul", tensor.ErrShape},
		{"Div non-broadcastable", func() { ops.Div(m32, v3) }, "ops.Div", tensor.ErrShape},
		{"Add float32+float64", func() { ops.Add(f23, m23) }, "ops.Add", tensor.ErrDType},
		{"Mul float64*float32 scalar", func() { ops.Mul(m23, s32) }, "ops.Mul", tensor.ErrDType},
		{"Add int32", func() { ops.Add(i23, i23) }, "ops.Add", tensor.ErrDType},
		{"Add int32+float64", func() { ops.Add(m23, i23) }, "ops.Add", tensor.ErrDType},
		{"Add on two devices", func() { ops.Add(on(other1, iota(3), 3), on(other2, iota(3), 3)) }, "ops.Add", tensor.ErrDevice},
		{"Mul on two devices", func() { ops.Mul(m23, on(other1, iota(3), 3)) }, "ops.Mul", tensor.ErrDevice},
		{"MatMul on two devices", func() { ops.MatMul(on(other1, iota(6), 2, 3), on(other2, iota(6), 3, 2)) }, "ops.MatMul", tensor.ErrDevice},
		{"MatMul inner dims", func() { ops.MatMul(m23, m23) }, "ops.MatMul", tensor.ErrShape},
		{"MatMul 1-D inner dims", func() { ops.MatMul(v3, v4) }, "ops.MatMul", tensor.ErrShape},
		{"MatMul 0-D", func() { ops.MatMul(m23, s64) }, "ops.MatMul", tensor.ErrShape},
		{"MatMul batch dims", func() { ops.MatMul(e.f64(iota(12), 2, 2, 3), e.f64(iota(18), 3, 3, 2)) }, "ops.MatMul", tensor.ErrShape},
		{"MatMul mixed dtypes", func() { ops.MatMul(f23, m32) }, "ops.MatMul", tensor.ErrDType},
		{"Permute not a permutation", func() { ops.Permute(m23, 0, 0) }, "ops.Permute", tensor.ErrArgument},
		{"Permute too few axes", func() { ops.Permute(m23, 0) }, "ops.Permute", tensor.ErrArgument},
		{"Relu int32", func() { ops.Relu(i23) }, "ops.Relu", tensor.ErrDType},
		{"Sum int32", func() { ops.Sum(i23) }, "ops.Sum", tensor.ErrDType},
		{"Sum axis 2 of rank 2", func() { ops.Sum(m23, 2) }, "ops.Sum", tensor.ErrArgument},
		{"Sum axis -3 of rank 2", func() { ops.SumKeepdims(m23, -3) }, "ops.Sum", tensor.ErrArgument},
		{"Mean of 0-D", func() { ops.Mean(s64, 0) }, "ops.Mean", tensor.ErrArgument},
		{"SumBackward bad axis", func() { ops.SumBackward(m23, v3, []int{5}, false) }, "ops.SumBackward", tensor.ErrArgument},
		{"SumTo non-broadcastable", func() { ops.SumTo(m23, []int{4}) }, "ops.SumTo", tensor.ErrShape},
		{"SumTo larger shape", func() { ops.SumTo(v3, []int{2, 3}) }, "ops.SumTo", tensor.ErrShape},
		{"BroadcastTo smaller shape", func() { ops.BroadcastTo(m23, []int{3}) }, "ops.BroadcastTo", tensor.ErrShape},
		{"BroadcastTo non-broadcastable", func() { ops.BroadcastTo(v3, []int{2, 4}) }, "ops.BroadcastTo", tensor.ErrShape},
		{"SoftmaxCrossEntropy float labels", func() { ops.SoftmaxCrossEntropy(m23, e.f64([]float64{0, 1}, 2)) }, "ops.SoftmaxCrossEntropy", tensor.ErrDType},
		{"SoftmaxCrossEntropy int32 logits", func() { ops.SoftmaxCrossEntropy(i23, labels2) }, "ops.SoftmaxCrossEntropy", tensor.ErrDType},
		{"SoftmaxCrossEntropy labels too short", func() { ops.SoftmaxCrossEntropy(m32, labels2) }, "ops.SoftmaxCrossEntropy", tensor.ErrShape},
		{"SoftmaxCrossEntropy 2-D labels", func() { ops.SoftmaxCrossEntropy(m23, e.i32([]float64{0, 1}, 2, 1)) }, "ops.SoftmaxCrossEntropy", tensor.ErrShape},
		{"SoftmaxCrossEntropy 1-D logits", func() { ops.SoftmaxCrossEntropy(v3, labels2) }, "ops.SoftmaxCrossEntropy", tensor.ErrShape},
		{"SoftmaxCrossEntropy no classes", func() { ops.SoftmaxCrossEntropy(e.f64(nil, 2, 0), labels2) }, "ops.SoftmaxCrossEntropy", tensor.ErrShape},
		{"SoftmaxCrossEntropyBackward labels dtype", func() { ops.SoftmaxCrossEntropyBackward(m23, e.f64([]float64{0, 1}, 2), s64) }, "ops.SoftmaxCrossEntropyBackward", tensor.ErrDType},
		{"SoftmaxCrossEntropyBackward g not 0-D", func() { ops.SoftmaxCrossEntropyBackward(m23, labels2, e.f64([]float64{1}, 1)) }, "ops.SoftmaxCrossEntropyBackward", tensor.ErrShape},
		{"SoftmaxCrossEntropyBackward g dtype", func() { ops.SoftmaxCrossEntropyBackward(m23, labels2, s32) }, "ops.SoftmaxCrossEntropyBackward", tensor.ErrDType},
		{"AddBackward g shape", func() { ops.AddBackward(m23, v3, m32) }, "ops.AddBackward", tensor.ErrShape},
		{"SubBackward g broadcastable but wrong", func() { ops.SubBackward(m23, v3, v3) }, "ops.SubBackward", tensor.ErrShape},
		{"MulBackward g dtype", func() { ops.MulBackward(m23, v3, f23) }, "ops.MulBackward", tensor.ErrDType},
		{"DivBackward non-broadcastable", func() { ops.DivBackward(m23, v4, m23) }, "ops.DivBackward", tensor.ErrShape},
		{"MatMulBackward g shape", func() { ops.MatMulBackward(m23, m32, m23) }, "ops.MatMulBackward", tensor.ErrShape},
		{"MatMulBackwardA g shape", func() { ops.MatMulBackwardA(m23, m32, v3) }, "ops.MatMulBackwardA", tensor.ErrShape},
		{"MatMulBackwardB inner dims", func() { ops.MatMulBackwardB(m23, m23, e.f64(iota(4), 2, 2)) }, "ops.MatMulBackwardB", tensor.ErrShape},
		{"TransposeBackward g shape", func() { ops.TransposeBackward(m23, m23) }, "ops.TransposeBackward", tensor.ErrShape},
		{"ReluBackward g shape", func() { ops.ReluBackward(m23, m32) }, "ops.ReluBackward", tensor.ErrShape},
		{"SumBackward g not 0-D", func() { ops.SumBackward(m23, v3, nil, false) }, "ops.SumBackward", tensor.ErrShape},
		{"MeanBackward g not 0-D", func() { ops.MeanBackward(m23, m23, nil, false) }, "ops.MeanBackward", tensor.ErrShape},
		{"SumBackward g shape", func() { ops.SumBackward(m23, v3, []int{1}, false) }, "ops.SumBackward", tensor.ErrShape},
		{"MeanBackward g keepdims shape", func() { ops.MeanBackward(m23, v3, []int{0}, true) }, "ops.MeanBackward", tensor.ErrShape},
		{"Add released", func() { ops.Add(released, m23) }, "ops.Add", tensor.ErrReleased},
		{"Add released second", func() { ops.Add(m23, released) }, "ops.Add", tensor.ErrReleased},
		{"Relu released", func() { ops.Relu(released) }, "ops.Relu", tensor.ErrReleased},
		{"Sum released", func() { ops.Sum(released) }, "ops.Sum", tensor.ErrReleased},
		{"MatMul released", func() { ops.MatMul(released, m32) }, "ops.MatMul", tensor.ErrReleased},
		{"Clone released", func() { ops.Clone(released) }, "ops.Clone", tensor.ErrReleased},
		{"AddBackward released g", func() { ops.AddBackward(m23, m23, released) }, "ops.AddBackward", tensor.ErrReleased},
		{"SGD released", func() { ops.SGD(released, m23, 0.1) }, "ops.Axpy", tensor.ErrReleased},
		{"Add nil", func() { ops.Add(nil, m23) }, "ops.Add", tensor.ErrArgument},
		{"Axpy same tensor", func() { ops.Axpy(m23, m23, 1) }, "ops.Axpy", tensor.ErrArgument},
		{"Axpy view of y", func() { ops.Axpy(m23, view, 1) }, "ops.Axpy", tensor.ErrArgument},
		{"Axpy shape", func() { ops.Axpy(m23, m32, 1) }, "ops.Axpy", tensor.ErrShape},
		{"Axpy dtype", func() { ops.Axpy(m23, f23, 1) }, "ops.Axpy", tensor.ErrDType},
		{"SGD int32", func() { ops.SGD(i23, i23, 0.1) }, "ops.Axpy", tensor.ErrDType},
		{"SGD on two devices", func() { ops.SGD(m23, on(other1, iota(6), 2, 3), 0.1) }, "ops.Axpy", tensor.ErrDevice},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { errtest.Panics(t, tt.fn, tt.op, tt.kind, "") })
	}
	// The failed calls left their operands intact.
	check(t, "m23", m23, []int{2, 3}, iota(6), 0)
}

func TestSGD(t *testing.T) {
	for _, dt := range []device.DType{device.Float32, device.Float64} {
		t.Run(dt.String(), func(t *testing.T) {
			e := newEnv(t)
			w := e.make(dt, []float64{1, 2, 3, 4}, 2, 2)
			g := e.make(dt, []float64{0.5, -1, 2, 0}, 2, 2)
			buf := w.Buffer()
			ops.SGD(w, g, 0.1)
			if w.Buffer() != buf {
				t.Error("SGD replaced w's buffer")
			}
			tol := 1e-15
			if dt == device.Float32 {
				tol = 1e-7
			}
			check(t, "w after SGD", w, []int{2, 2}, []float64{0.95, 2.1, 2.8, 4}, tol)
			check(t, "g after SGD", g, []int{2, 2}, []float64{0.5, -1, 2, 0}, 0)
			ops.SGD(w, g, 0.1)
			check(t, "w after two steps", w, []int{2, 2}, []float64{0.9, 2.2, 2.6, 4}, tol)
		})
	}
}

func TestAxpy(t *testing.T) {
	tests := []struct {
		name  string
		y, x  []float64
		shape []int
		alpha float64
		want  []float64
	}{
		{"alpha 2", []float64{1, 2, 3}, []float64{1, 1, 1}, []int{3}, 2, []float64{3, 4, 5}},
		{"alpha -0.5", []float64{1, 2, 3, 4}, []float64{2, 4, 6, 8}, []int{2, 2}, -0.5, []float64{0, 0, 0, 0}},
		{"0-D", []float64{1}, []float64{3}, []int{}, 1, []float64{4}},
	}
	for _, tt := range tests {
		for _, dt := range []device.DType{device.Float32, device.Float64} {
			t.Run(tt.name+"/"+dt.String(), func(t *testing.T) {
				e := newEnv(t)
				y, x := e.make(dt, tt.y, tt.shape...), e.make(dt, tt.x, tt.shape...)
				ops.Axpy(y, x, tt.alpha)
				check(t, "y", y, tt.shape, tt.want, 1e-7)
				check(t, "x", x, tt.shape, tt.x, 0)
			})
		}
	}
}

// list returns its arguments, to collect the results of backward functions.
func list(xs ...*tensor.Tensor) []*tensor.Tensor { return xs }

func TestFailurePropagation(t *testing.T) {
	e := newEnv(t)
	boom := errors.New("boom")
	f := tensor.Failed(e.dev, device.Float64, fmt.Errorf("kernel: %w", boom), 2, 3)
	s := e.f64([]float64{2})
	v3 := e.f64(iota(3), 3)
	m23 := e.f64(iota(6), 2, 3)
	m32 := e.f64(iota(6), 3, 2)
	m22 := e.f64(iota(4), 2, 2)
	labels := e.i32([]float64{0, 2}, 2)
	tests := []struct {
		name   string
		fn     func() []*tensor.Tensor
		shapes [][]int
	}{
		{"Add first", func() []*tensor.Tensor { return list(ops.Add(f, v3)) }, [][]int{{2, 3}}},
		{"Add second", func() []*tensor.Tensor { return list(ops.Add(v3, f)) }, [][]int{{2, 3}}},
		{"Div", func() []*tensor.Tensor { return list(ops.Div(f, s)) }, [][]int{{2, 3}}},
		{"Relu", func() []*tensor.Tensor { return list(ops.Relu(f)) }, [][]int{{2, 3}}},
		{"Relu of Add", func() []*tensor.Tensor { return list(ops.Relu(e.keep(ops.Add(f, f)))) }, [][]int{{2, 3}}},
		{"Sum", func() []*tensor.Tensor { return list(ops.Sum(f)) }, [][]int{{}}},
		{"Mean", func() []*tensor.Tensor { return list(ops.Mean(f)) }, [][]int{{}}},
		{"Sum", func() []*tensor.Tensor { return list(ops.Sum(f, 1)) }, [][]int{{2}}},
		{"Mean keepdims", func() []*tensor.Tensor { return list(ops.MeanKeepdims(f, 0)) }, [][]int{{1, 3}}},
		{"SumTo", func() []*tensor.Tensor { return list(ops.SumTo(f, []int{3})) }, [][]int{{3}}},
		{"BroadcastTo", func() []*tensor.Tensor { return list(ops.BroadcastTo(f, []int{4, 2, 3})) }, [][]int{{4, 2, 3}}},
		{"Clone", func() []*tensor.Tensor { return list(ops.Clone(f)) }, [][]int{{2, 3}}},
		{"Transpose", func() []*tensor.Tensor { return list(ops.Transpose(f)) }, [][]int{{3, 2}}},
		{"MatMul", func() []*tensor.Tensor { return list(ops.MatMul(f, m32)) }, [][]int{{2, 2}}},
		{"AddBackward g", func() []*tensor.Tensor { return list(ops.AddBackward(m23, v3, f)) }, [][]int{{2, 3}, {3}}},
		{"MulBackward a", func() []*tensor.Tensor { return list(ops.MulBackward(f, s, m23)) }, [][]int{{2, 3}, {}}},
		{"MatMulBackward", func() []*tensor.Tensor { return list(ops.MatMulBackward(f, m32, m22)) }, [][]int{{2, 3}, {3, 2}}},
		{"MatMulBackwardB", func() []*tensor.Tensor { return list(ops.MatMulBackwardB(m22, f, m23)) }, [][]int{{2, 3}}},
		{"ReluBackward", func() []*tensor.Tensor { return list(ops.ReluBackward(m23, f)) }, [][]int{{2, 3}}},
		{"SumBackward", func() []*tensor.Tensor {
			return list(ops.SumBackward(e.f64(iota(24), 2, 4, 3), f, []int{1}, false))
		}, [][]int{{2, 4, 3}}},
		{"SoftmaxCrossEntropyBackward", func() []*tensor.Tensor {
			return list(ops.SoftmaxCrossEntropyBackward(f, labels, e.f64([]float64{1})))
		}, [][]int{{2, 3}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i, out := range tt.fn() {
				e.keep(out)
				if !slices.Equal(out.Shape(), tt.shapes[i]) {
					t.Errorf("result %d has shape %v, want %v", i, out.Shape(), tt.shapes[i])
				}
				if out.DType() != device.Float64 {
					t.Errorf("result %d is %v, want float64", i, out.DType())
				}
				if !errors.Is(out.Err(), boom) {
					t.Errorf("result %d: Err() = %v, want boom", i, out.Err())
				}
				if _, err := out.Float64s(); !errors.Is(err, boom) {
					t.Errorf("result %d: readback error %v, want boom", i, err)
				}
			}
		})
	}
}

func TestFailurePropagationGradShapes(t *testing.T) {
	// Gradients of a failed op keep their inputs' shapes, like those of a
	// successful one.
	e := newEnv(t)
	boom := errors.New("boom")
	g := tensor.Failed(e.dev, device.Float64, boom, 3, 4, 5)
	ga, gb := ops.MulBackward(e.f64(iota(15), 3, 1, 5), e.f64(iota(60), 3, 4, 5), g)
	e.keep(ga)
	e.keep(gb)
	if !slices.Equal(ga.Shape(), []int{3, 1, 5}) || !slices.Equal(gb.Shape(), []int{3, 4, 5}) {
		t.Errorf("gradient shapes %v and %v, want [3 1 5] and [3 4 5]", ga.Shape(), gb.Shape())
	}
	for _, x := range []*tensor.Tensor{ga, gb} {
		if _, err := x.Float64s(); !errors.Is(err, boom) {
			t.Errorf("readback error %v, want boom", err)
		}
	}
}

func TestSoftmaxCrossEntropyFailedInput(t *testing.T) {
	e := newEnv(t)
	boom := errors.New("boom")
	loss := e.keep(ops.SoftmaxCrossEntropy(tensor.Failed(e.dev, device.Float32, boom, 2, 3), e.i32([]float64{0, 1}, 2)))
	if _, err := loss.Float32s(); !errors.Is(err, boom) {
		t.Errorf("readback error %v, want boom", err)
	}
}

func TestAxpyFailure(t *testing.T) {
	e := newEnv(t)
	boom := errors.New("boom")
	// A failed x fails y.
	y := e.f64([]float64{1, 2}, 2)
	ops.Axpy(y, tensor.Failed(e.dev, device.Float64, boom, 2), 1)
	if _, err := y.Float64s(); !errors.Is(err, boom) {
		t.Errorf("y after Axpy with a failed x: readback error %v, want boom", err)
	}
	// A failed y stays failed, and x is untouched.
	fy := tensor.Failed(e.dev, device.Float64, boom, 2)
	x := e.f64([]float64{3, 4}, 2)
	ops.SGD(fy, x, 0.5)
	if !errors.Is(fy.Err(), boom) {
		t.Errorf("failed y: Err() = %v, want boom", fy.Err())
	}
	check(t, "x", x, []int{2}, []float64{3, 4}, 0)
}

func TestClosedDevice(t *testing.T) {
	// A device that cannot allocate makes the ops' results fail at
	// readback, with the shapes they would have had.
	dev := cpu.New()
	x, err := tensor.FromFloat32(dev, []float32{-1, 2}, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Release()
	dev.Close()
	tests := []struct {
		name  string
		fn    func() *tensor.Tensor
		shape []int
	}{
		{"Relu", func() *tensor.Tensor { return ops.Relu(x) }, []int{2}},
		{"Add", func() *tensor.Tensor { return ops.Add(x, x) }, []int{2}},
		{"Sum", func() *tensor.Tensor { return ops.Sum(x) }, []int{}},
		{"BroadcastTo", func() *tensor.Tensor { return ops.BroadcastTo(x, []int{3, 2}) }, []int{3, 2}},
		{"Relu of Add", func() *tensor.Tensor {
			a := ops.Add(x, x)
			defer a.Release()
			return ops.Relu(a)
		}, []int{2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := tt.fn()
			defer out.Release()
			if !slices.Equal(out.Shape(), tt.shape) {
				t.Errorf("shape %v, want %v", out.Shape(), tt.shape)
			}
			if out.Err() == nil {
				t.Error("Err() = nil for a result on a closed device")
			}
			if _, err := out.Float32s(); err == nil || err != out.Err() {
				t.Errorf("readback error %v, want %v", err, out.Err())
			}
		})
	}
}

// TestResultsJoinScope checks that an op's result joins the scope of its
// inputs (tensor.Scope): released with the scope when an input belongs to
// it, left alone when none does.
func TestResultsJoinScope(t *testing.T) {
	dev := cpu.New()
	w := tensor.Must(tensor.FromFloat32(dev, []float32{1, 2, 3, 4, 5, 6}, 2, 3))
	b := tensor.Must(tensor.FromFloat32(dev, []float32{1, 1, 1}, 3))
	type result struct {
		name     string
		t        *tensor.Tensor
		released bool
	}
	var got []result
	tensor.Tidy(func(s *tensor.Scope) *tensor.Tensor {
		x := s.Track(tensor.Must(tensor.FromFloat32(dev, []float32{1, 0, -1, 2}, 2, 2)))
		h := ops.MatMul(x, w)
		_, gw := ops.MatMulBackward(x, w, h)
		got = []result{
			{"matmul of a tracked x and w", h, true},
			{"relu of that", ops.Relu(h), true},
			{"add of it and b (broadcast)", ops.Add(h, b), true},
			{"softmax, several kernels", ops.Softmax(h, -1), true},
			{"its gradient", gw, true},
			{"reshape (a view)", ops.Reshape(h, 6), true},
			{"add of w and b, no scope's inputs", ops.Add(w, b), false},
			{"a used w's transpose", ops.Transpose(s.Use(w)), true},
		}
		return nil
	})
	for _, r := range got {
		if r.t.Released() != r.released {
			t.Errorf("%s: Released() = %v; want %v", r.name, r.t.Released(), r.released)
		}
	}
	if w.Released() || b.Released() {
		t.Error("releasing the scope released a tensor from outside it")
	}
}

// stranger is a pointer type with a Shape, neither a tensor nor a
// recorded value: the op functions refuse it.
type stranger struct{}

func (*stranger) Shape() []int { return nil }
