//go:build cgo || js

package webgpu_test

import (
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/device/webgpu"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/tensor"
)

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
	d := freshWith(t, webgpu.EnvMatMul, "texture")
	t.Parallel()
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

// TestParameterSlots runs more dispatches of distinct parameters than the
// parameter buffer has slots, interleaved with dispatches that repeat
// theirs and with waits, so that slots are found written, written anew
// and, once the buffer is full, reused.
func TestParameterSlots(t *testing.T) {
	d := fresh(t)
	t.Parallel()
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
