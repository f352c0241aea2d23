package tensor_test

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/internal/errtest"
	"github.com/extensor/extensor/tensor"
)

func openCPU(t *testing.T) device.Device {
	t.Helper()
	dev, err := device.Open("cpu")
	if err != nil {
		t.Fatalf("Open(cpu): %v", err)
	}
	t.Cleanup(func() { dev.Close() })
	return dev
}

// must returns a function that fails the test if err is not nil, and
// otherwise returns x, to be released when the test ends. It is called as
// must(t)(tensor.Zeros(…)).
func must(t *testing.T) func(x *tensor.Tensor, err error) *tensor.Tensor {
	return func(x *tensor.Tensor, err error) *tensor.Tensor {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(x.Release)
		return x
	}
}

func float64s(t *testing.T, x *tensor.Tensor) []float64 {
	t.Helper()
	v, err := x.Float64s()
	if err != nil {
		t.Fatalf("Float64s: %v", err)
	}
	return v
}

// checkError checks that err is a *tensor.Error of the given op and kind.
func checkError(t *testing.T, err error, op string, kind error) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %s: %v", op, kind)
	}
	if !errors.Is(err, kind) {
		t.Errorf("error %q does not wrap %q", err, kind)
	}
	var e *tensor.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %q is a %T, want a *tensor.Error", err, err)
	}
	if e.Op != op {
		t.Errorf("error %q has Op %q, want %q", err, e.Op, op)
	}
	if !strings.HasPrefix(err.Error(), op+": ") {
		t.Errorf("error %q does not start with %q", err, op+": ")
	}
}

