package stress

import (
	"errors"
	"flag"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"runtime/debug"

	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/device"
	cnnmodel "github.com/extensor/extensor/examples/cnn/model"
	"github.com/extensor/extensor/internal/gputest"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/optim"
	"github.com/extensor/extensor/tensor"
)

var soak = flag.Bool("soak", false, "run the long forms (make soak)")

// backend is a device under test and how to read the bytes its live
// tensors take.
type backend struct {
	dev  device.Device
	live func() uint64
}

// backends opens a fresh device of each backend; the WebGPU one follows
// the project's policy (fails under CI without an adapter).
func backends(t *testing.T) []backend {
	t.Helper()
	c := cpu.New()
	bs := []backend{{c, func() uint64 { return uint64(c.MemoryInUse()) }}}
	if gputest.OrNil(t) != nil {
		g, err := device.Open("webgpu") // a fresh device of its own
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { g.Close() })
		bs = append(bs, backend{g, func() uint64 { return g.(device.Pooler).PoolStats().BytesLive }})
	}
	return bs
}

// TestConcurrentUse shares one device among goroutines that each create
// tensors, compute, read back, release (or drop) them and sync, checking
// every result.
func TestConcurrentUse(t *testing.T) {
	const goroutines, iters, n = 8, 150, 32
	for _, b := range backends(t) {
		t.Run(b.dev.Name(), func(t *testing.T) {
			dev := b.dev
			ones := tensor.Must(tensor.Ones(dev, device.Float32, n, n)) // read by all
			var wg sync.WaitGroup
			errs := make(chan error, goroutines)
			for g := range goroutines {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs <- worker(dev, ones, g, iters, n)
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Error(err)
				}
			}
			if err := dev.Sync(); err != nil {
				t.Error(err)
			}
		})
	}
}

// worker runs iters rounds of (v·1)·1 + v, relu, sum on n×n tensors,
// where v depends on the goroutine and the round, and checks each sum.
func worker(dev device.Device, ones *tensor.Tensor, g, iters, n int) error {
	for i := range iters {
		v := float64((g*iters+i)%13 - 6) // negative too, for relu
		a := tensor.Must(tensor.Full(dev, device.Float32, v, n, n))
		c := ops.MatMul(a, ones)             // n·v everywhere
		d := ops.Add(ops.MatMul(c, ones), a) // (n²+1)·v
		s := ops.Sum(ops.Relu(d))
		got, err := s.Float64s()
		if err != nil {
			return fmt.Errorf("goroutine %d round %d: %v", g, i, err)
		}
		want := float64(n*n) * float64(n*n+1) * max(v, 0)
		if got[0] != want {
			return fmt.Errorf("goroutine %d round %d: sum = %v; want %v", g, i, got[0], want)
		}
		if i%2 == 0 { // release some; leave the rest to the cleanups
			a.Release()
			c.Release()
			d.Release()
			s.Release()
		}
		if i%25 == 0 {
			if err := dev.Sync(); err != nil {
				return fmt.Errorf("goroutine %d: Sync: %v", g, err)
			}
		}
	}
	return nil
}

// TestReleaseRacesClose releases and drops tensors on goroutines while
// another closes the device: nothing crashes, and freeing after Close is
// harmless.
func TestReleaseRacesClose(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.dev.Name(), func(t *testing.T) {
			var ts []*tensor.Tensor
			for range 64 {
				ts = append(ts, ops.Relu(tensor.Must(tensor.Ones(b.dev, device.Float32, 100))))
			}
			var wg sync.WaitGroup
			for i := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for j := i; j < len(ts); j += 4 {
						ts[j].Release()
						ts[j].Release()
					}
				}()
			}
			b.dev.Close()
			wg.Wait()
			b.dev.Close()
			runtime.GC() // cleanups of the dropped inputs run after Close
			runtime.GC()
		})
	}
}

