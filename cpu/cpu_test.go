package cpu_test

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/device"
)

var floatTypes = []device.DType{device.Float32, device.Float64}

// load allocates a buffer of dtype dt on d holding vals, converted to dt.
func load(t *testing.T, d *cpu.Device, dt device.DType, vals []float64) device.Buffer {
	t.Helper()
	b, err := d.Alloc(dt, len(vals))
	if err != nil {
		t.Fatalf("Alloc(%v, %d): %v", dt, len(vals), err)
	}
	var src any
	switch dt {
	case device.Float32:
		s := make([]float32, len(vals))
		for i, v := range vals {
			s[i] = float32(v)
		}
		src = s
	case device.Float64:
		src = slices.Clone(vals)
	case device.Int32:
		s := make([]int32, len(vals))
		for i, v := range vals {
			s[i] = int32(v)
		}
		src = s
	}
	if err := d.Write(b, src); err != nil {
		t.Fatalf("Write: %v", err)
	}
	return b
}

// alloc allocates an n-element buffer of dtype dt on d.
func alloc(t *testing.T, d *cpu.Device, dt device.DType, n int) device.Buffer {
	t.Helper()
	b, err := d.Alloc(dt, n)
	if err != nil {
		t.Fatalf("Alloc(%v, %d): %v", dt, n, err)
	}
	return b
}

// values reads b back as float64s.
func values(t *testing.T, d *cpu.Device, b device.Buffer) []float64 {
	t.Helper()
	out := make([]float64, b.Len())
	switch b.DType() {
	case device.Float32:
		s := make([]float32, b.Len())
		if err := d.Read(b, s); err != nil {
			t.Fatalf("Read: %v", err)
		}
		for i, v := range s {
			out[i] = float64(v)
		}
	case device.Float64:
		if err := d.Read(b, out); err != nil {
			t.Fatalf("Read: %v", err)
		}
	case device.Int32:
		s := make([]int32, b.Len())
		if err := d.Read(b, s); err != nil {
			t.Fatalf("Read: %v", err)
		}
		for i, v := range s {
			out[i] = float64(v)
		}
	}
	return out
}

// tolerance returns the relative tolerance for comparing results of dtype dt.
func tolerance(dt device.DType) float64 {
	if dt == device.Float32 {
		return 1e-6
	}
	return 1e-13
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

func checkValues(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d values %v, want %d values %v", what, len(got), got, len(want), want)
	}
	for i := range want {
		if !approx(got[i], want[i], tol) {
			t.Errorf("%s: got %v, want %v (first difference at %d)", what, got, want, i)
			return
		}
	}
}

func TestNameAndSupports(t *testing.T) {
	d := cpu.New()
	if d.Name() != "cpu" {
		t.Errorf("Name() = %q, want cpu", d.Name())
	}
	// Each device has its own identity, which errors use.
	id := strings.SplitN(d.String(), ":", 2)[0]
	other := strings.SplitN(cpu.New().String(), ":", 2)[0]
	if !strings.HasPrefix(id, "cpu#") || id == other {
		t.Errorf("identities %q and %q: want two distinct cpu#N", id, other)
	}
	for _, tt := range []struct {
		dt   device.DType
		want bool
	}{
		{device.Float32, true},
		{device.Float64, true},
		{device.Int32, true},
		{device.DType(0), false},
		{device.DType(42), false},
	} {
		if got := d.Supports(tt.dt); got != tt.want {
			t.Errorf("Supports(%v) = %v, want %v", tt.dt, got, tt.want)
		}
	}
	if err := d.Sync(); err != nil {
		t.Errorf("Sync() = %v", err)
	}
}

func TestRegistered(t *testing.T) {
	d, err := device.Open("cpu")
	if err != nil {
		t.Fatalf("Open(cpu): %v", err)
	}
	if _, ok := d.(*cpu.Device); !ok {
		t.Errorf("Open(cpu) returned %T, want *cpu.Device", d)
	}
}

func TestAlloc(t *testing.T) {
	d := cpu.New()
	for _, dt := range []device.DType{device.Float32, device.Float64, device.Int32} {
		for _, n := range []int{0, 1, 5} {
			b := alloc(t, d, dt, n)
			if b.Len() != n || b.DType() != dt {
				t.Errorf("Alloc(%v, %d) gave a %v buffer of %d elements", dt, n, b.DType(), b.Len())
			}
			// Alloc returns zeroed memory.
			checkValues(t, fmt.Sprintf("Alloc(%v, %d)", dt, n), values(t, d, b), make([]float64, n), 0)
		}
	}
	if _, err := d.Alloc(device.Float32, -1); err == nil {
		t.Error("Alloc of -1 elements succeeded")
	}
	if _, err := d.Alloc(device.DType(0), 3); err == nil {
		t.Error("Alloc of an invalid dtype succeeded")
	}
}

func TestClose(t *testing.T) {
	d := cpu.New()
	for i := range 2 {
		if err := d.Close(); err != nil {
			t.Errorf("Close #%d = %v, want nil", i+1, err)
		}
	}
	if _, err := d.Alloc(device.Float32, 1); err == nil {
		t.Error("Alloc on a closed device succeeded")
	}
}

