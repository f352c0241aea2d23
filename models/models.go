package models

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/hf"
	"github.com/extensor/extensor/models/bert"
	"github.com/extensor/extensor/models/generate"
	"github.com/extensor/extensor/models/gpt2"
	"github.com/extensor/extensor/models/llama"
	"github.com/extensor/extensor/models/lora"
	"github.com/extensor/extensor/tensor"
	"github.com/extensor/extensor/tokenizer"
)

// An LM is a causal language model: logits [B, T, vocabulary] of int32
// token ids [B, T], recorded on the tape, and decoding through a
// key-value cache for generate.Generate and GenerateBatch.
type LM interface {
	Forward(ids *autograd.Var) *autograd.Var
	Params() []*autograd.Var
	// StateDict returns the parameters by Hugging Face's names (hf.Save
	// writes them).
	StateDict() map[string]*tensor.Tensor
	Release()
	generate.BatchModel
	lora.Model
}

// Pretrained is a model loaded from its directory, with what the
// directory says of its text.
type Pretrained struct {
	LM
	// Dir is the model's directory.
	Dir string
	// Tokenizer is the directory's tokenizer.json (and
	// tokenizer_config.json), nil where it has none.
	Tokenizer *tokenizer.Tokenizer
	// Generation is generation_config.json's settings, with config.json's
	// token ids where it lacks them.
	Generation hf.Generation
}

// builders are the architectures by config.json's model_type.
var builders = map[string]func(*hf.Model, device.Device, device.DType) (LM, error){
	"gpt2": func(m *hf.Model, dev device.Device, dt device.DType) (LM, error) {
		g, err := gpt2.Load(m, dev, dt)
		if err != nil {
			return nil, err
		}
		return g, nil
	},
}

func init() {
	for _, t := range llama.ModelTypes {
		builders[t] = func(m *hf.Model, dev device.Device, dt device.DType) (LM, error) {
			l, err := llama.Load(m, dev, dt)
			if err != nil {
				return nil, err
			}
			return l, nil
		}
	}
}

// Known returns the model_type values that Load builds, sorted.
func Known() []string {
	var k []string
	for t := range builders {
		k = append(k, t)
	}
	slices.Sort(k)
	return k
}

// Encoder is a BERT encoder loaded from its directory, with its
// tokenizer: sentence embeddings of texts (Embed).
type Encoder struct {
	*bert.Model
	Dir       string
	Tokenizer *tokenizer.Tokenizer
}

// LoadEncoder returns the encoder name (a directory or a repository id,
// as Load) on dev in dt, with its tokenizer: model_type bert, and a
// tokenizer.json.
func LoadEncoder(name string, dev device.Device, dt device.DType) (*Encoder, error) {
	dir, err := hf.Find(name)
	if err != nil {
		return nil, err
	}
	m, err := hf.Open(dir)
	if err != nil {
		return nil, err
	}
	if m.Config.ModelType != "bert" {
		return nil, fmt.Errorf("models: %s: model_type %q (architectures %v) is not an encoder extensor knows: bert", dir, m.Config.ModelType, m.Config.Architectures)
	}
	tok, err := tokenizer.Load(dir)
	if err != nil {
		return nil, err
	}
	b, err := bert.Load(m, dev, dt)
	if err != nil {
		return nil, err
	}
	if tok.VocabSize() > b.Cfg.VocabSize {
		b.Release()
		return nil, fmt.Errorf("models: %s: the tokenizer has %d ids, the model %d", dir, tok.VocabSize(), b.Cfg.VocabSize)
	}
	return &Encoder{Model: b, Dir: dir, Tokenizer: tok}, nil
}

// Embed returns the sentence embeddings of texts (bert.Model.Embed of
// their tokens, [CLS] … [SEP] as the tokenizer adds them): a text longer
// than the positions is an error.
func (e *Encoder) Embed(texts []string) ([][]float32, error) {
	seqs := make([][]int32, len(texts))
	for i, t := range texts {
		seqs[i] = e.Tokenizer.Encode(t)
	}
	return e.Model.Embed(seqs)
}

// Load returns the model name (a directory or a repository id in the
// Hugging Face cache: hf.Find) on dev in dt, its weights loaded, with its
// tokenizer where the directory has one. A model_type it does not know is
// an error naming it and the known ones; so is a tokenizer that does not
// load, or whose ids the model lacks.
func Load(name string, dev device.Device, dt device.DType) (*Pretrained, error) {
	return LoadWith(name, dev, dt, nil)
}

// LoadWith is Load telling progress, if not nil, the bytes of weights
// loaded so far of the total after each tensor (report.Loading draws a
// bar of it).
func LoadWith(name string, dev device.Device, dt device.DType, progress func(done, total int64)) (*Pretrained, error) {
	dir, err := hf.Find(name)
	if err != nil {
		return nil, err
	}
	m, err := hf.Open(dir)
	if err != nil {
		return nil, err
	}
	m.Progress = progress
	build, ok := builders[m.Config.ModelType]
	if !ok {
		return nil, fmt.Errorf("models: %s: model_type %q (architectures %v) is not one extensor knows: %s", dir, m.Config.ModelType, m.Config.Architectures, strings.Join(Known(), ", "))
	}
	var tok *tokenizer.Tokenizer
	if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err == nil {
		if tok, err = tokenizer.Load(dir); err != nil {
			return nil, err
		}
	}
	lm, err := build(m, dev, dt)
	if err != nil {
		return nil, err
	}
	if tok != nil && tok.VocabSize() > lm.VocabSize() {
		lm.Release()
		return nil, fmt.Errorf("models: %s: the tokenizer has %d ids, the model %d", dir, tok.VocabSize(), lm.VocabSize())
	}
	return &Pretrained{LM: lm, Dir: dir, Tokenizer: tok, Generation: m.Generation}, nil
}
