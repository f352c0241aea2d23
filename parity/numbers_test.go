package parity_test

import (
	"math"
	"strings"
	"testing"

	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/internal/gputest"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/tensor"
)

// numbersDevices returns the CPU device and, where an adapter exists
// (always under CI), a WebGPU device of the test's own: the probes below
// make devices record failures, which a device reports to the next
// readback of any goroutine.
func numbersDevices(t *testing.T) []device.Device {
	devs := []device.Device{cpu.New()}
	if g := fuzzGPU(t); g != nil {
		t.Cleanup(func() { g.Close() })
		devs = append(devs, g)
	}
	return devs
}

// filled returns a float32 tensor on dev of the given shape holding vals
// repeated.
func filled(t *testing.T, dev device.Device, vals []float64, shape ...int) *tensor.Tensor {
	t.Helper()
	n := device.Numel(shape)
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(vals[i%len(vals)])
	}
	x := tensor.Must(tensor.FromFloat32(dev, v, shape...))
	t.Cleanup(x.Release)
	return x
}

// values reads x back as float64s, failing t on an error.
func values(t *testing.T, what string, x *tensor.Tensor) []float64 {
	t.Helper()
	defer x.Release()
	v, err := x.Float64s()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// TestNormNumbers checks the norms where naive sums in float32 go wrong:
// rows of a large mean and no or a small spread (the mean's rounding
// error is of the order of the spread), and rows whose squares overflow
// float32. Each must give PyTorch's value in exact arithmetic on both
// backends.
func TestNormNumbers(t *testing.T) {
	for _, dev := range numbersDevices(t) {
		t.Run(dev.Name(), func(t *testing.T) {
			huge := []float64{3e38, -3e38, 3e38, -3e38}
			tests := []struct {
				name string
				y    func() *tensor.Tensor
				want []float64 // repeated over the output
				tol  float64
			}{
				{"layer_norm of 768 × 77777.7", func() *tensor.Tensor {
					return ops.LayerNorm(filled(t, dev, []float64{77777.7}, 2, 768), []int{768}, nil, nil, 1e-5)
				}, []float64{0}, 1e-3},
				{"layer_norm of 4000 × 77777.7", func() *tensor.Tensor {
					return ops.LayerNorm(filled(t, dev, []float64{77777.7}, 3, 4000), []int{4000}, nil, nil, 1e-5)
				}, []float64{0}, 1e-3},
				{"layer_norm of 1000 ± 0.01", func() *tensor.Tensor {
					return ops.LayerNorm(filled(t, dev, []float64{1000.01, 999.99}, 2, 768), []int{768}, nil, nil, 0)
				}, []float64{1, -1}, 2e-2},
				{"batch_norm of 768 × 1000.1", func() *tensor.Tensor {
					return ops.BatchNorm(filled(t, dev, []float64{1000.1}, 768, 1), nil, nil, 1e-5)
				}, []float64{0}, 1e-3},
				{"group_norm of 768 × 1000.1", func() *tensor.Tensor {
					return ops.GroupNorm(filled(t, dev, []float64{1000.1}, 1, 2, 384), 1, nil, nil, 1e-5)
				}, []float64{0}, 1e-3},
				{"layer_norm of ±3e38", func() *tensor.Tensor {
					return ops.LayerNorm(filled(t, dev, huge, 1, 4), []int{4}, nil, nil, 1e-5)
				}, []float64{1, -1}, 1e-5},
				{"layer_norm of ±3e38 over 1024", func() *tensor.Tensor {
					return ops.LayerNorm(filled(t, dev, huge, 2, 1024), []int{1024}, nil, nil, 1e-5)
				}, []float64{1, -1}, 1e-5},
				{"rms_norm of ±3e38", func() *tensor.Tensor {
					return ops.RMSNorm(filled(t, dev, huge, 1, 4), []int{4}, nil, 1e-5)
				}, []float64{1, -1}, 1e-5},
				{"group_norm of ±3e38", func() *tensor.Tensor {
					return ops.GroupNorm(filled(t, dev, huge, 1, 2, 2), 1, nil, nil, 1e-5)
				}, []float64{1, -1}, 1e-5},
				{"layer_norm of 1e-30 ± 1e-31, eps 0", func() *tensor.Tensor {
					return ops.LayerNorm(filled(t, dev, []float64{1.1e-30, 0.9e-30}, 2, 6), []int{6}, nil, nil, 0)
				}, []float64{1, -1}, 1e-3},
			}
			for _, tc := range tests {
				got := values(t, tc.name, tc.y())
				for i, v := range got {
					if w := tc.want[i%len(tc.want)]; !(math.Abs(v-w) <= tc.tol) {
						t.Errorf("%s: element %d is %v; want %v", tc.name, i, v, w)
						break
					}
				}
			}
			// The gradient of the large-mean row: layer_norm's is 0 for a
			// constant upstream gradient, whatever the mean.
			x := filled(t, dev, []float64{77777.7, 77777.8}, 2, 768)
			g := filled(t, dev, []float64{1}, 2, 768)
			gx, _, _ := ops.LayerNormBackward(x, []int{768}, nil, nil, g, 1e-5)
			for i, v := range values(t, "layer_norm's gradient", gx) {
				if !(math.Abs(v) <= 1e-3) {
					t.Errorf("layer_norm's gradient of a large-mean row for g = 1: element %d is %v; want 0", i, v)
					break
				}
			}
		})
	}
}

// TestAttentionMaskedRows checks the fused attention against the same
// attention composed of matmul, the additive mask and softmax on the
// tape, on both backends, where the mask takes whole rows away: a row of
// PyTorch's usual −3.4e38 (finfo.min: every score rounds to it, and the
// row attends uniformly) and a row of −Inf (the row and its gradients are
// NaN). And scores past float32's range are ±Inf on both backends.
func TestAttentionMaskedRows(t *testing.T) {
	const b, lq, lk, d = 2, 3, 4, 4
	for _, dev := range numbersDevices(t) {
		t.Run(dev.Name(), func(t *testing.T) {
			for _, fill := range []float64{-3.4e38, math.Inf(-1)} {
				mask := make([]float64, lq*lk)
				for j := range lk {
					mask[1*lk+j] = fill // query 1 sees no key
				}
				mask[2*lk+3] = fill
				leaf := func(seed uint64, shape ...int) *autograd.Var {
					x := tensor.Must(tensor.Uniform(dev, device.Float32, -1, 1, seed, shape...))
					t.Cleanup(x.Release)
					return autograd.Leaf(x, true)
				}
				run := func(fused bool) [][]float64 {
					q, k, v := leaf(1, b, lq, d), leaf(2, b, lk, d), leaf(3, b, lk, d)
					m := autograd.Leaf(filled(t, dev, mask, lq, lk), false)
					w := filled(t, dev, []float64{0.5, -1, 2, 0.25, 1.5}, b, lq, d)
					var out *autograd.Var
					if fused {
						out = ops.ScaledDotProductAttention(q, k, v, m, ops.AttentionAttrs{})
					} else {
						kt := autograd.Apply(ops.PermuteOp, ops.PermuteAttrs{Perm: []int{0, 2, 1}}, k)
						scale := autograd.Leaf(filled(t, dev, []float64{0.5}), false)
						out = ops.MatMul(ops.Softmax(ops.Add(ops.Mul(ops.MatMul(q, kt), scale), m), -1), v)
					}
					loss := ops.Sum(ops.Mul(out, autograd.Leaf(w, false)))
					o, err := out.Value().Float64s()
					if err != nil {
						t.Fatal(err)
					}
					if err := loss.Backward(); err != nil {
						t.Fatal(err)
					}
					vals := [][]float64{o}
					for _, l := range []*autograd.Var{q, k, v} {
						g, err := l.Grad().Float64s()
						if err != nil {
							t.Fatal(err)
						}
						vals = append(vals, g)
					}
					return vals
				}
				want, got := run(false), run(true)
				for i, what := range []string{"output", "dq", "dk", "dv"} {
					for j := range want[i] {
						w, g := want[i][j], got[i][j]
						if math.IsNaN(w) != math.IsNaN(g) || !math.IsNaN(w) && math.Abs(w-g) > 1e-5+1e-4*math.Abs(w) {
							t.Errorf("mask row of %v: %s element %d: fused %v, composed %v", fill, what, j, g, w)
							break
						}
					}
				}
			}
			// q·k of 1e60 is +Inf in float32: the row is NaN, as the
			// composed ops' softmax of [+Inf, 0] is.
			qk := filled(t, dev, []float64{1e30, 0, 0, 0, 0, 1, 0, 0}, 1, 2, 4)
			out := values(t, "output of overflowing scores", ops.ScaledDotProductAttention(qk, qk, qk, nil, ops.AttentionAttrs{}))
			if !math.IsNaN(out[0]) || math.IsNaN(out[4]) {
				t.Errorf("attention of q = k = [[1e30 0 0 0] [0 1 0 0]]: %v; want the first row NaN (its score overflows), the second not", out)
			}
			// A head dimension past the fused kernels' is an error on WebGPU,
			// not minutes of compiling; the CPU computes it.
			big := filled(t, dev, []float64{0.01, -0.02}, 1, 2, 1024)
			y := ops.ScaledDotProductAttention(big, big, big, nil, ops.AttentionAttrs{})
			_, err := y.Float32s()
			y.Release()
			if dev.Name() == "webgpu" && (err == nil || !strings.Contains(err.Error(), "at most 256")) {
				t.Errorf("attention of head dimension 1024 on WebGPU: %v; want an error naming the limit of 256", err)
			} else if dev.Name() == "cpu" && err != nil {
				t.Errorf("attention of head dimension 1024 on the CPU: %v", err)
			}
		})
	}
}

// TestFailedStaysFailed checks that a tensor whose kernel was refused
// (here by lavapipe's loop limit) returns the failure at every readback,
// after a Sync too, and so does every tensor computed from it; and that
// the device keeps working for others. On an adapter that runs these
// kernels there is no failure to check.
func TestFailedStaysFailed(t *testing.T) {
	for _, dev := range numbersDevices(t) {
		if dev.Name() != "webgpu" {
			continue
		}
		failed := 0
		check := func(what string, x *tensor.Tensor, sync bool) {
			t.Helper()
			defer x.Release()
			if sync {
				dev.Sync()
			}
			_, err := x.Float32s()
			if err == nil {
				return // the adapter runs it
			}
			failed++
			for i, y := range []*tensor.Tensor{x, ops.Add(x, x)} {
				for range 2 {
					if _, again := y.Float32s(); again == nil {
						t.Errorf("%s: readback %d of %s: no error after %v", what, i, []string{"it", "a sum of it"}[i], err)
					}
				}
				if i > 0 {
					y.Release()
				}
			}
		}
		long := filled(t, dev, []float64{0.5, -1, 2}, 2, 70000)
		check("layer_norm over 70000", ops.LayerNorm(long, []int{70000}, nil, nil, 1e-5), false)
		check("softmax over 70000, after a Sync", ops.Softmax(long, -1), true)
		q := filled(t, dev, []float64{0.1, -0.2, 0.3}, 1, 8, 4)
		k := filled(t, dev, []float64{0.2, 0.1}, 1, 40000, 4)
		g := filled(t, dev, []float64{1}, 1, 8, 4)
		gq, gk, gv, _ := ops.ScaledDotProductAttentionBackward(q, k, k, ops.Attention{}, g)
		check("attention's dq over 40000 keys", gq, false)
		check("attention's dk over 40000 keys", gk, false)
		check("attention's dv over 40000 keys", gv, false)
		if gputest.CI() && failed != 5 {
			t.Errorf("%d of 5 refused kernels failed on %v; lavapipe refuses each", failed, dev)
		}
		ok := values(t, "a small sum after the failures", ops.Add(q, q))
		if ok[0] != 0.2 && math.Abs(ok[0]-0.2) > 1e-6 {
			t.Errorf("a sum after the failures gives %v; want 0.2", ok[0])
		}
	}
}
