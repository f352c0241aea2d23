// Command finetune fine-tunes a Hugging Face causal language model on a
// text file with LoRA (package lora): the base weights frozen, low-rank
// adapters on the targeted projections trained with AdamW on random
// windows of the file's tokens, the validation loss on its last tenth,
// the adapters saved in PEFT's layout (and, with -merge, the merged
// model in Hugging Face's), the loss curve and metrics beside them.
//
//	go run ./examples/finetune -model models/llama/testdata/tiny -data notes.txt -steps 100
package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/dataset/loader"
	"github.com/extensor/extensor/device"
	_ "github.com/extensor/extensor/device/webgpu" // registers "webgpu"
	"github.com/extensor/extensor/examples/internal/report"
	"github.com/extensor/extensor/examples/internal/run"
	"github.com/extensor/extensor/hf"
	"github.com/extensor/extensor/models"
	"github.com/extensor/extensor/models/lora"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/optim"
	"github.com/extensor/extensor/tensor"
)

// Config sets up a run.
type Config struct {
	Device   string // "auto", "webgpu" or "cpu"
	Model    string // a model directory or a repository id in the Hugging Face cache
	Download bool   // fetch the repository into the cache first (hf.Download)
	Data     string // the text file to fine-tune on
	Steps    int
	Batch    int     // windows a step
	Context  int     // tokens a window (at most the model's context)
	LR       float64 // AdamW's learning rate
	WD       float64 // AdamW's weight decay
	Rank     int
	Alpha    float64
	Dropout  float64
	Targets  string // comma-separated module names ("": the architecture's usual: c_attn, or q_proj,v_proj)
	Seed     uint64
	Progress int    // print a line every Progress steps (0: never)
	Save     string // the adapter directory
	// SaveEvery also saves the adapters every SaveEvery steps (0: at the
	// end only).
	SaveEvery int
	Merge     string // also write the merged model here ("": not)
	Plots     string // metrics.jsonl and loss.png here ("": none)
}

// Result is what a run achieved.
type Result struct {
	Losses       []float64 // each step's training loss
	Val0, ValEnd float64   // the validation loss before and after
}

func main() {
	cfg := flags(flag.CommandLine)
	run.Main("finetune", func() error {
		_, err := Run(*cfg, os.Stdout)
		return err
	})
}

// flags defines the command's flags on fs, parsed into the returned
// Config.
func flags(fs *flag.FlagSet) *Config {
	c := &Config{}
	fs.StringVar(&c.Device, "device", "auto", `device: "auto", "webgpu" or "cpu"`)
	fs.StringVar(&c.Model, "model", "", "model directory, or ORG/NAME[@REVISION] in the Hugging Face cache")
	fs.BoolVar(&c.Download, "download", false, "download the -model repository into the Hugging Face cache first (HF_TOKEN, HF_ENDPOINT)")
	fs.StringVar(&c.Data, "data", "", "the text file to fine-tune on")
	fs.IntVar(&c.Steps, "steps", 200, "training steps")
	fs.IntVar(&c.Batch, "batch", 4, "windows a step")
	fs.IntVar(&c.Context, "context", 128, "tokens a window (at most the model's context)")
	fs.Float64Var(&c.LR, "lr", 1e-3, "AdamW learning rate")
	fs.Float64Var(&c.WD, "wd", 0, "AdamW weight decay")
	fs.IntVar(&c.Rank, "rank", 8, "LoRA rank")
	fs.Float64Var(&c.Alpha, "alpha", 16, "LoRA alpha (the update is scaled by alpha/rank)")
	fs.Float64Var(&c.Dropout, "dropout", 0.05, "LoRA dropout")
	fs.StringVar(&c.Targets, "targets", "", `comma-separated modules to adapt ("": c_attn for GPT-2, q_proj,v_proj otherwise)`)
	fs.Uint64Var(&c.Seed, "seed", 1, "seed of the adapters, the windows and dropout")
	fs.IntVar(&c.Progress, "progress", 10, "print a line every N steps (0: never)")
	fs.StringVar(&c.Save, "save", "finetune-lora", "the adapter directory (PEFT's layout)")
	fs.IntVar(&c.SaveEvery, "save-every", 0, "also save the adapters every N steps (0: at the end only)")
	fs.StringVar(&c.Merge, "merge", "", "also write the merged model to this directory (Hugging Face's layout)")
	fs.StringVar(&c.Plots, "plots", "finetune-report", `directory for metrics.jsonl and loss.png ("": none)`)
	return c
}

