package parity_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/internal/gputest"
	"github.com/extensor/extensor/nn"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/parity"
	"github.com/extensor/extensor/tensor"
)

// layerCase is one layer of package nn, as the layer coverage table
// checks it.
type layerCase struct {
	name  string // the layer, by PyTorch's class name and the input
	torch string // where it is compared with PyTorch ("" nowhere)
	in    []int  // the input's shape
	ints  int    // > 0: the input is int32 indices in [0, ints)
	build func(dev device.Device, dt device.DType) (nn.Layer, error)
}

// The tests that compare layers with PyTorch (with an importable torch).
const (
	torchLayers   = "nn TestLayersOpenInPyTorch"
	torchResample = "nn TestResamplingMatchesPyTorch"
	torchCNN      = "examples/cnn TestCheckpointOpensInPyTorch"
)

// fixed wraps a layer without parameters.
func fixed(l nn.Layer) func(device.Device, device.DType) (nn.Layer, error) {
	return func(device.Device, device.DType) (nn.Layer, error) { return l, nil }
}

// layerCases are the layers of package nn, each with a small input.
func layerCases() []layerCase {
	return []layerCase{
		{"Linear (4,5)→3", torchCNN, []int{4, 5}, 0, func(d device.Device, dt device.DType) (nn.Layer, error) { return nn.Linear(d, dt, 5, 3, 1) }},
		{"Conv1d 3→5, k 3, stride 2, padding 1, dilation 2", torchLayers, []int{2, 3, 11}, 0, func(d device.Device, dt device.DType) (nn.Layer, error) {
			l, err := nn.Conv1d(d, dt, 3, 5, 3, 7)
			if err == nil {
				l.Window = ops.Window{Stride: [2]int{2, 1}, Padding: [2]int{1}, Dilation: [2]int{2, 1}}
			}
			return l, err
		}},
		{"Conv2d 3→4, k 3", torchCNN, []int{2, 3, 6, 6}, 0, func(d device.Device, dt device.DType) (nn.Layer, error) { return nn.Conv2d(d, dt, 3, 4, 3, 2) }},
		{"ConvTranspose2d 4→3, k 3, stride 2, output padding 1", torchLayers, []int{2, 4, 5, 6}, 0, func(d device.Device, dt device.DType) (nn.Layer, error) {
			l, err := nn.ConvTranspose2d(d, dt, 4, 3, 3, 2, 8)
			if err == nil {
				l.OutputPadding = [2]int{1, 1}
			}
			return l, err
		}},
		{"MaxPool2d 2", torchCNN, []int{2, 3, 6, 6}, 0, fixed(nn.MaxPool2d(2))},
		{"AvgPool2d 2", "", []int{2, 3, 6, 6}, 0, fixed(nn.AvgPool2d(2))},
		{"AdaptiveAvgPool2d (3,2)", torchResample, []int{2, 3, 7, 5}, 0, fixed(nn.AdaptiveAvgPool2d(3, 2))},
		{"Upsample nearest (9,7)", torchResample, []int{2, 3, 4, 3}, 0, fixed(nn.Upsample(9, 7, "nearest", false))},
		{"Upsample bilinear (9,7)", torchResample, []int{2, 3, 4, 3}, 0, fixed(nn.Upsample(9, 7, "bilinear", false))},
		{"Upsample bilinear (9,7), align_corners", torchResample, []int{2, 3, 4, 3}, 0, fixed(nn.Upsample(9, 7, "bilinear", true))},
		{"Flatten", torchCNN, []int{2, 3, 2, 2}, 0, fixed(nn.Flatten)},
		{"Dropout 0.3 (training)", "", []int{4, 33}, 0, func(device.Device, device.DType) (nn.Layer, error) { return nn.Dropout(0.3, 5), nil }},
		{"BatchNorm1d (6,3) (training)", "", []int{6, 3}, 0, func(d device.Device, dt device.DType) (nn.Layer, error) { return nn.BatchNorm(d, dt, 3) }},
		{"BatchNorm1d (4,3,5) (training)", "", []int{4, 3, 5}, 0, func(d device.Device, dt device.DType) (nn.Layer, error) { return nn.BatchNorm(d, dt, 3) }},
		{"BatchNorm2d (training)", "", []int{4, 3, 3, 3}, 0, func(d device.Device, dt device.DType) (nn.Layer, error) { return nn.BatchNorm(d, dt, 3) }},
		{"BatchNorm2d (evaluation)", torchLayers, []int{4, 3, 3, 3}, 0, func(d device.Device, dt device.DType) (nn.Layer, error) {
			l, err := nn.BatchNorm(d, dt, 3)
			if err == nil {
				x := tensor.Must(tensor.Uniform(d, dt, -1, 2, 20, 4, 3, 3, 3))
				l.Forward(autograd.Leaf(x, false)).Release() // running statistics of a batch
				x.Release()
				l.Training = false
			}
			return l, err
		}},
		{"LayerNorm (5)", torchLayers + " (in the encoder layer)", []int{2, 3, 5}, 0, func(d device.Device, dt device.DType) (nn.Layer, error) { return nn.LayerNorm(d, dt, 5) }},
		{"LayerNorm (3,5)", "", []int{2, 3, 5}, 0, func(d device.Device, dt device.DType) (nn.Layer, error) { return nn.LayerNorm(d, dt, 3, 5) }},
		{"GroupNorm 2 groups of 4 channels", torchLayers, []int{2, 4, 3, 3}, 0, func(d device.Device, dt device.DType) (nn.Layer, error) { return nn.GroupNorm(d, dt, 2, 4) }},
		{"RMSNorm (5)", "", []int{2, 3, 5}, 0, func(d device.Device, dt device.DType) (nn.Layer, error) { return nn.RMSNorm(d, dt, 5) }},
		{"Embedding 11×6", torchLayers, []int{2, 5}, 11, func(d device.Device, dt device.DType) (nn.Layer, error) { return nn.Embedding(d, dt, 11, 6, 1) }},
		{"MultiheadAttention 16, 4 heads, causal", torchLayers, []int{2, 6, 16}, 0, func(d device.Device, dt device.DType) (nn.Layer, error) {
			l, err := nn.MultiheadAttention(d, dt, 16, 4, 2)
			if err == nil {
				l.Causal = true
			}
			return l, err
		}},
		{"MultiheadAttention 16, 4 heads, dropout 0.2 (training)", "", []int{2, 6, 16}, 0, func(d device.Device, dt device.DType) (nn.Layer, error) {
			l, err := nn.MultiheadAttention(d, dt, 16, 4, 2)
			if err == nil {
				l.Dropout, l.Seed = 0.2, 9
			}
			return l, err
		}},
		{"TransformerEncoderLayer (pre-norm) 16, 4 heads, 32 hidden, causal", torchLayers, []int{2, 6, 16}, 0, func(d device.Device, dt device.DType) (nn.Layer, error) {
			l, err := nn.Transformer(d, dt, 16, 4, 32, 0, 3)
			if err == nil {
				l.SelfAttn.Causal = true
			}
			return l, err
		}},
		{"ReLU", torchCNN, []int{3, 7}, 0, fixed(nn.Relu)},
		{"Tanh", "", []int{3, 7}, 0, fixed(nn.Tanh)},
		{"Sigmoid", "", []int{3, 7}, 0, fixed(nn.Sigmoid)},
		{"GELU", torchLayers + " (in the encoder layer)", []int{3, 7}, 0, fixed(nn.Gelu)},
		{"SiLU", "", []int{3, 7}, 0, fixed(nn.SiLU)},
		{"Residual of a Linear", "", []int{4, 5}, 0, func(d device.Device, dt device.DType) (nn.Layer, error) {
			l, err := nn.Linear(d, dt, 5, 5, 4)
			return nn.Residual(l), err
		}},
		{"Sequential Linear, ReLU, Linear", "", []int{4, 5}, 0, func(d device.Device, dt device.DType) (nn.Layer, error) {
			a, err1 := nn.Linear(d, dt, 5, 8, 5)
			b, err2 := nn.Linear(d, dt, 8, 2, 6)
			if err1 != nil || err2 != nil {
				return nil, fmt.Errorf("%v, %v", err1, err2)
			}
			return nn.Sequential{a, nn.Relu, b}, nil
		}},
	}
}

