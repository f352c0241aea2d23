//go:build cgo || js

package webgpu_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/device/webgpu"
	"github.com/extensor/extensor/internal/gputest"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/tensor"
)

// fresh opens a device of its own, for tests that break or close it.
func fresh(t *testing.T) *webgpu.Device {
	t.Helper()
	gputest.Open(t) // fails under CI, skips elsewhere, without an adapter
	d, err := webgpu.Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// normals returns n values drawn from the standard normal distribution
// by r.
func normals(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// freshWith is fresh with the environment variable k set to v while the
// device opens, for a test or subtest that then goes on in parallel
// (t.Setenv forbids t.Parallel). Call it before t.Parallel: tests (and a
// test's subtests) run one at a time until then, so no other test reads
// the environment meanwhile. The tests that go on in parallel open every
// device before t.Parallel, for the same reason.
func freshWith(t *testing.T, k, v string) *webgpu.Device {
	t.Helper()
	old, had := os.LookupEnv(k)
	os.Setenv(k, v)
	defer func() {
		if had {
			os.Setenv(k, old)
		} else {
			os.Unsetenv(k)
		}
	}()
	return fresh(t)
}

func TestOpenDescribesAdapter(t *testing.T) {
	d := fresh(t)
	if d.Name() != "webgpu" {
		t.Errorf("Name() = %q", d.Name())
	}
	if s := d.String(); !regexp.MustCompile(`^webgpu#[0-9]+: `).MatchString(s) || strings.Count(s, ", ") < 2 {
		t.Errorf("String() = %q; want \"webgpu#N: <adapter>, <backend>, <type>\"", s)
	}
	if l := d.Limits(); l.MaxComputeWorkgroupsPerDimension < 65535 || l.MaxStorageBufferBindingSize < 1<<27 {
		t.Errorf("limits not the adapter's: %+v", l)
	}
	t.Log(d)
}

func TestAutoPrefersWebGPU(t *testing.T) {
	gputest.Open(t)
	t.Setenv(device.EnvDevice, "")
	d, err := device.Open("auto")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Name() != "webgpu" {
		t.Errorf("auto chose %s with an adapter present", d)
	}
	t.Setenv(device.EnvDevice, "cpu")
	c, err := device.Open("auto")
	if err != nil || c.Name() != "cpu" {
		t.Errorf("auto with %s=cpu: %v, %v", device.EnvDevice, c, err)
	}
}

func TestAdapterOverride(t *testing.T) {
	gputest.Open(t)
	for _, v := range []string{"0", firstAdapterWord(t)} {
		t.Setenv(webgpu.EnvAdapter, v)
		d, err := webgpu.Open()
		if err != nil {
			t.Errorf("%s=%q: %v", webgpu.EnvAdapter, v, err)
			continue
		}
		d.Close()
	}
	// A list, one adapter a local rank (package dist): rank 1 takes the
	// second entry, rank 2 the first again.
	for _, local := range []string{"1", "2"} {
		t.Setenv(webgpu.EnvLocalRank, local)
		t.Setenv(webgpu.EnvAdapter, "no-such-adapter,0")
		d, err := webgpu.Open()
		if local == "1" && err != nil {
			t.Errorf("%s=%q, local rank 1: %v", webgpu.EnvAdapter, "no-such-adapter,0", err)
		}
		if local == "2" && (err == nil || !strings.Contains(err.Error(), `(entry "no-such-adapter", for local rank 2)`)) {
			t.Errorf("%s=%q, local rank 2: err = %v; want the entry named", webgpu.EnvAdapter, "no-such-adapter,0", err)
		}
		if err == nil {
			d.Close()
		}
	}
	t.Setenv(webgpu.EnvLocalRank, "")
	t.Setenv(webgpu.EnvAdapter, "no-such-adapter")
	_, err := webgpu.Open()
	if !errors.Is(err, device.ErrUnavailable) || !strings.Contains(err.Error(), "no-such-adapter") {
		t.Errorf("unknown adapter: err = %v", err)
	}
}

// TestBadEnvironment checks that Open refuses a value its environment
// switches do not know, naming the variable, the value and what it
// accepts, instead of falling back silently.
func TestBadEnvironment(t *testing.T) {
	gputest.Open(t)
	for _, c := range []struct{ name, value, want string }{
		{webgpu.EnvConv, "direct", "im2col"},
		{webgpu.EnvConv, "im2", "im2col"},
		{webgpu.EnvSubgroups, "on", "off"},
		{webgpu.EnvSubgroups, "of", "off"},
		{webgpu.EnvWait, "poll", "spin or block"},
		{webgpu.EnvWait, "or", "spin or block"},
		{webgpu.EnvF16, "f16", "packed"},
		{webgpu.EnvF16, "pack", "packed"},
		{webgpu.EnvMatMul, "fastest", "texture"},
	} {
		t.Run(c.name+"="+c.value, func(t *testing.T) {
			t.Setenv(c.name, c.value)
			d, err := webgpu.Open()
			if err == nil {
				d.Close()
				t.Fatalf("Open succeeded; want an error")
			}
			for _, s := range []string{c.name, strconv.Quote(c.value), c.want} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not name %s", err, s)
				}
			}
		})
	}
}