func TestCreate(t *testing.T) {
	dev := openCPU(t)
	tests := []struct {
		name   string
		create func() (*tensor.Tensor, error)
		shape  []int
		dt     device.DType
		want   []float64
	}{
		{"float32 1-D by default",
			func() (*tensor.Tensor, error) { return tensor.FromFloat32(dev, []float32{1, 2, 3}) },
			[]int{3}, device.Float32, []float64{1, 2, 3}},
		{"float32 2-D",
			func() (*tensor.Tensor, error) { return tensor.FromFloat32(dev, []float32{1, 2, 3, 4, 5, 6}, 2, 3) },
			[]int{2, 3}, device.Float32, []float64{1, 2, 3, 4, 5, 6}},
		{"float32 0-D",
			func() (*tensor.Tensor, error) { return tensor.FromFloat32(dev, []float32{2.5}, []int{}...) },
			[]int{}, device.Float32, []float64{2.5}},
		{"float64 3-D",
			func() (*tensor.Tensor, error) { return tensor.FromFloat64(dev, []float64{1, 2, 3, 4, 5, 6}, 3, 1, 2) },
			[]int{3, 1, 2}, device.Float64, []float64{1, 2, 3, 4, 5, 6}},
		{"float64 0-D",
			func() (*tensor.Tensor, error) { return tensor.FromFloat64(dev, []float64{-7}, []int{}...) },
			[]int{}, device.Float64, []float64{-7}},
		{"int32 2-D",
			func() (*tensor.Tensor, error) { return tensor.FromInt32(dev, []int32{1, -2, 3, -4}, 2, 2) },
			[]int{2, 2}, device.Int32, []float64{1, -2, 3, -4}},
		{"int32 1-D by default",
			func() (*tensor.Tensor, error) { return tensor.FromInt32(dev, []int32{9, 8}) },
			[]int{2}, device.Int32, []float64{9, 8}},
		{"empty 1-D",
			func() (*tensor.Tensor, error) { return tensor.FromFloat32(dev, nil) },
			[]int{0}, device.Float32, []float64{}},
		{"empty 2-D",
			func() (*tensor.Tensor, error) { return tensor.FromFloat64(dev, []float64{}, 2, 0) },
			[]int{2, 0}, device.Float64, []float64{}},
		{"FromValues float32",
			func() (*tensor.Tensor, error) {
				return tensor.FromValues(dev, device.Float32, []float64{0.5, 1.5, -2}, 3, 1)
			},
			[]int{3, 1}, device.Float32, []float64{0.5, 1.5, -2}},
		{"FromValues float64",
			func() (*tensor.Tensor, error) { return tensor.FromValues(dev, device.Float64, []float64{0.1, 0.2}) },
			[]int{2}, device.Float64, []float64{0.1, 0.2}},
		{"FromValues int32",
			func() (*tensor.Tensor, error) { return tensor.FromValues(dev, device.Int32, []float64{3, -4}, 1, 2) },
			[]int{1, 2}, device.Int32, []float64{3, -4}},
		{"Scalar",
			func() (*tensor.Tensor, error) { return tensor.Scalar(dev, device.Float64, 4.25) },
			[]int{}, device.Float64, []float64{4.25}},
		{"Full",
			func() (*tensor.Tensor, error) { return tensor.Full(dev, device.Float32, 2.5, 2, 2) },
			[]int{2, 2}, device.Float32, []float64{2.5, 2.5, 2.5, 2.5}},
		{"Full int32",
			func() (*tensor.Tensor, error) { return tensor.Full(dev, device.Int32, -3, 3) },
			[]int{3}, device.Int32, []float64{-3, -3, -3}},
		{"Full 0-D",
			func() (*tensor.Tensor, error) { return tensor.Full(dev, device.Float32, 8) },
			[]int{}, device.Float32, []float64{8}},
		{"Zeros",
			func() (*tensor.Tensor, error) { return tensor.Zeros(dev, device.Float64, 3) },
			[]int{3}, device.Float64, []float64{0, 0, 0}},
		{"Zeros empty",
			func() (*tensor.Tensor, error) { return tensor.Zeros(dev, device.Float64, 0, 4) },
			[]int{0, 4}, device.Float64, []float64{}},
		{"Ones",
			func() (*tensor.Tensor, error) { return tensor.Ones(dev, device.Int32, 2, 1, 2) },
			[]int{2, 1, 2}, device.Int32, []float64{1, 1, 1, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := must(t)(tt.create())
			if got := x.Shape(); !slices.Equal(got, tt.shape) || got == nil {
				t.Errorf("Shape() = %#v, want %v", got, tt.shape)
			}
			if x.Rank() != len(tt.shape) {
				t.Errorf("Rank() = %d, want %d", x.Rank(), len(tt.shape))
			}
			if x.Len() != len(tt.want) {
				t.Errorf("Len() = %d, want %d", x.Len(), len(tt.want))
			}
			if x.DType() != tt.dt {
				t.Errorf("DType() = %v, want %v", x.DType(), tt.dt)
			}
			if x.Device() != dev {
				t.Errorf("Device() = %v, want %v", x.Device(), dev)
			}
			if x.Err() != nil || x.Released() {
				t.Errorf("Err() = %v, Released() = %v for a new tensor", x.Err(), x.Released())
			}
			if b := x.Buffer(); b.Len() != len(tt.want) || b.DType() != tt.dt {
				t.Errorf("Buffer() is a %v buffer of %d elements, want %v of %d", b.DType(), b.Len(), tt.dt, len(tt.want))
			}
			if got := float64s(t, x); !slices.Equal(got, tt.want) {
				t.Errorf("values %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRoundTrip(t *testing.T) {
	dev := openCPU(t)
	t.Run("float32", func(t *testing.T) {
		in := []float32{0, -1.5, float32(math.Pi), math.MaxFloat32, math.SmallestNonzeroFloat32, float32(math.Inf(-1))}
		x := must(t)(tensor.FromFloat32(dev, in, 2, 3))
		in[0] = 99 // the tensor holds a copy
		got, err := x.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		want := []float32{0, -1.5, float32(math.Pi), math.MaxFloat32, math.SmallestNonzeroFloat32, float32(math.Inf(-1))}
		if !slices.Equal(got, want) {
			t.Errorf("Float32s() = %v, want %v", got, want)
		}
		wide := float64s(t, x)
		for i := range want {
			if wide[i] != float64(want[i]) {
				t.Errorf("Float64s()[%d] = %v, want %v", i, wide[i], float64(want[i]))
			}
		}
	})
	t.Run("float64", func(t *testing.T) {
		want := []float64{0.1, -1e300, math.Pi, math.SmallestNonzeroFloat64, math.MaxFloat64, math.Inf(1)}
		x := must(t)(tensor.FromFloat64(dev, slices.Clone(want), 3, 2))
		if got := float64s(t, x); !slices.Equal(got, want) {
			t.Errorf("Float64s() = %v, want %v", got, want)
		}
		narrow, err := x.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if narrow[i] != float32(want[i]) {
				t.Errorf("Float32s()[%d] = %v, want %v", i, narrow[i], float32(want[i]))
			}
		}
	})
	t.Run("int32", func(t *testing.T) {
		want := []int32{0, -1, 1, math.MaxInt32, math.MinInt32}
		x := must(t)(tensor.FromInt32(dev, slices.Clone(want)))
		got, err := x.Int32s()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("Int32s() = %v, want %v", got, want)
		}
		wide := float64s(t, x)
		for i := range want {
			if wide[i] != float64(want[i]) {
				t.Errorf("Float64s()[%d] = %v, want %v", i, wide[i], float64(want[i]))
			}
		}
	})
}

func TestShapeIsCopy(t *testing.T) {
	dev := openCPU(t)
	shape := []int{2, 3}
	x := must(t)(tensor.Zeros(dev, device.Float32, shape...))
	shape[0] = 7
	if got := x.Shape(); !slices.Equal(got, []int{2, 3}) {
		t.Fatalf("changing the shape argument changed the tensor's shape to %v", got)
	}
	s := x.Shape()
	s[1] = 9
	if got := x.Shape(); !slices.Equal(got, []int{2, 3}) {
		t.Errorf("changing Shape()'s result changed the tensor's shape to %v", got)
	}
}

func TestDim(t *testing.T) {
	dev := openCPU(t)
	x := must(t)(tensor.Zeros(dev, device.Float32, 2, 3, 4))
	for _, tt := range []struct{ ax, want int }{{0, 2}, {1, 3}, {2, 4}, {-1, 4}, {-3, 2}} {
		if got := x.Dim(tt.ax); got != tt.want {
			t.Errorf("Dim(%d) = %d, want %d", tt.ax, got, tt.want)
		}
	}
	for _, ax := range []int{3, -4, 100} {
		checkError(t, tensor.Maybe(func() { x.Dim(ax) }), "Tensor.Dim", tensor.ErrArgument)
	}
	s := must(t)(tensor.Scalar(dev, device.Float32, 1))
	checkError(t, tensor.Maybe(func() { s.Dim(0) }), "Tensor.Dim", tensor.ErrArgument)
}

func TestCreatePanics(t *testing.T) {
	dev := openCPU(t)
	nine := make([]int, device.MaxRank+1)
	for i := range nine {
		nine[i] = 1
	}
	tests := []struct {
		name string
		fn   func()
		op   string
		kind error
	}{
		{"FromFloat32 too few", func() { tensor.FromFloat32(dev, []float32{1, 2, 3}, 2, 2) }, "tensor.FromFloat32", tensor.ErrShape},
		{"FromFloat32 too many", func() { tensor.FromFloat32(dev, []float32{1, 2, 3}, 2) }, "tensor.FromFloat32", tensor.ErrShape},
		{"FromFloat32 0-D of 2", func() { tensor.FromFloat32(dev, []float32{1, 2}, []int{}...) }, "tensor.FromFloat32", tensor.ErrShape},
		{"FromFloat64 mismatch", func() { tensor.FromFloat64(dev, []float64{1}, 3) }, "tensor.FromFloat64", tensor.ErrShape},
		{"FromInt32 mismatch", func() { tensor.FromInt32(dev, []int32{1, 2}, 1, 3) }, "tensor.FromInt32", tensor.ErrShape},
		{"FromFloat32 negative dim", func() { tensor.FromFloat32(dev, []float32{}, -1, 0) }, "tensor.FromFloat32", tensor.ErrShape},
		{"FromValues bad dtype", func() { tensor.FromValues(dev, device.DType(0), []float64{1}) }, "tensor.FromValues", tensor.ErrDType},
		{"Zeros negative dim", func() { tensor.Zeros(dev, device.Float32, 2, -3) }, "tensor.Full", tensor.ErrShape},
		{"Full rank too large", func() { tensor.Full(dev, device.Float32, 1, nine...) }, "tensor.Full", tensor.ErrShape},
		{"Uniform negative dim", func() { tensor.Uniform(dev, device.Float32, 0, 1, 1, -1) }, "tensor.Uniform", tensor.ErrShape},
		{"Normal negative dim", func() { tensor.Normal(dev, device.Float32, 0, 1, 1, 4, -4) }, "tensor.Normal", tensor.ErrShape},
		{"Empty negative dim", func() { tensor.Empty(dev, device.Float32, -2) }, "tensor.Empty", tensor.ErrShape},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkError(t, tensor.Maybe(tt.fn), tt.op, tt.kind)
		})
	}
}

func TestMaxRank(t *testing.T) {
	dev := openCPU(t)
	eight := make([]int, device.MaxRank)
	for i := range eight {
		eight[i] = 1
	}
	x := must(t)(tensor.Ones(dev, device.Float32, eight...))
	if x.Rank() != device.MaxRank || x.Len() != 1 {
		t.Errorf("rank-%d tensor has rank %d and %d elements", device.MaxRank, x.Rank(), x.Len())
	}
}

func TestUnsupportedDType(t *testing.T) {
	dev := openCPU(t)
	x, err := tensor.Zeros(dev, device.DType(0), 2)
	if err == nil {
		x.Release()
		t.Fatal("Zeros of an invalid dtype succeeded")
	}
	if x != nil {
		t.Errorf("Zeros returned a tensor with its error %v", err)
	}
	if !errors.Is(err, tensor.ErrDType) {
		t.Errorf("error %q does not wrap ErrDType", err)
	}
	e := tensor.Empty(dev, device.DType(0), 2)
	if !errors.Is(e.Err(), tensor.ErrDType) {
		t.Errorf("Empty of an invalid dtype: Err() = %v, want ErrDType", e.Err())
	}
}

func TestClosedDevice(t *testing.T) {
	dev := cpu.New()
	dev.Close()
	if x, err := tensor.FromFloat32(dev, []float32{1, 2}); err == nil {
		x.Release()
		t.Error("FromFloat32 on a closed device succeeded")
	}
	e := tensor.Empty(dev, device.Float32, 2)
	if e.Err() == nil {
		t.Error("Empty on a closed device has no error")
	}
	if _, err := e.Float32s(); err == nil || err != e.Err() {
		t.Errorf("readback of a failed Empty returned %v, want %v", err, e.Err())
	}
}

func TestUniform(t *testing.T) {
	dev := openCPU(t)
	const n = 10000
	tests := []struct {
		dt     device.DType
		lo, hi float64
	}{
		{device.Float64, 0, 1},
		{device.Float64, -3, 5},
		{device.Float32, -1, 1},
		{device.Float32, 10, 10.5},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%v[%v,%v)", tt.dt, tt.lo, tt.hi), func(t *testing.T) {
			a := float64s(t, must(t)(tensor.Uniform(dev, tt.dt, tt.lo, tt.hi, 42, 100, 100)))
			b := float64s(t, must(t)(tensor.Uniform(dev, tt.dt, tt.lo, tt.hi, 42, 100, 100)))
			c := float64s(t, must(t)(tensor.Uniform(dev, tt.dt, tt.lo, tt.hi, 43, 100, 100)))
			if !slices.Equal(a, b) {
				t.Error("the same seed gave different values")
			}
			if slices.Equal(a, c) {
				t.Error("different seeds gave the same values")
			}
			sum := 0.0
			for i, v := range a {
				if v < tt.lo || v >= tt.hi {
					t.Fatalf("value %d = %v outside [%v, %v)", i, v, tt.lo, tt.hi)
				}
				sum += v
			}
			// The mean of n uniform draws has standard deviation (hi−lo)/√(12n).
			mean, want := sum/n, (tt.lo+tt.hi)/2
			if tol := 5 * (tt.hi - tt.lo) / math.Sqrt(12*n); math.Abs(mean-want) > tol {
				t.Errorf("mean %v, want %v ± %v", mean, want, tol)
			}
		})
	}
}