func TestWriteReadRoundTrip(t *testing.T) {
	d := cpu.New()
	f32 := []float32{1.5, -2, float32(math.Pi), math.MaxFloat32, math.SmallestNonzeroFloat32}
	f64 := []float64{0.1, -1e300, math.Pi, math.Inf(1), math.SmallestNonzeroFloat64}
	i32 := []int32{0, -1, 7, math.MaxInt32, math.MinInt32}

	b32 := alloc(t, d, device.Float32, len(f32))
	if err := d.Write(b32, f32); err != nil {
		t.Fatal(err)
	}
	got32 := make([]float32, len(f32))
	if err := d.Read(b32, got32); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got32, f32) {
		t.Errorf("float32 round trip: got %v, want %v", got32, f32)
	}

	b64 := alloc(t, d, device.Float64, len(f64))
	if err := d.Write(b64, f64); err != nil {
		t.Fatal(err)
	}
	got64 := make([]float64, len(f64))
	if err := d.Read(b64, got64); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got64, f64) {
		t.Errorf("float64 round trip: got %v, want %v", got64, f64)
	}

	bi := alloc(t, d, device.Int32, len(i32))
	if err := d.Write(bi, i32); err != nil {
		t.Fatal(err)
	}
	goti := make([]int32, len(i32))
	if err := d.Read(bi, goti); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(goti, i32) {
		t.Errorf("int32 round trip: got %v, want %v", goti, i32)
	}

	// Write copies: changing the source afterwards does not change the buffer.
	f64[0] = 42
	if err := d.Read(b64, got64); err != nil {
		t.Fatal(err)
	}
	if got64[0] != 0.1 {
		t.Errorf("buffer changed with its source: got %v, want 0.1", got64[0])
	}
}

func TestWriteReadErrors(t *testing.T) {
	d := cpu.New()
	tests := []struct {
		name  string
		dt    device.DType
		n     int
		slice any
	}{
		{"short float32", device.Float32, 3, make([]float32, 2)},
		{"long float32", device.Float32, 3, make([]float32, 4)},
		{"short float64", device.Float64, 2, make([]float64, 1)},
		{"long int32", device.Int32, 1, make([]int32, 2)},
		{"float64 into float32", device.Float32, 3, make([]float64, 3)},
		{"float32 into float64", device.Float64, 3, make([]float32, 3)},
		{"int32 into float32", device.Float32, 2, make([]int32, 2)},
		{"float32 into int32", device.Int32, 2, make([]float32, 2)},
		{"unsupported []int", device.Int32, 2, make([]int, 2)},
		{"unsupported []byte", device.Float32, 2, make([]byte, 8)},
		{"nil", device.Float32, 0, nil},
		{"empty float64 into empty float32", device.Float32, 0, []float64{}},
		{"empty int32 into empty float64", device.Float64, 0, []int32{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := alloc(t, d, tt.dt, tt.n)
			if err := d.Write(b, tt.slice); err == nil {
				t.Errorf("Write(%v buffer of %d, %T) succeeded", tt.dt, tt.n, tt.slice)
			} else if !strings.HasPrefix(err.Error(), "cpu: Write") {
				t.Errorf("Write error %q, want a \"cpu: Write\" prefix", err)
			}
			if err := d.Read(b, tt.slice); err == nil {
				t.Errorf("Read(%v buffer of %d, %T) succeeded", tt.dt, tt.n, tt.slice)
			} else if !strings.HasPrefix(err.Error(), "cpu: Read") {
				t.Errorf("Read error %q, want a \"cpu: Read\" prefix", err)
			}
		})
	}
}

func TestFailedWriteLeavesBuffer(t *testing.T) {
	d := cpu.New()
	b := load(t, d, device.Float32, []float64{1, 2})
	if err := d.Write(b, []float32{7, 8, 9}); err == nil {
		t.Fatal("Write of 3 values into 2 elements succeeded")
	}
	checkValues(t, "buffer after a failed Write", values(t, d, b), []float64{1, 2}, 0)
	dst := []float32{5, 5, 5}
	if err := d.Read(b, dst); err == nil {
		t.Fatal("Read of 2 elements into 3 values succeeded")
	}
	if !slices.Equal(dst, []float32{5, 5, 5}) {
		t.Errorf("destination after a failed Read: %v, want [5 5 5]", dst)
	}
}

// foreign is a buffer the cpu device did not allocate.
type foreign struct{}

func (foreign) Len() int            { return 1 }
func (foreign) DType() device.DType { return device.Float32 }

func TestForeignBufferPanics(t *testing.T) {
	d := cpu.New()
	defer func() {
		r := recover()
		if r == nil {
			t.Fatal("Fill of a foreign buffer did not panic")
		}
		if msg := fmt.Sprint(r); !strings.Contains(msg, "not allocated by the cpu device") {
			t.Errorf("panic %q does not explain the foreign buffer", msg)
		}
	}()
	d.Fill(foreign{}, 1)
}

func TestFill(t *testing.T) {
	d := cpu.New()
	tests := []struct {
		dt device.DType
		v  float64
		n  int
	}{
		{device.Float32, 2.5, 4},
		{device.Float32, -0.125, 1},
		{device.Float64, math.Pi, 3},
		{device.Float64, 0, 2},
		{device.Int32, -3, 5},
		{device.Int32, 7, 0},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%v/%v", tt.dt, tt.v), func(t *testing.T) {
			b := load(t, d, tt.dt, slices.Repeat([]float64{9}, tt.n))
			d.Fill(b, tt.v)
			want := slices.Repeat([]float64{tt.v}, tt.n)
			if tt.dt == device.Float32 {
				want = slices.Repeat([]float64{float64(float32(tt.v))}, tt.n)
			}
			checkValues(t, "Fill", values(t, d, b), want, 0)
		})
	}
}