func firstAdapterWord(t *testing.T) string {
	d := fresh(t)
	_, name, _ := strings.Cut(d.String(), ": ")
	return strings.ToUpper(strings.Fields(name)[0])
}

func TestCloseTwice(t *testing.T) {
	gputest.Open(t)
	d, err := webgpu.Open()
	if err != nil {
		t.Fatal(err)
	}
	x := tensor.Must(tensor.Ones(d, device.Float32, 10))
	_ = ops.Relu(x)
	if err := d.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := d.Alloc(device.Float32, 4); err == nil {
		t.Errorf("Alloc after Close: no error")
	}
}

func TestFloat64Unsupported(t *testing.T) {
	d := gputest.Open(t)
	_, err := tensor.Zeros(d, device.Float64, 3)
	if !errors.Is(err, tensor.ErrDType) || !strings.Contains(err.Error(), "float64") {
		t.Errorf("float64 on webgpu: err = %v; want ErrDType naming float64", err)
	}
}

// TestTensorBeyondBindingLimit checks the limits are consistent, that a
// tensor may be as large as the maximum buffer size, that elementwise ops
// work on one larger than the binding limit (bound a chunk at a time) and
// that other ops on it fail naming the limit, never returning zeros.
func TestTensorBeyondBindingLimit(t *testing.T) {
	d := fresh(t)
	t.Parallel()
	l := d.Limits()
	if l.MaxStorageBufferBindingSize > l.MaxBufferSize {
		t.Fatalf("binding size %d > buffer size %d", l.MaxStorageBufferBindingSize, l.MaxBufferSize)
	}
	n := int(l.MaxBufferSize/4) + 1
	if _, err := tensor.Zeros(d, device.Float32, n); !errors.Is(err, device.ErrOutOfMemory) || !strings.Contains(err.Error(), "maximum buffer size") {
		t.Fatalf("tensor of %d float32: err = %v; want ErrOutOfMemory naming the maximum buffer size", n, err)
	}
	if l.MaxStorageBufferBindingSize == l.MaxBufferSize {
		t.Logf("%v binds whole buffers: no tensor exceeds the binding limit", d)
		return
	}
	// Beyond the binding limit: vec4 kernels (n a multiple of 4) and
	// scalar ones, through unary, binary and axpy.
	for _, extra := range []int{4096, 4099} {
		n := int(l.MaxStorageBufferBindingSize/4) + extra
		xs, ys := make([]float32, n), make([]float32, n)
		for i := range xs {
			xs[i], ys[i] = float32(i%1000), float32(i%7)
		}
		x := tensor.Must(tensor.FromFloat32(d, xs, n))
		y := tensor.Must(tensor.FromFloat32(d, ys, n))
		z := ops.Add(x, y)
		ops.Axpy(z, x, -1)
		got, err := ops.Neg(z).Float32s()
		if err != nil {
			t.Fatalf("n=%d: -(x+y-x): %v", n, err)
		}
		for i, v := range got {
			if v != -ys[i] {
				t.Fatalf("n=%d: -(x+y-x)[%d] = %v; want %v", n, i, v, -ys[i])
			}
		}
		if _, err := ops.Sum(x).Float32s(); err == nil || !strings.Contains(err.Error(), "maximum storage buffer binding size") {
			t.Errorf("n=%d: sum: err = %v; want an error naming the binding limit", n, err)
		}
		// Clipping's sum of squares and scaling take it a chunk at a time:
		// 100s first, then ones (and the last chunk past the binding
		// limit: twos), whose sums a chunk storing them over another's
		// would lose.
		gs := make([]float32, n)
		sq := 0.0
		for i := range gs {
			switch {
			case i < extra:
				gs[i] = 100
			case i >= n-extra:
				gs[i] = 2
			default:
				gs[i] = 1
			}
			sq += float64(gs[i]) * float64(gs[i])
		}
		g := tensor.Must(tensor.FromFloat32(d, gs, n))
		norm, err := ops.ClipGradNorm([]*tensor.Tensor{g}, 1).Float64s()
		if want := math.Sqrt(sq); err != nil || math.Abs(norm[0]-want) > 1e-4*want {
			t.Errorf("n=%d: clip_grad_norm: norm %v, %v; want %v", n, norm, err, want)
		}
		clipped, err := g.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		coef := 1 / (math.Sqrt(sq) + 1e-6)
		for _, i := range []int{1, extra, n / 2, n - extra, n - 1} {
			if want := float64(gs[i]) * coef; math.Abs(float64(clipped[i])-want) > 1e-4*want {
				t.Errorf("n=%d: clipped[%d] = %v; want %v", n, i, clipped[i], want)
			}
		}
		g.Release()
		for _, v := range []*tensor.Tensor{x, y, z} {
			v.Release()
		}
	}
	// Clipping tensors each within a binding, and of more elements in
	// all than a binding holds bytes (a byte of scratch an element would
	// outgrow one).
	var parts []*tensor.Tensor
	sq, each := 0.0, int(l.MaxStorageBufferBindingSize/4)-1021
	for k := range 5 {
		parts = append(parts, tensor.Must(tensor.Full(d, device.Float32, float64(k+1), each)))
		sq += float64((k+1)*(k+1)) * float64(each)
	}
	if norm, err := ops.ClipGradNorm(parts, 1).Float64s(); err != nil || math.Abs(norm[0]-math.Sqrt(sq)) > 1e-4*math.Sqrt(sq) {
		t.Errorf("clip_grad_norm of 5 tensors of %d: norm %v, %v; want %v", each, norm, err, math.Sqrt(sq))
	}
	for k, p := range parts {
		v, err := p.Float32s()
		if want := float64(k+1) / (math.Sqrt(sq) + 1e-6); err != nil || math.Abs(float64(v[each-1])-want) > 1e-4*want {
			t.Errorf("clip_grad_norm of 5 tensors of %d: tensor %d's last element %v, %v; want %v", each, k, v[each-1], err, want)
		}
		p.Release()
	}
	// An op whose output is too large fails its readback, never zeros.
	n = int(l.MaxStorageBufferBindingSize/4) + 1
	x := tensor.Must(tensor.Ones(d, device.Float32, n/2+1, 1))
	y := tensor.Must(tensor.Ones(d, device.Float32, 1, 2))
	z := ops.Add(x, y)
	if _, err := z.Float32s(); err == nil || !strings.Contains(err.Error(), "binding size") {
		t.Errorf("readback of an oversized broadcast result: err = %v", err)
	}
}