func TestUniformShape(t *testing.T) {
	dev := openCPU(t)
	x := must(t)(tensor.Uniform(dev, device.Float32, 0, 1, 7, 3, 4))
	if !slices.Equal(x.Shape(), []int{3, 4}) || x.DType() != device.Float32 {
		t.Errorf("Uniform gave a %v tensor of shape %v, want float32 [3 4]", x.DType(), x.Shape())
	}
	s := must(t)(tensor.Uniform(dev, device.Float64, 2, 3, 7, []int{}...))
	if v := float64s(t, s); s.Rank() != 0 || len(v) != 1 || v[0] < 2 || v[0] >= 3 {
		t.Errorf("0-D Uniform: rank %d, values %v", s.Rank(), v)
	}
	// A seed gives the same values whatever the dtype, up to rounding.
	a := float64s(t, must(t)(tensor.Uniform(dev, device.Float32, 0, 1, 9, 50)))
	b := float64s(t, must(t)(tensor.Uniform(dev, device.Float64, 0, 1, 9, 50)))
	for i := range a {
		if float32(b[i]) != float32(a[i]) {
			t.Fatalf("value %d: float32 %v, float64 %v", i, a[i], b[i])
		}
	}
}

func TestNormal(t *testing.T) {
	dev := openCPU(t)
	const n = 10000
	tests := []struct {
		dt        device.DType
		mean, std float64
	}{
		{device.Float64, 0, 1},
		{device.Float64, 3, 2},
		{device.Float32, -1, 0.5},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%v/N(%v,%v)", tt.dt, tt.mean, tt.std), func(t *testing.T) {
			a := float64s(t, must(t)(tensor.Normal(dev, tt.dt, tt.mean, tt.std, 1, n)))
			b := float64s(t, must(t)(tensor.Normal(dev, tt.dt, tt.mean, tt.std, 1, n)))
			c := float64s(t, must(t)(tensor.Normal(dev, tt.dt, tt.mean, tt.std, 2, n)))
			if !slices.Equal(a, b) {
				t.Error("the same seed gave different values")
			}
			if slices.Equal(a, c) {
				t.Error("different seeds gave the same values")
			}
			sum, sq := 0.0, 0.0
			for _, v := range a {
				sum += v
			}
			mean := sum / n
			for _, v := range a {
				sq += (v - mean) * (v - mean)
			}
			std := math.Sqrt(sq / (n - 1))
			// Standard errors: std/√n for the mean, about std/√(2n) for std.
			if tol := 5 * tt.std / math.Sqrt(n); math.Abs(mean-tt.mean) > tol {
				t.Errorf("sample mean %v, want %v ± %v", mean, tt.mean, tol)
			}
			if tol := 5 * tt.std / math.Sqrt(2*n); math.Abs(std-tt.std) > tol {
				t.Errorf("sample std %v, want %v ± %v", std, tt.std, tol)
			}
		})
	}
}

