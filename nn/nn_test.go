package nn_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/checkpoint"
	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/nn"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/tensor"
)

func TestInitAndShapes(t *testing.T) {
	dev := cpu.New()
	c, err := nn.Conv2d(dev, device.Float32, 2, 4, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	l, err := nn.Linear(dev, device.Float32, 36, 5, 2)
	if err != nil {
		t.Fatal(err)
	}
	model := nn.Sequential{c, nn.Relu, nn.MaxPool2d(2), nn.Flatten, l}
	if n := len(model.Params()); n != 4 {
		t.Fatalf("%d parameters; want 4", n)
	}
	// PyTorch's default init: within ±1/√fan_in.
	for _, p := range []struct {
		v   *autograd.Var
		fan int
	}{{c.W, 18}, {c.B, 18}, {l.W, 36}, {l.B, 36}} {
		vals, err := p.v.Value().Float64s()
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range vals {
			if math.Abs(x) > 1/math.Sqrt(float64(p.fan)) {
				t.Fatalf("initial value %v outside ±1/√%d", x, p.fan)
			}
		}
	}
	x := autograd.Leaf(tensor.Must(tensor.Uniform(dev, device.Float32, -1, 1, 3, 2, 2, 8, 8)), false)
	if s := model.Forward(x).Value().Shape(); len(s) != 2 || s[0] != 2 || s[1] != 5 {
		t.Errorf("output shape %v; want [2 5]", s)
	}
}

func TestDropout(t *testing.T) {
	dev := cpu.New()
	d := nn.Dropout(0.5, 1)
	x := autograd.Leaf(tensor.Must(tensor.Ones(dev, device.Float64, 1000)), true)
	y, err := d.Forward(x).Value().Float64s()
	if err != nil {
		t.Fatal(err)
	}
	zeros := 0
	for _, v := range y {
		switch v {
		case 0:
			zeros++
		case 2:
		default:
			t.Fatalf("a kept element is %v; want 1/(1−p) = 2", v)
		}
	}
	if zeros < 400 || zeros > 600 {
		t.Errorf("%d of 1000 dropped at p = 0.5", zeros)
	}
	nn.Sequential{d}.Train(false)
	if d.Forward(x) != x {
		t.Errorf("dropout in evaluation mode is not the identity")
	}
}

func TestStateDict(t *testing.T) {
	dev := cpu.New()
	l, err := nn.Linear(dev, device.Float32, 3, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	s := nn.Sequential{nn.Relu, l}
	d := s.StateDict()
	if len(d) != 2 || d["1.weight"] != l.W.Value() || d["1.bias"] != l.B.Value() {
		t.Errorf("state dict %v; want 1.weight and 1.bias", d)
	}
}

// TestSequentialReluMaxPool checks that Sequential's exchange of a ReLU
// and the max pooling after it changes nothing: values and gradients
// bit for bit as in the order written, with ties, zeros, negative
// windows and NaN.
func TestSequentialReluMaxPool(t *testing.T) {
	dev := cpu.New()
	vals := []float64{-2, -1, 0, 1, 2, 2, -0.5, 0, 3, math.NaN()}
	x := make([]float64, 2*3*6*6)
	g := make([]float64, 2*3*3*3)
	for i := range x {
		x[i] = vals[(i*7+i/5)%len(vals)]
	}
	for i := range g {
		g[i] = float64(i%5) - 1.5
	}
	run := func(f func(*autograd.Var) *autograd.Var) (y, gx []float64) {
		in := autograd.Leaf(tensor.Must(tensor.FromValues(dev, device.Float64, x, 2, 3, 6, 6)), true)
		out := f(in)
		if err := out.BackwardWith(tensor.Must(tensor.FromValues(dev, device.Float64, g, 2, 3, 3, 3)), true); err != nil {
			t.Fatal(err)
		}
		y, err := out.Value().Float64s()
		if err != nil {
			t.Fatal(err)
		}
		gx, err = in.Grad().Float64s()
		if err != nil {
			t.Fatal(err)
		}
		return y, gx
	}
	pool := nn.MaxPool2d(2)
	wantY, wantG := run(func(v *autograd.Var) *autograd.Var { return ops.MaxPool2d(ops.Relu(v), pool.Win) })
	gotY, gotG := run(nn.Sequential{nn.Relu, pool}.Forward)
	same := func(what string, got, want []float64) {
		for i := range want {
			if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
				t.Fatalf("%s[%d] = %v; want %v (ReLU before the pooling)", what, i, got[i], want[i])
			}
		}
	}
	same("output", gotY, wantY)
	// Where ReLU runs first, its gradient is NaN at every NaN input; run
	// after the pooling, at the NaNs the pooling picks, and 0 (as
	// PyTorch's ReLU gives it) at those it does not.
	for i := range wantG {
		if math.IsNaN(x[i]) && !math.IsNaN(gotG[i]) {
			if gotG[i] != 0 {
				t.Fatalf("gradient[%d] = %v at an unpicked NaN; want 0", i, gotG[i])
			}
			wantG[i] = 0
		}
	}
	same("gradient", gotG, wantG)
	nans := 0
	for _, v := range wantY {
		if math.IsNaN(v) {
			nans++
		}
	}
	if nans == 0 || nans == len(wantY) {
		t.Fatalf("%d of %d pooled values NaN; the test wants some", nans, len(wantY))
	}
}

// TestNormLayers checks LayerNorm and RMSNorm in a Sequential: PyTorch's
// state_dict names, a normalised output (zero mean and unit variance per
// row for LayerNorm, unit mean square for RMSNorm, at their initial
// affine transform), and gradients for their parameters.
func TestNormLayers(t *testing.T) {
	dev := cpu.New()
	ln, err := nn.LayerNorm(dev, device.Float32, 6)
	if err != nil {
		t.Fatal(err)
	}
	rms, err := nn.RMSNorm(dev, device.Float32, 6)
	if err != nil {
		t.Fatal(err)
	}
	model := nn.Sequential{ln, nn.SiLU, rms}
	names := model.ParamNames()
	if want := []string{"0.weight", "0.bias", "2.weight"}; len(names) != len(want) || names[0] != want[0] || names[1] != want[1] || names[2] != want[2] {
		t.Fatalf("ParamNames() = %v; want %v", names, want)
	}
	x := autograd.Leaf(tensor.Must(tensor.Uniform(dev, device.Float32, -3, 3, 7, 4, 6)), false)
	for _, tt := range []struct {
		name   string
		layer  nn.Layer
		center bool
	}{{"LayerNorm", ln, true}, {"RMSNorm", rms, false}} {
		y, err := tt.layer.Forward(x).Value().Float64s()
		if err != nil {
			t.Fatal(err)
		}
		for r := range 4 {
			row := y[r*6 : r*6+6]
			var mean, sq float64
			for _, v := range row {
				mean += v / 6
				sq += v * v / 6
			}
			wantMean := mean
			if tt.center {
				wantMean = 0
			}
			if math.Abs(mean-wantMean) > 1e-5 || math.Abs(sq-mean*mean*b2f(tt.center)-1) > 1e-3 {
				t.Errorf("%s row %d: mean %v, mean square %v; want a normalised row", tt.name, r, mean, sq)
			}
		}
	}
	loss := ops.Sum(ops.Mul(model.Forward(x), model.Forward(x)))
	if err := loss.Backward(); err != nil {
		t.Fatal(err)
	}
	for i, p := range model.Params() {
		if p.Grad() == nil {
			t.Errorf("parameter %s has no gradient", names[i])
		}
	}
}

// b2f is 1 for true.
func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// TestBatchNorm checks BatchNorm against PyTorch's rules: in training the
// output is normalised per channel with the batch's statistics and the
// running ones move by the momentum (the variance unbiased); in
// evaluation the running ones normalise; state_dict names.
func TestBatchNorm(t *testing.T) {
	dev := cpu.New()
	bn, err := nn.BatchNorm(dev, device.Float64, 3)
	if err != nil {
		t.Fatal(err)
	}
	model := nn.Sequential{bn}
	const n, c, hw = 4, 3, 5
	xt := tensor.Must(tensor.Uniform(dev, device.Float64, -2, 3, 9, n, c, hw))
	xs, _ := xt.Float64s()
	x := autograd.Leaf(xt, true)
	y, err := model.Forward(x).Value().Float64s()
	if err != nil {
		t.Fatal(err)
	}
	rm, _ := bn.RunningMean.Float64s()
	rv, _ := bn.RunningVar.Float64s()
	for ch := range c {
		var vals, outs []float64
		for i := range n {
			for j := range hw {
				k := (i*c+ch)*hw + j
				vals, outs = append(vals, xs[k]), append(outs, y[k])
			}
		}
		mean, variance := meanVar(vals)
		om, ov := meanVar(outs)
		if math.Abs(om) > 1e-9 || math.Abs(ov-variance/(variance+1e-5)) > 1e-9 {
			t.Errorf("channel %d: output mean %v, variance %v; want 0 and var/(var+eps)", ch, om, ov)
		}
		m := float64(len(vals))
		if math.Abs(rm[ch]-0.1*mean) > 1e-12 || math.Abs(rv[ch]-(0.9+0.1*variance*m/(m-1))) > 1e-12 {
			t.Errorf("channel %d: running mean %v, var %v; want %v, %v", ch, rm[ch], rv[ch], 0.1*mean, 0.9+0.1*variance*m/(m-1))
		}
	}
	model.Train(false)
	ye, err := model.Forward(x).Value().Float64s()
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range xs {
		ch := k / hw % c
		if want := (v - rm[ch]) / math.Sqrt(rv[ch]+1e-5); math.Abs(ye[k]-want) > 1e-12 {
			t.Fatalf("evaluation [%d] = %v; want %v", k, ye[k], want)
		}
	}
	loss := ops.Sum(ops.Mul(model.Forward(x), model.Forward(x)))
	if err := loss.Backward(); err != nil {
		t.Fatal(err)
	}
	if bn.W.Grad() == nil || bn.B.Grad() == nil || x.Grad() == nil {
		t.Error("evaluation: no gradient for W, B or x")
	}
	sd := model.StateDict()
	for _, k := range []string{"0.weight", "0.bias", "0.running_mean", "0.running_var"} {
		if sd[k] == nil {
			t.Errorf("StateDict has no %q", k)
		}
	}
	if bn.NumBatchesTracked != 1 {
		t.Errorf("NumBatchesTracked = %d; want 1", bn.NumBatchesTracked)
	}
}

// meanVar returns the mean and the biased variance of v.
func meanVar(v []float64) (mean, variance float64) {
	for _, x := range v {
		mean += x / float64(len(v))
	}
	for _, x := range v {
		variance += (x - mean) * (x - mean) / float64(len(v))
	}
	return mean, variance
}

func TestResidual(t *testing.T) {
	dev := cpu.New()
	l, err := nn.Linear(dev, device.Float64, 3, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	r := nn.Residual(nn.Sequential{l, nn.Relu})
	x := autograd.Leaf(tensor.Must(tensor.Uniform(dev, device.Float64, -1, 1, 2, 4, 3)), false)
	got, _ := r.Forward(x).Value().Float64s()
	lin, _ := nn.Sequential{l, nn.Relu}.Forward(x).Value().Float64s()
	xs, _ := x.Value().Float64s()
	for i := range got {
		if got[i] != xs[i]+lin[i] {
			t.Fatalf("element %d: %v; want x + layer(x) = %v", i, got[i], xs[i]+lin[i])
		}
	}
	if names := (nn.Sequential{r}).ParamNames(); len(names) != 2 || names[0] != "0.layer.0.weight" || names[1] != "0.layer.0.bias" {
		t.Errorf("names %v; want [0.layer.0.weight 0.layer.0.bias]", names)
	}
}

// TestBadLayerArguments: arguments PyTorch refuses are typed errors.
func TestBadLayerArguments(t *testing.T) {
	dev := cpu.New()
	bn, err := nn.BatchNorm(dev, device.Float32, 3)
	if err != nil {
		t.Fatal(err)
	}
	one := autograd.Leaf(tensor.Must(tensor.Uniform(dev, device.Float32, -1, 1, 1, 1, 3)), false)
	if err := tensor.Maybe(func() { bn.Forward(one) }); !errors.Is(err, tensor.ErrShape) {
		t.Errorf("BatchNorm in training on one value per channel: %v; want ErrShape", err)
	}
	bn.Training, bn.Eps = false, -1
	if err := tensor.Maybe(func() { bn.Forward(one) }); !errors.Is(err, tensor.ErrArgument) {
		t.Errorf("BatchNorm in evaluation with eps -1: %v; want ErrArgument", err)
	}
	mha, err := nn.MultiheadAttention(dev, device.Float32, 8, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	mha.Heads = 0
	x := autograd.Leaf(tensor.Must(tensor.Uniform(dev, device.Float32, -1, 1, 1, 1, 2, 8)), false)
	if err := tensor.Maybe(func() { mha.Forward(x) }); !errors.Is(err, tensor.ErrArgument) {
		t.Errorf("MultiheadAttention with 0 heads: %v; want ErrArgument", err)
	}
}

// safetensors writes a safetensors file of the tensors (name, dtype,
// shape, little-endian bytes), in order, as PyTorch's writer lays it out.
func safetensors(t *testing.T, path string, tensors ...struct {
	name, dtype string
	shape       []int
	data        []byte
}) {
	t.Helper()
	var hdr, data []byte
	hdr = append(hdr, '{')
	for i, x := range tensors {
		if i > 0 {
			hdr = append(hdr, ',')
		}
		hdr = fmt.Appendf(hdr, `%q:{"dtype":%q,"shape":%s,"data_offsets":[%d,%d]}`, x.name, x.dtype, strings.ReplaceAll(fmt.Sprint(x.shape), " ", ","), len(data), len(data)+len(x.data))
		data = append(data, x.data...)
	}
	hdr = append(hdr, '}')
	for len(hdr)%8 != 0 {
		hdr = append(hdr, ' ')
	}
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(hdr)))
	if err := os.WriteFile(path, append(append(b, hdr...), data...), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestLoadPyTorchStateDict loads a state_dict as PyTorch writes it: a
// BatchNorm's num_batches_tracked an I64 0-D tensor, a Linear's weights
// in BF16, into a float32 model; an I64 past int32 is an error naming
// the tensor, and copies nothing.
func TestLoadPyTorchStateDict(t *testing.T) {
	dev := cpu.New()
	bn, err := nn.BatchNorm(dev, device.Float32, 3)
	if err != nil {
		t.Fatal(err)
	}
	lin, err := nn.Linear(dev, device.Float32, 3, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	model := nn.Sequential{bn, lin}
	f32 := func(v ...float32) []byte {
		var b []byte
		for _, x := range v {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
		}
		return b
	}
	bf16 := func(v ...float32) []byte { // exact in bfloat16
		var b []byte
		for _, x := range v {
			b = binary.LittleEndian.AppendUint16(b, uint16(math.Float32bits(x)>>16))
		}
		return b
	}
	type entry = struct {
		name, dtype string
		shape       []int
		data        []byte
	}
	file := func(count int64) string {
		path := filepath.Join(t.TempDir(), "model.safetensors")
		safetensors(t, path,
			entry{"0.weight", "F32", []int{3}, f32(1.5, 2, -1)},
			entry{"0.bias", "F32", []int{3}, f32(0.25, 0, 3)},
			entry{"0.running_mean", "F32", []int{3}, f32(0.5, -0.5, 2)},
			entry{"0.running_var", "F32", []int{3}, f32(4, 1, 0.25)},
			entry{"0.num_batches_tracked", "I64", []int{}, binary.LittleEndian.AppendUint64(nil, uint64(count))},
			entry{"1.weight", "BF16", []int{2, 3}, bf16(1, -2, 0.5, 3, 0.125, -8)},
			entry{"1.bias", "BF16", []int{2}, bf16(-1, 2)})
		return path
	}
	f, err := checkpoint.Read(file(1 << 40))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.LoadInto(model.StateDict()); err == nil || !strings.Contains(err.Error(), `"0.num_batches_tracked"`) || !strings.Contains(err.Error(), "outside int32") {
		t.Errorf("LoadInto of a count of 2⁴⁰: %v; want an error naming num_batches_tracked", err)
	}
	if v, _ := bn.RunningVar.Float64s(); v[0] != 1 {
		t.Errorf("a failed LoadInto copied running_var %v", v)
	}
	if f, err = checkpoint.Read(file(7)); err != nil {
		t.Fatal(err)
	}
	sd := model.StateDict()
	if err := f.LoadInto(sd); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		want []float64
	}{
		{"0.weight", []float64{1.5, 2, -1}}, {"0.running_var", []float64{4, 1, 0.25}}, {"0.num_batches_tracked", []float64{7}},
		{"1.weight", []float64{1, -2, 0.5, 3, 0.125, -8}}, {"1.bias", []float64{-1, 2}},
	} {
		if v, err := sd[c.name].Float64s(); err != nil || !slices.Equal(v, c.want) {
			t.Errorf("%s: %v, %v; want %v", c.name, v, err, c.want)
		}
	}
}