func TestCopy(t *testing.T) {
	d := cpu.New()
	src := []float64{1, -2, 3.5, 0, 100}
	for _, dt := range []device.DType{device.Float32, device.Float64, device.Int32} {
		t.Run(dt.String(), func(t *testing.T) {
			want := src
			if dt == device.Int32 {
				want = []float64{1, -2, 3, 0, 100}
			}
			s := load(t, d, dt, src)
			o := load(t, d, dt, make([]float64, len(src)))
			d.Copy(o, s)
			checkValues(t, "Copy", values(t, d, o), want, 0)
			// The copy is independent of its source.
			d.Fill(s, 7)
			checkValues(t, "Copy after refilling the source", values(t, d, o), want, 0)
		})
	}
}

func TestUnaryRelu(t *testing.T) {
	d := cpu.New()
	x := []float64{-2, -0.5, 0, 0.5, 3, math.Inf(-1), math.Inf(1)}
	want := []float64{0, 0, 0, 0.5, 3, 0, math.Inf(1)}
	for _, dt := range floatTypes {
		t.Run(dt.String(), func(t *testing.T) {
			xb := load(t, d, dt, x)
			o := alloc(t, d, dt, len(x))
			d.Unary("relu", o, xb)
			checkValues(t, "Relu", values(t, d, o), want, 0)
			checkValues(t, "Relu input", values(t, d, xb), x, 0)
		})
	}
}

func TestUnaryGradRelu(t *testing.T) {
	d := cpu.New()
	x := []float64{-1, 0, 2, 3, -0.001, 1e-30}
	dy := []float64{10, 20, 30, -40, 50, 0.5}
	want := []float64{0, 0, 30, -40, 0, 0.5}
	for _, dt := range floatTypes {
		t.Run(dt.String(), func(t *testing.T) {
			dx := load(t, d, dt, slices.Repeat([]float64{99}, len(x)))
			d.UnaryGrad("relu", dx, load(t, d, dt, x), load(t, d, dt, dy))
			checkValues(t, "ReluGrad", values(t, d, dx), want, 0)
		})
	}
}

func TestBinary(t *testing.T) {
	tests := []struct {
		name string
		op   device.BinaryOp
		a, b []float64
		l    device.Broadcast
		want []float64
	}{
		{
			name: "add same shape",
			op:   device.Add,
			a:    []float64{1, 2, 3, 4, 5, 6},
			b:    []float64{10, 20, 30, 40, 50, 60},
			l:    device.Broadcast{Shape: []int{2, 3}, AStrides: []int{3, 1}, BStrides: []int{3, 1}},
			want: []float64{11, 22, 33, 44, 55, 66},
		},
		{
			name: "add row vector",
			op:   device.Add,
			a:    []float64{1, 2, 3, 4, 5, 6},
			b:    []float64{10, 20, 30},
			l:    device.Broadcast{Shape: []int{2, 3}, AStrides: []int{3, 1}, BStrides: []int{0, 1}},
			want: []float64{11, 22, 33, 14, 25, 36},
		},
		{
			name: "sub column vector",
			op:   device.Sub,
			a:    []float64{1, 2, 3, 4, 5, 6},
			b:    []float64{1, 10},
			l:    device.Broadcast{Shape: []int{2, 3}, AStrides: []int{3, 1}, BStrides: []int{1, 0}},
			want: []float64{0, 1, 2, -6, -5, -4},
		},
		{
			name: "sub scalar from the left",
			op:   device.Sub,
			a:    []float64{10},
			b:    []float64{1, 2, 3, 4},
			l:    device.Broadcast{Shape: []int{2, 2}, AStrides: []int{0, 0}, BStrides: []int{2, 1}},
			want: []float64{9, 8, 7, 6},
		},
		{
			name: "mul outer product",
			op:   device.Mul,
			a:    []float64{1, 2, 3},
			b:    []float64{10, 100},
			l:    device.Broadcast{Shape: []int{3, 2}, AStrides: []int{1, 0}, BStrides: []int{0, 1}},
			want: []float64{10, 100, 20, 200, 30, 300},
		},
		{
			name: "mul 3-D both broadcast",
			op:   device.Mul,
			a:    []float64{1, 2, 3, 4},   // (1,2,2)
			b:    []float64{1, -1, 2, 10}, // (2,1,2)
			l:    device.Broadcast{Shape: []int{2, 2, 2}, AStrides: []int{0, 2, 1}, BStrides: []int{2, 0, 1}},
			want: []float64{1, -2, 3, -4, 2, 20, 6, 40},
		},
		{
			name: "div",
			op:   device.Div,
			a:    []float64{1, 2, 3, 4, 5, 6},
			b:    []float64{2, 4, 8},
			l:    device.Broadcast{Shape: []int{2, 3}, AStrides: []int{3, 1}, BStrides: []int{0, 1}},
			want: []float64{0.5, 0.5, 0.375, 2, 1.25, 0.75},
		},
		{
			name: "div by zero",
			op:   device.Div,
			a:    []float64{1, -1, 0},
			b:    []float64{0},
			l:    device.Broadcast{Shape: []int{3}, AStrides: []int{1}, BStrides: []int{0}},
			want: []float64{math.Inf(1), math.Inf(-1), math.NaN()},
		},
		{
			name: "0-D",
			op:   device.Mul,
			a:    []float64{3},
			b:    []float64{-4},
			l:    device.Broadcast{Shape: []int{}, AStrides: []int{}, BStrides: []int{}},
			want: []float64{-12},
		},
		{
			name: "empty",
			op:   device.Add,
			a:    []float64{},
			b:    []float64{1},
			l:    device.Broadcast{Shape: []int{0, 3}, AStrides: []int{3, 1}, BStrides: []int{0, 0}},
			want: []float64{},
		},
	}
	d := cpu.New()
	for _, tt := range tests {
		for _, dt := range floatTypes {
			t.Run(tt.name+"/"+dt.String(), func(t *testing.T) {
				o := alloc(t, d, dt, tt.l.Len())
				d.Binary(tt.op, o, load(t, d, dt, tt.a), load(t, d, dt, tt.b), tt.l)
				checkValues(t, tt.op.String(), values(t, d, o), tt.want, tolerance(dt))
			})
		}
	}
}

