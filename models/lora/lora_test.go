package lora_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/checkpoint"
	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/hf"
	"github.com/extensor/extensor/models/llama"
	"github.com/extensor/extensor/models/lora"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/optim"
	"github.com/extensor/extensor/tensor"
)

func tiny(t *testing.T) *llama.Model {
	t.Helper()
	mdl, err := hf.Open("../llama/testdata/tiny")
	if err != nil {
		t.Fatal(err)
	}
	m, err := llama.Load(mdl, cpu.New(), device.Float32)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Release)
	return m
}

func logits(t *testing.T, m *llama.Model) []float32 {
	t.Helper()
	x := tensor.Must(tensor.FromInt32(m.Embed.Value().Device(), []int32{5, 9, 300, 2}, 1, 4))
	v, err := m.Forward(autograd.Leaf(x, false).NoGrad()).Value().Float32s()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestAttach attaches new adapters: B is zeros, so the logits stay the
// base model's; the base is frozen, the adapters train; Detach thaws it.
func TestAttach(t *testing.T) {
	m := tiny(t)
	want := logits(t, m)
	s, err := lora.Attach(m, lora.Config{Rank: 2, Alpha: 4, Dropout: 0.1, Targets: []string{"q_proj", "model.layers.1.mlp.down_proj"}, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for n := range s.Adapters {
		names = append(names, n)
	}
	slices.Sort(names)
	if w := []string{"model.layers.0.self_attn.q_proj", "model.layers.1.mlp.down_proj", "model.layers.1.self_attn.q_proj"}; !slices.Equal(names, w) {
		t.Errorf("adapters on %v; want %v", names, w)
	}
	if len(s.Params()) != 6 {
		t.Errorf("%d parameters; want 6", len(s.Params()))
	}
	s.Train(false)
	if got := logits(t, m); !slices.Equal(got, want) {
		t.Error("new adapters changed the logits")
	}
	for _, p := range m.Params() {
		if p.RequiresGrad() {
			t.Fatal("a base parameter still requires a gradient")
		}
	}
	s.Detach()
	if !m.Params()[0].RequiresGrad() {
		t.Error("Detach left the base frozen")
	}
	for _, c := range []lora.Config{
		{Rank: 0, Alpha: 1, Targets: []string{"q_proj"}},
		{Rank: 1, Alpha: 0, Targets: []string{"q_proj"}},
		{Rank: 1, Alpha: 1, Dropout: 1, Targets: []string{"q_proj"}},
		{Rank: 1, Alpha: 1},
		{Rank: 1, Alpha: 1, Targets: []string{"c_attn"}},
	} {
		if _, err := lora.Attach(m, c); err == nil {
			t.Errorf("Attach(%+v) gave no error", c)
		} else {
			t.Logf("%+v: %v", c, err)
		}
	}
}

// TestLoadRefuses checks the adapter directories Load refuses, before
// attaching anything.
func TestLoadRefuses(t *testing.T) {
	src := "../llama/testdata/tiny-lora"
	m := tiny(t)
	edit := func(t *testing.T, config func(map[string]any), tensors func(map[string]*tensor.Tensor)) string {
		dir := t.TempDir()
		b, _ := os.ReadFile(filepath.Join(src, lora.ConfigFile))
		var c map[string]any
		json.Unmarshal(b, &c)
		config(c)
		b, _ = json.Marshal(c)
		os.WriteFile(filepath.Join(dir, lora.ConfigFile), b, 0o644)
		f, err := checkpoint.Read(filepath.Join(src, lora.WeightsFile))
		if err != nil {
			t.Fatal(err)
		}
		ts := map[string]*tensor.Tensor{}
		for _, n := range f.Names() {
			ts[n], err = f.Tensor(cpu.New(), n)
			if err != nil {
				t.Fatal(err)
			}
		}
		tensors(ts)
		if err := checkpoint.Save(filepath.Join(dir, lora.WeightsFile), ts, nil); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	none := func(map[string]*tensor.Tensor) {}
	const a0 = "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight"
	for _, tt := range []struct {
		name    string
		config  func(map[string]any)
		tensors func(map[string]*tensor.Tensor)
		says    string
	}{
		{"prefix tuning", func(c map[string]any) { c["peft_type"] = "PREFIX_TUNING" }, none, `peft_type "PREFIX_TUNING"`},
		{"bias", func(c map[string]any) { c["bias"] = "all" }, none, `bias "all"`},
		{"rank", func(c map[string]any) { c["r"] = 3 }, none, "mismatches"},
		{"no rank", func(c map[string]any) { c["r"] = 0 }, none, "rank 0"},
		{"lone A", func(map[string]any) {}, func(ts map[string]*tensor.Tensor) {
			delete(ts, strings.Replace(a0, "lora_A", "lora_B", 1))
		}, "lora_A without lora_B"},
		{"stranger", func(map[string]any) {}, func(ts map[string]*tensor.Tensor) {
			ts["base_model.model.model.layers.0.self_attn.rotary.lora_A.weight"] = ts[a0]
		}, "no module model.layers.0.self_attn.rotary"},
		{"not lora", func(map[string]any) {}, func(ts map[string]*tensor.Tensor) { ts["model.norm.weight"] = ts[a0] }, "not a LoRA weight"},
	} {
		_, err := lora.Load(m, edit(t, tt.config, tt.tensors), 0)
		if err == nil || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("%s: %v; want an error saying %s", tt.name, err, tt.says)
		}
		if m.Params()[0].RequiresGrad() == false {
			t.Fatalf("%s: a refused adapter froze the model", tt.name)
		}
	}
	if _, err := lora.Load(m, t.TempDir(), 0); err == nil {
		t.Error("Load of an empty directory gave no error")
	}
}

// TestHalfBase trains float32 adapters on a float16 base: the loss is
// finite and falls, the gradients reach the adapters alone.
func TestHalfBase(t *testing.T) {
	mdl, err := hf.Open("../llama/testdata/tiny")
	if err != nil {
		t.Fatal(err)
	}
	dev := cpu.New()
	m, err := llama.Load(mdl, dev, device.Float16)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Release()
	s, err := lora.Attach(m, lora.Config{Rank: 4, Alpha: 8, Targets: []string{"q_proj", "v_proj"}, Seed: 1, DType: device.Float32})
	if err != nil {
		t.Fatal(err)
	}
	x := autograd.Leaf(tensor.Must(tensor.FromInt32(dev, []int32{5, 9, 300, 2, 7, 7, 1, 3}, 1, 8)), false)
	y := autograd.Leaf(tensor.Must(tensor.FromInt32(dev, []int32{9, 300, 2, 7, 7, 1, 3, 8}, 8)), false)
	opt := optim.AdamW(s.Params(), 3e-2, 0)
	defer opt.Release()
	var losses []float64
	for range 4 {
		opt.ZeroGrad()
		logits := ops.Cast(ops.Reshape(m.Forward(x), 8, m.Cfg.VocabSize), device.Float32)
		loss := ops.CrossEntropyLoss(logits, y, ops.MeanReduction)
		v, err := loss.Value().Float64s()
		if err != nil {
			t.Fatal(err)
		}
		losses = append(losses, v[0])
		if err := loss.Backward(); err != nil {
			t.Fatal(err)
		}
		if s.Params()[0].Grad() == nil || m.Params()[0].Grad() != nil {
			t.Fatal("gradients: want the adapters' alone")
		}
		opt.Step()
	}
	if !(losses[3] < losses[0]) {
		t.Errorf("losses %v; want them to fall", losses)
	}
	if s.Params()[0].Value().DType() != device.Float32 || m.Params()[0].Value().DType() != device.Float16 {
		t.Error("dtypes: want float32 adapters on a float16 base")
	}
}

// TestLoadForInference loads an adapter with dropout in inference mode
// (PEFT's default): the same input gives the same logits; Train(true)
// turns the dropout on.
func TestLoadForInference(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{lora.ConfigFile, lora.WeightsFile} {
		b, err := os.ReadFile(filepath.Join("../llama/testdata/tiny-lora", f))
		if err != nil {
			t.Fatal(err)
		}
		if f == lora.ConfigFile {
			var c map[string]any
			json.Unmarshal(b, &c)
			c["lora_dropout"] = 0.5
			b, _ = json.Marshal(c)
		}
		os.WriteFile(filepath.Join(dir, f), b, 0o644)
	}
	m := tiny(t)
	s, err := lora.Load(m, dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := logits(t, m), logits(t, m); !slices.Equal(a, b) {
		t.Error("a loaded adapter's dropout is on")
	}
	s.Train(true)
	if a, b := logits(t, m), logits(t, m); slices.Equal(a, b) {
		t.Error("Train(true) left the dropout off")
	}
}
