//go:build cgo || js

package webgpu_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/device/webgpu"
	"github.com/extensor/extensor/internal/gputest"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/tensor"
	"github.com/x448/float16"
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

// freshWith is fresh with the environment variable k set to v while the
// device opens, for a subtest that then goes on in parallel (t.Setenv
// forbids t.Parallel). Call it before t.Parallel: subtests run one at a
// time until then, so no other test reads the environment meanwhile.
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
		for _, v := range []*tensor.Tensor{x, y, z} {
			v.Release()
		}
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
	// The same buffer as input and output of one dispatch is invalid.
	d.Unary("relu", x.Buffer(), x.Buffer())
	err := d.Sync()
	if err == nil || !strings.Contains(err.Error(), "kernel unary/relu") {
		t.Fatalf("Sync after an invalid dispatch: %v; want an error naming kernel unary/relu", err)
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

// TestUnreachableBuffersReturn checks that the device takes back the
// buffers of tensors dropped without Release once the collector finds
// them, while work recorded with them still runs right: ops whose
// inputs become unreachable as soon as they are called.
func TestUnreachableBuffersReturn(t *testing.T) {
	d := fresh(t)
	s0 := d.PoolStats()
	x := tensor.Must(tensor.FromFloat32(d, []float32{1, 2, 3, 4, 5, 6, 7, 8}, 8))
	a := x
	for i := range 50 {
		a = ops.Add(ops.Mul(a, a), x) // the products unreachable at once
		if i%5 == 0 {
			runtime.GC() // their buffers return while the batch is open
		}
		a = ops.Relu(ops.Neg(ops.Sqrt(ops.Abs(a))))
	}
	if s := d.PoolStats(); s.Hits == s0.Hits {
		t.Errorf("no buffer of the chain was reused: %+v", s)
	}
	got, err := a.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	want := []float32{1, 2, 3, 4, 5, 6, 7, 8}
	for range 50 {
		for i, v := range want {
			want[i] = float32(math.Max(-math.Sqrt(math.Abs(float64(v*v+[]float32{1, 2, 3, 4, 5, 6, 7, 8}[i]))), 0))
		}
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("chain = %v; want %v", got, want)
		}
	}
	a, x = nil, nil
	for range 20 {
		runtime.GC()
		if s := d.PoolStats(); s.BytesLive == s0.BytesLive {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Errorf("%d bytes live after every tensor became unreachable; want %d", d.PoolStats().BytesLive, s0.BytesLive)
}

// TestPoolReusesAtOnce checks that a freed buffer serves the next
// allocation of its size at once, while the work that used it is still
// unsubmitted, and that the queue's order keeps every result right.
func TestPoolReusesAtOnce(t *testing.T) {
	d := fresh(t)
	x := tensor.Must(tensor.FromFloat32(d, []float32{-2, -1, 0, 1, 2, 3, 4, 5}, 8))
	y := ops.Relu(x)
	s0 := d.PoolStats()
	y.Release()     // used by recorded, unsubmitted work
	z := ops.Neg(x) // takes y's buffer
	if s := d.PoolStats(); s.Hits != s0.Hits+1 || s.Misses != s0.Misses {
		t.Errorf("freed buffer not reused at once: %+v -> %+v", s0, s)
	}
	// A chain whose every intermediate reuses the last one's buffer, in
	// one batch: a = a·2 + x, eight times.
	a := ops.Relu(z)
	for range 8 {
		twice := ops.Add(a, a)
		b := ops.Add(twice, x)
		twice.Release()
		a.Release()
		a = b
	}
	got, err := a.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range []float32{-2, -1, 0, 1, 2, 3, 4, 5} {
		want := max(-v, 0)
		for range 8 {
			want = want*2 + v
		}
		if got[i] != want {
			t.Errorf("chain[%d] = %v; want %v", i, got[i], want)
		}
	}
	if s := d.PoolStats(); s.Misses > s0.Misses+4 {
		t.Errorf("the chain allocated %d new buffers; want its freed ones reused", s.Misses-s0.Misses)
	}
	a.Release()
	x.Release()
	z.Release()
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

// TestFloat16 converts every float16 to float32, and float32s of every
// kind (edges, ties, subnormals, NaNs with payloads, random bits) to
// float16, on the GPU, bit for bit as github.com/x448/float16 does (the
// CPU twin); odd counts use the packed word's first half.
func TestFloat16(t *testing.T) {
	d := fresh(t)
	all := make([]uint16, 1<<16)
	for i := range all {
		all[i] = uint16(i)
	}
	// Every float16 (by vec4s), and all but the last (the scalar kernel).
	for _, all := range [][]uint16{all, all[:len(all)-1]} {
		h := tensor.Must(tensor.FromFloat16Bits(d, all, len(all)))
		got, err := ops.Cast(h, device.Float32).Float32s()
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range got {
			if want := float16.Frombits(uint16(i)).Float32(); math.Float32bits(v) != math.Float32bits(want) {
				t.Fatalf("float16 %#04x → float32 %#08x; want %#08x (%d values)", i, math.Float32bits(v), math.Float32bits(want), len(all))
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	vals := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 65504, 65519.99, 65520, 1e6, -1e6, 6e-8, 2.98e-8, 2.99e-8, 1e-45,
		float32(math.Inf(1)), float32(math.Inf(-1)), math.Float32frombits(0x7fc00000), math.Float32frombits(0xff800001),
		math.Float32frombits(0x7f802000), 1 + 1.0/2048, 1 + 3.0/2048, 2049, 2051, 1.0 / 3}
	for range 200000 {
		vals = append(vals, math.Float32frombits(r.Uint32()))
	}
	for i := range 100000 { // near float16's range, where rounding matters
		vals = append(vals, float32(r.NormFloat64())*float32(math.Pow(2, float64(i%40-25))))
	}
	// An odd count (the scalar kernel) and a multiple of 8 (by vec4s).
	for _, vals := range [][]float32{vals, vals[:len(vals)/8*8]} {
		x := tensor.Must(tensor.FromFloat32(d, vals, len(vals)))
		bits, err := ops.Cast(x, device.Float16).Float16Bits()
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range vals {
			if want := float16.Fromfloat32(v).Bits(); bits[i] != want {
				t.Fatalf("float32 %v (%#08x) → float16 %#04x; want %#04x (%d values)", v, math.Float32bits(v), bits[i], want, len(vals))
			}
		}
	}
	odd := tensor.Must(tensor.FromFloat16Bits(d, []uint16{0x3c00, 0xc000, 0x7bff}, 3))
	if v, err := odd.Float32s(); err != nil || v[0] != 1 || v[1] != -2 || v[2] != 65504 {
		t.Errorf("odd count: %v, %v", v, err)
	}
}

// TestFloat16Rounding runs elementwise kernels on float16 tensors (of
// every float16, so by vec4s of words) whose float32 results are exact
// (products of two float16s, negation) or correctly rounded (square
// roots): rounded to float16 they must be github.com/x448/float16's
// rounding bit for bit (ties to even, subnormals, overflow to ±Inf), and
// NaN where it gives NaN.
func TestFloat16Rounding(t *testing.T) {
	d := fresh(t)
	all := make([]uint16, 1<<16)
	ys := make([]uint16, len(all))
	factors := []float32{1 + 1.0/1024, 1537.0 / 2048, 3, 1.0 / 32, 0.5 + 1.0/2048}
	for i := range all {
		all[i] = uint16(i)
		ys[i] = float16.Fromfloat32(factors[i%len(factors)]).Bits()
	}
	x := tensor.Must(tensor.FromFloat16Bits(d, all, len(all)))
	y := tensor.Must(tensor.FromFloat16Bits(d, ys, len(ys)))
	f32 := func(b uint16) float32 { return float16.Frombits(b).Float32() }
	cases := []struct {
		name string
		got  *tensor.Tensor
		want func(i int) float32
	}{
		{"mul", ops.Mul(x, y), func(i int) float32 { return f32(all[i]) * f32(ys[i]) }},
		{"neg", ops.Neg(x), func(i int) float32 { return -f32(all[i]) }},
		{"sqrt", ops.Sqrt(x), func(i int) float32 { return float32(math.Sqrt(float64(f32(all[i])))) }},
	}
	for _, c := range cases {
		bits, err := c.got.Float16Bits()
		if err != nil {
			t.Fatal(err)
		}
		for i, b := range bits {
			v := c.want(i)
			want := float16.Fromfloat32(v)
			if want.IsNaN() && float16.Frombits(b).IsNaN() {
				continue
			}
			if b != want.Bits() {
				t.Fatalf("%s of float16 %#04x: %#04x; want %#04x (float32 %v)", c.name, all[i], b, want.Bits(), v)
			}
		}
	}
}

// TestWindowFloat16 runs every window kernel on float16 tensors (which
// read and write float16) and on float32 tensors of the same values: the
// float16 results are the float32 results rounded, bit for bit, for odd
// sizes (words shared by two rows or images), offsets into a batch, and
// col2im starting mid-word (run on float32 stand-ins), columns with a
// row of ones and padded rows (Pitch); and the float32 results are the
// CPU backend's.
func TestWindowFloat16(t *testing.T) {
	d := fresh(t)
	r := rand.New(rand.NewPCG(3, 4))
	geoms := []device.Window2D{
		{N: 3, C: 3, H: 7, W: 5, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1},
		{N: 2, N0: 1, C: 2, H: 9, W: 7, KH: 2, KW: 3, SH: 2, SW: 1, PH: 0, PW: 1, DH: 1, DW: 2},
		{N: 2, N0: 2, C: 1, H: 6, W: 6, KH: 2, KW: 2, SH: 2, SW: 2, DH: 1, DW: 1},
		{N: 1, N0: 1, C: 3, H: 5, W: 5, KH: 3, KW: 3, SH: 1, SW: 1, DH: 1, DW: 1},
		{N: 2, N0: 1, C: 2, H: 7, W: 5, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, Pitch: 37},
		{N: 3, C: 2, H: 6, W: 6, KH: 3, KW: 3, SH: 1, SW: 1, DH: 1, DW: 1, Ones: true, Pitch: 20},
		// Windows that do not overlap, padded, leaving pixels in no window.
		{N: 2, C: 2, H: 7, W: 8, KH: 2, KW: 2, SH: 3, SW: 2, PH: 1, PW: 1, DH: 1, DW: 1},
		{N: 1, C: 3, H: 9, W: 10, KH: 2, KW: 2, SH: 3, SW: 3, DH: 2, DW: 2},
		// The same whose cells' rows are whole float16 words (SW, PW and W
		// even): max_pool_grad's invocation per cell on float16 too.
		{N: 2, C: 2, H: 7, W: 8, KH: 2, KW: 4, SH: 3, SW: 4, PH: 1, PW: 2, DH: 1, DW: 1},
		{N: 1, C: 2, H: 9, W: 10, KH: 3, KW: 3, SH: 4, SW: 4, DH: 1, DW: 1},
	}
	for gi, w := range geoms {
		oh, ow := w.Out()
		kk := w.KH * w.KW
		all := w.N0 + w.N // images of the batch that im2col reads and col2im writes
		for _, op := range []device.WindowOp{device.Im2Col, device.Col2Im, device.MaxPool, device.AvgPool, device.MaxPoolGrad, device.AvgPoolGrad} {
			g := w
			var xn, gn, on int
			switch op {
			case device.Im2Col:
				xn, on = all*w.C*w.H*w.W, w.N*w.C*kk*w.RowLen()
				if w.Ones {
					on += w.N * w.RowLen()
				}
			case device.Col2Im:
				xn, on = w.N*w.C*kk*w.RowLen(), all*w.C*w.H*w.W
			case device.MaxPool, device.AvgPool:
				g.N0, xn, on = 0, w.N*w.C*w.H*w.W, w.N*w.C*oh*ow
			case device.MaxPoolGrad:
				g.N0, xn, gn, on = 0, w.N*w.C*w.H*w.W, w.N*w.C*oh*ow, w.N*w.C*w.H*w.W
			case device.AvgPoolGrad:
				g.N0, gn, on = 0, w.N*w.C*oh*ow, w.N*w.C*w.H*w.W
			}
			vals := func(n int) []float32 {
				v := make([]float32, n)
				for i := range v {
					v[i] = float16.Fromfloat32(float32(r.IntN(16)-8) / 4 * float32(1+r.Float64())).Float32()
				}
				return v
			}
			xv, gv, ov := vals(xn), vals(gn), vals(on)
			run := func(d device.Device, dt device.DType) []float32 {
				buf := func(v []float32) device.Buffer {
					if len(v) == 0 {
						return nil
					}
					b, err := d.Alloc(dt, len(v))
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { d.Free(b) })
					var src any = v
					if dt == device.Float16 {
						h := make([]uint16, len(v))
						for i, x := range v {
							h[i] = float16.Fromfloat32(x).Bits()
						}
						src = h
					}
					if err := d.Write(b, src); err != nil {
						t.Fatal(err)
					}
					return b
				}
				out := buf(ov)
				d.Window(op, out, buf(xv), buf(gv), g)
				got := make([]float32, on)
				if dt == device.Float32 {
					if err := d.Read(out, got); err != nil {
						t.Fatal(err)
					}
					return got
				}
				h := make([]uint16, on)
				if err := d.Read(out, h); err != nil {
					t.Fatal(err)
				}
				for i, b := range h {
					got[i] = float16.Frombits(b).Float32()
				}
				return got
			}
			want, got, ref := run(d, device.Float32), run(d, device.Float16), run(cpu.New(), device.Float32)
			for i := range want {
				if math.Abs(float64(want[i]-ref[i])) > 1e-6*max(1, math.Abs(float64(ref[i]))) {
					t.Errorf("geometry %d %v: float32 element %d of %d is %v; the CPU backend's %v", gi, op, i, on, want[i], ref[i])
					break
				}
			}
			for i := range want {
				if w := float16.Fromfloat32(want[i]).Float32(); math.Float32bits(got[i]) != math.Float32bits(w) {
					t.Errorf("geometry %d %v: float16 element %d of %d is %v; want %v (float32 %v)", gi, op, i, on, got[i], w, want[i])
					break
				}
			}
		}
	}
}

// TestProfile checks the kernel profiler: off by default, and with
// EXTENSOR_PROFILE set, every dispatch counted and timed under its
// kernel's name until ResetProfile, by the GPU's timestamps where the
// adapter has them (lavapipe has) and by the host's clock.
func TestProfile(t *testing.T) {
	if d := fresh(t); d.Profile() != nil || d.ProfileClock() != "" {
		t.Fatalf("Profile without %s = %v, clock %q; want nil, \"\"", webgpu.EnvProfile, d.Profile(), d.ProfileClock())
	}
	t.Setenv(webgpu.EnvProfile, "1")
	for _, clock := range []string{"gpu", "host"} {
		t.Run(clock, func(t *testing.T) {
			d := fresh(t)
			if clock == "host" {
				webgpu.ProfileByHost(d)
			}
			if got := d.ProfileClock(); got != clock {
				t.Fatalf("ProfileClock() = %q; want %q", got, clock)
			}
			x := tensor.Must(tensor.Uniform(d, device.Float32, -1, 1, 1, 1000))
			want := ops.Exp(ops.Neg(x)) // two kernels in one batch
			for range 2 {
				ops.Exp(x).Release()
			}
			got, err := want.Float32s()
			if err != nil {
				t.Fatal(err)
			}
			xs, err := x.Float32s()
			if err != nil {
				t.Fatal(err)
			}
			for i := range got {
				if w := float32(math.Exp(-float64(xs[i]))); math.Abs(float64(got[i]-w)) > 1e-6 {
					t.Fatalf("exp(-x)[%d] = %v; want %v: profiling changed a result", i, got[i], w)
				}
			}
			var exp, neg *webgpu.KernelTime
			for _, k := range d.Profile() {
				switch {
				case strings.HasPrefix(k.Kernel, "unary/exp/"):
					exp = &k
				case strings.HasPrefix(k.Kernel, "unary/neg/"):
					neg = &k
				}
			}
			if exp == nil || exp.Dispatches != 3 || exp.Time <= 0 || neg == nil || neg.Dispatches != 1 {
				t.Fatalf("Profile() = %+v; want unary/exp/… with 3 dispatches and a time, unary/neg/… with 1", d.Profile())
			}
			d.ResetProfile()
			if p := d.Profile(); len(p) != 0 {
				t.Fatalf("Profile() after ResetProfile = %+v; want none", p)
			}
		})
	}
}

// TestTrimWhilePassOpen releases pooled buffers that the open compute
// pass still binds: the pass must end first (wgpu resolves a pass's
// resources when it ends, and aborts the process on a released one).
func TestTrimWhilePassOpen(t *testing.T) {
	d := fresh(t)
	webgpu.SetPoolLimit(d, 0) // every freed buffer is released at once
	x := tensor.Must(tensor.FromFloat32(d, []float32{-2, -1, 0, 1}, 4))
	defer x.Release()
	acc := ops.Neg(x)
	for range 4 {
		y := ops.Relu(acc) // binds acc in the open pass
		acc.Release()      // released while the pass binds it
		acc = ops.Add(y, x)
		y.Release()
	}
	got, err := acc.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	acc.Release()
	for i, v := range []float32{-2, -1, 0, 1} {
		want := -v
		for range 4 {
			want = max(want, 0) + v
		}
		if got[i] != want {
			t.Errorf("out[%d] = %v; want %v", i, got[i], want)
		}
	}
	if s := d.PoolStats(); s.BytesPooled != 0 {
		t.Errorf("%d bytes pooled; want none with a limit of 0", s.BytesPooled)
	}
}

// TestTextureCacheTurnover queues texture-kernel products of more sizes
// than the operand-texture cache keeps, in one batch: the cache releases
// textures that the open pass binds (wgpu keeps them for the pass).
func TestTextureCacheTurnover(t *testing.T) {
	gputest.Open(t)
	t.Setenv(webgpu.EnvMatMul, "texture")
	d := fresh(t)
	var outs []*tensor.Tensor
	for i := range 12 {
		n := 256 + 16*i // a new texture size per product
		x := tensor.Must(tensor.Full(d, device.Float32, 1, n, 512))
		y := tensor.Must(tensor.Full(d, device.Float32, 0.5, 512, n))
		outs = append(outs, ops.MatMul(x, y))
		x.Release()
		y.Release()
	}
	if k := d.MatMulKernel(device.GEMM{Batch: 1, M: 256, K: 512, N: 256}); k != "texture" {
		t.Fatalf("products run on %s; want texture", k)
	}
	for i, z := range outs {
		got, err := z.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		if got[0] != 256 || got[len(got)-1] != 256 {
			t.Errorf("product %d: got %v … %v; want 256", i, got[0], got[len(got)-1])
		}
		z.Release()
	}
}

// TestCopyStrided checks strided copies against their definition,
// including those that move vec4s (the innermost dimension contiguous and
// a multiple of 4, the other strides and offsets multiples of 4) and
// those just short of it; the buffers' lengths are not multiples of 4;
// on float32 and float16.
func TestCopyStrided(t *testing.T) {
	d := fresh(t)
	for _, s := range []device.Strided{
		{Shape: []int{3, 5, 8}, SrcStrides: []int{8, 24, 1}, DstStrides: []int{40, 8, 1}, SrcOffset: 4, DstOffset: 8},   // vec4s
		{Shape: []int{2, 3, 4, 12}, SrcStrides: []int{200, 12, 60, 1}, DstStrides: []int{144, 48, 12, 1}, DstOffset: 4}, // vec4s, rank 4
		{Shape: []int{3, 5, 8}, SrcStrides: []int{8, 24, 1}, DstStrides: []int{40, 8, 1}, SrcOffset: 3, DstOffset: 8},   // offset
		{Shape: []int{3, 5, 6}, SrcStrides: []int{6, 18, 1}, DstStrides: []int{30, 6, 1}},                               // stride 6
		{Shape: []int{4, 7}, SrcStrides: []int{1, 4}, DstStrides: []int{7, 1}},                                          // a transpose
		{Shape: []int{3, 8}, SrcStrides: []int{0, 1}, DstStrides: []int{8, 1}, DstOffset: 4},                            // broadcast rows, vec4s
		{Shape: []int{5, 19}, SrcStrides: []int{19, 1}, DstStrides: []int{20, 1}, SrcOffset: 1, DstOffset: 4},           // into padded rows: vec4s of dst
		{Shape: []int{2, 3, 17}, SrcStrides: []int{51, 17, 1}, DstStrides: []int{72, 24, 1}},                            // the same, rank 3
		{Shape: []int{2, 17}, SrcStrides: []int{17, 1}, DstStrides: []int{20, 1}},                                       // dst ends mid-vec4: elements
	} {
		srcLen, dstLen := s.SrcOffset+1, s.DstOffset+1
		for k, n := range s.Shape {
			srcLen += (n - 1) * s.SrcStrides[k]
			dstLen += (n - 1) * s.DstStrides[k]
		}
		srcLen, dstLen = srcLen+3, dstLen+2 // lengths that are not multiples of 4
		src := make([]float32, srcLen)
		for i := range src {
			src[i] = float32(i) + 0.5
		}
		want := make([]float32, dstLen)
		for i := range want {
			want[i] = -1
		}
		c := make([]int, len(s.Shape))
		for range s.Len() {
			si, di := s.SrcOffset, s.DstOffset
			for k := range c {
				si += c[k] * s.SrcStrides[k]
				di += c[k] * s.DstStrides[k]
			}
			want[di] = src[si]
			for k := len(c) - 1; k >= 0; k-- {
				if c[k]++; c[k] < s.Shape[k] {
					break
				}
				c[k] = 0
			}
		}
		// float16 too (these values are exact in it): halves of words, or
		// four halves a vec2<u32> of dst where float32 writes vec4s of dst.
		for _, dt := range []device.DType{device.Float32, device.Float16} {
			x := ops.Cast(tensor.Must(tensor.FromFloat32(d, src, srcLen)), dt)
			out := ops.Cast(tensor.Must(tensor.Full(d, device.Float32, -1, dstLen)), dt)
			d.CopyStrided(out.Buffer(), x.Buffer(), s)
			got, err := ops.Cast(out, device.Float32).Float32s()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Errorf("%+v on %v: got %v, want %v", s, dt, got, want)
			}
			x.Release()
			out.Release()
		}
	}
}

// TestGPUOrder runs the elementwise, softmax and reduction kernels in the
// order they take on GPUs (neighbouring invocations on neighbouring items)
// on sizes that leave partial workgroups, against the CPU backend.
func TestGPUOrder(t *testing.T) {
	d := fresh(t)
	webgpu.AsGPU(d)
	c := cpu.New()
	rng := rand.New(rand.NewPCG(3, 4))
	values := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = rng.Float32()*4 - 2
		}
		return v
	}
	cases := []struct {
		name  string
		shape []int
		op    func(x, y *tensor.Tensor) *tensor.Tensor
	}{
		{"exp/vec4", []int{4 * 5001}, func(x, _ *tensor.Tensor) *tensor.Tensor { return ops.Exp(x) }},
		{"exp", []int{20003}, func(x, _ *tensor.Tensor) *tensor.Tensor { return ops.Exp(x) }},
		{"exp/float16", []int{20006}, func(x, _ *tensor.Tensor) *tensor.Tensor {
			return ops.Cast(ops.Exp(ops.Cast(x, device.Float16)), device.Float32)
		}},
		{"mul/vec4", []int{3, 13336}, ops.Mul},
		{"mul", []int{3, 13335}, ops.Mul},
		{"softmax/rows-of-1024", []int{5, 1024}, func(x, _ *tensor.Tensor) *tensor.Tensor { return ops.Softmax(x, -1) }},
		{"softmax/rows-of-12", []int{3001, 12}, func(x, _ *tensor.Tensor) *tensor.Tensor { return ops.Softmax(x, -1) }},
		{"softmax/rows-of-7", []int{301, 7}, func(x, _ *tensor.Tensor) *tensor.Tensor { return ops.Softmax(x, -1) }},
		// Short rows, a workgroup of fewer than 64 a row on GPUs: 32
		// vec4s in 32 invocations, 10 in 16 (6 idle), 8 in 8.
		{"softmax/rows-of-128", []int{301, 128}, func(x, _ *tensor.Tensor) *tensor.Tensor { return ops.Softmax(x, -1) }},
		{"log-softmax/rows-of-40", []int{301, 40}, func(x, _ *tensor.Tensor) *tensor.Tensor { return ops.LogSoftmax(x, -1) }},
		{"softmax-grad/rows-of-32", []int{301, 32}, func(x, y *tensor.Tensor) *tensor.Tensor { return ops.SoftmaxBackward(x, y, -1) }},
		{"layer-norm/rows-of-128", []int{1024, 128}, func(x, _ *tensor.Tensor) *tensor.Tensor {
			return ops.LayerNorm(x, []int{128}, nil, nil, ops.DefaultLayerNormEps)
		}},
		{"layer-norm-grad/rows-of-40", []int{301, 40}, func(x, y *tensor.Tensor) *tensor.Tensor {
			gx, _, _ := ops.LayerNormBackward(x, []int{40}, nil, nil, y, ops.DefaultLayerNormEps)
			return gx
		}},
		{"rms-norm/rows-of-32", []int{301, 32}, func(x, _ *tensor.Tensor) *tensor.Tensor {
			return ops.RMSNorm(x, []int{32}, nil, ops.DefaultLayerNormEps)
		}},
		// The one-pass kernel, a workgroup a row: its gradient, rows with a
		// partial last vec4 an invocation, and more rows than one grid
		// dimension holds (workgroups past the last row store nothing).
		{"softmax-grad/rows-of-1024", []int{5, 1024}, func(x, y *tensor.Tensor) *tensor.Tensor { return ops.SoftmaxBackward(x, y, -1) }},
		{"log-softmax/rows-of-1000", []int{7, 1000}, func(x, _ *tensor.Tensor) *tensor.Tensor { return ops.LogSoftmax(x, -1) }},
		{"log-softmax-grad/rows-of-1000", []int{7, 1000}, func(x, y *tensor.Tensor) *tensor.Tensor { return ops.LogSoftmaxBackward(x, y, -1) }},
		{"softmax/65537-rows-of-256", []int{65537, 256}, func(x, _ *tensor.Tensor) *tensor.Tensor { return ops.Softmax(x, -1) }},
		// Rows longer than the one-pass kernel takes, in two passes.
		{"softmax/rows-of-8320", []int{3, 8320}, func(x, _ *tensor.Tensor) *tensor.Tensor { return ops.Softmax(x, -1) }},
		{"softmax-grad/rows-of-8196", []int{3, 8196}, func(x, y *tensor.Tensor) *tensor.Tensor { return ops.SoftmaxBackward(x, y, -1) }},
		// Long rows of vec4s: the reduction's chunks of 4096 vec4s, the
		// last partial, each invocation's vec4s 256 apart.
		{"sum/vec4", []int{3, 4 * 5000}, func(x, _ *tensor.Tensor) *tensor.Tensor { return ops.SumAxis(x, 1, false) }},
		{"max/vec4", []int{4 * 20001}, func(x, _ *tensor.Tensor) *tensor.Tensor { return ops.MaxAxis(x, 0, false) }},
		// Rows of one chunk: the first pass writes the results, scaled.
		{"mean/vec4/one-chunk", []int{5, 4000}, func(x, _ *tensor.Tensor) *tensor.Tensor { return ops.MeanAxis(x, 1, false) }},
		{"mean/columns/one-chunk", []int{1024, 100}, func(x, _ *tensor.Tensor) *tensor.Tensor { return ops.MeanAxis(x, 0, false) }},
		{"sum/all", []int{4 * 300001}, func(x, _ *tensor.Tensor) *tensor.Tensor { return ops.Sum(x) }},
		{"mean/all/float16", []int{6000}, func(x, _ *tensor.Tensor) *tensor.Tensor {
			return ops.Cast(ops.Mean(ops.Cast(x, device.Float16)), device.Float32)
		}},
		// The attention kernels' blocking on GPUs: partial blocks of rows
		// and keys, causal, dropout; the gradients' sum checked.
		{"attention", []int{3, 37, 16}, func(x, y *tensor.Tensor) *tensor.Tensor {
			return ops.ScaledDotProductAttention(x, y, y, ops.Attention{Causal: true, Dropout: 0.2, Seed: 5})
		}},
		{"attention-grad", []int{3, 37, 16}, func(x, y *tensor.Tensor) *tensor.Tensor {
			gq, gk, gv, _ := ops.ScaledDotProductAttentionBackward(x, y, x, ops.Attention{Causal: true, Dropout: 0.2, Seed: 5}, y)
			return ops.Add(ops.Add(gq, gk), gv)
		}},
		// Rows split among invocations on GPUs (attnSplit): 10 chunks of
		// 20 keys (queries), the last partial, rows past the causal
		// diagonal's chunks seeing none of theirs; and with a mask.
		{"attention/split", []int{2, 200, 8}, func(x, y *tensor.Tensor) *tensor.Tensor {
			return ops.ScaledDotProductAttention(x, y, x, ops.Attention{Causal: true})
		}},
		{"attention-grad/split", []int{2, 200, 8}, func(x, y *tensor.Tensor) *tensor.Tensor {
			gq, gk, gv, _ := ops.ScaledDotProductAttentionBackward(x, y, x, ops.Attention{Causal: true, Dropout: 0.1, Seed: 2}, y)
			return ops.Add(ops.Add(gq, gk), gv)
		}},
		// float16 takes a row an invocation on GPUs, unsplit.
		{"attention-grad/float16", []int{2, 70, 8}, func(x, y *tensor.Tensor) *tensor.Tensor {
			h, hy := ops.Cast(x, device.Float16), ops.Cast(y, device.Float16)
			gq, gk, gv, _ := ops.ScaledDotProductAttentionBackward(h, hy, h, ops.Attention{Causal: true}, hy)
			return ops.Cast(ops.Add(ops.Add(gq, gk), gv), device.Float32)
		}},
		{"attention/float16", []int{2, 70, 8}, func(x, y *tensor.Tensor) *tensor.Tensor {
			return ops.Cast(ops.ScaledDotProductAttention(ops.Cast(x, device.Float16), ops.Cast(y, device.Float16), ops.Cast(x, device.Float16), ops.Attention{Causal: true}), device.Float32)
		}},
		{"attention/split-masked", []int{2, 150, 12}, func(x, y *tensor.Tensor) *tensor.Tensor {
			// An additive mask [150, 150]: x's first matrix times y's, transposed.
			x0 := ops.Reshape(ops.Slice(x, 0, 0, 1, 1), 150, 12)
			y0 := ops.Reshape(ops.Slice(y, 0, 0, 1, 1), 150, 12)
			return ops.ScaledDotProductAttention(x, y, y, ops.Attention{Mask: ops.MatMul(x0, ops.Transpose(y0))})
		}},
	}
	for _, tc := range cases {
		n := 1
		for _, s := range tc.shape {
			n *= s
		}
		xs, ys := values(n), values(n)
		run := func(dev device.Device) []float32 {
			x := tensor.Must(tensor.FromFloat32(dev, xs, tc.shape...))
			y := tensor.Must(tensor.FromFloat32(dev, ys, tc.shape...))
			got, err := tc.op(x, y).Float32s()
			if err != nil {
				t.Fatalf("%s on %v: %v", tc.name, dev, err)
			}
			return got
		}
		got, want := run(d), run(c)
		tol := 1e-5
		if strings.HasSuffix(tc.name, "float16") {
			tol = 2e-3
		}
		for i := range want {
			if math.Abs(float64(got[i]-want[i])) > tol*max(1, math.Abs(float64(want[i]))) {
				t.Fatalf("%s %v: [%d] = %v; want %v", tc.name, tc.shape, i, got[i], want[i])
			}
		}
	}
}

// TestParameterSlots runs more dispatches of distinct parameters than the
// parameter buffer has slots, interleaved with dispatches that repeat
// theirs and with waits, so that slots are found written, written anew
// and, once the buffer is full, reused.
func TestParameterSlots(t *testing.T) {
	d := fresh(t)
	const n = 5000 // distinct alphas, beyond the 4096 slots
	x, err := d.Alloc(device.Float32, 4)
	if err != nil {
		t.Fatal(err)
	}
	y, err := d.Alloc(device.Float32, 4)
	if err != nil {
		t.Fatal(err)
	}
	d.Fill(x, 1)
	d.Fill(y, 0)
	for i := 1; i <= n; i++ {
		d.Axpy(y, x, float64(i)) // new parameters
		d.Axpy(y, x, 1)          // the same parameters each time
		if i%1000 == 0 {
			if err := d.Sync(); err != nil {
				t.Fatal(err)
			}
		}
	}
	got := make([]float32, 4)
	if err := d.Read(y, got); err != nil {
		t.Fatal(err)
	}
	want := float32(n*(n+1)/2 + n) // exact in float32: below 2²⁴
	for i, v := range got {
		if v != want {
			t.Fatalf("y[%d] = %v; want %v", i, v, want)
		}
	}
}

// TestBroadcastRows runs broadcasting binary ops and their gradients
// whose output's last axis is a multiple of 4 (read by vec4s along it:
// operands whole along it, or broadcast along it and splat) against the
// CPU backend, on float32 and float16.
func TestBroadcastRows(t *testing.T) {
	d := fresh(t)
	c := cpu.New()
	rng := rand.New(rand.NewPCG(5, 6))
	pairs := [][2][]int{
		{{3, 4, 8}, {8}}, {{3, 4, 8}, {3, 4, 1}}, {{3, 1, 8}, {1, 5, 8}}, {{2, 3, 4}, {2, 1, 1}},
		{{64, 4}, {64, 1}}, {{1, 4}, {7, 4}}, {{5, 1}, {1, 12}}, {{6, 16}, {}},
	}
	type binOp struct {
		name string
		f    func(a, b *tensor.Tensor) *tensor.Tensor
	}
	bins := []binOp{{"add", ops.Add}, {"sub", ops.Sub}, {"mul", ops.Mul}, {"div", ops.Div}, {"maximum", ops.Maximum},
		{"mul-grad", func(a, b *tensor.Tensor) *tensor.Tensor {
			g := ops.Mul(a, b) // any tensor of the output's shape
			ga, gb := ops.MulBackward(a, b, g)
			return ops.Add(ops.SumTo(ga, []int{}), ops.SumTo(gb, []int{}))
		}},
		{"div-grad", func(a, b *tensor.Tensor) *tensor.Tensor {
			g := ops.Add(a, b)
			ga, gb := ops.DivBackward(a, b, g)
			return ops.Add(ops.Sum(ga), ops.Sum(gb))
		}},
	}
	for _, dt := range []device.DType{device.Float32, device.Float16} {
		for _, p := range pairs {
			av, bv := make([]float64, device.Numel(p[0])), make([]float64, device.Numel(p[1]))
			for i := range av {
				av[i] = rng.Float64()*4 - 2
			}
			for i := range bv {
				bv[i] = rng.Float64()*3 + 0.5
			}
			for _, op := range bins {
				run := func(dev device.Device) []float64 {
					a := ops.Cast(tensor.Must(tensor.FromValues(dev, device.Float32, av, p[0]...)), dt)
					b := ops.Cast(tensor.Must(tensor.FromValues(dev, device.Float32, bv, p[1]...)), dt)
					got, err := ops.Cast(op.f(a, b), device.Float32).Float64s()
					if err != nil {
						t.Fatalf("%s %v %v on %v: %v", op.name, p[0], p[1], dev, err)
					}
					return got
				}
				got, want := run(d), run(c)
				tol := 1e-5
				if dt == device.Float16 {
					tol = 4e-3
				}
				for i := range want {
					if math.Abs(got[i]-want[i]) > tol*max(1, math.Abs(want[i])) {
						t.Fatalf("%s %v %v (%v): [%d] = %v; want %v", op.name, p[0], p[1], dt, i, got[i], want[i])
					}
				}
			}
		}
	}
}