// TestReleaseRacesOps releases the operands of batched products and
// convolutions on another goroutine while the ops run: each op either
// runs, panics with ErrReleased, or reports the release at its readback;
// nothing crashes.
func TestReleaseRacesOps(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.dev.Name(), func(t *testing.T) {
			dev := b.dev
			s1 := ops.Window{Stride: [2]int{1, 1}}
			for i := range 200 {
				a := tensor.Must(tensor.Uniform(dev, device.Float32, -1, 1, 1, 8, 32, 32))
				m := tensor.Must(tensor.Uniform(dev, device.Float32, -1, 1, 2, 8, 32, 32))
				x := tensor.Must(tensor.Uniform(dev, device.Float32, -1, 1, 3, 2, 3, 16, 16))
				w := tensor.Must(tensor.Uniform(dev, device.Float32, -1, 1, 4, 4, 3, 3, 3))
				done := make(chan struct{})
				go func() {
					defer close(done)
					for range i % 4 { // release after a varying head start
						runtime.Gosched()
					}
					for _, t := range []*tensor.Tensor{a, m, x, w} {
						t.Release()
					}
				}()
				for _, op := range []func() *tensor.Tensor{
					func() *tensor.Tensor { return ops.MatMul(a, m) },
					func() *tensor.Tensor { return ops.Conv2d(x, w, nil, s1) },
					func() *tensor.Tensor {
						gx, _, _ := ops.Conv2dBackward(x, w, nil, ops.Conv2d(x, w, nil, s1), s1)
						return gx
					},
				} {
					var out *tensor.Tensor
					if err := tensor.Maybe(func() { out = op() }); err != nil {
						if !errors.Is(err, tensor.ErrReleased) {
							t.Fatalf("round %d: %v; want a result or ErrReleased", i, err)
						}
						continue
					}
					_, _ = out.Float32s() // a release seen by the kernel is reported here, or not at all
				}
				<-done
				_ = dev.Sync()
			}
		})
	}
}

// TestForgottenRelease runs ops in a loop that never releases; the live
// bytes stay bounded because unreachable tensors free their memory.
func TestForgottenRelease(t *testing.T) {
	const iters, side = 2000, 256
	bound := uint64(tensor.GCInterval) + 64<<20
	for _, b := range backends(t) {
		t.Run(b.dev.Name(), func(t *testing.T) {
			x := tensor.Must(tensor.Uniform(b.dev, device.Float32, -1, 1, 1, side, side))
			var peak uint64
			for i := range iters {
				y := ops.Relu(x)
				if i%100 == 0 {
					if err := b.dev.Sync(); err != nil {
						t.Fatal(err)
					}
				}
				peak = max(peak, b.live())
				_ = y
			}
			t.Logf("%d results of %d KiB never released: peak live %d MiB (bound %d MiB)", iters, side*side*4>>10, peak>>20, bound>>20)
			if peak > bound {
				t.Errorf("live bytes peaked at %d MiB; want at most %d MiB", peak>>20, bound>>20)
			}
		})
	}
}

// TestTrainingWithoutRelease trains a 784-256-10 MLP on random data with
// a loop that never calls Release: the device memory in use stays flat.
// make test runs 300 steps, make soak 10,000.
func TestTrainingWithoutRelease(t *testing.T) {
	steps := 300
	if *soak {
		steps = 10000
	}
	const batch, in, hidden, classes = 64, 784, 256, 10
	for _, b := range backends(t) {
		t.Run(b.dev.Name(), func(t *testing.T) {
			dev := b.dev
			w1 := tensor.Must(tensor.Normal(dev, device.Float32, 0, 0.05, 1, in, hidden))
			b1 := tensor.Must(tensor.Zeros(dev, device.Float32, hidden))
			w2 := tensor.Must(tensor.Normal(dev, device.Float32, 0, 0.1, 2, hidden, classes))
			b2 := tensor.Must(tensor.Zeros(dev, device.Float32, classes))
			labels := make([]int32, batch)
			for i := range labels {
				labels[i] = int32(i % classes)
			}
			var first, peak uint64
			var loss0, loss float64
			for step := range steps {
				x := tensor.Must(tensor.Uniform(dev, device.Float32, 0, 1, uint64(step%8), batch, in))
				y := tensor.Must(tensor.FromInt32(dev, labels, batch))
				z1 := ops.MatMul(x, w1)
				h1 := ops.Add(z1, b1)
				a1 := ops.Relu(h1)
				z2 := ops.MatMul(a1, w2)
				logits := ops.Add(z2, b2)
				l := ops.SoftmaxCrossEntropy(logits, y)
				one := tensor.Must(tensor.Scalar(dev, device.Float32, 1))
				dlogits := ops.SoftmaxCrossEntropyBackward(logits, y, one)
				dz2, db2 := ops.AddBackward(z2, b2, dlogits)
				da1, dw2 := ops.MatMulBackward(a1, w2, dz2)
				dz1, db1 := ops.AddBackward(z1, b1, ops.ReluBackward(h1, da1))
				dw1 := ops.MatMulBackwardB(x, w1, dz1)
				ops.SGD(w1, dw1, 0.05)
				ops.SGD(b1, db1, 0.05)
				ops.SGD(w2, dw2, 0.05)
				ops.SGD(b2, db2, 0.05)
				if step%50 == 0 || step == steps-1 {
					v, err := l.Float64s()
					if err != nil {
						t.Fatalf("step %d: %v", step, err)
					}
					if step == 0 {
						loss0 = v[0]
					}
					loss = v[0]
					if step == 50 {
						first = b.live()
					}
				}
				peak = max(peak, b.live())
			}
			bound := first + uint64(tensor.GCInterval) + 64<<20
			t.Logf("%d steps: live %d MiB at step 50, peak %d MiB (bound %d MiB); loss %.3f → %.3f", steps, first>>20, peak>>20, bound>>20, loss0, loss)
			if peak > bound {
				t.Errorf("live bytes peaked at %d MiB; want at most %d MiB", peak>>20, bound>>20)
			}
			if !(loss < loss0) {
				t.Errorf("loss did not fall: %.4f → %.4f", loss0, loss)
			}
		})
	}
}

