package models

import (
	"fmt"
	"slices"
	"strings"

	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/hf"
	"github.com/extensor/extensor/models/gpt2"
)

// An LM is a causal language model: logits [B, T, vocabulary] of int32
// token ids [B, T], recorded on the tape.
type LM interface {
	Forward(ids *autograd.Var) *autograd.Var
	Params() []*autograd.Var
	Release()
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

// Known returns the model_type values that Load builds, sorted.
func Known() []string {
	var k []string
	for t := range builders {
		k = append(k, t)
	}
	slices.Sort(k)
	return k
}

// Load returns the model name (a directory or a repository id in the
// Hugging Face cache: hf.Find) on dev in dt, its weights loaded. A
// model_type it does not know is an error naming it and the known ones.
func Load(name string, dev device.Device, dt device.DType) (LM, error) {
	dir, err := hf.Find(name)
	if err != nil {
		return nil, err
	}
	m, err := hf.Open(dir)
	if err != nil {
		return nil, err
	}
	build, ok := builders[m.Config.ModelType]
	if !ok {
		return nil, fmt.Errorf("models: %s: model_type %q (architectures %v) is not one extensor knows: %s", dir, m.Config.ModelType, m.Config.Architectures, strings.Join(Known(), ", "))
	}
	return build(m, dev, dt)
}
