package bench

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"math"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/device"
	cnnmodel "github.com/extensor/extensor/examples/cnn/model"
	gptmodel "github.com/extensor/extensor/examples/gpt/model"
	"github.com/extensor/extensor/examples/mlp/model"
	"github.com/extensor/extensor/internal/gputest"
	"github.com/extensor/extensor/internal/torchpy"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/optim"
	"github.com/extensor/extensor/tensor"
)

var backends = flag.String("backends", "cpu,webgpu", "the backends to benchmark, comma-separated")

// devices returns the devices to benchmark, by name: those of -backends.
func devices(b *testing.B) []device.Device {
	var devs []device.Device
	if strings.Contains(*backends, "cpu") {
		c, err := device.Open("cpu")
		if err != nil {
			b.Fatal(err)
		}
		devs = append(devs, c)
	}
	if !strings.Contains(*backends, "webgpu") {
		return devs
	}
	if g := gputest.OrNil(b); g != nil {
		devs = append(devs, g)
		describe("webgpu", g.String())
	}
	return devs
}

// steps times step, run once first to compile its kernels (and on a GPU
// to time the matmul variants of new shape classes), and reports ms/step,
// which it returns, and on a device that counts them the kernels
// dispatched a step, how many of them are fused chains, the copies a
// step records, and the peak device memory of the timed steps (MiB, the
// pool's high-water mark). The kernel profile (webgpu.EnvProfile)
// restarts after that first step: printProfile's table holds the timed
// steps of the last step benchmark run.
func steps(b *testing.B, dev device.Device, step func()) float64 {
	step() // the kernels compiled, the optimiser's state allocated
	wait(b, dev)
	if p, ok := dev.(interface{ ResetProfile() }); ok {
		p.ResetProfile()
	}
	if p, ok := dev.(interface{ ResetPeak() }); ok {
		p.ResetPeak()
	}
	kernels := func() (int64, int64, int64) {
		var k, c, f int64
		if n, ok := dev.(device.Counter); ok {
			k, c = n.Kernels(), n.Copies()
		}
		if n, ok := dev.(device.Fuser); ok {
			f = n.FusedKernels()
		}
		return k, c, f
	}
	k0, c0, f0 := kernels()
	b.ResetTimer()
	for range b.N {
		step()
	}
	wait(b, dev)
	ms := b.Elapsed().Seconds() * 1e3 / float64(b.N)
	b.StopTimer()
	report(b, ms, "ms/step")
	if k1, c1, f1 := kernels(); k1 > k0 {
		report(b, float64(k1-k0)/float64(b.N), "dispatches/step")
		report(b, float64(c1-c0)/float64(b.N), "copies/step")
		report(b, float64(f1-f0)/float64(b.N), "fused/step")
	}
	if peak, ok := device.PeakMemory(dev); ok {
		report(b, float64(peak)/(1<<20), "MiB")
	}
	return ms
}

func wait(b *testing.B, dev device.Device) {
	if err := dev.Sync(); err != nil {
		b.Fatal(err)
	}
}

