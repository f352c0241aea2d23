package device_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	_ "github.com/extensor/extensor/cpu" // registers "cpu"
	"github.com/extensor/extensor/device"
)

// Test drivers, registered once per test binary so that -count=N works.
const (
	unavailableName = "zz-test-unavailable"
	countingName    = "aa-test-counting"
)

var countingOpens int

func init() {
	device.Register(unavailableName, device.DriverFunc(func() (device.Device, error) {
		return nil, fmt.Errorf("test: no adapter: %w", device.ErrUnavailable)
	}))
	device.Register(countingName, device.DriverFunc(func() (device.Device, error) {
		countingOpens++
		return device.Open("cpu")
	}))
}

// panicValue calls fn and returns what it panicked with, failing the test
// if it did not panic.
func panicValue(t *testing.T, fn func()) (v any) {
	t.Helper()
	defer func() {
		v = recover()
		if v == nil {
			t.Fatal("did not panic")
		}
	}()
	fn()
	return nil
}

func TestOpenCPU(t *testing.T) {
	d, err := device.Open("cpu")
	if err != nil {
		t.Fatalf("Open(cpu): %v", err)
	}
	defer d.Close()
	if got := d.Name(); got != "cpu" {
		t.Errorf("Name() = %q, want %q", got, "cpu")
	}
	if s := d.String(); !strings.HasPrefix(s, "cpu") {
		t.Errorf("String() = %q, want a description starting with %q", s, "cpu")
	}
	for _, dt := range []device.DType{device.Float32, device.Float64, device.Int32} {
		if !d.Supports(dt) {
			t.Errorf("cpu does not support %v", dt)
		}
	}
	d2, err := device.Open("cpu")
	if err != nil {
		t.Fatalf("second Open(cpu): %v", err)
	}
	defer d2.Close()
	if d == d2 {
		t.Error("two Open(cpu) calls returned the same device")
	}
}

func TestOpenUnknown(t *testing.T) {
	tests := []struct {
		name       string
		want       []string // substrings of the error message
		wantImport bool     // whether a "forgotten import" hint is expected
	}{
		{"nosuch", []string{`unknown device "nosuch"`, "registered: ", "cpu"}, false},
		{"", []string{`unknown device ""`, "cpu"}, false},
		{"CPU", []string{`unknown device "CPU"`}, false},
		{"webgpu", []string{
			`unknown device "webgpu"`,
			"cpu",
			"forgotten import",
			`import _ "github.com/extensor/extensor/device/webgpu"`,
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := device.Open(tt.name)
			if err == nil {
				d.Close()
				t.Fatalf("Open(%q) succeeded, want an error", tt.name)
			}
			if d != nil {
				t.Errorf("Open(%q) returned device %v with its error", tt.name, d)
			}
			if !errors.Is(err, device.ErrNotRegistered) {
				t.Errorf("Open(%q) error %q does not wrap ErrNotRegistered", tt.name, err)
			}
			msg := err.Error()
			for _, s := range tt.want {
				if !strings.Contains(msg, s) {
					t.Errorf("Open(%q) error %q does not contain %q", tt.name, msg, s)
				}
			}
			// Every registered name is listed.
			for _, n := range device.Drivers() {
				if !strings.Contains(msg, n) {
					t.Errorf("Open(%q) error %q does not list registered driver %q", tt.name, msg, n)
				}
			}
			if got := strings.Contains(msg, "forgotten import"); got != tt.wantImport {
				t.Errorf("Open(%q) error %q: forgotten-import hint = %v, want %v", tt.name, msg, got, tt.wantImport)
			}
		})
	}
}

func TestOpenDriverError(t *testing.T) {
	d, err := device.Open(unavailableName)
	if err == nil {
		d.Close()
		t.Fatal("Open of a failing driver succeeded")
	}
	if !errors.Is(err, device.ErrUnavailable) {
		t.Errorf("error %q does not wrap ErrUnavailable", err)
	}
	if errors.Is(err, device.ErrNotRegistered) {
		t.Errorf("error %q of a registered driver wraps ErrNotRegistered", err)
	}
}

func TestOpenCallsDriver(t *testing.T) {
	before := countingOpens
	for i := range 3 {
		d, err := device.Open(countingName)
		if err != nil {
			t.Fatalf("Open(%q): %v", countingName, err)
		}
		if d.Name() != "cpu" {
			t.Errorf("Open(%q).Name() = %q, want the driver's device %q", countingName, d.Name(), "cpu")
		}
		d.Close()
		if got := countingOpens - before; got != i+1 {
			t.Fatalf("after %d Opens the driver was called %d times", i+1, got)
		}
	}
}