func TestBinaryGrad(t *testing.T) {
	// a is 2×3, b is a row of 3 broadcast over a's rows; the gradients are
	// output-shaped (2×3), before any summing back to b's shape.
	a := []float64{1, 2, 3, 4, 5, 6}
	b := []float64{1, 2, 4}
	g := []float64{1, 1, 1, 2, 2, 2}
	l := device.Broadcast{Shape: []int{2, 3}, AStrides: []int{3, 1}, BStrides: []int{0, 1}}
	tests := []struct {
		op   device.BinaryOp
		wrt  int
		want []float64
	}{
		{device.Add, 0, []float64{1, 1, 1, 2, 2, 2}},
		{device.Add, 1, []float64{1, 1, 1, 2, 2, 2}},
		{device.Sub, 0, []float64{1, 1, 1, 2, 2, 2}},
		{device.Sub, 1, []float64{-1, -1, -1, -2, -2, -2}},
		// ∂(a·b)/∂a = b, ∂(a·b)/∂b = a.
		{device.Mul, 0, []float64{1, 2, 4, 2, 4, 8}},
		{device.Mul, 1, []float64{1, 2, 3, 8, 10, 12}},
		// ∂(a/b)/∂a = 1/b, ∂(a/b)/∂b = −a/b², with ε in the denominators.
		{device.Div, 0, []float64{1, 1.0 / 2, 1.0 / 4, 2, 2.0 / 2, 2.0 / 4}},
		{device.Div, 1, []float64{-1, -2.0 / 4, -3.0 / 16, -8, -10.0 / 4, -12.0 / 16}},
	}
	d := cpu.New()
	for _, tt := range tests {
		for _, dt := range floatTypes {
			t.Run(fmt.Sprintf("%v/wrt%d/%v", tt.op, tt.wrt, dt), func(t *testing.T) {
				o := alloc(t, d, dt, l.Len())
				d.BinaryGrad(tt.op, tt.wrt, o, load(t, d, dt, g), load(t, d, dt, a), load(t, d, dt, b), l)
				checkValues(t, "BinaryGrad", values(t, d, o), tt.want, tolerance(dt))
			})
		}
	}
}

func TestReduce(t *testing.T) {
	iota24 := make([]float64, 24) // x[i][j][k] = 12i + 4j + k, shape 2×3×4
	for i := range iota24 {
		iota24[i] = float64(i)
	}
	tests := []struct {
		name  string
		x     []float64
		shape []int
		axes  []int
		sum   []float64
		mean  []float64
	}{
		{"2x3 axis 0", []float64{1, 2, 3, 4, 5, 6}, []int{2, 3}, []int{0},
			[]float64{5, 7, 9}, []float64{2.5, 3.5, 4.5}},
		{"2x3 axis 1", []float64{1, 2, 3, 4, 5, 6}, []int{2, 3}, []int{1},
			[]float64{6, 15}, []float64{2, 5}},
		{"2x3 all", []float64{1, 2, 3, 4, 5, 6}, []int{2, 3}, []int{0, 1},
			[]float64{21}, []float64{3.5}},
		{"2x3 none", []float64{1, 2, 3, 4, 5, 6}, []int{2, 3}, nil,
			[]float64{1, 2, 3, 4, 5, 6}, []float64{1, 2, 3, 4, 5, 6}},
		{"2x3x4 axis 0", iota24, []int{2, 3, 4}, []int{0},
			[]float64{12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34},
			[]float64{6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17}},
		{"2x3x4 axis 1", iota24, []int{2, 3, 4}, []int{1},
			[]float64{12, 15, 18, 21, 48, 51, 54, 57},
			[]float64{4, 5, 6, 7, 16, 17, 18, 19}},
		{"2x3x4 axis 2", iota24, []int{2, 3, 4}, []int{2},
			[]float64{6, 22, 38, 54, 70, 86},
			[]float64{1.5, 5.5, 9.5, 13.5, 17.5, 21.5}},
		{"2x3x4 axes 0 2", iota24, []int{2, 3, 4}, []int{0, 2},
			[]float64{60, 92, 124},
			[]float64{7.5, 11.5, 15.5}},
		{"2x3x4 axes 1 2", iota24, []int{2, 3, 4}, []int{1, 2},
			[]float64{66, 210},
			[]float64{5.5, 17.5}},
		{"2x3x4 all", iota24, []int{2, 3, 4}, []int{0, 1, 2},
			[]float64{276}, []float64{11.5}},
		{"0-D", []float64{-4}, []int{}, nil, []float64{-4}, []float64{-4}},
		{"size-1 axis", []float64{1, 2, 3}, []int{3, 1}, []int{1},
			[]float64{1, 2, 3}, []float64{1, 2, 3}},
		{"empty axis", []float64{}, []int{2, 0}, []int{1},
			[]float64{0, 0}, []float64{math.NaN(), math.NaN()}},
	}
	d := cpu.New()
	for _, tt := range tests {
		n := len(tt.sum)
		for _, dt := range floatTypes {
			for _, op := range []device.ReduceOp{device.Sum, device.Mean} {
				want := tt.sum
				if op == device.Mean {
					want = tt.mean
				}
				t.Run(fmt.Sprintf("%s/%v/%v", tt.name, op, dt), func(t *testing.T) {
					o := load(t, d, dt, slices.Repeat([]float64{99}, n))
					d.Reduce(op, o, load(t, d, dt, tt.x), tt.shape, tt.axes)
					checkValues(t, op.String(), values(t, d, o), want, tolerance(dt))
				})
			}
		}
	}
}

