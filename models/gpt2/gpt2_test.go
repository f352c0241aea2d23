package gpt2_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/hf"
	"github.com/extensor/extensor/models/gpt2"
	"github.com/extensor/extensor/models/internal/lmtest"
	"github.com/extensor/extensor/tensor"
)

func load(mdl *hf.Model, dev device.Device) (lmtest.LM, error) {
	return gpt2.Load(mdl, dev, device.Float32)
}

// TestMatchesPyTorch checks testdata/tiny (GPT2LMHeadModel's names,
// with the causal-mask buffers of older checkpoints) against PyTorch's
// values on both backends (lmtest.All); its greedy continuation runs
// past the 16 positions.
func TestMatchesPyTorch(t *testing.T) {
	lmtest.All(t, load, "testdata/tiny", lmtest.Read(t, "testdata/reference.json", ""), []int32{300, 1, 4, 1, 5, 9, 2, 6})
}

// TestLoadRefuses names what does not fit: another architecture, a
// configuration GPT-2 cannot run, a weight of another shape, ids longer
// than the positions.
func TestLoadRefuses(t *testing.T) {
	dev := cpu.New()
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
		mdl, err := hf.Open(lmtest.Edited(t, "testdata/tiny", tt.edit))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := gpt2.Load(mdl, dev, device.Float32); err == nil || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("%s: Load: %v; want an error saying %s", tt.name, err, tt.says)
		}
	}
	m := lmtest.Load(t, load, "testdata/tiny", dev)
	long := tensor.Must(tensor.Zeros(dev, device.Int32, 1, 17))
	if err := tensor.Maybe(func() { m.Forward(autograd.Leaf(long, false)) }); !errors.Is(err, tensor.ErrShape) || !strings.Contains(err.Error(), "at most 16 tokens") {
		t.Errorf("Forward of 17 tokens: %v; want ErrShape", err)
	}
}