func TestOpenAuto(t *testing.T) {
	if slices.Contains(device.Drivers(), "webgpu") {
		t.Fatal("webgpu is registered; this test binary must not import it")
	}
	t.Setenv(device.EnvDevice, "")
	d, err := device.Open("auto")
	if err != nil {
		t.Fatalf("Open(auto): %v", err)
	}
	defer d.Close()
	if d.Name() != "cpu" {
		t.Errorf("Open(auto) without webgpu gave %q, want cpu", d.Name())
	}
}

func TestOpenAutoEnv(t *testing.T) {
	if device.EnvDevice != "EXTENSOR_DEVICE" {
		t.Fatalf("EnvDevice = %q, want EXTENSOR_DEVICE", device.EnvDevice)
	}
	tests := []struct {
		env      string
		wantName string   // the device's name on success
		wantErr  []string // substrings of the error, if one is expected
		wantIs   error
	}{
		{env: "cpu", wantName: "cpu"},
		{env: "  cpu\n", wantName: "cpu"},
		{env: "auto", wantName: "cpu"},
		{env: countingName, wantName: "cpu"},
		{env: "bogus", wantErr: []string{"EXTENSOR_DEVICE", "bogus"}, wantIs: device.ErrNotRegistered},
		{env: "webgpu", wantErr: []string{"EXTENSOR_DEVICE=webgpu", "forgotten import"}, wantIs: device.ErrNotRegistered},
		{env: unavailableName, wantErr: []string{"EXTENSOR_DEVICE=" + unavailableName}, wantIs: device.ErrUnavailable},
	}
	for _, tt := range tests {
		t.Run(strings.TrimSpace(tt.env), func(t *testing.T) {
			t.Setenv(device.EnvDevice, tt.env)
			d, err := device.Open("auto")
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("Open(auto) with %s=%q: %v", device.EnvDevice, tt.env, err)
				}
				defer d.Close()
				if d.Name() != tt.wantName {
					t.Errorf("Open(auto) with %s=%q gave %q, want %q", device.EnvDevice, tt.env, d.Name(), tt.wantName)
				}
				return
			}
			if err == nil {
				d.Close()
				t.Fatalf("Open(auto) with %s=%q succeeded, want an error", device.EnvDevice, tt.env)
			}
			if !errors.Is(err, tt.wantIs) {
				t.Errorf("error %q does not wrap %v", err, tt.wantIs)
			}
			for _, s := range tt.wantErr {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
		})
	}
}

func TestRegisterPanics(t *testing.T) {
	driver := device.DriverFunc(func() (device.Device, error) { return nil, errors.New("unused") })
	tests := []struct {
		name   string
		reg    string
		driver device.Driver
		want   string // substring of the panic message
	}{
		{"duplicate", "cpu", driver, "twice"},
		{"duplicate test driver", countingName, driver, "twice"},
		{"auto", "auto", driver, "reserved"},
		{"empty name", "", driver, "reserved"},
		{"nil driver", "test-nil-driver", nil, "nil"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := device.Drivers()
			v := panicValue(t, func() { device.Register(tt.reg, tt.driver) })
			msg := fmt.Sprint(v)
			if !strings.HasPrefix(msg, "device: ") || !strings.Contains(msg, tt.want) {
				t.Errorf("panic %q, want a \"device: \" message containing %q", msg, tt.want)
			}
			if after := device.Drivers(); !slices.Equal(before, after) {
				t.Errorf("a failed Register changed the drivers from %v to %v", before, after)
			}
		})
	}
}

func TestDrivers(t *testing.T) {
	names := device.Drivers()
	if !slices.IsSorted(names) {
		t.Errorf("Drivers() = %v, not sorted", names)
	}
	for _, want := range []string{"cpu", countingName, unavailableName} {
		if !slices.Contains(names, want) {
			t.Errorf("Drivers() = %v, missing %q", names, want)
		}
	}
	for _, bad := range []string{"auto", "webgpu", ""} {
		if slices.Contains(names, bad) {
			t.Errorf("Drivers() = %v, contains %q", names, bad)
		}
	}
	if len(names) != len(slices.Compact(slices.Clone(names))) {
		t.Errorf("Drivers() = %v has duplicates", names)
	}
	// The result is a copy: changing it does not change the registry.
	names[0] = "mutated"
	if slices.Contains(device.Drivers(), "mutated") {
		t.Error("Drivers() returned the registry's own storage")
	}
}

func TestDType(t *testing.T) {
	tests := []struct {
		dt      device.DType
		size    int
		str     string
		isFloat bool
	}{
		{device.Float32, 4, "float32", true},
		{device.Float16, 2, "float16", true},
		{device.Float64, 8, "float64", true},
		{device.Int32, 4, "int32", false},
	}
	for _, tt := range tests {
		t.Run(tt.str, func(t *testing.T) {
			if got := tt.dt.Size(); got != tt.size {
				t.Errorf("Size() = %d, want %d", got, tt.size)
			}
			if got := tt.dt.String(); got != tt.str {
				t.Errorf("String() = %q, want %q", got, tt.str)
			}
			if got := tt.dt.IsFloat(); got != tt.isFloat {
				t.Errorf("IsFloat() = %v, want %v", got, tt.isFloat)
			}
		})
	}
}