// Check returns an error for flags out of range, before any work.
func (c Config) Check() error {
	switch {
	case c.Model == "":
		return fmt.Errorf("-model: want a model directory or a repository id")
	case c.Data == "":
		return fmt.Errorf("-data: want a text file")
	case c.Steps < 1 || c.Batch < 1 || c.Context < 2 || c.Progress < 0 || c.SaveEvery < 0:
		return fmt.Errorf("-steps %d, -batch %d, -context %d, -progress %d, -save-every %d: want ≥ 1, ≥ 1, ≥ 2, ≥ 0 and ≥ 0", c.Steps, c.Batch, c.Context, c.Progress, c.SaveEvery)
	case !(c.LR > 0) || math.IsInf(c.LR, 0) || !(c.WD >= 0) || math.IsInf(c.WD, 0):
		return fmt.Errorf("-lr %v, -wd %v: want a finite rate > 0 and a finite decay ≥ 0", c.LR, c.WD)
	case c.Save == "":
		return fmt.Errorf("-save: want a directory for the adapters")
	}
	if err := (lora.Config{Rank: c.Rank, Alpha: c.Alpha, Dropout: c.Dropout, Targets: []string{"x"}}).Check(); err != nil {
		return fmt.Errorf("-rank, -alpha, -dropout: %w", err)
	}
	if _, err := device.CheckNumel([]int{c.Batch, c.Context}); err != nil {
		return fmt.Errorf("-batch %d, -context %d: %w", c.Batch, c.Context, err)
	}
	return run.Writable(map[string]string{"-save": c.Save + "/" + lora.WeightsFile, "-merge": dirFile(c.Merge), "-plots": dirFile(c.Plots)})
}

// dirFile returns a file in dir, or "" for no dir (run.Writable skips
// it).
func dirFile(dir string) string {
	if dir == "" {
		return ""
	}
	return dir + "/metrics.jsonl"
}