func TestValidationErrorReportedOnceThenRecovers(t *testing.T) {
	d := fresh(t)
	x := tensor.Must(tensor.FromFloat32(d, []float32{-1, 2, -3, 4}, 4))
	// The same buffer as input and output of one dispatch is invalid: the
	// device refuses it on every adapter, as browsers do.
	d.Unary("relu", x.Buffer(), x.Buffer())
	err := d.Sync()
	if err == nil || !strings.Contains(err.Error(), "kernel unary/relu") || !strings.Contains(err.Error(), "binds one buffer at bindings 1 and 2") {
		t.Fatalf("Sync after an invalid dispatch: %v; want an error naming kernel unary/relu and its bindings 1 and 2", err)
	}
	if err := d.Sync(); err != nil {
		t.Errorf("second Sync: %v; want the error reported once", err)
	}
	// The device keeps working.
	got, err := ops.Relu(x).Float32s()
	if err != nil || !slices.Equal(got, []float32{0, 2, 0, 4}) {
		t.Errorf("relu after the failure: %v, %v; want [0 2 0 4]", got, err)
	}
	// So it does after an allocation it cannot make.
	n := int(d.Limits().MaxBufferSize/4) + 1
	if _, err := tensor.Zeros(d, device.Float32, n); !errors.Is(err, device.ErrOutOfMemory) {
		t.Errorf("Zeros of %d float32: %v; want ErrOutOfMemory", n, err)
	}
	if got, err := ops.Neg(x).Float32s(); err != nil || got[0] != 1 {
		t.Errorf("neg after a failed allocation: %v, %v", got, err)
	}
}

