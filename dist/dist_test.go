package dist_test

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/device"
	_ "github.com/extensor/extensor/device/webgpu" // registers "webgpu"
	"github.com/extensor/extensor/dist"
	"github.com/extensor/extensor/internal/half"
	"github.com/extensor/extensor/internal/mpitest"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/tensor"
)

// TestMain runs a rank's part when mpirun started the binary
// (mpitest.Command), the tests otherwise.
func TestMain(m *testing.M) {
	if mode := mpitest.Mode(); mode != "" {
		os.Exit(rank(mode))
	}
	os.Exit(m.Run())
}

// rank runs this process's part of the job in mode and returns its exit
// code; a failure ends the job (Abort).
func rank(mode string) int {
	c, err := dist.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	switch mode {
	case "collectives":
		err = collectives(c)
	case "data-parallel":
		for _, name := range []string{"cpu", "webgpu"} {
			if err = dataParallel(c, name); err != nil {
				err = fmt.Errorf("%s: %w", name, err)
				break
			}
		}
	case "bench":
		err = benchAllreduce(c)
	case "hang": // rank 1 never joins; rank 0's barrier times out
		if c.Rank() == 1 {
			time.Sleep(time.Minute)
		}
		err = c.Barrier()
	case "abort": // rank 1 fails; rank 0 waits in a barrier
		if c.Rank() == 1 {
			c.Abort(errors.New("a failure of the test's"))
		}
		err = c.Barrier()
	default:
		err = fmt.Errorf("unknown mode %q", mode)
	}
	if err != nil {
		c.Abort(err)
	}
	if err := c.Finalize(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// collectives checks every collective of a job of 2 ranks against the
// sums and copies worked out here.
func collectives(c *dist.Comm) error {
	r := c.Rank()
	if c.Size() != 2 || c.LocalSize() != 2 || c.LocalRank() != r {
		return fmt.Errorf("%v; want one of 2 ranks on this machine", c)
	}
	if got := os.Getenv(device.EnvLocalRank); got != fmt.Sprint(r) {
		return fmt.Errorf("%s=%q; want %d", device.EnvLocalRank, got, r)
	}
	f32 := []float32{float32(r + 1), float32(10 * (r + 1)), 0.1, float32(math.Inf(1 - 2*r))}
	if err := c.AllreduceFloat32(f32); err != nil {
		return err
	}
	if want := float32(0.1) + float32(0.1); f32[0] != 3 || f32[1] != 30 || f32[2] != want || !math.IsNaN(float64(f32[3])) {
		return fmt.Errorf("AllreduceFloat32: %v; want [3 30 %v NaN]", f32, want)
	}
	f64 := []float64{float64(r) + 0.5, -1}
	if err := c.AllreduceFloat64(f64); err != nil {
		return err
	}
	if !slices.Equal(f64, []float64{2, -2}) {
		return fmt.Errorf("AllreduceFloat64: %v; want [2 -2]", f64)
	}
	// 2048 + 1 rounds to 2048 in float16 (11 bits); 65504 + 65504 is ∞.
	f16 := []uint16{half.FromFloat32(1.5), half.FromFloat32(float32(2048 - 2047*r)), half.FromFloat32(65504)}
	if err := c.AllreduceFloat16(f16); err != nil {
		return err
	}
	got := []float32{half.ToFloat32(f16[0]), half.ToFloat32(f16[1]), half.ToFloat32(f16[2])}
	if got[0] != 3 || got[1] != 2048 || !math.IsInf(float64(got[2]), 1) {
		return fmt.Errorf("AllreduceFloat16: %v; want [3 2048 +Inf]", got)
	}
	b := []byte{byte(r), byte(r), byte(r)}
	if err := c.Broadcast(b, 1); err != nil {
		return err
	}
	if !bytes.Equal(b, []byte{1, 1, 1}) {
		return fmt.Errorf("Broadcast from rank 1: %v; want [1 1 1]", b)
	}
	if err := c.Broadcast(b, 2); err == nil || !strings.Contains(err.Error(), "rank 2 of a job of 2") {
		return fmt.Errorf("Broadcast from rank 2 of 2: err = %v", err)
	}
	all, err := c.Allgather([]byte{byte(r), byte(10 + r)})
	if err != nil {
		return err
	}
	if !bytes.Equal(all, []byte{0, 10, 1, 11}) {
		return fmt.Errorf("Allgather: %v; want [0 10 1 11]", all)
	}
	if err := c.Barrier(); err != nil {
		return err
	}
	n, err := c.BroadcastInt(100+r, 1)
	if err != nil || n != 101 {
		return fmt.Errorf("BroadcastInt from rank 1: %d, %v; want 101", n, err)
	}
	// Tensors of each dtype, rank 0's replacing rank 1's.
	dev, err := device.Open("cpu")
	if err != nil {
		return err
	}
	defer dev.Close()
	v := float32(1 - r)
	a, _ := tensor.FromFloat32(dev, []float32{v, 2 * v, 3 * v}, 3)
	h, _ := tensor.FromFloat16Bits(dev, []uint16{half.FromFloat32(v / 2)}, 1)
	k, _ := tensor.FromInt32(dev, []int32{int32(7 * (1 - r)), -1}, 2, 1)
	if err := c.BroadcastTensors(map[string]*tensor.Tensor{"a": a, "h": h, "k": k}, 0); err != nil {
		return err
	}
	av, _ := a.Float32s()
	hv, _ := h.Float16Bits()
	kv, _ := k.Int32s()
	if !slices.Equal(av, []float32{1, 2, 3}) || half.ToFloat32(hv[0]) != 0.5 || !slices.Equal(kv, []int32{7, -1}) {
		return fmt.Errorf("BroadcastTensors: %v, %v, %v; want rank 0's [1 2 3], [0.5], [7 -1]", av, half.ToFloat32(hv[0]), kv)
	}
	// A buffer of more than one part for a small maxCount would need 2³⁰
	// elements; a long one checks the plain path's sums.
	long := make([]float32, 1<<20)
	for i := range long {
		long[i] = float32(i%7) * float32(r+1)
	}
	if err := c.AllreduceFloat32(long); err != nil {
		return err
	}
	for i, x := range long {
		if x != float32(i%7)*3 {
			return fmt.Errorf("AllreduceFloat32 of 2²⁰ values: element %d is %v; want %v", i, x, float32(i%7)*3)
		}
	}
	return nil
}

// dataParallel trains a linear layer (and a float16 parameter and one
// the loss never uses) for three steps on rank parts of unequal size of
// a global batch, and checks, after each step, that the averaged
// gradients equal the global batch's computed here alone, and that the
// ranks hold the same bits.
func dataParallel(c *dist.Comm, name string) error {
	dev, err := device.Open(name)
	if err != nil {
		return err
	}
	defer dev.Close()
	const in, out, batch = 5, 3, 7
	init := func(seed float32) []float32 { // rank 1 starts elsewhere: Broadcast must fix it
		v := make([]float32, in*out)
		for i := range v {
			v[i] = float32(math.Sin(float64(seed) + float64(i)))
		}
		return v
	}
	mk := func(t *tensor.Tensor, err error) *autograd.Var {
		if err != nil {
			panic(err)
		}
		return autograd.Leaf(t, true)
	}
	r := float32(c.Rank())
	w := mk(tensor.FromFloat32(dev, init(r), out, in))
	b := mk(tensor.FromFloat32(dev, []float32{r, 0, -r}, out))
	h := mk(tensor.FromFloat16Bits(dev, []uint16{half.FromFloat32(r)}, 1))
	unused := mk(tensor.FromFloat32(dev, []float32{1, 2}, 2))
	some := mk(tensor.FromFloat32(dev, []float32{3, 4}, 2)) // used on rank 1 alone
	params := []*autograd.Var{w, b, h, unused, some}
	state := map[string]*tensor.Tensor{"w": w.Value(), "b": b.Value(), "h": h.Value(), "unused": unused.Value(), "some": some.Value()}
	if err := c.BroadcastTensors(state, 0); err != nil {
		return err
	}
	dp, err := dist.NewDataParallel(c, params, 16) // buckets of 16 bytes: one a parameter, b's alone
	if err != nil {
		return err
	}
	defer dp.Close()
	x := make([]float32, batch*in)
	y := make([]float32, batch*out)
	for i := range x {
		x[i] = float32(math.Cos(float64(i)))
	}
	for i := range y {
		y[i] = float32(i%3) - 1
	}
	lo, hi := 0, 3 // rank 0: 3 examples, rank 1: 4
	if c.Rank() == 1 {
		lo, hi = 3, batch
	}
	loss := func(w, b, h *autograd.Var, lo, hi int) *autograd.Var {
		xs, _ := tensor.FromFloat32(dev, x[lo*in:hi*in], hi-lo, in)
		ys, _ := tensor.FromFloat32(dev, y[lo*out:hi*out], hi-lo, out)
		mse := ops.MSELoss(ops.Linear(autograd.Leaf(xs, false), w, b), autograd.Leaf(ys, false), ops.MeanReduction)
		k, _ := tensor.FromFloat16Bits(dev, []uint16{half.FromFloat32(1.5)}, 1)
		return ops.Add(mse, ops.Cast(ops.Sum(ops.Mul(h, autograd.Leaf(k, false))), device.Float32))
	}
	for step := range 3 {
		// The reference: the global batch's gradients, on this rank alone,
		// through variables of the same values without DataParallel's hooks.
		ref := []*autograd.Var{autograd.Leaf(w.Value(), true), autograd.Leaf(b.Value(), true), autograd.Leaf(h.Value(), true)}
		if err := loss(ref[0], ref[1], ref[2], 0, batch).Backward(); err != nil {
			return err
		}
		var want [][]float32
		for _, p := range ref {
			g, err := p.Grad().Float64s()
			if err != nil {
				return err
			}
			want = append(want, float32s(g))
			p.ZeroGrad()
		}
		dp.SetWeight(float64(hi-lo) / batch)
		l := loss(w, b, h, lo, hi)
		if c.Rank() == 1 {
			l = ops.Add(l, ops.Sum(some))
		}
		if err := l.Backward(); err != nil {
			return err
		}
		if err := dp.Wait(); err != nil {
			return err
		}
		var gathered []byte
		if unused.Grad() != nil {
			return fmt.Errorf("step %d: the parameter no rank used has a gradient; want none, as alone", step)
		}
		for k, p := range slices.Concat(params[:3], params[4:]) {
			g, err := p.Grad().Float64s()
			if err != nil {
				return err
			}
			if k == 3 { // rank 1's gradient, 1, weighted 4/7
				if want := float64(float32(4) / 7); !slices.Equal(g, []float64{want, want}) {
					return fmt.Errorf("step %d: the gradient of the parameter rank 1 alone used: %v; want %v", step, g, []float64{want, want})
				}
				continue
			}
			tol := 1e-6
			if k == 2 {
				tol = 1e-3 // float16
			}
			for i := range g {
				if math.Abs(g[i]-float64(want[k][i])) > tol*(1+math.Abs(float64(want[k][i]))) {
					return fmt.Errorf("step %d: parameter %d's averaged gradient %v; want the global batch's %v", step, k, g, want[k])
				}
			}
			gathered = fmt.Appendf(gathered, "%v", g)
		}
		// Every rank holds the same bits.
		digest := sha256.Sum256(gathered)
		all, err := c.Allgather(digest[:])
		if err != nil {
			return err
		}
		if !bytes.Equal(all[:32], all[32:]) {
			return fmt.Errorf("step %d: the ranks' gradients differ", step)
		}
		for _, p := range params { // SGD, lr 0.1
			if p.Grad() == nil {
				continue
			}
			k, _ := tensor.Scalar(dev, p.Value().DType(), 0.1)
			nv := ops.Sub(p.Value(), ops.Mul(p.Grad(), k))
			dev.Copy(p.Value().Buffer(), nv.Buffer())
			p.ZeroGrad()
		}
	}
	if s, bytes := dp.Stats(), (in*out+out+2+2)*4+2; s.Steps != 3 || s.Buckets < 3*4 || s.Bytes != 3*int64(bytes) {
		return fmt.Errorf("Stats %+v; want 3 steps of at least 4 buckets of %d bytes", s, bytes)
	}
	return nil
}

func float32s(v []float64) []float32 {
	f := make([]float32, len(v))
	for i, x := range v {
		f[i] = float32(x)
	}
	return f
}

// TestOneRank checks the Comm of a process no launcher started: one
// rank, whose collectives return their input.
func TestOneRank(t *testing.T) {
	if dist.Launched() {
		t.Fatal("the test binary was started by an MPI launcher")
	}
	c, err := dist.Init()
	if err != nil {
		t.Fatal(err)
	}
	if c.Rank() != 0 || c.Size() != 1 || c.LocalRank() != 0 || c.LocalSize() != 1 {
		t.Fatalf("%v; want rank 0 of 1", c)
	}
	f := []float32{1, 2}
	h := []uint16{half.FromFloat32(3)}
	d := []float64{4}
	if err := errors.Join(c.AllreduceFloat32(f), c.AllreduceFloat16(h), c.AllreduceFloat64(d), c.Barrier(), c.Broadcast([]byte{1}, 0)); err != nil {
		t.Fatal(err)
	}
	if f[0] != 1 || f[1] != 2 || half.ToFloat32(h[0]) != 3 || d[0] != 4 {
		t.Errorf("collectives of one rank changed their input: %v %v %v", f, h, d)
	}
	if all, err := c.Allgather([]byte{5, 6}); err != nil || !bytes.Equal(all, []byte{5, 6}) {
		t.Errorf("Allgather: %v, %v; want [5 6]", all, err)
	}
	if err := c.Broadcast([]byte{1}, 1); err == nil {
		t.Error("Broadcast from rank 1 of 1: no error")
	}
	dp, err := dist.NewDataParallel(c, nil, -1)
	if err == nil || !strings.Contains(err.Error(), "buckets of -1 bytes") {
		t.Errorf("NewDataParallel with buckets of -1 bytes: %v, %v", dp, err)
	}
}

// TestJob runs the collectives and the data parallelism in a job of two
// ranks.
func TestJob(t *testing.T) {
	for _, mode := range []string{"collectives", "data-parallel"} {
		t.Run(mode, func(t *testing.T) {
			out, err := mpitest.Command(t, 2, mode, t.TempDir(), nil).CombinedOutput()
			if err != nil {
				t.Fatalf("mpirun: %v\n%s", err, out)
			}
		})
	}
}

// TestJobEnds checks that a rank that fails or hangs ends the whole job
// within a bounded time, with a message naming the rank.
func TestJobEnds(t *testing.T) {
	for _, c := range []struct{ mode, want string }{
		{"abort", "dist: rank 1 of 2: a failure of the test's; ending the job"},
		{"hang", "dist: rank 0 of 2: barrier: the other ranks did not join it within 2s"},
	} {
		t.Run(c.mode, func(t *testing.T) {
			start := time.Now()
			out, err := mpitest.Command(t, 2, c.mode, t.TempDir(), []string{dist.EnvTimeout + "=2s"}).CombinedOutput()
			took := time.Since(start)
			if err == nil {
				t.Fatalf("the job ended without an error:\n%s", out)
			}
			if !strings.Contains(string(out), c.want) {
				t.Errorf("the job's output lacks %q:\n%s", c.want, out)
			}
			if took > 30*time.Second {
				t.Errorf("the job took %v to end; want < 30 s", took)
			}
		})
	}
}

// TestBadTimeout checks that a bad EXTENSOR_DIST_TIMEOUT is refused by
// name, in a fresh process (Init runs once a process).
func TestBadTimeout(t *testing.T) {
	if os.Getenv("DIST_BAD_TIMEOUT") == "1" {
		_, err := dist.Init()
		fmt.Print(err)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestBadTimeout$")
	cmd.Env = append(os.Environ(), "DIST_BAD_TIMEOUT=1", dist.EnvTimeout+"=soon")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), `EXTENSOR_DIST_TIMEOUT="soon"; want a positive duration`) {
		t.Errorf("%v: %s", err, out)
	}
}

// allreduceSizes are BenchmarkAllreduce's buffers, in float32 values:
// examples/cnn's gradients (0.9 MB) and examples/gpt's (3.37 MB).
var allreduceSizes = []int{225_000, 842_000}

// benchAllreduce times AllreduceFloat32 of each of allreduceSizes, after
// a barrier, and saves the seconds of one.
func benchAllreduce(c *dist.Comm) error {
	var secs []float64
	for _, n := range allreduceSizes {
		buf := make([]float32, n)
		if err := c.Barrier(); err != nil {
			return err
		}
		const rounds = 50
		start := time.Now()
		for range rounds {
			if err := c.AllreduceFloat32(buf); err != nil {
				return err
			}
		}
		secs = append(secs, time.Since(start).Seconds()/rounds)
	}
	return mpitest.Save(c.Rank(), secs)
}

// BenchmarkAllreduce measures AllreduceFloat32 between two ranks on this
// machine (mpirun -np 2), of the examples' gradients' sizes: the time of
// one, and the bytes a second of the buffer reduced.
func BenchmarkAllreduce(b *testing.B) {
	for range b.N {
		dir := b.TempDir()
		out, err := mpitest.Command(b, 2, "bench", dir, nil).CombinedOutput()
		if err != nil {
			b.Fatalf("mpirun: %v\n%s", err, out)
		}
		var secs []float64
		mpitest.Load(b, dir, 0, &secs)
		for i, n := range allreduceSizes {
			b.ReportMetric(secs[i]*1e3, fmt.Sprintf("ms/%.2fMB", float64(4*n)/1e6))
			b.ReportMetric(float64(4*n)/secs[i]/1e9, fmt.Sprintf("GB/s/%.2fMB", float64(4*n)/1e6))
		}
	}
}