func TestInvalidDType(t *testing.T) {
	for _, dt := range []device.DType{0, 5, 255} {
		t.Run(fmt.Sprint(uint8(dt)), func(t *testing.T) {
			if want := fmt.Sprintf("dtype(%d)", uint8(dt)); dt.String() != want {
				t.Errorf("String() = %q, want %q", dt.String(), want)
			}
			if dt.IsFloat() {
				t.Error("IsFloat() = true for an invalid dtype")
			}
			v := panicValue(t, func() { dt.Size() })
			if msg := fmt.Sprint(v); !strings.Contains(msg, "invalid dtype") {
				t.Errorf("Size() panicked with %q, want an invalid dtype message", msg)
			}
		})
	}
}

func TestOpStrings(t *testing.T) {
	tests := []struct {
		op   fmt.Stringer
		want string
	}{
		{device.UnaryOp("relu"), "relu"},
		{device.UnaryOp("gelu_tanh"), "gelu_tanh"},
		{device.Add, "add"},
		{device.FloorDiv, "floor_divide"},
		{device.SquaredDiff, "squared_difference"},
		{device.Sum, "sum"},
		{device.Mean, "mean"},
		{device.Max, "max"},
		{device.Min, "min"},
		{device.ArgMax, "argmax"},
		{device.ArgMin, "argmin"},
		{device.ReduceOp(9), "reduce?"},
	}
	for _, tt := range tests {
		if got := tt.op.String(); got != tt.want {
			t.Errorf("%T(%v).String() = %q, want %q", tt.op, tt.op, got, tt.want)
		}
	}
}

func TestNumel(t *testing.T) {
	tests := []struct {
		shape []int
		want  int
	}{
		{nil, 1},
		{[]int{}, 1},
		{[]int{7}, 7},
		{[]int{2, 3, 4}, 24},
		{[]int{2, 0, 4}, 0},
		{[]int{1, 1, 1}, 1},
	}
	for _, tt := range tests {
		if got := device.Numel(tt.shape); got != tt.want {
			t.Errorf("Numel(%v) = %d, want %d", tt.shape, got, tt.want)
		}
		l := device.Broadcast{Shape: tt.shape}
		if got := l.Len(); got != tt.want {
			t.Errorf("Broadcast{Shape: %v}.Len() = %d, want %d", tt.shape, got, tt.want)
		}
	}
}

func TestHostSlice(t *testing.T) {
	tests := []struct {
		name string
		s    any
		dt   device.DType
		n    int
		ok   bool
	}{
		{"float32", make([]float32, 3), device.Float32, 3, true},
		{"float64", make([]float64, 0), device.Float64, 0, true},
		{"int32", make([]int32, 5), device.Int32, 5, true},
		{"nil float32", []float32(nil), device.Float32, 0, true},
		{"int", make([]int, 2), 0, 0, false},
		{"uint8", make([]byte, 2), 0, 0, false},
		{"array", [2]float32{}, 0, 0, false},
		{"nil", nil, 0, 0, false},
	}
	for _, tt := range tests {
		dt, n, ok := device.HostSlice(tt.s)
		if dt != tt.dt || n != tt.n || ok != tt.ok {
			t.Errorf("HostSlice(%s) = %v, %d, %v; want %v, %d, %v", tt.name, dt, n, ok, tt.dt, tt.n, tt.ok)
		}
	}
}

func TestCheckHost(t *testing.T) {
	tests := []struct {
		name    string
		s       any
		dt      device.DType
		n       int
		wantErr string // substring of the error; "" for none
	}{
		{"match", make([]float32, 3), device.Float32, 3, ""},
		{"empty match", []int32{}, device.Int32, 0, ""},
		{"short", make([]float32, 2), device.Float32, 3, "length 2"},
		{"long", make([]float64, 4), device.Float64, 3, "length 4"},
		{"dtype", make([]float64, 3), device.Float32, 3, "float32 buffer"},
		{"empty dtype", []float64{}, device.Int32, 0, "int32 buffer"},
		{"unsupported", make([]int, 3), device.Int32, 3, "[]int is not"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := device.CheckHost("test: Op", tt.s, tt.dt, tt.n)
			if tt.wantErr == "" {
				if err != nil {
					t.Errorf("CheckHost = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("CheckHost = nil, want an error containing %q", tt.wantErr)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, "test: Op: ") || !strings.Contains(msg, tt.wantErr) {
				t.Errorf("CheckHost error %q, want a \"test: Op: \" error containing %q", msg, tt.wantErr)
			}
		})
	}
}

func TestRegisterTypedNilDriver(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Errorf("Register with DriverFunc(nil) did not panic")
		}
	}()
	device.Register("typed-nil", device.DriverFunc(nil))
}