// TestLabelsOutOfRange passes class indices −1 and 7 for 3 classes to
// every op that takes them: the next readback (or Sync) reports an
// *device.IndexError naming the op, once, and the device goes on.
func TestLabelsOutOfRange(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.dev.Name(), func(t *testing.T) {
			dev := b.dev
			logits := tensor.Must(tensor.Uniform(dev, device.Float32, -1, 1, 1, 2, 3))
			bad := tensor.Must(tensor.FromInt32(dev, []int32{-1, 7}, 2))
			good := tensor.Must(tensor.FromInt32(dev, []int32{0, 2}, 2))
			g := tensor.Must(tensor.Scalar(dev, device.Float32, 1))
			for _, tt := range []struct {
				op  string
				run func(labels *tensor.Tensor) *tensor.Tensor
			}{
				{"ops.SoftmaxCrossEntropy", func(y *tensor.Tensor) *tensor.Tensor { return ops.SoftmaxCrossEntropy(logits, y) }},
				{"ops.SoftmaxCrossEntropyBackward", func(y *tensor.Tensor) *tensor.Tensor { return ops.SoftmaxCrossEntropyBackward(logits, y, g) }},
				{"ops.CrossEntropyLoss", func(y *tensor.Tensor) *tensor.Tensor { return ops.CrossEntropyLoss(logits, y, ops.MeanReduction) }},
				{"ops.CrossEntropyLossBackward", func(y *tensor.Tensor) *tensor.Tensor {
					gl, _ := ops.CrossEntropyLossBackward(logits, y, g, ops.MeanReduction)
					return gl
				}},
				{"ops.NLLLoss", func(y *tensor.Tensor) *tensor.Tensor { return ops.NLLLoss(logits, y, ops.SumReduction) }},
				{"ops.NLLLossBackward", func(y *tensor.Tensor) *tensor.Tensor { return ops.NLLLossBackward(logits, y, g, ops.SumReduction) }},
				{"ops.OneHot", func(y *tensor.Tensor) *tensor.Tensor { return ops.OneHot(y, 3, device.Float32) }},
				{"ops.IndexSelect", func(y *tensor.Tensor) *tensor.Tensor { return ops.IndexSelect(logits, 1, y) }},
			} {
				_, err := tt.run(bad).Float32s()
				var ie *device.IndexError
				if !errors.As(err, &ie) || ie.Classes != 3 || (ie.Index != -1 && ie.Index != 7) || !strings.HasPrefix(ie.Site, tt.op) {
					t.Errorf("%s with labels [-1 7] for 3 classes: err = %v; want an IndexError naming the op, the index and 3 classes", tt.op, err)
				}
				if err := dev.Sync(); err != nil {
					t.Errorf("%s: second report: %v; want the error reported once", tt.op, err)
				}
				if _, err := tt.run(good).Float32s(); err != nil {
					t.Errorf("%s with good labels after bad ones: %v", tt.op, err)
				}
			}
		})
	}
}

// TestErrorsTellDevicesApart mixes tensors of two devices of one backend:
// the error names both by their identities.
func TestErrorsTellDevicesApart(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.dev.Name(), func(t *testing.T) {
			other, err := device.Open(b.dev.Name())
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
			x := tensor.Must(tensor.Ones(b.dev, device.Float32, 3))
			y := tensor.Must(tensor.Ones(other, device.Float32, 3))
			err = tensor.Maybe(func() { ops.Add(x, y) })
			id := func(d device.Device) string { s, _, _ := strings.Cut(d.String(), ":"); return s }
			if !errors.Is(err, tensor.ErrDevice) || id(b.dev) == id(other) ||
				!strings.Contains(err.Error(), id(b.dev)+":") || !strings.Contains(err.Error(), id(other)+":") {
				t.Errorf("Add across %s and %s: %v; want an ErrDevice naming both", id(b.dev), id(other), err)
			}
		})
	}
}

