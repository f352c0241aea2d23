//go:build cgo || js

package webgpu_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/device/webgpu"
	"github.com/extensor/extensor/tensor"
)

// TestNormGradSums runs the norm gradient over rows that the one-pass
// kernel summing its rows' g·x̂ and g takes against the CPU backend: one
// row a workgroup and several, the last workgroup's rows ragged (129 on
// CPU adapters, counted as 2 threads: 16 rows a workgroup; 2101 as on
// GPUs, 2 a workgroup), invocations' last vec4s whole and partly filled
// (rows of 128 and 148; on GPUs, 32 lanes wide, 128 and 260), with and
// without w and b.
func TestNormGradSums(t *testing.T) {
	t.Run("cpu", func(t *testing.T) {
		d := fresh(t)
		webgpu.SetThreads(d, 2)
		testNormGradSums(t, d, []int{1, 7, 129}, []int{128, 148})
	})
	t.Run("gpu", func(t *testing.T) {
		d := fresh(t)
		webgpu.AsGPU(d)
		testNormGradSums(t, d, []int{7, 2101}, []int{128, 260})
	})
}

func testNormGradSums(t *testing.T, d *webgpu.Device, shapes, lengths []int) {
	t.Parallel()
	c := cpu.New()
	r := rand.New(rand.NewPCG(3, 4))
	for _, shape := range shapes {
		for _, n := range lengths {
			normGradSums(t, d, c, r, shape, n)
		}
	}
}

// normGradSums checks the norm gradient of rows rows of n on d against c.
func normGradSums(t *testing.T, d *webgpu.Device, c device.Device, r *rand.Rand, rows, n int) {
	for _, tc := range []struct {
		center, w, b bool
	}{
		{true, true, true},
		{true, false, true},
		{false, true, false},
		{false, false, false},
	} {
		name := fmt.Sprintf("rows=%d,n=%d/center=%v,w=%v,b=%v", rows, n, tc.center, tc.w, tc.b)
		x, g, w := normals(r, rows*n), normals(r, rows*n), normals(r, n)
		// run returns dx, and w's and b's gradients where wanted, on dev.
		run := func(dev device.Device) [][]float32 {
			load := func(v []float32) *tensor.Tensor { return tensor.Must(tensor.FromFloat32(dev, v, len(v))) }
			xt, gt := load(x), load(g)
			dx := tensor.Must(tensor.Zeros(dev, device.Float32, rows*n))
			var wt, gw, gb *tensor.Tensor
			var wb, gwb, gbb device.Buffer
			if tc.w {
				wt, gw = load(w), tensor.Must(tensor.Full(dev, device.Float32, 7, n))
				wb, gwb = wt.Buffer(), gw.Buffer()
			}
			if tc.b {
				gb = tensor.Must(tensor.Full(dev, device.Float32, 7, n))
				gbb = gb.Buffer()
			}
			dev.NormGrad(dx.Buffer(), gwb, gbb, xt.Buffer(), gt.Buffer(), wb, rows, n, 1e-5, tc.center)
			var out [][]float32
			for _, s := range []*tensor.Tensor{dx, gw, gb} {
				if s == nil {
					continue
				}
				v, err := s.Float32s()
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				out = append(out, v)
			}
			return out
		}
		got, want := run(d), run(c)
		for i := range want {
			for j := range want[i] {
				if e := math.Abs(float64(got[i][j] - want[i][j])); e > 1e-4*(1+math.Abs(float64(want[i][j]))) {
					t.Errorf("%s: gradient %d, element %d: %v, want %v", name, i, j, got[i][j], want[i][j])
					break
				}
			}
		}
	}
}