func TestMatMul(t *testing.T) {
	tests := []struct {
		name    string
		m, k, n int
		// a is m×k and b is k×n; aT and bT are their transposes.
		a, aT, b, bT []float64
		want         []float64
	}{
		{
			name: "2x3 by 3x2",
			m:    2, k: 3, n: 2,
			a:    []float64{1, 2, 3, 4, 5, 6},
			aT:   []float64{1, 4, 2, 5, 3, 6},
			b:    []float64{7, 8, 9, 10, 11, 12},
			bT:   []float64{7, 9, 11, 8, 10, 12},
			want: []float64{58, 64, 139, 154},
		},
		{
			name: "outer product 3x1 by 1x2",
			m:    3, k: 1, n: 2,
			a:    []float64{1, 2, 3},
			aT:   []float64{1, 2, 3},
			b:    []float64{4, 5},
			bT:   []float64{4, 5},
			want: []float64{4, 5, 8, 10, 12, 15},
		},
		{
			name: "inner product 1x3 by 3x1",
			m:    1, k: 3, n: 1,
			a:    []float64{1, -2, 3},
			aT:   []float64{1, -2, 3},
			b:    []float64{4, 5, 6},
			bT:   []float64{4, 5, 6},
			want: []float64{12},
		},
		{
			name: "2x2 by 2x3",
			m:    2, k: 2, n: 3,
			a:    []float64{1, 2, 3, 4},
			aT:   []float64{1, 3, 2, 4},
			b:    []float64{0.5, -1, 2, 1, 0, -3},
			bT:   []float64{0.5, 1, -1, 0, 2, -3},
			want: []float64{2.5, -1, -4, 5.5, -3, -6},
		},
		{
			name: "k = 0",
			m:    2, k: 0, n: 2,
			a: []float64{}, aT: []float64{}, b: []float64{}, bT: []float64{},
			want: []float64{0, 0, 0, 0},
		},
	}
	d := cpu.New()
	for _, tt := range tests {
		for _, dt := range floatTypes {
			for _, trans := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
				transA, transB := trans[0], trans[1]
				t.Run(fmt.Sprintf("%s/%v/transA=%v,transB=%v", tt.name, dt, transA, transB), func(t *testing.T) {
					a, b := tt.a, tt.b
					if transA {
						a = tt.aT
					}
					if transB {
						b = tt.bT
					}
					o := load(t, d, dt, slices.Repeat([]float64{99}, tt.m*tt.n))
					d.MatMul(o, load(t, d, dt, a), load(t, d, dt, b), device.GEMM{Batch: 1, M: tt.m, K: tt.k, N: tt.n, TransA: transA, TransB: transB})
					checkValues(t, "MatMul", values(t, d, o), tt.want, tolerance(dt))
				})
			}
		}
	}
}

func TestMatMulBatch(t *testing.T) {
	// Two 2×2 matrices of a times one shared 2×1 b (stride 0), and the same
	// with b's two 2×1 matrices and a shared.
	a := []float64{1, 2, 3, 4, 5, 6, 7, 8}
	b := []float64{1, 10, 2, 20}
	tests := []struct {
		name string
		s    device.GEMM
		a, b []float64
		want []float64
	}{
		{"shared b", device.GEMM{Batch: 2, M: 2, K: 2, N: 1, StrideA: 4}, a, b[:2], []float64{21, 43, 65, 87}},
		{"shared a", device.GEMM{Batch: 2, M: 2, K: 2, N: 1, StrideB: 2}, a[:4], b, []float64{21, 43, 42, 86}},
		{"both", device.GEMM{Batch: 2, M: 1, K: 2, N: 1, StrideA: 2, StrideB: 2}, a[:4], b, []float64{21, 3*2 + 4*20}},
		{"transposed", device.GEMM{Batch: 2, M: 2, K: 2, N: 1, StrideA: 4, TransA: true}, a, b[:2], []float64{31, 42, 75, 86}},
		{"empty batch", device.GEMM{Batch: 0, M: 2, K: 2, N: 1}, nil, nil, nil},
		{"b's rows padded", device.GEMM{Batch: 1, M: 2, K: 2, N: 1, LdB: 2}, a[:4], b, []float64{1 + 2*2, 3 + 4*2}},
		{"b's rows padded, transposed", device.GEMM{Batch: 1, M: 2, K: 2, N: 1, LdB: 3, TransB: true}, a[:4], []float64{1, 2, 99}, []float64{1 + 2*2, 3 + 4*2}},
	}
	d := cpu.New()
	for _, tt := range tests {
		for _, dt := range floatTypes {
			t.Run(tt.name+"/"+dt.String(), func(t *testing.T) {
				o := alloc(t, d, dt, len(tt.want))
				d.MatMul(o, load(t, d, dt, tt.a), load(t, d, dt, tt.b), tt.s)
				checkValues(t, "MatMul", values(t, d, o), tt.want, tolerance(dt))
			})
		}
	}
}