// layerRun is a layer's output and gradients (its input's unless int32,
// then its parameters') for an upstream gradient drawn from a seed.
type layerRun struct {
	out   []float64
	grads [][]float64
}

// runLayer builds c's layer on dev in dt, applies it to its input in
// training mode (unless the case sets evaluation) and backpropagates
// Σ out·g.
func runLayer(c layerCase, dev device.Device, dt device.DType) (r layerRun, err error) {
	err = tensor.Maybe(func() {
		l, err := c.build(dev, dt)
		if err != nil {
			panic(err)
		}
		var x *tensor.Tensor
		if c.ints > 0 {
			idx := make([]int32, device.Numel(c.in))
			for i := range idx {
				idx[i] = int32((7*i + 3) % c.ints)
			}
			x = tensor.Must(tensor.FromInt32(dev, idx, c.in...))
		} else {
			x = tensor.Must(tensor.Uniform(dev, dt, -1, 1, 7, c.in...))
		}
		xv := autograd.Leaf(x, c.ints == 0)
		y := l.Forward(xv)
		g := tensor.Must(tensor.Uniform(dev, dt, -1, 1, 11, y.Value().Shape()...))
		if r.out, err = y.Value().Float64s(); err != nil { // before Backward frees it
			panic(err)
		}
		loss := ops.Sum(ops.Mul(y, autograd.Leaf(g, false)))
		if err := loss.Backward(); err != nil {
			panic(err)
		}
		vars := l.Params()
		if c.ints == 0 {
			vars = append([]*autograd.Var{xv}, vars...)
		}
		for _, v := range vars {
			gr, err := v.Grad().Float64s()
			if err != nil {
				panic(err)
			}
			r.grads = append(r.grads, gr)
		}
	})
	return r, err
}