func TestBatchedSubmission(t *testing.T) {
	d := fresh(t)
	x := tensor.Must(tensor.Ones(d, device.Float32, 64))
	before := d.Submissions()
	acc := ops.Clone(x)
	const n = 600
	for range n {
		ops.Axpy(acc, x, 1)
	}
	got, err := acc.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	if got[0] != n+1 || got[63] != n+1 {
		t.Errorf("after %d in-place adds: %v…; want %d", n, got[:2], n+1)
	}
	subs := d.Submissions() - before
	if max := uint64(n/webgpu.BatchSize + 2); subs > max {
		t.Errorf("%d ops took %d submissions; want at most %d (batches of %d)", n, subs, max, webgpu.BatchSize)
	}
	t.Logf("%d dispatches in %d submissions", n+1, subs)
}

func TestLongRowsFailLoudlyOnCPUAdapters(t *testing.T) {
	d := fresh(t)
	if !strings.Contains(d.String(), "CPU") {
		t.Skipf("%s loops without lavapipe's limit", d)
	}
	// lavapipe ends a loop after about 32768 iterations without a word: a
	// softmax over longer rows must be an error, never a wrong result.
	x := tensor.Must(tensor.Zeros(d, device.Float32, 2, 40000))
	_, err := ops.Softmax(x, 1).Float32s()
	if err == nil || !strings.Contains(err.Error(), "kernel softmax/stats") || !strings.Contains(err.Error(), "rows of 40000 elements are longer than 16384") {
		t.Fatalf("softmax over rows of 40000: err = %v; want an error naming the kernel and the limit", err)
	}
}

// TestAdapters: the list has one chosen adapter, and Open picks it.
func TestAdapters(t *testing.T) {
	list := webgpu.Adapters()
	if len(list) == 0 {
		if gputest.CI() {
			t.Fatal("no adapters listed under CI")
		}
		t.Skip("no WebGPU adapter")
	}
	chosen := 0
	for _, a := range list {
		if a.Chosen {
			chosen++
			d, err := webgpu.Open()
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(d.String(), a.Name) {
				t.Errorf("Open chose %s; Adapters marks %q", d, a.Name)
			}
			d.Close()
		}
	}
	if chosen != 1 {
		t.Errorf("%d adapters marked chosen in %+v", chosen, list)
	}
}