// TestMatMulEpilogue checks GEMM.Bias (added to every row of every
// product) and GEMM.Sums (op(A)'s row sums), and that operands outside
// their contract panic naming the field.
func TestMatMulEpilogue(t *testing.T) {
	d := cpu.New()
	a := []float64{1, 2, 3, 4, 5, 6} // 2×3, or 3×2 transposed
	b := []float64{1, 10, 2, 20, 3, 30}
	bias := []float64{0.5, -1}
	for _, dt := range floatTypes {
		t.Run(dt.String(), func(t *testing.T) {
			// op(A) = a (2×3): products [14 140; 32 320], rows summing to 6 and 15.
			o, sums := alloc(t, d, dt, 4), alloc(t, d, dt, 2)
			d.MatMul(o, load(t, d, dt, a), load(t, d, dt, b), device.GEMM{Batch: 1, M: 2, K: 3, N: 2, Bias: load(t, d, dt, bias), Sums: sums})
			checkValues(t, "MatMul with Bias", values(t, d, o), []float64{14.5, 139, 32.5, 319}, tolerance(dt))
			checkValues(t, "MatMul's Sums", values(t, d, sums), []float64{6, 15}, tolerance(dt))
			// op(A) = aᵀ of a stored 2×3 (3×2), K 2: rows summing to 5, 7, 9.
			sums = alloc(t, d, dt, 3)
			d.MatMul(alloc(t, d, dt, 6), load(t, d, dt, a), load(t, d, dt, b[:4]), device.GEMM{Batch: 1, M: 3, K: 2, N: 2, TransA: true, Sums: sums})
			checkValues(t, "MatMul's Sums, transposed", values(t, d, sums), []float64{5, 7, 9}, tolerance(dt))
			// A batch of 2 (columns [1 2] and [3 4] times 1 and 10) with the bias.
			o = alloc(t, d, dt, 4)
			d.MatMul(o, load(t, d, dt, a[:4]), load(t, d, dt, b[:2]), device.GEMM{Batch: 2, M: 2, K: 1, N: 1, StrideA: 2, StrideB: 1, Bias: load(t, d, dt, bias[:1])})
			checkValues(t, "MatMul with Bias, batched", values(t, d, o), []float64{1 + 0.5, 2 + 0.5, 30 + 0.5, 40 + 0.5}, tolerance(dt))
		})
	}
	f32 := func(n int) device.Buffer { return alloc(t, d, device.Float32, n) }
	bad := []struct {
		name, field string
		dst, a      device.Buffer
		s           device.GEMM
	}{
		{"sums of a batch", "GEMM.Sums", f32(8), f32(12), device.GEMM{Batch: 2, M: 2, K: 3, N: 2, StrideA: 6, Sums: f32(2)}},
		{"sums of an offset a", "GEMM.Sums", f32(4), f32(7), device.GEMM{Batch: 1, M: 2, K: 3, N: 2, OffA: 1, Sums: f32(2)}},
		{"sums accumulated", "GEMM.Sums", f32(4), f32(6), device.GEMM{Batch: 1, M: 2, K: 3, N: 2, Accumulate: true, Sums: f32(2)}},
		{"sums too short", "GEMM.Sums", f32(4), f32(6), device.GEMM{Batch: 1, M: 2, K: 3, N: 2, Sums: f32(1)}},
		{"sums of another dtype", "GEMM.Sums", f32(4), f32(6), device.GEMM{Batch: 1, M: 2, K: 3, N: 2, Sums: alloc(t, d, device.Float64, 2)}},
		{"bias too long", "GEMM.Bias", f32(4), f32(6), device.GEMM{Batch: 1, M: 2, K: 3, N: 2, Bias: f32(3)}},
		{"bias into an offset dst", "GEMM.Bias", f32(5), f32(6), device.GEMM{Batch: 1, M: 2, K: 3, N: 2, OffDst: 1, Bias: f32(2)}},
		{"bias accumulated", "GEMM.Bias", f32(4), f32(6), device.GEMM{Batch: 1, M: 2, K: 3, N: 2, Accumulate: true, Bias: f32(2)}},
		{"bias of another dtype", "GEMM.Bias", f32(4), f32(6), device.GEMM{Batch: 1, M: 2, K: 3, N: 2, Bias: alloc(t, d, device.Float64, 2)}},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if msg, _ := r.(string); !strings.Contains(msg, c.field) {
					t.Errorf("MatMul with %s: recovered %v; want a panic naming %s", c.name, r, c.field)
				}
			}()
			d.MatMul(c.dst, c.a, f32(6), c.s)
		})
	}
}

func TestCopyStrided(t *testing.T) {
	tests := []struct {
		name      string
		s         device.Strided
		x, before []float64
		want      []float64
	}{
		{"transpose 2x3", device.Strided{Shape: []int{3, 2}, SrcStrides: []int{1, 3}, DstStrides: []int{2, 1}},
			[]float64{1, 2, 3, 4, 5, 6}, make([]float64, 6), []float64{1, 4, 2, 5, 3, 6}},
		{"every other of a slice", device.Strided{Shape: []int{2}, SrcStrides: []int{2}, DstStrides: []int{1}, SrcOffset: 1},
			[]float64{1, 2, 3, 4, 5}, make([]float64, 2), []float64{2, 4}},
		{"into the middle of dst", device.Strided{Shape: []int{2, 1}, SrcStrides: []int{1, 1}, DstStrides: []int{3, 1}, DstOffset: 1},
			[]float64{7, 8}, []float64{-1, -1, -1, -1, -1, -1}, []float64{-1, 7, -1, -1, 8, -1}},
		{"0-D", device.Strided{Shape: []int{}, SrcOffset: 2, DstOffset: 0},
			[]float64{1, 2, 3}, []float64{0}, []float64{3}},
		{"empty", device.Strided{Shape: []int{0, 3}, SrcStrides: []int{3, 1}, DstStrides: []int{3, 1}},
			[]float64{}, []float64{5}, []float64{5}},
	}
	d := cpu.New()
	for _, tt := range tests {
		for _, dt := range append(floatTypes, device.Int32) {
			t.Run(tt.name+"/"+dt.String(), func(t *testing.T) {
				o := load(t, d, dt, tt.before)
				d.CopyStrided(o, load(t, d, dt, tt.x), tt.s)
				checkValues(t, "CopyStrided", values(t, d, o), tt.want, 0)
			})
		}
	}
}

