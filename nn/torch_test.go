package nn_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/checkpoint"
	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/internal/torchpy"
	"github.com/extensor/extensor/nn"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/tensor"
)

// TestMultiheadAttentionMatchesComposed checks the layer, whose attention
// runs through the fused kernels, against the same computation written
// out in ops on its parameters: projections, heads, causal softmax(q·kᵀ/√d)·v,
// the output projection.
func TestMultiheadAttentionMatchesComposed(t *testing.T) {
	dev := cpu.New()
	const n, l, e, h = 2, 5, 8, 2
	m, err := nn.MultiheadAttention(dev, device.Float64, e, h, 3)
	if err != nil {
		t.Fatal(err)
	}
	m.Causal = true
	x := tensor.Must(tensor.Uniform(dev, device.Float64, -1, 1, 4, n, l, e))
	got, err := m.Forward(autograd.Leaf(x, false)).Value().Float64s()
	if err != nil {
		t.Fatal(err)
	}

	w, b := m.InProjW.Value(), m.InProjB.Value()
	y := ops.Linear(x, w, b) // [n, l, 3e]
	heads := func(i int) *tensor.Tensor {
		p := ops.Slice(y, -1, i*e, (i+1)*e, 1)
		return ops.Permute(p.Reshape(n, l, h, e/h), 0, 2, 1, 3)
	}
	q, k, v := heads(0), heads(1), heads(2)
	s := ops.MatMul(q, ops.Permute(k, 0, 1, 3, 2))
	above := make([]float64, l*l)
	for i := range l {
		for j := i + 1; j < l; j++ {
			above[i*l+j] = 1
		}
	}
	s = ops.MaskedFill(ops.Mul(s, tensor.Must(tensor.Scalar(dev, device.Float64, 1/math.Sqrt(e/h)))),
		tensor.Must(tensor.FromValues(dev, device.Float64, above, l, l)), math.Inf(-1))
	o := ops.Permute(ops.MatMul(ops.Softmax(s, -1), v), 0, 2, 1, 3).Reshape(n, l, e)
	want, err := ops.Linear(o, m.OutProj.W.Value(), m.OutProj.B.Value()).Float64s()
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12 {
			t.Fatalf("element %d: layer %v, composed %v", i, got[i], want[i])
		}
	}
	if names := (nn.Sequential{m}).ParamNames(); !slices.Equal(names, []string{"0.in_proj_weight", "0.in_proj_bias", "0.out_proj.weight", "0.out_proj.bias"}) {
		t.Errorf("names %v", names)
	}
}

