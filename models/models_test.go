package models_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/models"
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
	if s := m.Forward(autograd.Leaf(ids, false)).Value().Shape(); len(s) != 3 || s[2] != 37 {
		t.Errorf("logits of shape %v; want [1 3 37]", s)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"model_type": "mamba", "architectures": ["MambaForCausalLM"]}`), 0o644)
	os.WriteFile(filepath.Join(dir, "model.safetensors"), []byte{8, 0, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' ', ' ', ' ', ' ', ' '}, 0o644)
	if _, err := models.Load(dir, dev, device.Float32); err == nil || !strings.Contains(err.Error(), `model_type "mamba" (architectures [MambaForCausalLM]) is not one extensor knows: gpt2`) {
		t.Errorf("Load of a mamba: %v; want an error naming it and gpt2", err)
	}
}