// naiveXent is log Σ exp(row) − row[y], computed without any stabilisation.
func naiveXent(row []float64, y int) float64 {
	s := 0.0
	for _, v := range row {
		s += math.Exp(v)
	}
	return math.Log(s) - row[y]
}

func TestSoftmaxCrossEntropy(t *testing.T) {
	tests := []struct {
		name   string
		n, c   int
		logits []float64
		labels []float64
		want   []float64
	}{
		{
			name: "small",
			n:    2, c: 3,
			logits: []float64{1, 2, 3, 0.5, -1, 0},
			labels: []float64{2, 0},
			want: []float64{
				naiveXent([]float64{1, 2, 3}, 2),
				naiveXent([]float64{0.5, -1, 0}, 0),
			},
		},
		{
			name: "uniform logits",
			n:    1, c: 4,
			logits: []float64{7, 7, 7, 7},
			labels: []float64{3},
			want:   []float64{math.Log(4)},
		},
		{
			name: "large logits",
			n:    3, c: 2,
			logits: []float64{1000, -1000, -1000, 1000, 1000, 1000},
			labels: []float64{0, 0, 1},
			want:   []float64{0, 2000, math.Log(2)},
		},
		{
			name: "labels out of range",
			n:    3, c: 2,
			logits: []float64{1, 2, 1, 2, 1, 2},
			labels: []float64{-1, 2, 1},
			want:   []float64{math.NaN(), math.NaN(), naiveXent([]float64{1, 2}, 1)},
		},
	}
	d := cpu.New()
	for _, tt := range tests {
		for _, dt := range floatTypes {
			t.Run(tt.name+"/"+dt.String(), func(t *testing.T) {
				loss := alloc(t, d, dt, tt.n)
				d.SoftmaxCrossEntropy("test", loss, load(t, d, dt, tt.logits), load(t, d, device.Int32, tt.labels), tt.n, tt.c)
				var ie *device.IndexError
				if err := d.Sync(); slices.ContainsFunc(tt.labels, func(y float64) bool { return y < 0 || int(y) >= tt.c }) != errors.As(err, &ie) {
					t.Errorf("Sync: %v; want an IndexError exactly when a label is out of range", err)
				}
				checkValues(t, "SoftmaxCrossEntropy", values(t, d, loss), tt.want, tolerance(dt))
			})
		}
	}
}

func TestSoftmaxCrossEntropyGrad(t *testing.T) {
	const n, c = 3, 4
	logits := []float64{
		1, 2, 3, 4,
		-1, 0, 1, 0.5,
		1000, -1000, 0, 999,
	}
	labels := []float64{3, 0, 1}
	dv := cpu.New()
	for _, dt := range floatTypes {
		for _, g := range []float64{1, 3, -0.5} {
			t.Run(fmt.Sprintf("%v/g=%v", dt, g), func(t *testing.T) {
				dl := alloc(t, dv, dt, n*c)
				perRow := []float64{g / n, g / n, g / n} // each row's share of the mean's gradient
				dv.SoftmaxCrossEntropyGrad("test", dl, load(t, dv, dt, logits), load(t, dv, device.Int32, labels), load(t, dv, dt, perRow), n, c)
				got := values(t, dv, dl)
				want := make([]float64, n*c)
				for i := range n {
					row := logits[i*c : (i+1)*c]
					mx := slices.Max(row)
					s := 0.0
					for _, v := range row {
						s += math.Exp(v - mx)
					}
					for j, v := range row {
						p := math.Exp(v-mx) / s
						if j == int(labels[i]) {
							p--
						}
						want[i*c+j] = p * g / n
					}
				}
				checkValues(t, "SoftmaxCrossEntropyGrad", got, want, tolerance(dt))
				for i := range n {
					sum := 0.0
					for _, v := range got[i*c : (i+1)*c] {
						sum += v
					}
					if math.Abs(sum) > 10*tolerance(dt) {
						t.Errorf("row %d of the gradient sums to %v, want 0", i, sum)
					}
				}
			})
		}
	}
}

func TestSoftmaxCrossEntropyGradBadLabel(t *testing.T) {
	d := cpu.New()
	const n, c = 2, 3
	for _, dt := range floatTypes {
		t.Run(dt.String(), func(t *testing.T) {
			dl := alloc(t, d, dt, n*c)
			logits := load(t, d, dt, []float64{1, 2, 3, 0, 0, 0})
			labels := load(t, d, device.Int32, []float64{3, 1})
			d.SoftmaxCrossEntropyGrad("ops.Test", dl, logits, labels, load(t, d, dt, []float64{1.0 / n, 1.0 / n}), n, c)
			var ie *device.IndexError
			if err := d.Sync(); !errors.As(err, &ie) || ie.Index != 3 || ie.Classes != 3 || !strings.Contains(err.Error(), "ops.Test") {
				t.Errorf("Sync after a bad label: %v; want an IndexError naming ops.Test, index 3 and 3 classes", err)
			}
			if err := d.Sync(); err != nil {
				t.Errorf("second Sync: %v; want the error reported once", err)
			}
			third := 1.0 / 3
			want := []float64{
				math.NaN(), math.NaN(), math.NaN(),
				third / n, (third - 1) / n, third / n,
			}
			checkValues(t, "SoftmaxCrossEntropyGrad", values(t, d, dl), want, tolerance(dt))
		})
	}
}