// TestHugeSizesAreErrors asks each backend for tensors larger than its
// memory and than an int counts: errors wrapping device.ErrOutOfMemory,
// never a crash; the device keeps working.
func TestHugeSizesAreErrors(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.dev.Name(), func(t *testing.T) {
			makers := map[string]func(dt device.DType, shape ...int) (*tensor.Tensor, error){
				"Zeros": func(dt device.DType, shape ...int) (*tensor.Tensor, error) { return tensor.Zeros(b.dev, dt, shape...) },
				"Uniform": func(dt device.DType, shape ...int) (*tensor.Tensor, error) {
					return tensor.Uniform(b.dev, dt, 0, 1, 1, shape...)
				},
				"Normal": func(dt device.DType, shape ...int) (*tensor.Tensor, error) {
					return tensor.Normal(b.dev, dt, 0, 1, 1, shape...)
				},
			}
			for name, make := range makers {
				for _, dt := range []device.DType{device.Float32, device.Float16, device.Int32} {
					for _, shape := range [][]int{{1 << 20, 1 << 20}, {1 << 40, 1 << 40}, {1 << 62, 4}, {1 << 61}} {
						_, err := make(dt, shape...)
						if !errors.Is(err, device.ErrOutOfMemory) {
							t.Errorf("%s(%v, %v): err = %v; want ErrOutOfMemory", name, dt, shape, err)
						}
					}
				}
			}
			// Host slices sized by a tensor are checked as the device's are.
			if err := device.CheckHostAlloc("a test", 1<<62, 4); !errors.Is(err, device.ErrOutOfMemory) {
				t.Errorf("CheckHostAlloc(2⁶² float32s) = %v; want ErrOutOfMemory", err)
			}
			x := tensor.Must(tensor.Ones(b.dev, device.Float32, 4))
			if v, err := ops.Neg(x).Float32s(); err != nil || v[0] != -1 {
				t.Errorf("after the failed allocations: %v, %v", v, err)
			}
		})
	}
}

// TestTapeFreesIntermediates trains the CNN of examples/cnn through the
// tape with the garbage collector off: the loop releases only what it
// owns (the batch, the loss), Backward and ZeroGrad release the rest, so
// device memory stays flat from the first steps on. make test runs 30
// steps, make soak 1000.
func TestTapeFreesIntermediates(t *testing.T) {
	steps := 30
	if *soak {
		steps = 1000
	}
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	defer func(n int64) { tensor.GCInterval = n }(tensor.GCInterval)
	tensor.GCInterval = 0 // no collections asked for
	for _, b := range backends(t) {
		t.Run(b.dev.Name(), func(t *testing.T) {
			dev := b.dev
			net, err := cnnmodel.New(dev, 1)
			if err != nil {
				t.Fatal(err)
			}
			opt := optim.Adam(net.Params(), 1e-3)
			defer opt.Release()
			labels := make([]int32, 16)
			for i := range labels {
				labels[i] = int32(i % 10)
			}
			var after3, peak uint64
			for step := range steps {
				x := tensor.Must(tensor.Uniform(dev, device.Float32, 0, 1, uint64(step), 16, 1, 28, 28))
				y := tensor.Must(tensor.FromInt32(dev, labels))
				loss := ops.CrossEntropyLoss(net.Forward(autograd.Leaf(x, false)), autograd.Leaf(y, false), ops.MeanReduction)
				if err := loss.Backward(); err != nil {
					t.Fatal(err)
				}
				opt.Step()
				opt.ZeroGrad()
				loss.Release()
				x.Release()
				y.Release()
				if err := dev.Sync(); err != nil {
					t.Fatal(err)
				}
				if step == 2 {
					after3 = b.live()
				}
				peak = max(peak, b.live())
			}
			t.Logf("%d steps, no garbage collection: live %d KiB after 3 steps, peak %d KiB", steps, after3>>10, peak>>10)
			if peak > after3 {
				t.Errorf("live bytes grew from %d to %d: the tape leaves something for the collector", after3, peak)
			}
		})
	}
}