// TestLayersOpenInPyTorch saves an Embedding, a causal MultiheadAttention,
// a causal Transformer layer, a GroupNorm, a Conv1d, a ConvTranspose2d
// (strided, padded, dilated, with output padding) and a BatchNorm2d
// (with the running statistics of three batches) with their outputs, and checks that
// PyTorch's layers of the same names load the state_dicts with
// load_state_dict(strict=True) and give the same outputs in evaluation
// mode (nn/testdata/torch_layers.py). It needs a Python that imports
// torch (Debian's python3-torch), and is skipped without one.
func TestLayersOpenInPyTorch(t *testing.T) {
	python := torchPython(t)
	dev := cpu.New()
	const vocab, n, l, e, h, hidden = 11, 2, 6, 16, 4, 32
	emb, err := nn.Embedding(dev, device.Float32, vocab, e, 1)
	if err != nil {
		t.Fatal(err)
	}
	mha, err := nn.MultiheadAttention(dev, device.Float32, e, h, 2)
	if err != nil {
		t.Fatal(err)
	}
	block, err := nn.Transformer(dev, device.Float32, e, h, hidden, 0.1, 3)
	if err != nil {
		t.Fatal(err)
	}
	gn, err := nn.GroupNorm(dev, device.Float32, 2, 8)
	if err != nil {
		t.Fatal(err)
	}
	// Not the initial weight and bias, which any normalisation matches.
	gn.W = autograd.Leaf(tensor.Must(tensor.Uniform(dev, device.Float32, 0.5, 1.5, 5, 8)), true)
	gn.B = autograd.Leaf(tensor.Must(tensor.Uniform(dev, device.Float32, -1, 1, 6, 8)), true)
	// As testdata/torch_layers.py builds them.
	c1, err := nn.Conv1d(dev, device.Float32, 3, 5, 3, 7)
	if err != nil {
		t.Fatal(err)
	}
	c1.Window = ops.Window{Stride: [2]int{2, 1}, Padding: [2]int{1}, Dilation: [2]int{2, 1}}
	ct, err := nn.ConvTranspose2d(dev, device.Float32, 4, 3, 3, 2, 8)
	if err != nil {
		t.Fatal(err)
	}
	ct.W = autograd.Leaf(tensor.Must(tensor.Uniform(dev, device.Float32, -0.5, 0.5, 9, 4, 3, 3, 3)), true)
	ct.Window.Padding, ct.Window.Dilation, ct.Window.Groups, ct.OutputPadding = [2]int{1, 2}, [2]int{2, 1}, 1, [2]int{1, 0}
	bn, err := nn.BatchNorm(dev, device.Float32, 3)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 { // running statistics of three batches
		bn.Forward(autograd.Leaf(tensor.Must(tensor.Uniform(dev, device.Float32, -1, 2, uint64(20+i), 4, 3, 2, 2)), false))
	}
	mha.Causal, block.SelfAttn.Causal = true, true
	net := nn.Sequential{emb, mha, block, gn, c1, ct, bn}
	net.Train(false)
	idx := tensor.Must(tensor.FromInt32(dev, []int32{0, 3, 10, 3, 7, 1, 2, 2, 9, 4, 5, 6}, n, l))
	x := tensor.Must(tensor.Uniform(dev, device.Float32, -1, 1, 4, n, l, e))
	leaf := func(t *tensor.Tensor) *autograd.Var { return autograd.Leaf(t, false) }
	sizes := tensor.Must(tensor.FromInt32(dev, []int32{vocab, e, h, hidden, 2, 8}, 6))
	gx := tensor.Must(tensor.Uniform(dev, device.Float32, -2, 3, 7, n, 8, 3, 3))
	c1x := tensor.Must(tensor.Uniform(dev, device.Float32, -1, 1, 10, n, 3, 11))
	ctx := tensor.Must(tensor.Uniform(dev, device.Float32, -1, 1, 11, n, 4, 5, 6))
	bnx := tensor.Must(tensor.Uniform(dev, device.Float32, -1, 2, 12, n, 3, 2, 2))
	io := map[string]*tensor.Tensor{"sizes": sizes, "idx": idx, "x": x,
		"emb": emb.Forward(leaf(idx)).Value(), "mha": mha.Forward(leaf(x)).Value(), "block": block.Forward(leaf(x)).Value(),
		"gx": gx, "gn": gn.Forward(leaf(gx)).Value(),
		"c1x": c1x, "c1": c1.Forward(leaf(c1x)).Value(), "ctx": ctx, "ct": ct.Forward(leaf(ctx)).Value(),
		"bnx": bnx, "bn": bn.Forward(leaf(bnx)).Value()}
	params := map[string]*tensor.Tensor{}
	for i, prefix := range []string{"emb.", "mha.", "block.", "gn.", "c1.", "ct."} {
		layer := net[i].(interface {
			nn.Layer
			nn.Namer
		})
		for j, name := range layer.ParamNames() {
			params[prefix+name] = layer.Params()[j].Value()
		}
	}
	for k, v := range (nn.Sequential{bn}).StateDict() { // with the running statistics
		params["bn."+strings.TrimPrefix(k, "0.")] = v
	}
	dir := t.TempDir()
	pf, iof := filepath.Join(dir, "params.safetensors"), filepath.Join(dir, "io.safetensors")
	if err := checkpoint.Save(pf, params, nil); err != nil {
		t.Fatal(err)
	}
	if err := checkpoint.Save(iof, io, nil); err != nil {
		t.Fatal(err)
	}
	var diffs map[string]float64
	runTorch(t, python, "torch_layers.py", &diffs, pf, iof)
	for _, k := range []string{"emb", "mha", "block", "gn", "c1", "ct", "bn"} {
		if d, ok := diffs[k]; !ok || !(d <= 1e-5) {
			t.Errorf("%s: largest difference from PyTorch %v; want ≤ 1e-5", k, d)
		}
	}
	t.Logf("largest differences from PyTorch: %v", diffs)
}

