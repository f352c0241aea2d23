package gpt2_test

import (
	_ "embed"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/hf"
	"github.com/extensor/extensor/internal/gputest"
	"github.com/extensor/extensor/models/gpt2"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/optim"
	"github.com/extensor/extensor/tensor"
)

// reference is testdata/reference.py's output: a tiny GPT-2's logits in
// float64, from transformers' forward written out in PyTorch.
//
//go:embed testdata/reference.json
var reference []byte

// tiny returns testdata/tiny's model on dev in float32, released when t
// ends.
func tiny(t *testing.T, dev device.Device) *gpt2.Model {
	t.Helper()
	mdl, err := hf.Open("testdata/tiny")
	if err != nil {
		t.Fatal(err)
	}
	m, err := gpt2.Load(mdl, dev, device.Float32)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Release)
	return m
}

// TestMatchesPyTorch loads testdata/tiny (GPT2LMHeadModel's names, with
// the causal-mask buffers of older checkpoints) and compares its logits
// on both backends with PyTorch's.
func TestMatchesPyTorch(t *testing.T) {
	var ref struct {
		IDs    [][]int32 `json:"ids"`
		Logits []float64 `json:"logits"`
		Shape  []int     `json:"shape"`
	}
	if err := json.Unmarshal(reference, &ref); err != nil {
		t.Fatal(err)
	}
	for _, dev := range []device.Device{cpu.New(), gputest.OrNil(t)} {
		if dev == nil {
			continue
		}
		t.Run(dev.String(), func(t *testing.T) {
			m := tiny(t, dev)
			var flat []int32
			for _, row := range ref.IDs {
				flat = append(flat, row...)
			}
			ids := tensor.Must(tensor.FromInt32(dev, flat, len(ref.IDs), len(ref.IDs[0])))
			defer ids.Release()
			y := m.Forward(autograd.Leaf(ids, false))
			got, err := y.Value().Float64s()
			if err != nil {
				t.Fatal(err)
			}
			if s := y.Value().Shape(); len(s) != 3 || s[0] != ref.Shape[0] || s[1] != ref.Shape[1] || s[2] != ref.Shape[2] {
				t.Fatalf("logits of shape %v; want %v", s, ref.Shape)
			}
			worst := 0.0
			for i, w := range ref.Logits {
				d := math.Abs(got[i]-w) / (1e-4 + math.Abs(w))
				worst = max(worst, d)
				if math.Abs(got[i]-w) > 1e-4+1e-4*math.Abs(w) {
					t.Fatalf("logit %d: %v; PyTorch %v", i, got[i], w)
				}
			}
			t.Logf("largest relative difference from PyTorch: %.2g", worst)
		})
	}
}

// TestLoadRefuses names what does not fit: another architecture, a
// configuration GPT-2 cannot run, a weight of another shape, ids longer
// than the positions.
func TestLoadRefuses(t *testing.T) {
	dev := cpu.New()
	copyTiny := func(t *testing.T, edit func(cfg map[string]any)) string {
		dir := t.TempDir()
		for _, f := range []string{"config.json", "model.safetensors"} {
			b, err := os.ReadFile(filepath.Join("testdata/tiny", f))
			if err != nil {
				t.Fatal(err)
			}
			if f == "config.json" {
				var cfg map[string]any
				json.Unmarshal(b, &cfg)
				edit(cfg)
				b, _ = json.Marshal(cfg)
			}
			os.WriteFile(filepath.Join(dir, f), b, 0o644)
		}
		return dir
	}
	for _, tt := range []struct {
		name string
		edit func(cfg map[string]any)
		says string
	}{
		{"llama", func(c map[string]any) { c["model_type"] = "llama" }, `model_type "llama"; want gpt2`},
		{"relu", func(c map[string]any) { c["activation_function"] = "relu" }, `activation_function "relu"`},
		{"heads", func(c map[string]any) { c["n_head"] = 3 }, "n_embd 16 in 3 heads"},
		{"untied", func(c map[string]any) { c["tie_word_embeddings"] = false }, "tie_word_embeddings false"},
		{"wider", func(c map[string]any) { c["n_embd"] = 32 }, "mismatches with the model"},
		{"huge vocabulary", func(c map[string]any) { c["vocab_size"] = 1 << 40 }, "a parameter [1099511627776 16]"},
	} {
		mdl, err := hf.Open(copyTiny(t, tt.edit))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := gpt2.Load(mdl, dev, device.Float32); err == nil || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("%s: Load: %v; want an error saying %s", tt.name, err, tt.says)
		}
	}
	m := tiny(t, dev)
	long := tensor.Must(tensor.Zeros(dev, device.Int32, 1, 17))
	if err := tensor.Maybe(func() { m.Forward(autograd.Leaf(long, false)) }); !errors.Is(err, tensor.ErrShape) || !strings.Contains(err.Error(), "at most 16 tokens") {
		t.Errorf("Forward of 17 tokens: %v; want ErrShape", err)
	}
}

