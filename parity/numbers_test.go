package parity_test

import (
	"math"
	"testing"

	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/device"
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
