package ops_test

import (
	"encoding/json"
	"math"
	"os"
	"testing"

	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/parity"
	"github.com/extensor/extensor/tensor"
)

// TestClipGradNormTorch compares ops.ClipGradNorm with PyTorch's
// clip_grad_norm_ (testdata/clip_grad_norm.json, written by
// testdata/clip_reference.py) on both backends (WebGPU where the build
// has it: webgpuDevices).
func TestClipGradNormTorch(t *testing.T) {
	data, err := os.ReadFile("testdata/clip_grad_norm.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Cases []struct {
			Name    string
			MaxNorm float64 `json:"max_norm"`
			Shapes  [][]int
			Grads   [][]parity.Num
			Norm    parity.Num
			Clipped [][]parity.Num
		}
	}
	if err := json.Unmarshal(data, &ref); err != nil {
		t.Fatal(err)
	}
	devs := append([]device.Device{newEnv(t).dev}, webgpuDevices(t)...)
	for _, dev := range devs {
		for _, c := range ref.Cases {
			grads := make([]*tensor.Tensor, len(c.Grads))
			for i, g := range c.Grads {
				v := make([]float64, len(g))
				for k, x := range g {
					v[k] = float64(x)
				}
				grads[i] = tensor.Must(tensor.FromValues(dev, device.Float32, v, c.Shapes[i]...))
			}
			norm, err := ops.ClipGradNorm(grads, c.MaxNorm).Float64s()
			if err != nil {
				t.Fatal(err)
			}
			near := func(got, want float64) bool {
				return got == want || math.IsNaN(got) && math.IsNaN(want) || math.Abs(got-want) <= 1e-5*math.Abs(want)+1e-30
			}
			if !near(norm[0], float64(c.Norm)) {
				t.Errorf("%s, %s: norm %v; PyTorch's %v", dev.Name(), c.Name, norm[0], c.Norm)
			}
			for i, g := range grads {
				got, err := g.Float64s()
				if err != nil {
					t.Fatal(err)
				}
				for k, w := range c.Clipped[i] {
					if !near(got[k], float64(w)) {
						t.Errorf("%s, %s: gradient %d[%d] = %v; PyTorch's %v", dev.Name(), c.Name, i, k, got[k], w)
						break
					}
				}
				g.Release()
			}
		}
	}
}
