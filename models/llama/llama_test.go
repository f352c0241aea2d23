package llama_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/hf"
	"github.com/extensor/extensor/models/internal/lmtest"
	"github.com/extensor/extensor/models/llama"
	"github.com/extensor/extensor/tensor"
)

func load(mdl *hf.Model, dev device.Device) (lmtest.LM, error) {
	return llama.Load(mdl, dev, device.Float32)
}

// TestMatchesPyTorch checks testdata/tiny (a Llama: grouped-query
// attention, linear rope scaling, an untied head, sharded and BF16
// copies) and tiny-qwen2 (q, k and v biases, a tied head) against the
// values of PyTorch's transformers-definition forward on both backends
// (lmtest.All).
func TestMatchesPyTorch(t *testing.T) {
	for _, name := range []string{"tiny", "tiny-qwen2"} {
		t.Run(name, func(t *testing.T) {
			lmtest.All(t, load, "testdata/"+name, lmtest.Read(t, "testdata/reference.json", name), []int32{300, 1, 4, 1, 5, 9, 2, 6, 5, 3})
		})
	}
}

// TestLoadRefuses names what does not fit: another architecture,
// configurations the model does not run, a weight of another shape, ids
// longer than the positions.
func TestLoadRefuses(t *testing.T) {
	dev := cpu.New()
	for _, tt := range []struct {
		name string
		edit func(cfg map[string]any)
		says string
	}{
		{"gpt2", func(c map[string]any) { c["model_type"] = "gpt2" }, `model_type "gpt2"; want one of [llama mistral qwen2]`},
		{"dynamic rope", func(c map[string]any) {
			c["rope_scaling"] = map[string]any{"type": "dynamic", "factor": 2}
		}, `rope_scaling "dynamic"; want none or linear`},
		{"llama3 rope", func(c map[string]any) {
			c["rope_scaling"] = map[string]any{"rope_type": "llama3", "factor": 8}
		}, `rope_scaling "llama3"`},
		{"small factor", func(c map[string]any) {
			c["rope_scaling"] = map[string]any{"type": "linear", "factor": 0.5}
		}, "factor ≥ 1"},
		{"gelu", func(c map[string]any) { c["hidden_act"] = "gelu" }, `hidden_act "gelu"`},
		{"kv heads", func(c map[string]any) { c["num_key_value_heads"] = 3 }, "4 attention heads over 3 key-value heads"},
		{"odd head", func(c map[string]any) { c["head_dim"] = 3 }, "head_dim 3"},
		{"sliding", func(c map[string]any) { c["model_type"] = "mistral"; c["sliding_window"] = 8 }, "sliding window of 8"},
		{"mlp bias", func(c map[string]any) { c["mlp_bias"] = true }, "mlp_bias"},
		{"theta", func(c map[string]any) { c["rope_theta"] = 0 }, "rope_theta 0"},
		{"wider", func(c map[string]any) { c["intermediate_size"] = 48 }, "mismatches with the model"},
		{"huge vocabulary", func(c map[string]any) { c["vocab_size"] = 1 << 40 }, "1099511627776"},
	} {
		mdl, err := hf.Open(lmtest.Edited(t, "testdata/tiny", tt.edit))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := llama.Load(mdl, dev, device.Float32); err == nil || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("%s: Load: %v; want an error saying %s", tt.name, err, tt.says)
		}
	}
	// An untied head that the checkpoint lacks.
	untied := lmtest.Edited(t, "testdata/tiny-qwen2", func(c map[string]any) { c["tie_word_embeddings"] = false })
	if mdl, err := hf.Open(untied); err != nil {
		t.Fatal(err)
	} else if _, err := llama.Load(mdl, dev, device.Float32); err == nil || !strings.Contains(err.Error(), "lm_head.weight") {
		t.Errorf("an untied Qwen2 without lm_head.weight: %v; want an error naming it", err)
	}
	m := lmtest.Load(t, load, "testdata/tiny", dev)
	long := tensor.Must(tensor.Zeros(dev, device.Int32, 1, 33))
	if err := tensor.Maybe(func() { m.Forward(autograd.Leaf(long, false)) }); !errors.Is(err, tensor.ErrShape) || !strings.Contains(err.Error(), "at most 32 tokens") {
		t.Errorf("Forward of 33 tokens: %v; want ErrShape", err)
	}
}
