package models_test

import (
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
	"github.com/extensor/extensor/models"
	"github.com/extensor/extensor/models/bert"
	"github.com/extensor/extensor/models/generate"
	"github.com/extensor/extensor/tensor"
)

// TestLoad builds GPT-2 from its directory by config.json's model_type,
// and names an unknown architecture with the ones it knows.
func TestLoad(t *testing.T) {
	dev := cpu.New()
	m, err := models.Load("gpt2/testdata/tiny", dev, device.Float32)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Release()
	ids := tensor.Must(tensor.FromInt32(dev, []int32{1, 2, 3}, 1, 3))
	if s := m.Forward(autograd.Leaf(ids, false)).Value().Shape(); len(s) != 3 || s[2] != 512 {
		t.Errorf("logits of shape %v; want [1 3 512]", s)
	}
	if m.Tokenizer == nil || !slices.Equal(m.Generation.EOS, hf.IDs{511}) || m.Tokenizer.EOS != 511 {
		t.Fatalf("tokenizer %v, generation_config %+v; want the tokenizer and eos 511", m.Tokenizer, m.Generation)
	}
	// The prompt's text through the tokenizer, greedy tokens, the text
	// back.
	prompt := m.Tokenizer.Encode("Hello, world")
	got, err := generate.Generate(m, prompt, generate.Options{Tokens: 8, Stop: m.Generation.EOS})
	if err != nil || len(got) == 0 {
		t.Fatalf("Generate: %v, %v", got, err)
	}
	text, err := m.Tokenizer.Decode(append(prompt, got...))
	if err != nil || !strings.HasPrefix(text, "Hello, world") {
		t.Errorf("Decode: %q, %v", text, err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"model_type": "mamba", "architectures": ["MambaForCausalLM"]}`), 0o644)
	os.WriteFile(filepath.Join(dir, "model.safetensors"), []byte{8, 0, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' ', ' ', ' ', ' ', ' '}, 0o644)
	if _, err := models.Load(dir, dev, device.Float32); err == nil || !strings.Contains(err.Error(), `model_type "mamba" (architectures [MambaForCausalLM]) is not one extensor knows: gpt2, llama, mistral, qwen2`) {
		t.Errorf("Load of a mamba: %v; want an error naming it and gpt2", err)
	}
}

// TestLoadEncoder embeds texts with the tiny BERT: each embedding of
// unit length, the same text the same embedding; a causal model is not
// an encoder.
func TestLoadEncoder(t *testing.T) {
	e, err := models.LoadEncoder("bert/testdata/tiny", cpu.New(), device.Float32)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Release()
	embs, err := e.Embed([]string{"Hello, world!", "The gopher runs fast.", "Hello, world!"})
	if err != nil {
		t.Fatal(err)
	}
	if c := bert.Cosine(embs[0], embs[2]); math.Abs(c-1) > 1e-6 {
		t.Errorf("cosine of a text with itself: %v", c)
	}
	if c := bert.Cosine(embs[0], embs[1]); !(c < 0.9999) {
		t.Errorf("cosine of two texts: %v", c)
	}
	if _, err := models.LoadEncoder("gpt2/testdata/tiny", cpu.New(), device.Float32); err == nil || !strings.Contains(err.Error(), "not an encoder") {
		t.Errorf("LoadEncoder of GPT-2: %v", err)
	}
}