func BenchmarkMatMul(b *testing.B) {
	shapes := []struct {
		name string
		a, b []int
		dt   device.DType // float32 when 0
	}{
		{"256", []int{256, 256}, []int{256, 256}, 0},
		{"512", []int{512, 512}, []int{512, 512}, 0},
		{"1024", []int{1024, 1024}, []int{1024, 1024}, 0},
		{"2048", []int{2048, 2048}, []int{2048, 2048}, 0},
		{"4096", []int{4096, 4096}, []int{4096, 4096}, 0},
		// float16 operands and result, float32 accumulation (mixed precision).
		{"4096/f16", []int{4096, 4096}, []int{4096, 4096}, device.Float16},
		{"batch64x128", []int{64, 128, 128}, []int{64, 128, 128}, 0}, // 64 products of 128×128
		{"vector4096", []int{4096}, []int{4096, 4096}, 0},            // (4096)@(4096,4096)
		// The product inside conv2d 1→32 on 28×28 (batch 64): K = 9.
		{"conv1-shape", []int{32, 9}, []int{64, 9, 676}, 0},
	}
	for _, dev := range devices(b) {
		gpu := dev.Name() == "webgpu" && !strings.HasSuffix(dev.String(), ", CPU")
		for _, s := range shapes {
			if strings.HasPrefix(s.name, "4096") && !gpu {
				continue // 137 GFLOP a product: for GPUs only
			}
			dt := cmp.Or(s.dt, device.Float32)
			b.Run(dev.Name()+"/"+s.name, func(b *testing.B) {
				x := tensor.Must(tensor.Uniform(dev, dt, -1, 1, 1, s.a...))
				y := tensor.Must(tensor.Uniform(dev, dt, -1, 1, 2, s.b...))
				defer x.Release()
				defer y.Release()
				z := ops.MatMul(x, y) // compile (and on GPUs choose) the kernel outside the timing
				flops := 2 * float64(z.Len()) * float64(x.Dim(x.Rank()-1))
				z.Release()
				wait(b, dev)
				if k, ok := dev.(interface{ MatMulKernel(device.GEMM) string }); ok && b.N == 1 {
					b.Logf("%v: kernel %s", dev, k.MatMulKernel(gemmOf(s.a, s.b)))
				}
				b.ResetTimer()
				for range b.N {
					ops.MatMul(x, y).Release()
				}
				wait(b, dev)
				report(b, flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// gemmOf is the device's description of the product of shapes a and b as
// BenchmarkMatMul's cases form them (a vector, a matrix, or a batch of
// matrices times a matrix or a batch).
func gemmOf(a, b []int) device.GEMM {
	if len(a) == 1 {
		a = []int{1, a[0]}
	}
	s := device.GEMM{Batch: 1, M: a[len(a)-2], K: a[len(a)-1], N: b[len(b)-1]}
	if len(b) == 3 {
		s.Batch = b[0]
	}
	if len(a) == 3 {
		s.Batch = a[0]
	}
	return s
}

// stream benchmarks op on tensors of n float32 elements on every device,
// reporting GB/s of the op's necessary traffic: bytes per element times n
// (each input read once, the output written once). It waits for the
// device after each op, which lets the pool recycle the large result.
func stream(b *testing.B, n, bytesPerElem int, shape []int, op func(x, y *tensor.Tensor) *tensor.Tensor) {
	for _, dev := range devices(b) {
		b.Run(fmt.Sprintf("%s/%dM", dev.Name(), n>>20), func(b *testing.B) {
			x := tensor.Must(tensor.Uniform(dev, device.Float32, -1, 1, 1, shape...))
			y := tensor.Must(tensor.Uniform(dev, device.Float32, -1, 1, 2, shape...))
			defer x.Release()
			defer y.Release()
			op(x, y).Release() // compile the kernel outside the timing
			wait(b, dev)
			b.ResetTimer()
			for range b.N {
				r := op(x, y) // released after the wait: a result freed unread is not computed
				wait(b, dev)
				r.Release()
			}
			report(b, float64(bytesPerElem)*float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}

const (
	n1M  = 1 << 20
	n16M = 1 << 24
)

func BenchmarkAdd(b *testing.B) {
	for _, n := range []int{n1M, n16M} {
		stream(b, n, 12, []int{n}, ops.Add)
	}
}

// BenchmarkAddQueued adds 16M-element tensors with no wait between ops
// (as a training step queues its work), each submitted as recorded,
// reporting GB/s as Add does.
func BenchmarkAddQueued(b *testing.B) {
	for _, dev := range devices(b) {
		b.Run(dev.Name()+"/16M", func(b *testing.B) {
			x := tensor.Must(tensor.Uniform(dev, device.Float32, -1, 1, 1, n16M))
			y := tensor.Must(tensor.Uniform(dev, device.Float32, -1, 1, 2, n16M))
			defer x.Release()
			defer y.Release()
			ops.Add(x, y).Release()
			wait(b, dev)
			b.ResetTimer()
			var last *tensor.Tensor
			for range b.N {
				r := ops.Add(x, y)
				if f, ok := dev.(device.Flusher); ok {
					f.Flush() // records r: a result freed unread is not computed
				}
				last.Release()
				last = r
			}
			wait(b, dev)
			last.Release()
			report(b, 12*float64(n16M)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}

// BenchmarkChain runs an elementwise chain of four ops, gelu(x + b)·s +
// r for x and r [4096, 1024], b [1024] and a scalar s (a linear layer's
// bias, its activation, a scale and a residual), the intermediates
// released as they are used, fused and unfused (device.Fuser) where the
// device fuses, reporting as steps does.
func BenchmarkChain(b *testing.B) {
	fusedChains(b, "", func(dev device.Device) (func() *tensor.Tensor, func()) {
		x := tensor.Must(tensor.Uniform(dev, device.Float32, -1, 1, 1, 4096, 1024))
		r := tensor.Must(tensor.Uniform(dev, device.Float32, -1, 1, 2, 4096, 1024))
		bias := tensor.Must(tensor.Uniform(dev, device.Float32, -1, 1, 3, 1024))
		sc := tensor.Must(tensor.Scalar(dev, device.Float32, 0.5))
		chain := func() *tensor.Tensor {
			h := ops.Add(x, bias)
			g := ops.Gelu(h)
			h.Release()
			m := ops.Mul(g, sc)
			g.Release()
			y := ops.Add(m, r)
			m.Release()
			return y
		}
		return chain, func() { release(x, r, bias, sc) }
	})
}

// BenchmarkLossChain runs a float16 huber loss of p against t [4M]
// (delta 1, no reduction) and its gradient for p under an upstream g,
// summed, the chains ops composes them of (the casts to float32 and back
// included), fused and unfused where the device fuses, reporting as steps does.
func BenchmarkLossChain(b *testing.B) {
	fusedChains(b, "/float16/4M", func(dev device.Device) (func() *tensor.Tensor, func()) {
		const n = 4 << 20
		half := func(lo, hi float64, seed uint64) *tensor.Tensor {
			x := tensor.Must(tensor.Uniform(dev, device.Float32, lo, hi, seed, n))
			defer x.Release()
			return ops.Cast(x, device.Float16)
		}
		p, t, g := half(-3, 3, 1), half(-3, 3, 2), half(-1, 1, 3)
		chain := func() *tensor.Tensor {
			loss := ops.HuberLoss(p, t, 1, ops.NoReduction)
			gp, gt := ops.HuberLossBackward(p, t, g, 1, ops.NoReduction)
			gt.Release()
			y := ops.Add(loss, gp)
			release(loss, gp)
			return y
		}
		return chain, func() { release(p, t, g) }
	})
}

// release releases ts.
func release(ts ...*tensor.Tensor) {
	for _, t := range ts {
		t.Release()
	}
}

// fusedChains times the chain that setup makes on each device, fused
// and unfused (sub-benchmarks <device>name/fused and /unfused) where the
// device fuses, each result released after the next chain is recorded,
// reporting as steps does. setup's second result releases the chain's
// inputs.
func fusedChains(b *testing.B, name string, setup func(device.Device) (func() *tensor.Tensor, func())) {
	for _, dev := range devices(b) {
		modes := []string{""}
		if _, ok := dev.(device.Fuser); ok {
			modes = []string{"/fused", "/unfused"}
		}
		for _, mode := range modes {
			b.Run(dev.Name()+name+mode, func(b *testing.B) {
				if f, ok := dev.(device.Fuser); ok {
					defer f.Fusion(f.Fusion(mode == "/fused"))
				}
				chain, release := setup(dev)
				defer release()
				var out *tensor.Tensor
				steps(b, dev, func() {
					y := chain()
					if f, ok := dev.(device.Flusher); ok {
						f.Flush() // records y, which the next chain's release would leave unwritten
					}
					out.Release()
					out = y
				})
				out.Release()
			})
		}
	}
}

// The families' kernels at 16M elements; compare their GB/s with Add's.

func BenchmarkExp(b *testing.B) {
	stream(b, n16M, 8, []int{n16M}, func(x, _ *tensor.Tensor) *tensor.Tensor { return ops.Exp(x) })
}

func BenchmarkSigmoid(b *testing.B) {
	stream(b, n16M, 8, []int{n16M}, func(x, _ *tensor.Tensor) *tensor.Tensor { return ops.Sigmoid(x) })
}

func BenchmarkGelu(b *testing.B) {
	stream(b, n16M, 8, []int{n16M}, func(x, _ *tensor.Tensor) *tensor.Tensor { return ops.Gelu(x) })
}

func BenchmarkPow(b *testing.B) {
	stream(b, n16M, 12, []int{n16M}, ops.Pow)
}

// BenchmarkSoftmax runs rows of 1024.
func BenchmarkSoftmax(b *testing.B) {
	stream(b, n16M, 8, []int{n16M / 1024, 1024}, func(x, _ *tensor.Tensor) *tensor.Tensor { return ops.Softmax(x, -1) })
}

// BenchmarkLayerNorm normalises rows of 1024 (no affine transform); its
// traffic is x read and the result written, as for an elementwise op.
func BenchmarkLayerNorm(b *testing.B) {
	stream(b, n16M, 8, []int{n16M / 1024, 1024}, func(x, _ *tensor.Tensor) *tensor.Tensor {
		return ops.LayerNorm(x, []int{1024}, nil, nil, ops.DefaultLayerNormEps)
	})
}

// BenchmarkLayerNormBackward is LayerNorm's gradient for x: x and the
// upstream gradient read, the gradient written.
func BenchmarkLayerNormBackward(b *testing.B) {
	stream(b, n16M, 12, []int{n16M / 1024, 1024}, func(x, g *tensor.Tensor) *tensor.Tensor {
		gx, _, _ := ops.LayerNormBackward(x, []int{1024}, nil, nil, g, ops.DefaultLayerNormEps)
		return gx
	})
}

// BenchmarkBatchNorm is batch_norm in training mode without an affine
// transform over [64, 64, 64, 64] (16M elements), reporting GB/s as the
// least traffic counts it: x read and the output written (8 bytes an
// element), though the composed op reads x several times.
func BenchmarkBatchNorm(b *testing.B) {
	stream(b, n16M, 8, []int{64, 64, 64, 64}, func(x, _ *tensor.Tensor) *tensor.Tensor {
		return ops.BatchNorm(x, nil, nil, ops.DefaultLayerNormEps)
	})
}

// BenchmarkBatchNormBackward is batch_norm's gradient for x: x and the
// upstream gradient read, the gradient written.
func BenchmarkBatchNormBackward(b *testing.B) {
	stream(b, n16M, 12, []int{64, 64, 64, 64}, func(x, g *tensor.Tensor) *tensor.Tensor {
		gx, _, _ := ops.BatchNormBackward(x, nil, nil, g, ops.DefaultLayerNormEps)
		return gx
	})
}

func BenchmarkSum(b *testing.B) {
	stream(b, n16M, 4, []int{n16M}, func(x, _ *tensor.Tensor) *tensor.Tensor { return ops.Sum(x) })
}

func BenchmarkMax(b *testing.B) {
	stream(b, n16M, 4, []int{n16M}, func(x, _ *tensor.Tensor) *tensor.Tensor { return ops.Max(x) })
}

func BenchmarkMLPStep(b *testing.B) {
	const batch, in, hidden, classes = 128, 784, 256, 10
	for _, dev := range devices(b) {
		b.Run(fmt.Sprintf("%s/%d", dev.Name(), batch), func(b *testing.B) {
			m, err := model.New(dev, in, hidden, classes, 1)
			if err != nil {
				b.Fatal(err)
			}
			defer m.Release()
			xs := make([]float32, batch*in)
			ys := make([]int32, batch)
			for i := range xs {
				xs[i] = float32(i%255) / 255
			}
			for i := range ys {
				ys[i] = int32(i % classes)
			}
			step := func() {
				// Upload a batch each step, as training does.
				x := tensor.Must(tensor.FromFloat32(dev, xs, batch, in))
				y := tensor.Must(tensor.FromInt32(dev, ys, batch))
				m.Step(x, y, 0.01).Release()
				x.Release()
				y.Release()
			}
			steps(b, dev, step)
			if p, ok := dev.(device.Pooler); ok {
				s := p.PoolStats()
				b.ReportMetric(100*float64(s.Hits)/float64(max(s.Hits+s.Misses, 1)), "%pool-hits")
			}
		})
	}
}

// BenchmarkTinyOp measures the framework's cost of one tiny op queued
// (y += x on 64 elements), with no wait between ops.
func BenchmarkTinyOp(b *testing.B) { tinyOps(b, false) }

// BenchmarkSync measures a wait for the device: one tiny op queued, then
// Sync, reporting µs per round trip.
func BenchmarkSync(b *testing.B) { tinyOps(b, true) }

// tinyOps times y += x on 64 elements, waiting for the device after each
// op with sync, reporting µs per op.
func tinyOps(b *testing.B, sync bool) {
	for _, dev := range devices(b) {
		b.Run(dev.Name()+"/64", func(b *testing.B) {
			x := tensor.Must(tensor.Ones(dev, device.Float32, 64))
			y := tensor.Must(tensor.Zeros(dev, device.Float32, 64))
			defer x.Release()
			defer y.Release()
			ops.Axpy(y, x, 1)
			wait(b, dev)
			b.ResetTimer()
			for range b.N {
				ops.Axpy(y, x, 1)
				if sync {
					wait(b, dev)
				}
			}
			wait(b, dev)
			report(b, b.Elapsed().Seconds()*1e6/float64(b.N), "µs/op")
		})
	}
}

// BenchmarkConv2d runs the two convolutions of the Fashion-MNIST CNN
// (3×3, batch 64) and a large one (batch 256, 64→64 channels, 56×56),
// forward and forward+backward, reporting GFLOP/s of the convolution's
// multiply-adds (the backward counts twice the forward's). The large
// case needs 205 MB tensors: where the adapter cannot bind that much it
// is skipped, saying so, and its batch-32 form runs.
func BenchmarkConv2d(b *testing.B) {
	cases := []struct {
		name string
		x, w []int
	}{
		{"1to32-28x28", []int{64, 1, 28, 28}, []int{32, 1, 3, 3}},
		{"32to64-13x13", []int{64, 32, 13, 13}, []int{64, 32, 3, 3}},
		{"64to64-56x56-b32", []int{32, 64, 56, 56}, []int{64, 64, 3, 3}},
		{"64to64-56x56-b256", []int{256, 64, 56, 56}, []int{64, 64, 3, 3}},
	}
	win := ops.Window{Stride: [2]int{1, 1}}
	for _, dev := range devices(b) {
		for _, c := range cases {
			for _, bwd := range []bool{false, true} {
				name := dev.Name() + "/" + c.name + "/fwd"
				if bwd {
					name += "+bwd"
				}
				b.Run(name, func(b *testing.B) {
					x, err := tensor.Uniform(dev, device.Float32, -1, 1, 1, c.x...)
					if err != nil {
						b.Skipf("input %v: %v", c.x, err)
					}
					defer x.Release()
					w := tensor.Must(tensor.Uniform(dev, device.Float32, -1, 1, 2, c.w...))
					defer w.Release()
					oh, ow := c.x[2]-c.w[2]+1, c.x[3]-c.w[3]+1
					g := tensor.Must(tensor.Uniform(dev, device.Float32, -1, 1, 3, c.x[0], c.w[0], oh, ow))
					defer g.Release()
					step := func() {
						y := ops.Conv2d(x, w, nil, win)
						if bwd {
							gx, gw, _ := ops.Conv2dBackward(x, w, nil, g, win)
							gx.Release()
							gw.Release()
						}
						y.Release()
					}
					step() // compile the kernels outside the timing
					if err := dev.Sync(); errors.Is(err, device.ErrOutOfMemory) {
						b.Skipf("input %v: %v", c.x, err) // past the binding limit
					} else if err != nil {
						b.Fatal(err)
					}
					b.ResetTimer()
					for range b.N {
						step()
					}
					wait(b, dev)
					flops := 2 * float64(c.x[0]*c.w[0]*oh*ow*c.w[1]*c.w[2]*c.w[3])
					if bwd {
						flops *= 3
					}
					report(b, flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				})
			}
		}
	}
}

// BenchmarkTrainStep runs one training step (forward, backward through
// the tape, optimiser) of the examples' networks on synthetic batches:
// the MLP of examples/mlp (784-256-10, batch 128, SGD; BenchmarkMLPStep
// is the same step with the backward written by hand) and the CNN of
// examples/cnn (batch 64, Adam). When PyTorch is importable, PyTorch's
// step for the same networks on this machine (one thread and all of
// them: testdata/torch_step.py) is reported beside, as
// <net>/pytorch-<n>thread.
func BenchmarkTrainStep(b *testing.B) {
	for _, dev := range devices(b) {
		for _, net := range []string{"mlp", "cnn"} {
			b.Run(net+"/"+dev.Name(), func(b *testing.B) {
				shape := []int{64, 1, 28, 28}
				if net == "mlp" {
					shape = []int{128, 784}
				}
				x := tensor.Must(tensor.Uniform(dev, device.Float32, 0, 1, 5, shape...))
				defer x.Release()
				labels := make([]int32, shape[0])
				for i := range labels {
					labels[i] = int32(i % 10)
				}
				y := tensor.Must(tensor.FromInt32(dev, labels))
				defer y.Release()
				var step func()
				if net == "mlp" {
					m := must(model.New(dev, 784, 256, 10, 1))
					defer m.Release()
					opt := optim.SGD(m.Params(), 0.1, device.StepParams{})
					step = func() { m.TapeStep(x, y, opt).Release() }
				} else {
					layers := must(cnnmodel.New(dev, 1))
					opt := optim.Adam(layers.Params(), 1e-3)
					defer opt.Release()
					step = func() {
						loss := ops.CrossEntropyLoss(layers.Forward(autograd.Leaf(x, false)), autograd.Leaf(y, false), ops.MeanReduction)
						if err := loss.Backward(); err != nil {
							b.Fatal(err)
						}
						opt.Step()
						opt.ZeroGrad()
						loss.Release()
					}
				}
				recordStep(b, steps(b, dev, step))
			})
		}
	}
	for _, r := range torchSteps(b) {
		b.Run(fmt.Sprintf("%s/pytorch-%dthread", r.net, r.threads), func(b *testing.B) {
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(r.ms, "ms/step")
			recordStep(b, r.ms)
		})
	}
}

// BenchmarkGPTStep runs training steps of examples/gpt's model at its
// defaults (context 128, 4 blocks of width 128 with 4 heads, batch 8 of
// random bytes): the loss, its gradients, clipping by global norm and
// AdamW, as examples/gpt trains, reporting ms/step.
// testdata/torch_bench.py times the same step in PyTorch (GPTStep).
func BenchmarkGPTStep(b *testing.B) {
	cfg := gptmodel.Config{Vocab: 256, Context: 128, Layers: 4, Heads: 4, Width: 128}
	const batch = 8
	for _, dev := range devices(b) {
		b.Run(dev.Name(), func(b *testing.B) {
			tokens := make([]int32, batch*(cfg.Context+1))
			r := uint32(1)
			for i := range tokens {
				r = r*1664525 + 1013904223
				tokens[i] = int32(r >> 24)
			}
			xs, ys := make([]int32, 0, batch*cfg.Context), make([]int32, 0, batch*cfg.Context)
			for w := range batch {
				row := tokens[w*(cfg.Context+1) : (w+1)*(cfg.Context+1)]
				xs, ys = append(xs, row[:cfg.Context]...), append(ys, row[1:]...)
			}
			x := tensor.Must(tensor.FromInt32(dev, xs, batch, cfg.Context))
			y := tensor.Must(tensor.FromInt32(dev, ys, batch, cfg.Context))
			defer x.Release()
			defer y.Release()
			net := must(gptmodel.New(dev, cfg, 1))
			opt := optim.AdamW(net.Params(), 2e-3, 0.01)
			defer opt.Release()
			step := func() {
				loss := net.Loss(autograd.Leaf(x, false), autograd.Leaf(y, false))
				if err := loss.Backward(); err != nil {
					b.Fatal(err)
				}
				optim.ClipGradNorm(net.Params(), 1).Release()
				opt.Step()
				opt.ZeroGrad()
				loss.Release()
			}
			steps(b, dev, step)
		})
	}
}

// BenchmarkAMPStep runs training steps of the CNN of examples/cnn at
// batch 256 in float32 and in mixed precision (examples/cnn -amp: float16
// activations and gradients, float32 master weights, loss scaling),
// reporting ms/step and the peak device memory of the steps in MiB (the
// pool's high-water mark), whose ratio mixed precision means to halve.
func BenchmarkAMPStep(b *testing.B) {
	for _, dev := range devices(b) {
		for _, amp := range []bool{false, true} {
			mode := "float32"
			if amp {
				mode = "amp"
			}
			b.Run(dev.Name()+"/"+mode+"/256", func(b *testing.B) {
				x := tensor.Must(tensor.Uniform(dev, device.Float32, 0, 1, 5, 256, 1, 28, 28))
				defer x.Release()
				labels := make([]int32, 256)
				for i := range labels {
					labels[i] = int32(i % 10)
				}
				y := tensor.Must(tensor.FromInt32(dev, labels))
				defer y.Release()
				net := must(cnnmodel.New(dev, 1))
				opt := optim.Adam(net.Params(), 1e-3)
				defer opt.Release()
				var scaler *optim.Scaler
				if amp {
					scaler = optim.NewScaler()
				}
				step := func() {
					loss, err := cnnmodel.Step(net, opt, scaler, x, y)
					if err != nil {
						b.Fatal(err)
					}
					loss.Release()
				}
				steps(b, dev, step)
			})
		}
	}
}

// torchStep is PyTorch's time for one training step of a network.
type torchStep struct {
	net     string
	threads int
	ms      float64
}

var torchOnce = sync.OnceValues(func() ([]torchStep, error) {
	python, err := torchpy.Find()
	if err != nil {
		return nil, err
	}
	out, err := exec.Command(python, "testdata/torch_step.py").Output()
	if err != nil {
		return nil, fmt.Errorf("testdata/torch_step.py: %v", err)
	}
	var rs []torchStep
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var r torchStep
		if _, err := fmt.Sscan(line, &r.net, &r.threads, &r.ms); err != nil {
			return nil, fmt.Errorf("testdata/torch_step.py printed %q: %v", line, err)
		}
		rs = append(rs, r)
	}
	return rs, nil
})

// torchSteps runs testdata/torch_step.py once, giving PyTorch's step
// times on this machine beside extensor's, or logs why it cannot.
func torchSteps(b *testing.B) []torchStep {
	rs, err := torchOnce()
	if err != nil {
		b.Log(err)
	}
	return rs
}

// must returns v, failing the benchmark run on an error.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// BenchmarkExpDType runs Exp on 16M elements stored as float32 and as
// float16 (computed in float32 either way), reporting elements per second:
// float16 moves half the bytes.
func BenchmarkExpDType(b *testing.B) {
	for _, dt := range []device.DType{device.Float32, device.Float16} {
		elemRate(b, fmt.Sprintf("%v/16M", dt), dt, ops.Exp)
	}
}

// BenchmarkCast converts 16M elements from float32 to float16 and back,
// reporting elements per second: the casts that mixed precision runs
// around every op without a float16 kernel.
func BenchmarkCast(b *testing.B) {
	elemRate(b, "to-float16/16M", device.Float32, func(x *tensor.Tensor) *tensor.Tensor { return ops.Cast(x, device.Float16) })
	elemRate(b, "to-float32/16M", device.Float16, func(x *tensor.Tensor) *tensor.Tensor { return ops.Cast(x, device.Float32) })
}

// elemRate times op on 16M elements of dtype dt, uniform in [-1, 1), on
// every device (sub-benchmark <device>/name), waiting after each op, and
// reports elements per second.
func elemRate(b *testing.B, name string, dt device.DType, op func(*tensor.Tensor) *tensor.Tensor) {
	for _, dev := range devices(b) {
		b.Run(dev.Name()+"/"+name, func(b *testing.B) {
			x := tensor.Must(tensor.Uniform(dev, device.Float32, -1, 1, 1, n16M))
			if dt != device.Float32 {
				x32 := x
				x = ops.Cast(x32, dt)
				x32.Release()
			}
			defer x.Release()
			op(x).Release() // compile the kernel outside the timing
			wait(b, dev)
			b.ResetTimer()
			for range b.N {
				r := op(x) // released after the wait, as stream's
				wait(b, dev)
				r.Release()
			}
			b.ReportMetric(float64(n16M)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
		})
	}
}

// attnSizes are the attention benchmark's geometries: flag -attn,
// batch,heads,L,d;… (the B 8, H 8, L 1024, d 64, and L 512,
// where the composed attention's scores fit one binding on lavapipe).
var attnSizes = flag.String("attn", "8,8,512,64;8,8,1024,64", "BenchmarkAttention's batch,heads,L,d geometries, ;-separated")

// BenchmarkAttention times causal self-attention, forward and backward
// (q, k and v's gradients), fused (ops.ScaledDotProductAttention) and
// composed of matmul, masked_fill and softmax as a model would write it,
// reporting ms/step and the step's peak device memory. The CPU backend
// runs the composed attention only (its fused one is the reference twin,
// not a kernel); a composition whose scores exceed the device's limits
// is reported as skipped.
func BenchmarkAttention(b *testing.B) {
	for _, size := range strings.Split(*attnSizes, ";") {
		var bt, h, l, d int
		if _, err := fmt.Sscanf(size, "%d,%d,%d,%d", &bt, &h, &l, &d); err != nil {
			b.Fatalf("-attn %q: %v", size, err)
		}
		attention(b, bt, h, l, d)
	}
}

func attention(b *testing.B, bt, h, l, d int) {
	shape := []int{bt, h, l, d}
	above := make([]float64, l*l)
	for i := range l {
		for j := i + 1; j < l; j++ {
			above[i*l+j] = 1
		}
	}
	for _, dev := range devices(b) {
		for _, way := range []string{"fused", "composed"} {
			if way == "fused" && dev.Name() == "cpu" {
				continue
			}
			b.Run(fmt.Sprintf("%s/%s/%d,%d,%d,%d", dev.Name(), way, bt, h, l, d), func(b *testing.B) {
				q := tensor.Must(tensor.Uniform(dev, device.Float32, -1, 1, 1, shape...))
				k := tensor.Must(tensor.Uniform(dev, device.Float32, -1, 1, 2, shape...))
				v := tensor.Must(tensor.Uniform(dev, device.Float32, -1, 1, 3, shape...))
				g := tensor.Must(tensor.Uniform(dev, device.Float32, -1, 1, 4, shape...))
				mask := tensor.Must(tensor.FromValues(dev, device.Float32, above, l, l))
				for _, t := range []*tensor.Tensor{q, k, v, g, mask} {
					defer t.Release()
				}
				step := func() {
					var gs []*tensor.Tensor
					if way == "fused" {
						a := ops.Attention{Causal: true}
						ops.ScaledDotProductAttention(q, k, v, nil, ops.AttentionAttrs{Causal: true}).Release()
						gq, gk, gv, _ := ops.ScaledDotProductAttentionBackward(q, k, v, a, g)
						gs = []*tensor.Tensor{gq, gk, gv}
					} else {
						gs = composedAttention(q, k, v, mask, g, 1/math.Sqrt(float64(d)))
					}
					for _, t := range gs {
						t.Release()
					}
				}
				step()
				if err := dev.Sync(); errors.Is(err, device.ErrOutOfMemory) {
					b.Skipf("does not fit: %v", err)
				}
				wait(b, dev)
				if p, ok := dev.(device.Pooler); ok {
					p.ResetPeak()
				}
				steps(b, dev, step)
				if peak, ok := device.PeakMemory(dev); ok {
					b.ReportMetric(float64(peak)/(1<<20), "MiB-peak")
				}
			})
		}
	}
}

// composedAttention is causal attention and its gradients written in
// table ops: s = q·kᵀ·scale, masked above the diagonal, softmax, ·v; the
// backward through the same ops' gradients.
func composedAttention(q, k, v, mask, g *tensor.Tensor, scale float64) []*tensor.Tensor {
	perm := []int{0, 1, 3, 2}
	kt := ops.Permute(k, perm...)
	defer kt.Release()
	qk := ops.MatMul(q, kt)
	defer qk.Release()
	sc := tensor.Must(tensor.Scalar(q.Device(), q.DType(), scale))
	defer sc.Release()
	s := ops.Mul(qk, sc)
	defer s.Release()
	sm := ops.MaskedFill(s, mask, math.Inf(-1))
	defer sm.Release()
	p := ops.Softmax(sm, -1)
	defer p.Release()
	ops.MatMul(p, v).Release()
	gp, gv := ops.MatMulBackward(p, v, g)
	defer gp.Release()
	gsm := ops.SoftmaxBackward(sm, gp, -1)
	defer gsm.Release()
	gs, _ := ops.MaskedFillBackward(s, mask, gsm)
	defer gs.Release()
	gqk := ops.Mul(gs, sc)
	defer gqk.Release()
	gq, gkt := ops.MatMulBackward(q, kt, gqk)
	defer gkt.Release()
	return []*tensor.Tensor{gq, ops.Permute(gkt, perm...), gv}
}