func TestAxpy(t *testing.T) {
	tests := []struct {
		name  string
		y, x  []float64
		alpha float64
		want  []float64
	}{
		{"half", []float64{1, 2, 3}, []float64{10, 20, 30}, 0.5, []float64{6, 12, 18}},
		{"negative", []float64{1, 2, 3}, []float64{1, -1, 0.5}, -2, []float64{-1, 4, 2}},
		{"zero alpha", []float64{1, 2}, []float64{5, 6}, 0, []float64{1, 2}},
		{"empty", []float64{}, []float64{}, 3, []float64{}},
	}
	d := cpu.New()
	for _, tt := range tests {
		for _, dt := range floatTypes {
			t.Run(tt.name+"/"+dt.String(), func(t *testing.T) {
				y, x := load(t, d, dt, tt.y), load(t, d, dt, tt.x)
				d.Axpy(y, x, tt.alpha)
				checkValues(t, "Axpy y", values(t, d, y), tt.want, tolerance(dt))
				checkValues(t, "Axpy x", values(t, d, x), tt.x, 0)
			})
		}
	}
}

func TestMemoryLimit(t *testing.T) {
	d := cpu.New()
	if d.MemoryInUse() != 0 {
		t.Fatalf("MemoryInUse() = %d on a new device", d.MemoryInUse())
	}
	d.SetMemoryLimit(1000)
	b, err := d.Alloc(device.Float32, 200) // 800 bytes
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		dt   device.DType
		n    int
	}{
		{"past the limit", device.Float32, 100},
		{"element count overflowing int", device.Float64, math.MaxInt/4 + 1},
		{"a terabyte", device.Float32, 1 << 38},
	} {
		_, err := d.Alloc(tt.dt, tt.n)
		if !errors.Is(err, device.ErrOutOfMemory) || !strings.Contains(err.Error(), "cpu") {
			t.Errorf("%s: err = %v, want a cpu error wrapping ErrOutOfMemory", tt.name, err)
		}
	}
	d.Free(b)
	d.Free(b) // harmless
	if d.MemoryInUse() != 0 {
		t.Errorf("MemoryInUse() = %d after Free", d.MemoryInUse())
	}
	if _, err := d.Alloc(device.Float32, 250); err != nil {
		t.Errorf("Alloc within the limit after Free: %v", err)
	}
	if cpu.DefaultMemoryLimit() <= 0 {
		t.Errorf("DefaultMemoryLimit() = %d", cpu.DefaultMemoryLimit())
	}
}

// TestStepFloat32 checks that an optimiser step on float32 parameters
// computes in float32, as PyTorch and the WebGPU kernel do: a gradient
// whose square underflows (1e-30) or overflows (1e20) float32 gives
// Adam's ±Inf or no step, where float64 would give a finite one.
func TestStepFloat32(t *testing.T) {
	d := cpu.New()
	defer d.Close()
	grads := []float64{0, 1e-30, -1e-25, 1e20, -3e19, 2, 5e-20}
	n := len(grads)
	for _, c := range []struct {
		dt   device.DType
		want []float64
	}{
		{device.Float32, []float64{math.NaN(), math.Inf(-1), math.Inf(1), 1, 1, 0.9, 0.9}},
		{device.Float64, []float64{math.NaN(), 0.9, 1.1, 0.9, 1.1, 0.9, 0.9}},
	} {
		w := load(t, d, c.dt, slices.Repeat([]float64{1}, n))
		g := load(t, d, c.dt, grads)
		m, v := load(t, d, c.dt, make([]float64, n)), load(t, d, c.dt, make([]float64, n))
		d.Step(device.Adam, []device.Buffer{w}, []device.Buffer{g}, [][]device.Buffer{{m, v}}, device.StepParams{LR: 0.1, T: 1})
		got := make([]float64, n)
		if c.dt == device.Float32 {
			g32 := make([]float32, n)
			if err := d.Read(w, g32); err != nil {
				t.Fatal(err)
			}
			for i, x := range g32 {
				got[i] = float64(x)
			}
		} else if err := d.Read(w, got); err != nil {
			t.Fatal(err)
		}
		for i := range got {
			want := c.want[i]
			if !(got[i] == want || math.IsNaN(got[i]) && math.IsNaN(want) || math.Abs(got[i]-want) < 1e-6) {
				t.Errorf("%v Adam step, β1 = β2 = ε = 0, gradient %g: %v; want %v", c.dt, grads[i], got[i], want)
			}
		}
	}
}

// TestReadDuringStep reads a parameter on one goroutine while optimiser
// steps update it on another: each read sees the parameter between two
// steps (every element alike), never half updated.
func TestReadDuringStep(t *testing.T) {
	d := cpu.New()
	const n = 1 << 18
	ones := make([]float64, n)
	for i := range ones {
		ones[i] = 1
	}
	p, g := load(t, d, device.Float32, ones), load(t, d, device.Float32, ones)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 200 {
			d.Step(device.SGD, []device.Buffer{p}, []device.Buffer{g}, [][]device.Buffer{nil}, device.StepParams{LR: 1})
		}
	}()
	v := make([]float32, n)
	// A bounded count of reads, each yielding: under GOOS=js goroutines
	// take turns only where one yields.
	for reads := range 2000 {
		select {
		case <-done:
			return
		default:
		}
		if err := d.Read(p, v); err != nil {
			t.Fatal(err)
		}
		for i, x := range v {
			if x != v[0] {
				t.Fatalf("read %d: element %d is %v, element 0 %v: a step half done", reads, i, x, v[0])
			}
		}
		runtime.Gosched()
	}
	<-done
}