// TestFineTune takes AdamW steps on the tiny model's next-token loss over
// the reference's ids, on both backends: the loss falls, and the two
// backends' losses agree step by step.
func TestFineTune(t *testing.T) {
	var ref struct {
		IDs [][]int32 `json:"ids"`
	}
	if err := json.Unmarshal(reference, &ref); err != nil {
		t.Fatal(err)
	}
	var losses [][]float64
	for _, dev := range []device.Device{cpu.New(), gputest.OrNil(t)} {
		if dev == nil {
			continue
		}
		m := tiny(t, dev)
		var x, y []int32
		for _, row := range ref.IDs {
			x, y = append(x, row[:len(row)-1]...), append(y, row[1:]...)
		}
		n, l := len(ref.IDs), len(ref.IDs[0])-1
		xs := autograd.Leaf(tensor.Must(tensor.FromInt32(dev, x, n, l)), false)
		ys := autograd.Leaf(tensor.Must(tensor.FromInt32(dev, y, n*l)), false)
		opt := optim.AdamW(m.Params(), 1e-2, 0.01)
		defer opt.Release()
		var run []float64
		for range 5 {
			opt.ZeroGrad()
			logits := m.Forward(xs)
			loss := ops.CrossEntropyLoss(ops.Reshape(logits, n*l, m.Cfg.VocabSize), ys, ops.MeanReduction)
			v, err := loss.Value().Float64s()
			if err != nil {
				t.Fatal(err)
			}
			run = append(run, v[0])
			if err := loss.Backward(); err != nil {
				t.Fatal(err)
			}
			opt.Step()
		}
		if !(run[4] < run[0]) {
			t.Errorf("%v: losses %v; want them to fall", dev, run)
		}
		losses = append(losses, run)
	}
	if len(losses) == 2 {
		for i := range losses[0] {
			if d := math.Abs(losses[0][i] - losses[1][i]); d > 1e-4*(1+losses[0][i]) {
				t.Errorf("step %d: cpu loss %v, webgpu %v", i, losses[0][i], losses[1][i])
			}
		}
	}
	t.Logf("losses: %v", losses)
}

// TestGreedy decodes greedily past the 16 positions on both backends and
// gets PyTorch's tokens (reference.py keeps each step's top two logits
// apart), streaming each as drawn; bad arguments are errors.
func TestGreedy(t *testing.T) {
	var ref struct {
		Prompt []int32 `json:"prompt"`
		Greedy []int32 `json:"greedy"`
	}
	if err := json.Unmarshal(reference, &ref); err != nil {
		t.Fatal(err)
	}
	for _, dev := range []device.Device{cpu.New(), gputest.OrNil(t)} {
		if dev == nil {
			continue
		}
		m := tiny(t, dev)
		var streamed []int32
		got, err := m.Generate(ref.Prompt, len(ref.Greedy), gpt2.Greedy, func(tok int32) { streamed = append(streamed, tok) })
		if err != nil || !slices.Equal(got, ref.Greedy) || !slices.Equal(streamed, got) {
			t.Errorf("%v: Generate: %v (streamed %v), %v; PyTorch %v", dev, got, streamed, err, ref.Greedy)
		}
	}
	m := tiny(t, cpu.New())
	for _, tt := range []struct {
		prompt []int32
		n      int
		pick   gpt2.Sampler
		says   string
	}{
		{nil, 3, gpt2.Greedy, "a prompt of 0 tokens"},
		{[]int32{1}, -1, gpt2.Greedy, "-1 tokens to draw"},
		{[]int32{1, 37}, 1, gpt2.Greedy, "prompt token 1 is 37"},
		{[]int32{1}, 1, nil, "no sampler"},
		{[]int32{1}, 1, func([]float32) int { return 99 }, "the sampler picked 99"},
	} {
		if _, err := m.Generate(tt.prompt, tt.n, tt.pick, nil); err == nil || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("Generate(%v, %d): %v; want an error saying %s", tt.prompt, tt.n, err, tt.says)
		}
	}
}
