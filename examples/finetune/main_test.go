package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/internal/fuzzin"
	"github.com/extensor/extensor/internal/gputest"
	"github.com/extensor/extensor/models"
	"github.com/extensor/extensor/models/lora"
)

const tiny = "../../models/llama/testdata/tiny"

// TestRun fine-tunes the tiny Llama on this package's source with LoRA
// on both backends: the validation loss falls, the two backends' losses
// agree, and the adapters and the merged model load back (the merged
// model computing what the adapters did).
func TestRun(t *testing.T) {
	var runs [][]float64
	for _, name := range []string{"cpu", "webgpu"} {
		if name == "webgpu" && gputest.OrNil(t) == nil {
			continue
		}
		dir := t.TempDir()
		cfg := Config{Device: name, Model: tiny, Data: "main.go", Steps: 12, Batch: 4, Context: 32, LR: 3e-2, Rank: 4, Alpha: 8,
			Dropout: 0.05, Seed: 1, Save: filepath.Join(dir, "lora"), SaveEvery: 5, Merge: filepath.Join(dir, "merged"), Plots: filepath.Join(dir, "plots")}
		var out strings.Builder
		res, err := Run(cfg, &out)
		if err != nil {
			t.Fatal(err)
		}
		if !(res.ValEnd < res.Val0) || len(res.Losses) != 12 {
			t.Errorf("%s: validation loss %v → %v, %d losses\n%s", name, res.Val0, res.ValEnd, len(res.Losses), out.String())
		}
		runs = append(runs, res.Losses)
		for _, f := range []string{"lora/adapter_model.safetensors", "lora/adapter_config.json", "merged/model.safetensors", "merged/tokenizer.json", "plots/loss.png"} {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				t.Error(err)
			}
		}
		// The merged model and the base with the saved adapters agree.
		dev := cpu.New()
		merged, err := models.Load(filepath.Join(dir, "merged"), dev, device.Float32)
		if err != nil {
			t.Fatal(err)
		}
		base, err := models.Load(tiny, dev, device.Float32)
		if err != nil {
			t.Fatal(err)
		}
		s, err := lora.Load(base, cfg.Save, 0)
		if err != nil {
			t.Fatal(err)
		}
		s.Train(false)
		prompt := []int32{5, 9, 300, 2}
		a, err1 := merged.Step(prompt, merged.NewCache())
		b, err2 := base.Step(prompt, base.NewCache())
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		for i := range a {
			if math.Abs(a[i]-b[i]) > 1e-4*(1+math.Abs(b[i])) {
				t.Fatalf("%s: merged logit %d: %v; base with adapters %v", name, i, a[i], b[i])
			}
		}
		merged.Release()
		base.Release()
	}
	if len(runs) == 2 {
		for i := range runs[0] {
			if math.Abs(runs[0][i]-runs[1][i]) > 1e-3*(1+runs[0][i]) {
				t.Errorf("step %d: cpu loss %v, webgpu %v", i+1, runs[0][i], runs[1][i])
			}
		}
	}
}

// TestRefuses checks the errors before any work.
func TestRefuses(t *testing.T) {
	dir := t.TempDir()
	short := filepath.Join(dir, "short.txt")
	os.WriteFile(short, []byte("a few words"), 0o644)
	ok := Config{Device: "cpu", Model: tiny, Data: "main.go", Steps: 1, Batch: 1, Context: 8, LR: 1e-3, Rank: 2, Alpha: 4, Save: filepath.Join(dir, "lora")}
	for _, tt := range []struct {
		edit func(*Config)
		says string
	}{
		{func(c *Config) { c.Model = "" }, "-model"},
		{func(c *Config) { c.Data = "" }, "-data"},
		{func(c *Config) { c.Steps = 0 }, "-steps 0"},
		{func(c *Config) { c.LR = math.Inf(1) }, "-lr +Inf"},
		{func(c *Config) { c.Rank = 0 }, "-rank"},
		{func(c *Config) { c.Dropout = 1 }, "-dropout"},
		{func(c *Config) { c.Save = "" }, "-save"},
		{func(c *Config) { c.Save = filepath.Join("main.go", "x") }, "-save"},
		{func(c *Config) { c.Data = filepath.Join(dir, "none") }, "-data"},
		{func(c *Config) { c.Data = short }, "tokens"},
		{func(c *Config) { c.Targets = "w_proj" }, "match none"},
		{func(c *Config) { c.Model = "../../models/bert/testdata/tiny" }, `model_type "bert"`},
	} {
		c := ok
		tt.edit(&c)
		if _, err := Run(c, &strings.Builder{}); err == nil || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("%+v: %v; want an error saying %s", c, err, tt.says)
		}
	}
}

// FuzzFlags: what Check accepts has a model, data, counts in range, a
// finite rate and LoRA settings lora accepts (fuzzin.FuzzCommandLine).
func FuzzFlags(f *testing.F) {
	fuzzin.FuzzCommandLine(f, "finetune", func(fs *flag.FlagSet) fuzzin.Command {
		cfg := flags(fs)
		return fuzzin.Command{Check: func() error { return cfg.Check() }, Accepted: func() error {
			if cfg.Model == "" || cfg.Data == "" || cfg.Steps < 1 || cfg.SaveEvery < 0 || cfg.Batch < 1 || cfg.Context < 2 || !(cfg.LR > 0) || cfg.Rank < 1 || !(cfg.Dropout < 1) {
				return fmt.Errorf("%+v is out of range", *cfg)
			}
			return nil
		}}
	})
}