func TestReshape(t *testing.T) {
	dev := openCPU(t)
	data := make([]float64, 24)
	for i := range data {
		data[i] = float64(i)
	}
	tests := []struct {
		shape, want []int
	}{
		{[]int{6, 4}, []int{6, 4}},
		{[]int{-1, 4}, []int{6, 4}},
		{[]int{2, -1}, []int{2, 12}},
		{[]int{24}, []int{24}},
		{[]int{-1}, []int{24}},
		{[]int{1, 2, 3, 4, 1}, []int{1, 2, 3, 4, 1}},
		{[]int{2, 3, -1, 1}, []int{2, 3, 4, 1}},
		{[]int{2, 3, 4}, []int{2, 3, 4}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.shape), func(t *testing.T) {
			x := must(t)(tensor.FromFloat64(dev, data, 2, 3, 4))
			shape := slices.Clone(tt.shape)
			v := x.Reshape(shape...)
			defer v.Release()
			shape[0] = 99 // the view keeps its own shape
			if !slices.Equal(v.Shape(), tt.want) {
				t.Errorf("Reshape(%v).Shape() = %v, want %v", tt.shape, v.Shape(), tt.want)
			}
			if !slices.Equal(x.Shape(), []int{2, 3, 4}) {
				t.Errorf("Reshape changed the original's shape to %v", x.Shape())
			}
			if v.DType() != x.DType() || v.Device() != x.Device() {
				t.Errorf("view is %v on %v, want %v on %v", v.DType(), v.Device(), x.DType(), x.Device())
			}
			if got := float64s(t, v); !slices.Equal(got, data) {
				t.Errorf("view values %v, want %v", got, data)
			}
			// The view shares the original's memory.
			if v.Buffer() != x.Buffer() {
				t.Error("view has its own buffer")
			}
			dev.Fill(x.Buffer(), 5)
			if got := float64s(t, v); !slices.Equal(got, slices.Repeat([]float64{5}, 24)) {
				t.Errorf("after filling the original, the view holds %v", got)
			}
		})
	}
}

