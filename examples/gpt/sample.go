package main

// Sampling from a trained model, and exporting it for PyTorch.

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/extensor/extensor/dataset/gosrc"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/examples/gpt/model"
	"github.com/extensor/extensor/examples/internal/parallel"
)

// Sample generates cfg.Tokens tokens from cfg.Prompt with the model in
// the checkpoint cfg.Resume (or else cfg.Save), printing them to w and
// the rate to standard error.
func Sample(cfg Config, w io.Writer) error {
	if cfg.Resume == "" {
		cfg.Resume = cfg.Save
	}
	if cfg.Resume == "" {
		return errors.New("-sample needs a checkpoint: -resume path")
	}
	if err := cfg.Model.Check(); err != nil {
		return err
	}
	if cfg.Tokens < 0 || cfg.TopK < 0 || !finite(cfg.Temperature) {
		return fmt.Errorf("-tokens %d, -top-k %d, -temperature %v: want counts ≥ 0 and a finite temperature ≥ 0", cfg.Tokens, cfg.TopK, cfg.Temperature)
	}
	dev := cfg.dev
	if dev == nil {
		d, err := device.Open(cfg.Device)
		if err != nil {
			return err
		}
		defer d.Close()
		dev = d
	}
	net, err := model.New(dev, cfg.Model, cfg.Seed)
	if err != nil {
		return err
	}
	if _, err := load(cfg.Resume, net, nil); err != nil {
		return err
	}
	if err := finiteParams(net); err != nil {
		return fmt.Errorf("%s: %w", cfg.Resume, err)
	}
	t0 := time.Now()
	// The sample is written as it is drawn.
	fmt.Fprint(w, cfg.Prompt)
	emit := func(t int32) { w.Write([]byte{byte(t)}) }
	out, err := net.Generate(dev, tokensOf(cfg.Prompt), cfg.Tokens, model.Sampling{Temperature: cfg.Temperature, TopK: cfg.TopK, Seed: cfg.Seed, Emit: emit}, !cfg.NoCache)
	fmt.Fprintln(w)
	if err != nil {
		return err
	}
	el := time.Since(t0)
	fmt.Fprintf(os.Stderr, "%d tokens in %.2f s: %.1f tokens/s (key-value cache: %v)\n", len(out), el.Seconds(), float64(len(out))/el.Seconds(), !cfg.NoCache)
	return nil
}

func tokensOf(s string) []int32 { return gosrc.Tokens([]byte(s)) }

// finiteParams returns an error naming the first parameter of net that
// holds a value that is not finite (a checkpoint of a run that diverged).
func finiteParams(net *model.GPT) error {
	names := net.ParamNames()
	for i, p := range net.Params() {
		v, err := p.Value().Float64s()
		if err != nil {
			return err
		}
		for j, x := range v {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return fmt.Errorf("the weights are not finite: %s[%d] is %v", names[i], j, x)
			}
		}
	}
	return nil
}

func bytesOf(t []int32) []byte {
	b := make([]byte, len(t))
	for i, v := range t {
		b[i] = byte(v)
	}
	return b
}

// Export writes what torch_gpt.py needs to train the same model on the
// same windows: train.bin and val.bin (the corpus's bytes), starts.bin
// (each step's window starts, int64 little-endian, step-major),
// val_starts.bin (the validation batches') and config.json.
func Export(cfg Config, dir string) error {
	if err := cfg.Check(); err != nil {
		return err
	}
	c, err := gosrc.Load(orRoot(cfg.GoRoot))
	if err != nil {
		return err
	}
	cfg.corpus = c
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	train, val := cfg.windows(&parallel.Run{})
	var starts, vstarts []int
	for s := range cfg.Steps {
		starts = append(starts, train.Starts(s)...)
	}
	for i := range cfg.EvalBatches {
		vstarts = append(vstarts, val.Starts(i)...)
	}
	files := map[string][]byte{"train.bin": c.Train, "val.bin": c.Val, "starts.bin": int64s(starts), "val_starts.bin": int64s(vstarts),
		"config.json": fmt.Appendf(nil, `{"vocab": %d, "context": %d, "layers": %d, "heads": %d, "width": %d, "dropout": %g, "batch": %d, "steps": %d, "lr": %g, "min_lr": %g, "warmup": %d, "decay_steps": %d, "weight_decay": %g, "clip": %g, "eval_every": %d, "eval_batches": %d, "seed": %d}`+"\n",
			cfg.Model.Vocab, cfg.Model.Context, cfg.Model.Layers, cfg.Model.Heads, cfg.Model.Width, cfg.Model.Dropout, cfg.Batch, cfg.Steps, cfg.LR, cfg.MinLR, cfg.Warmup, cmp.Or(cfg.DecaySteps, cfg.Steps), cfg.WeightDecay, cfg.Clip, cfg.EvalEvery, cfg.EvalBatches, cfg.Seed)}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func int64s(v []int) []byte {
	b := make([]byte, 0, 8*len(v))
	for _, x := range v {
		for k := range 8 {
			b = append(b, byte(uint64(x)>>(8*k)))
		}
	}
	return b
}
