package bert_test

import (
	"encoding/json"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/hf"
	"github.com/extensor/extensor/models/bert"
	"github.com/extensor/extensor/models/internal/lmtest"
	"github.com/extensor/extensor/tensor"
	"github.com/extensor/extensor/tokenizer"
)

// reference is testdata/reference.py's output.
type reference struct {
	Texts      []string    `json:"texts"`
	IDs        [][]int32   `json:"ids"`
	Mask       [][]float64 `json:"mask"`
	Hidden     []float64   `json:"hidden"`
	Embeddings [][]float64 `json:"embeddings"`
}

func load(t *testing.T, dir string, dev device.Device) *bert.Model {
	t.Helper()
	mdl, err := hf.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := bert.Load(mdl, dev, device.Float32)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Release)
	return m
}

// TestMatchesPyTorch compares the tiny BERT's hidden states over a padded
// batch and its sentence embeddings (mean pooling, L2 normalisation) with
// PyTorch's, on both backends; the texts go through tokenizer.json
// (WordPiece, through hftokenizer) to the ids the reference's own
// WordPiece gives.
func TestMatchesPyTorch(t *testing.T) {
	b, err := os.ReadFile("testdata/reference.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref reference
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load("testdata/tiny")
	if err != nil {
		t.Fatal(err)
	}
	var seqs [][]int32
	for i, text := range ref.Texts {
		ids := tok.Encode(text)
		n := 0
		for _, m := range ref.Mask[i] {
			n += int(m)
		}
		if len(ids) != n || !slices.Equal(ids, ref.IDs[i][:n]) {
			t.Errorf("%q: ids %v; the reference's %v", text, ids, ref.IDs[i][:n])
		}
		seqs = append(seqs, ids)
	}
	for _, dev := range lmtest.Backends(t) {
		m := load(t, "testdata/tiny", dev)
		var ids []int32
		var mask []float64
		for i := range ref.IDs {
			ids, mask = append(ids, ref.IDs[i]...), append(mask, ref.Mask[i]...)
		}
		n, l := len(ref.IDs), len(ref.IDs[0])
		x := autograd.Leaf(tensor.Must(tensor.FromInt32(dev, ids, n, l)), false)
		mk := autograd.Leaf(tensor.Must(tensor.FromValues(dev, device.Float32, mask, n, l)), false)
		h, err := m.Forward(x, mk).Value().Float64s()
		if err != nil {
			t.Fatal(err)
		}
		for i, w := range ref.Hidden {
			if mask[i/m.Cfg.Hidden] == 0 {
				continue // padding positions: any value
			}
			if math.Abs(h[i]-w) > 1e-4*(1+math.Abs(w)) {
				t.Fatalf("%v: hidden %d: %v; PyTorch %v", dev, i, h[i], w)
			}
		}
		embs, err := m.Embed(seqs)
		if err != nil {
			t.Fatal(err)
		}
		for i, e := range embs {
			for j, v := range e {
				if w := ref.Embeddings[i][j]; math.Abs(float64(v)-w) > 1e-5 {
					t.Fatalf("%v: embedding %d[%d]: %v; PyTorch %v", dev, i, j, v, w)
				}
			}
		}
		if c := bert.Cosine(embs[0], embs[0]); math.Abs(c-1) > 1e-6 {
			t.Errorf("cosine of an embedding with itself: %v", c)
		}
	}
}

// TestStoredForms loads the tiny BERT stored in two shards and in BF16:
// the shards give the single file's hidden states exactly, BF16 exactly
// those of the float32 weights rounded to bfloat16, on both backends.
func TestStoredForms(t *testing.T) {
	ids := []int32{2, 18, 27, 19, 29, 3}
	for _, dev := range lmtest.Backends(t) {
		hidden := func(m *bert.Model) []float32 {
			x := autograd.Leaf(tensor.Must(tensor.FromInt32(dev, ids, 1, len(ids))), false)
			v, err := m.Forward(x.NoGrad(), nil).Value().Float32s()
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		m := load(t, "testdata/tiny", dev)
		want := hidden(m)
		if got := hidden(load(t, "testdata/tiny-sharded", dev)); !slices.Equal(got, want) {
			t.Errorf("%v: the sharded copy's hidden states differ", dev)
		}
		lmtest.RoundToBF16(t, m.StateDict())
		if got, rounded := hidden(load(t, "testdata/tiny-bf16", dev)), hidden(m); !slices.Equal(got, rounded) || slices.Equal(got, want) {
			t.Errorf("%v: the BF16 copy's hidden states differ from those of the rounded weights (or equal the float32 ones)", dev)
		}
	}
}

// TestRefuses checks the errors: another architecture, a configuration
// the encoder does not run, sequences Embed cannot take.
func TestRefuses(t *testing.T) {
	dev := cpu.New()
	for _, tt := range []struct {
		name string
		edit func(cfg map[string]any)
		says string
	}{
		{"gpt2", func(c map[string]any) { c["model_type"] = "gpt2" }, `model_type "gpt2"; want bert`},
		{"relative", func(c map[string]any) { c["position_embedding_type"] = "relative_key" }, `position_embedding_type "relative_key"`},
		{"relu", func(c map[string]any) { c["hidden_act"] = "relu" }, `hidden_act "relu"`},
		{"heads", func(c map[string]any) { c["num_attention_heads"] = 3 }, "hidden_size 16 in 3 heads"},
		{"wider", func(c map[string]any) { c["intermediate_size"] = 40 }, "mismatches with the model"},
	} {
		mdl, err := hf.Open(lmtest.Edited(t, "testdata/tiny", tt.edit))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := bert.Load(mdl, dev, device.Float32); err == nil || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("%s: Load: %v; want an error saying %s", tt.name, err, tt.says)
		}
	}
	m := load(t, "testdata/tiny", dev)
	for _, seqs := range [][][]int32{{{}}, {make([]int32, 33)}, {{1, 9999}}} {
		if _, err := m.Embed(seqs); err == nil {
			t.Errorf("Embed(%v) gave no error", seqs)
		}
	}
}