func TestReshapeScalar(t *testing.T) {
	dev := openCPU(t)
	x := must(t)(tensor.FromFloat32(dev, []float32{3}, 1, 1))
	s := x.Reshape()
	defer s.Release()
	if s.Rank() != 0 || s.Shape() == nil {
		t.Errorf("Reshape() gave shape %#v, want a non-nil empty shape", s.Shape())
	}
	back := s.Reshape(-1)
	defer back.Release()
	if !slices.Equal(back.Shape(), []int{1}) {
		t.Errorf("0-D Reshape(-1) gave shape %v, want [1]", back.Shape())
	}
	if got := float64s(t, back); !slices.Equal(got, []float64{3}) {
		t.Errorf("values %v, want [3]", got)
	}
}

func TestReshapeErrors(t *testing.T) {
	dev := openCPU(t)
	x := must(t)(tensor.Zeros(dev, device.Float32, 2, 3))
	empty := must(t)(tensor.Zeros(dev, device.Float32, 0, 3))
	tests := []struct {
		name  string
		x     *tensor.Tensor
		shape []int
	}{
		{"too many elements", x, []int{7}},
		{"too few elements", x, []int{5}},
		{"transposed rank", x, []int{3, 3}},
		{"two inferred", x, []int{-1, -1}},
		{"negative", x, []int{-2, -3}},
		{"not divisible", x, []int{-1, 4}},
		{"inferred beside zero", x, []int{-1, 0}},
		{"inferred from empty", empty, []int{0, -1}},
		{"scalar", x, []int{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkError(t, tensor.Maybe(func() { tt.x.Reshape(tt.shape...) }), "Tensor.Reshape", tensor.ErrShape)
		})
	}
	// Failed Reshapes leave the tensor usable and releasable.
	v := x.Reshape(3, 2)
	v.Release()
	if got := float64s(t, x); len(got) != 6 {
		t.Errorf("after the failed Reshapes the tensor holds %v", got)
	}
}