// layerTable is the generated layer coverage table.
var layerTable strings.Builder

// TestLayers runs every layer of layerCases forward and backward in
// float32 on the CPU and on WebGPU, each against the CPU in float64 (the
// parity suite's tolerances), and builds the layer coverage table that
// TestMain checks in docs/coverage.md.
func TestLayers(t *testing.T) {
	gpu := gputest.OrNil(t)
	host := cpu.New()
	status := func(ok bool) string {
		if ok {
			return parity.Pass.String()
		}
		return parity.Fail.String()
	}
	layerTable.Reset()
	cases := layerCases()
	fmt.Fprintf(&layerTable, "%d layers.\n\n| layer | cpu fwd | cpu bwd | webgpu fwd | webgpu bwd | compared with PyTorch in |\n|---|---|---|---|---|---|\n", len(cases))
	for _, c := range cases {
		row := []string{c.name, parity.NotRun.String(), parity.NotRun.String(), parity.NotRun.String(), parity.NotRun.String(), "—"}
		if c.torch != "" {
			row[5] = c.torch
		}
		t.Run(c.name, func(t *testing.T) {
			want, err := runLayer(c, host, device.Float64)
			if err != nil {
				t.Fatalf("cpu float64: %v", err)
			}
			for i, dev := range []device.Device{host, gpu} {
				if dev == nil {
					continue
				}
				got, err := runLayer(c, dev, device.Float32)
				if err != nil {
					t.Errorf("%s float32: %v", dev.Name(), err)
					row[1+2*i], row[2+2*i] = status(false), status(false)
					continue
				}
				fwd := parity.Close(t, dev.Name()+" forward", got.out, want.out, parity.RTol, parity.ATol)
				bwd := len(got.grads) == len(want.grads)
				for k := range min(len(got.grads), len(want.grads)) {
					bwd = parity.Close(t, fmt.Sprintf("%s gradient %d", dev.Name(), k), got.grads[k], want.grads[k], parity.RTol, parity.ATol) && bwd
				}
				row[1+2*i], row[2+2*i] = status(fwd), status(bwd)
			}
		})
		fmt.Fprintf(&layerTable, "| %s |\n", strings.Join(row, " | "))
	}
}