// Run fine-tunes as cfg says, printing progress to w.
func Run(cfg Config, w io.Writer) (*Result, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	text, err := os.ReadFile(cfg.Data)
	if err != nil {
		return nil, fmt.Errorf("-data: %w", err)
	}
	if cfg.Download {
		if _, err := hf.Download(cfg.Model, true); err != nil {
			return nil, err
		}
	}
	dev, err := device.Open(cfg.Device)
	if err != nil {
		return nil, err
	}
	defer dev.Close()
	m, err := models.LoadWith(cfg.Model, dev, device.Float32, report.Loading(os.Stderr, "loading "+cfg.Model))
	if err != nil {
		return nil, err
	}
	defer m.Release()
	if m.Tokenizer == nil {
		return nil, fmt.Errorf("%s has no tokenizer.json", m.Dir)
	}
	tokens := m.Tokenizer.EncodeText(string(text))
	ctx := min(cfg.Context, m.Context())
	split := len(tokens) * 9 / 10
	train := loader.Windows{Tokens: tokens[:split], Context: ctx, Batch: cfg.Batch, Seed: cfg.Seed}
	val := loader.Windows{Tokens: tokens[split:], Context: min(ctx, max(1, len(tokens)-split-1)), Batch: cfg.Batch, Seed: cfg.Seed + 1}
	if err := train.Check(); err != nil {
		return nil, fmt.Errorf("-data %s: %d tokens: %w", cfg.Data, len(tokens), err)
	}
	if err := val.Check(); err != nil {
		return nil, fmt.Errorf("-data %s: %d tokens, the last tenth for validation: %w", cfg.Data, len(tokens), err)
	}
	targets := strings.Split(cfg.Targets, ",")
	if cfg.Targets == "" {
		targets = []string{"q_proj", "v_proj"}
		if _, ok := m.Modules()["transformer.h.0.attn.c_attn"]; ok {
			targets = []string{"c_attn"}
		}
	}
	set, err := lora.Attach(m, lora.Config{Rank: cfg.Rank, Alpha: cfg.Alpha, Dropout: cfg.Dropout, Targets: targets, Seed: cfg.Seed})
	if err != nil {
		return nil, err
	}
	var rec *report.Recorder
	if cfg.Plots != "" {
		if rec, err = report.New(cfg.Plots, nil); err != nil {
			return nil, err
		}
		defer rec.Close()
	}
	fmt.Fprintf(w, "%s on %s: %d tokens (%d for validation), LoRA rank %d on %v (%d adapters)\n", m.Dir, dev, len(tokens), len(tokens)-split, cfg.Rank, targets, len(set.Adapters))
	res := &Result{}
	loss := func(x, y *tensor.Tensor) *autograd.Var {
		n := x.Len()
		logits := ops.Reshape(m.Forward(autograd.Leaf(x, false)), n, m.VocabSize())
		return ops.CrossEntropyLoss(logits, autograd.Leaf(y.Reshape(n), false), ops.MeanReduction)
	}
	validate := func() (float64, error) {
		set.Train(false)
		defer set.Train(true)
		b := val.Upload(dev, val.Starts(0))
		if b.Err != nil {
			return 0, b.Err
		}
		defer b.X.Release()
		defer b.Y.Release()
		var v []float64
		var read error
		if err := tensor.Maybe(func() { v, read = loss(b.X, b.Y).Value().Float64s() }); err != nil {
			return 0, err
		}
		if read != nil {
			return 0, read
		}
		return v[0], nil
	}
	if res.Val0, err = validate(); err != nil {
		return nil, err
	}
	opt := optim.AdamW(set.Params(), cfg.LR, cfg.WD)
	defer opt.Release()
	for step, b := range train.Steps(dev, 0, cfg.Steps) {
		if b.Err != nil {
			return nil, b.Err
		}
		var v []float64
		var read error
		err := tensor.Maybe(func() {
			opt.ZeroGrad()
			l := loss(b.X, b.Y)
			if v, read = l.Value().Float64s(); read == nil {
				read = l.Backward()
			}
			if read == nil {
				opt.Step()
			}
		})
		b.X.Release()
		b.Y.Release()
		if err == nil {
			err = read
		}
		if err != nil {
			return nil, fmt.Errorf("step %d: %w", step+1, err)
		}
		res.Losses = append(res.Losses, v[0])
		if rec != nil {
			if err := rec.AddSteps(report.Step{Step: step + 1, Loss: v[0]}); err != nil {
				return nil, err
			}
		}
		if cfg.Progress > 0 && (step+1)%cfg.Progress == 0 {
			fmt.Fprintf(w, "step %d: loss %.4f\n", step+1, v[0])
		}
		if cfg.SaveEvery > 0 && (step+1)%cfg.SaveEvery == 0 && step+1 < cfg.Steps {
			if err := set.Save(cfg.Save, m.Dir); err != nil {
				return nil, err
			}
		}
	}
	if res.ValEnd, err = validate(); err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "validation loss %.4f → %.4f\n", res.Val0, res.ValEnd)
	if err := set.Save(cfg.Save, m.Dir); err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "adapters: %s\n", cfg.Save)
	if rec != nil {
		if _, err := rec.Plot(); err != nil {
			return nil, err
		}
	}
	if cfg.Merge != "" {
		if err := set.Merge(); err != nil {
			return nil, err
		}
		if err := hf.Save(cfg.Merge, m.Dir, m.StateDict()); err != nil {
			return nil, err
		}
		fmt.Fprintf(w, "merged model: %s\n", cfg.Merge)
	}
	return res, nil
}