func TestRelease(t *testing.T) {
	dev := openCPU(t)
	x, err := tensor.FromFloat32(dev, []float32{1, 2, 3, 4}, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	x.Release()
	x.Release() // safe
	if !x.Released() {
		t.Fatal("Released() = false after Release")
	}
	var nilTensor *tensor.Tensor
	nilTensor.Release() // safe

	checkError(t, tensor.Maybe(func() { x.Reshape(4) }), "Tensor.Reshape", tensor.ErrReleased)
	checkError(t, tensor.Maybe(func() { x.Buffer() }), "Tensor.Buffer", tensor.ErrReleased)

	for _, r := range readbacks(x, dev) {
		err := r.read()
		if !errors.Is(err, tensor.ErrReleased) {
			t.Errorf("%s of a released tensor: error %v, want ErrReleased", r.name, err)
		}
	}
	if s := x.String(); !strings.Contains(s, "<released>") || !strings.Contains(s, "Tensor([2 2], float32, cpu)") {
		t.Errorf("String() of a released tensor = %q", s)
	}
	// Shape metadata stays available.
	if !slices.Equal(x.Shape(), []int{2, 2}) || x.DType() != device.Float32 {
		t.Errorf("released tensor reports %v %v", x.Shape(), x.DType())
	}
}

func TestReleaseViews(t *testing.T) {
	dev := openCPU(t)
	x, err := tensor.FromFloat64(dev, []float64{1, 2, 3, 4, 5, 6}, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	v := x.Reshape(3, 2)
	w := v.Reshape(-1)
	x.Release()
	x.Release() // a second Release must not free the views' memory
	if got := float64s(t, v); !slices.Equal(got, []float64{1, 2, 3, 4, 5, 6}) {
		t.Errorf("view after releasing the original holds %v", got)
	}
	v.Release()
	if got := float64s(t, w); !slices.Equal(got, []float64{1, 2, 3, 4, 5, 6}) {
		t.Errorf("last view after releasing the others holds %v", got)
	}
	w.Release()
	if _, err := w.Float64s(); !errors.Is(err, tensor.ErrReleased) {
		t.Errorf("readback of the released last view: %v, want ErrReleased", err)
	}
}

func TestTo(t *testing.T) {
	src := openCPU(t)
	dst := cpu.New()
	defer dst.Close()
	tests := []struct {
		name string
		x    func() (*tensor.Tensor, error)
	}{
		{"float32", func() (*tensor.Tensor, error) { return tensor.FromFloat32(src, []float32{1, 2, 3, 4, 5, 6}, 2, 3) }},
		{"float64", func() (*tensor.Tensor, error) { return tensor.FromFloat64(src, []float64{0.1, 0.2, 0.3}, 3, 1) }},
		{"int32", func() (*tensor.Tensor, error) { return tensor.FromInt32(src, []int32{-1, 5}, 2) }},
		{"0-D", func() (*tensor.Tensor, error) { return tensor.FromFloat64(src, []float64{9}, []int{}...) }},
	}
	for _, tt := range tests {
		for _, dev := range []device.Device{dst, src} {
			t.Run(tt.name+"/"+fmt.Sprintf("%p", dev), func(t *testing.T) {
				x := must(t)(tt.x())
				want := float64s(t, x)
				y := must(t)(x.To(dev))
				if y.Device() != dev {
					t.Errorf("To(%p) gave a tensor on %p", dev, y.Device())
				}
				if !slices.Equal(y.Shape(), x.Shape()) || y.DType() != x.DType() {
					t.Errorf("To gave %v %v, want %v %v", y.Shape(), y.DType(), x.Shape(), x.DType())
				}
				if got := float64s(t, y); !slices.Equal(got, want) {
					t.Errorf("To gave values %v, want %v", got, want)
				}
				if y.Buffer() == x.Buffer() {
					t.Error("To shares the source's buffer")
				}
				// The copy is independent of the source.
				src.Fill(x.Buffer(), 0)
				if got := float64s(t, y); !slices.Equal(got, want) {
					t.Errorf("after zeroing the source the copy holds %v, want %v", got, want)
				}
			})
		}
	}
}

func TestReadbackDType(t *testing.T) {
	dev := openCPU(t)
	f := must(t)(tensor.FromFloat32(dev, []float32{1.5, 2}))
	_, err := f.Int32s()
	checkError(t, err, "Tensor.Int32s", tensor.ErrDType)
	d := must(t)(tensor.FromFloat64(dev, []float64{1.5, 2}))
	_, err = d.Int32s()
	checkError(t, err, "Tensor.Int32s", tensor.ErrDType)
	i := must(t)(tensor.FromInt32(dev, []int32{1, 2}))
	_, err = i.Float32s()
	checkError(t, err, "Tensor.Float32s", tensor.ErrDType)
}

func TestFailed(t *testing.T) {
	dev := openCPU(t)
	boom := errors.New("boom")
	x := tensor.Failed(dev, device.Float32, fmt.Errorf("kernel: %w", boom), 2, 3)
	if !slices.Equal(x.Shape(), []int{2, 3}) || x.DType() != device.Float32 || x.Device() != dev {
		t.Errorf("Failed gave %v %v on %v", x.Shape(), x.DType(), x.Device())
	}
	if !errors.Is(x.Err(), boom) {
		t.Errorf("Err() = %v, want boom", x.Err())
	}
	for _, r := range readbacks(x, dev) {
		if err := r.read(); !errors.Is(err, boom) {
			t.Errorf("%s of a failed tensor: %v, want boom", r.name, err)
		}
	}
	if s := x.String(); !strings.Contains(s, "<error: kernel: boom>") {
		t.Errorf("String() = %q, want the error", s)
	}
	// A view shares the failure; releasing a failed tensor is safe.
	v := x.Reshape(6)
	if !errors.Is(v.Err(), boom) {
		t.Errorf("view of a failed tensor: Err() = %v", v.Err())
	}
	v.Release()
	x.Release()
	x.Release()
}

func TestSetErr(t *testing.T) {
	dev := openCPU(t)
	x := must(t)(tensor.Zeros(dev, device.Float64, 2))
	first, second := errors.New("first"), errors.New("second")
	x.SetErr(first)
	x.SetErr(second)
	if x.Err() != first {
		t.Errorf("Err() = %v, want the first error", x.Err())
	}
	if _, err := x.Float64s(); err != first {
		t.Errorf("readback error %v, want the first error", err)
	}
}

func TestString(t *testing.T) {
	dev := openCPU(t)
	seq := func(n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(i)
		}
		return v
	}
	tests := []struct {
		name string
		x    func() (*tensor.Tensor, error)
		want string
	}{
		{"2-D float32",
			func() (*tensor.Tensor, error) { return tensor.FromFloat32(dev, []float32{1, 2, 3, 4, 5, 6}, 2, 3) },
			"Tensor([2 3], float32, cpu)\n[[1 2 3]\n [4 5 6]]"},
		{"0-D float64",
			func() (*tensor.Tensor, error) { return tensor.Scalar(dev, device.Float64, 7.5) },
			"Tensor([], float64, cpu)\n7.5"},
		{"1-D int32",
			func() (*tensor.Tensor, error) { return tensor.FromInt32(dev, []int32{-1, 0, 1}) },
			"Tensor([3], int32, cpu)\n[-1 0 1]"},
		{"six values are not abbreviated",
			func() (*tensor.Tensor, error) { return tensor.FromValues(dev, device.Float64, seq(6)) },
			"Tensor([6], float64, cpu)\n[0 1 2 3 4 5]"},
		{"seven values are abbreviated",
			func() (*tensor.Tensor, error) { return tensor.FromValues(dev, device.Float64, seq(7)) },
			"Tensor([7], float64, cpu)\n[0 1 2 ... 4 5 6]"},
		{"long axis",
			func() (*tensor.Tensor, error) { return tensor.FromValues(dev, device.Float64, seq(10)) },
			"Tensor([10], float64, cpu)\n[0 1 2 ... 7 8 9]"},
		{"long rows",
			func() (*tensor.Tensor, error) { return tensor.FromValues(dev, device.Float32, seq(16), 8, 2) },
			"Tensor([8 2], float32, cpu)\n[[0 1]\n [2 3]\n [4 5]\n ...\n [10 11]\n [12 13]\n [14 15]]"},
		{"3-D",
			func() (*tensor.Tensor, error) { return tensor.FromValues(dev, device.Float64, seq(8), 2, 2, 2) },
			"Tensor([2 2 2], float64, cpu)\n[[[0 1]\n  [2 3]]\n [[4 5]\n  [6 7]]]"},
		{"precision",
			func() (*tensor.Tensor, error) { return tensor.FromFloat64(dev, []float64{math.Pi, 1e-7, -2.5e10}) },
			"Tensor([3], float64, cpu)\n[3.14159 1e-07 -2.5e+10]"},
		{"empty",
			func() (*tensor.Tensor, error) { return tensor.Zeros(dev, device.Float32, 0) },
			"Tensor([0], float32, cpu)\n[]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := must(t)(tt.x())
			if got := x.String(); got != tt.want {
				t.Errorf("String() =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestStringLarge(t *testing.T) {
	dev := openCPU(t)
	x := must(t)(tensor.Uniform(dev, device.Float32, 0, 1, 1, 100, 100))
	s := x.String()
	if !strings.HasPrefix(s, "Tensor([100 100], float32, cpu)\n") {
		t.Errorf("String() starts %q", s[:min(len(s), 40)])
	}
	if !strings.Contains(s, "...") {
		t.Error("String() of a 100×100 tensor is not abbreviated")
	}
	if lines := strings.Count(s, "\n"); lines != 7 {
		t.Errorf("String() has %d line breaks, want 7 (head, 6 rows, ellipsis)", lines)
	}
}

func TestMust(t *testing.T) {
	dev := openCPU(t)
	x, err := tensor.Zeros(dev, device.Float32, 1)
	if got := tensor.Must(x, err); got != x {
		t.Errorf("Must returned %p, want %p", got, x)
	}
	x.Release()

	boom := errors.New("boom")
	defer func() {
		if r := recover(); r != boom {
			t.Errorf("Must panicked with %v, want boom", r)
		}
	}()
	tensor.Must(nil, boom)
	t.Error("Must did not panic")
}

func TestMaybe(t *testing.T) {
	if err := tensor.Maybe(func() {}); err != nil {
		t.Errorf("Maybe of a function that does not panic = %v", err)
	}
	err := tensor.Maybe(func() { tensor.Panicf("my.Op", tensor.ErrArgument, "bad %s %d", "thing", 3) })
	checkError(t, err, "my.Op", tensor.ErrArgument)
	var e *tensor.Error
	if errors.As(err, &e) && (e.Msg != "bad thing 3" || e.Kind != tensor.ErrArgument) {
		t.Errorf("Panicf made %+v", e)
	}
	if err.Error() != "my.Op: bad thing 3" {
		t.Errorf("Error() = %q", err.Error())
	}
}

func TestMaybeRepanics(t *testing.T) {
	tests := []struct {
		name  string
		value any
	}{
		{"string", "boom"},
		{"error", errors.New("plain error")},
		{"wrapped kind", fmt.Errorf("x: %w", tensor.ErrShape)},
		{"Error value", tensor.Error{Op: "op", Kind: tensor.ErrShape}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r != tt.value {
					t.Errorf("re-panicked with %v, want %v", r, tt.value)
				}
			}()
			err := tensor.Maybe(func() { panic(tt.value) })
			t.Errorf("Maybe returned %v instead of re-panicking", err)
		})
	}
}

func TestErrorKinds(t *testing.T) {
	kinds := []error{tensor.ErrShape, tensor.ErrDType, tensor.ErrDevice, tensor.ErrArgument, tensor.ErrReleased}
	for i, k := range kinds {
		e := &tensor.Error{Op: "op", Kind: k, Msg: "msg"}
		if e.Unwrap() != k || e.Error() != "op: msg" {
			t.Errorf("%v: Unwrap() = %v, Error() = %q", k, e.Unwrap(), e.Error())
		}
		for j, other := range kinds {
			if got := errors.Is(e, other); got != (i == j) {
				t.Errorf("errors.Is(Error{Kind: %v}, %v) = %v", k, other, got)
			}
		}
	}
}

// Regressions for bugs found in review.

func TestNoShapeMeansScalarForFilledTensors(t *testing.T) {
	dev := openCPU(t)
	for name, mk := range map[string]func() (*tensor.Tensor, error){
		"Uniform": func() (*tensor.Tensor, error) { return tensor.Uniform(dev, device.Float32, 0, 1, 1) },
		"Normal":  func() (*tensor.Tensor, error) { return tensor.Normal(dev, device.Float32, 0, 1, 1) },
		"Scalar":  func() (*tensor.Tensor, error) { return tensor.Scalar(dev, device.Float32, 2) },
	} {
		x, err := mk()
		if err != nil {
			t.Fatal(err)
		}
		if x.Rank() != 0 {
			t.Errorf("%s with no shape: shape %v; want []", name, x.Shape())
		}
		y, err := x.To(dev)
		if err != nil || y.Rank() != 0 {
			t.Errorf("%s(...).To(dev): shape %v, %v; want []", name, y.Shape(), err)
		}
	}
}

func TestUniformFloat32ExcludesHi(t *testing.T) {
	dev := openCPU(t)
	// Seed 3773 once drew a value that rounded to exactly 1 in float32.
	x, err := tensor.Uniform(dev, device.Float32, 0, 1, 3773, 1000)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := x.Float32s()
	for i, f := range v {
		if f < 0 || f >= 1 {
			t.Fatalf("element %d = %v; want [0, 1)", i, f)
		}
	}
}

// readback is one way of reading a tensor back to the host.
type readback struct {
	name string
	read func() error
}

// readbacks lists every way of reading x back, moving it to dev for To.
func readbacks(x *tensor.Tensor, dev device.Device) []readback {
	return []readback{
		{"Float32s", func() error { _, err := x.Float32s(); return err }},
		{"Float64s", func() error { _, err := x.Float64s(); return err }},
		{"Int32s", func() error { _, err := x.Int32s(); return err }},
		{"To", func() error { _, err := x.To(dev); return err }},
	}
}

// TestReleaseNeedsNoCollection checks that tensors freed by Release do not
// count towards GCInterval, and that tensors left to the collector do.
func TestReleaseNeedsNoCollection(t *testing.T) {
	dev := openCPU(t)
	defer func(n int64) { tensor.GCInterval = n }(tensor.GCInterval)
	tensor.GCInterval = 1 << 20
	const n = 1 << 17 // 512 KiB of float32
	before := tensor.ForcedGCs()
	for range 20 {
		tensor.Empty(dev, device.Float32, n).Release()
	}
	if got := tensor.ForcedGCs() - before; got != 0 {
		t.Errorf("20 tensors of 512 KiB allocated and released with GCInterval 1 MiB: %d collections; want 0", got)
	}
	before = tensor.ForcedGCs()
	for range 20 {
		_ = tensor.Empty(dev, device.Float32, n) // left to the collector
	}
	if got := tensor.ForcedGCs() - before; got < 5 {
		t.Errorf("20 tensors of 512 KiB left unreleased with GCInterval 1 MiB: %d collections; want at least 5", got)
	}
}

// TestNilDevice refuses a nil device with ErrArgument, never a nil
// dereference.
func TestNilDevice(t *testing.T) {
	x := tensor.Must(tensor.Zeros(openCPU(t), device.Float32, 2))
	for name, fn := range map[string]func(){
		"tensor.Empty":       func() { tensor.Empty(nil, device.Float32, 2) },
		"tensor.Full":        func() { tensor.Full(nil, device.Float32, 1, 2) },
		"tensor.Uniform":     func() { tensor.Uniform(nil, device.Float32, 0, 1, 1, 2) },
		"tensor.FromFloat32": func() { tensor.FromFloat32(nil, []float32{1}) },
		"tensor.FromInt32":   func() { tensor.FromInt32(nil, []int32{1}) },
		"Tensor.To":          func() { x.To(nil) },
	} {
		errtest.Panics(t, fn, name, tensor.ErrArgument, "nil device")
	}
}

// TestReshapeOverflow refuses shapes whose element count overflows an
// int, also when it wraps to the right count.
func TestReshapeOverflow(t *testing.T) {
	x := tensor.Must(tensor.Zeros(openCPU(t), device.Float32, 8))
	for _, shape := range [][]int{{4, 1<<62 + 2}, {1 << 62, 4, 2}, {-1, 1 << 62, 16}} {
		errtest.Panics(t, func() { x.Reshape(shape...) }, "Tensor.Reshape", tensor.ErrShape, "more elements than an int counts")
	}
}

func TestArange(t *testing.T) {
	dev := cpu.New()
	for _, c := range []struct {
		start, stop, step float64
		dt                device.DType
		want              []float64
	}{
		{0, 5, 1, device.Int32, []float64{0, 1, 2, 3, 4}},
		{1, 2, 0.25, device.Float64, []float64{1, 1.25, 1.5, 1.75}},
		{3, 0, -1.5, device.Float32, []float64{3, 1.5}},
		{2, 2, 1, device.Float32, nil},
		{0, 1, 0.3, device.Float64, []float64{0, 0.3, 0.6, 0.8999999999999999}},
	} {
		x, err := tensor.Arange(dev, c.dt, c.start, c.stop, c.step)
		if err != nil {
			t.Fatal(err)
		}
		got, err := x.Float64s()
		if err != nil || len(got) != len(c.want) || x.Rank() != 1 {
			t.Fatalf("Arange(%v, %v, %v): %v (%v); want %v", c.start, c.stop, c.step, got, err, c.want)
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("Arange(%v, %v, %v): %v; want %v", c.start, c.stop, c.step, got, c.want)
				break
			}
		}
	}
	for _, bad := range []struct {
		args [3]float64
		says string
	}{{[3]float64{0, 5, 0}, "want a non-zero step"}, {[3]float64{0, 5, -1}, "sign disagree"}, {[3]float64{0, math.Inf(1), 1}, "want finite"}, {[3]float64{math.NaN(), 1, 1}, "want finite"}} {
		errtest.Panics(t, func() { _, _ = tensor.Arange(dev, device.Float32, bad.args[0], bad.args[1], bad.args[2]) }, "tensor.Arange", tensor.ErrArgument, bad.says)
	}
	for _, bad := range [][3]float64{{0.5, 3, 1}, {0, 3, 0.5}, {0, 1 << 32, 1 << 30}, {-1 << 31, -1<<31 - 3, -1}} {
		errtest.Panics(t, func() { _, _ = tensor.Arange(dev, device.Int32, bad[0], bad[1], bad[2]) }, "tensor.Arange", tensor.ErrArgument, "want an integer start and step, and int32 elements")
	}
	x := tensor.Must(tensor.Arange(dev, device.Int32, math.MaxInt32-2, math.MaxInt32+1, 1))
	if got, err := x.Int32s(); err != nil || !slices.Equal(got, []int32{math.MaxInt32 - 2, math.MaxInt32 - 1, math.MaxInt32}) {
		t.Errorf("int32 arange to 2³¹−1: %v (%v)", got, err)
	}
}