// TestResamplingMatchesPyTorch checks Upsample (nearest; bilinear with and
// without align_corners) and AdaptiveAvgPool2d, up and down by integer
// and fractional factors, against PyTorch's F.interpolate and
// F.adaptive_avg_pool2d (nn/testdata/torch_resample.py). It needs a
// Python that imports torch, and is skipped without one.
func TestResamplingMatchesPyTorch(t *testing.T) {
	python := torchPython(t)
	dev := cpu.New()
	x := tensor.Must(tensor.Uniform(dev, device.Float32, -1, 1, 1, 2, 3, 7, 5))
	type spec struct {
		Size  [2]int `json:"size"`
		Mode  string `json:"mode"`
		Align bool   `json:"align"`
	}
	var cases []spec
	for _, size := range [][2]int{{14, 10}, {21, 15}, {3, 2}, {9, 4}, {1, 1}, {7, 5}, {13, 11}} {
		cases = append(cases, spec{size, "nearest", false}, spec{size, "bilinear", false}, spec{size, "bilinear", true}, spec{size, "adaptive", false})
	}
	io := map[string]*tensor.Tensor{"x": x}
	for i, c := range cases {
		var l nn.Layer = nn.Upsample(c.Size[0], c.Size[1], c.Mode, c.Align)
		if c.Mode == "adaptive" {
			l = nn.AdaptiveAvgPool2d(c.Size[0], c.Size[1])
		}
		io[fmt.Sprintf("out%d", i)] = l.Forward(autograd.Leaf(x, false)).Value()
	}
	f := filepath.Join(t.TempDir(), "io.safetensors")
	if err := checkpoint.Save(f, io, nil); err != nil {
		t.Fatal(err)
	}
	arg, _ := json.Marshal(cases)
	var diffs []float64
	if runTorch(t, python, "torch_resample.py", &diffs, f, string(arg)); len(diffs) != len(cases) {
		t.Fatalf("testdata/torch_resample.py gave %d differences for %d cases", len(diffs), len(cases))
	}
	for i, d := range diffs {
		if !(d <= 1e-6) {
			t.Errorf("%+v: largest difference from PyTorch %v; want ≤ 1e-6", cases[i], d)
		}
	}
}

// torchPython returns a Python that imports torch, skipping t without one.
func torchPython(t *testing.T) string {
	t.Helper()
	python, err := torchpy.Find()
	if err != nil {
		t.Skip(err)
	}
	return python
}

// runTorch runs testdata/script with args under python and decodes the
// JSON it prints into out.
func runTorch(t *testing.T, python, script string, out any, args ...string) {
	t.Helper()
	cmd := exec.Command(python, append([]string{filepath.Join("testdata", script)}, args...)...)
	cmd.Stderr = os.Stderr
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s testdata/%s: %v", python, script, err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("testdata/%s printed %q: %v", script, b, err)
	}
}

// TestClassLossesMatchPyTorch checks cross_entropy and nll with class
// weights, ignore_index and label smoothing, each reduction, against
// PyTorch's F.cross_entropy and F.nll_loss (nn/testdata/torch_losses.py),
// in float64. It needs a Python that imports torch, and is skipped
// without one.
func TestClassLossesMatchPyTorch(t *testing.T) {
	python := torchPython(t)
	dev := cpu.New()
	x := tensor.Must(tensor.Uniform(dev, device.Float64, -3, 3, 1, 6, 4))
	y := tensor.Must(tensor.FromInt32(dev, []int32{0, 3, -100, 1, 1, -100}, 6))
	w := tensor.Must(tensor.Uniform(dev, device.Float64, 0.2, 2, 2, 4))
	type spec struct {
		Loss      string  `json:"loss"`
		Reduction string  `json:"reduction"`
		Weight    bool    `json:"weight"`
		Smoothing float64 `json:"smoothing"`
	}
	var cases []spec
	io := map[string]*tensor.Tensor{"x": x, "y": y, "w": w}
	for _, r := range []ops.Reduction{ops.MeanReduction, ops.SumReduction, ops.NoReduction} {
		for _, weight := range []bool{false, true} {
			for _, eps := range []float64{0, 0.2} {
				a := ops.CrossEntropyAttrs{Reduction: r, Ignore: true, IgnoreIndex: -100, LabelSmoothing: eps}
				var wt *tensor.Tensor
				if weight {
					wt = w
				}
				io[fmt.Sprintf("out%d", len(cases))] = ops.CrossEntropyLossWith(x, y, wt, a)
				cases = append(cases, spec{"ce", r.String(), weight, eps})
				if eps == 0 {
					io[fmt.Sprintf("out%d", len(cases))] = ops.NLLLossWith(ops.LogSoftmax(x, 1), y, wt, a)
					cases = append(cases, spec{"nll", r.String(), weight, 0})
				}
			}
		}
	}
	f := filepath.Join(t.TempDir(), "io.safetensors")
	if err := checkpoint.Save(f, io, nil); err != nil {
		t.Fatal(err)
	}
	arg, _ := json.Marshal(cases)
	var diffs []float64
	if runTorch(t, python, "torch_losses.py", &diffs, f, string(arg)); len(diffs) != len(cases) {
		t.Fatalf("testdata/torch_losses.py gave %d differences for %d cases", len(diffs), len(cases))
	}
	for i, d := range diffs {
		if !(d <= 1e-12) {
			t.Errorf("%+v: largest difference from PyTorch %v; want ≤ 1e-12", cases[i], d)
		}
	}
}
