// Command gpt trains a small decoder-only transformer (package model) to
// write Go, on the Go standard library's own source (package gosrc), one
// byte a token: AdamW with linear warmup and cosine decay, gradient
// clipping by global norm, optional dropout and mixed precision,
// checkpoints with -resume, the validation loss on held-out files, and
// sampling with a key-value cache (-sample).
package main

import (
	"flag"
	"fmt"
	"image"
	"io"
	"log"
	"math"
	"os"
	"time"

	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/dataset/gosrc"
	"github.com/extensor/extensor/dataset/loader"
	"github.com/extensor/extensor/device"
	_ "github.com/extensor/extensor/device/webgpu" // registers "webgpu"
	"github.com/extensor/extensor/examples/gpt/model"
	"github.com/extensor/extensor/examples/internal/dashboard"
	"github.com/extensor/extensor/examples/internal/parallel"
	"github.com/extensor/extensor/examples/internal/report"
	"github.com/extensor/extensor/examples/internal/run"
	"github.com/extensor/extensor/examples/internal/window"
	"github.com/extensor/extensor/optim"
	"github.com/extensor/extensor/tensor"
)

// Config sets up a run.
type Config struct {
	Device string // "auto", "webgpu" or "cpu"
	Model  model.Config
	Batch  int    // windows a step
	Steps  int    // the last step (a resumed run goes on to it)
	Seed   uint64 // initialisation, the windows, dropout and sampling

	LR, MinLR   float64 // the peak learning rate and the cosine's floor
	Warmup      int     // steps of linear warmup
	DecaySteps  int     // the step the cosine reaches MinLR at (0: Steps)
	WeightDecay float64 // AdamW's, on every parameter
	Clip        float64 // the gradients' global norm limit (0: none)
	AMP         bool    // float16 blocks, float32 master weights, loss scaling
	// DDP trains data-parallel over the ranks an MPI launcher started
	// (package dist): Batch is the global batch, split across the ranks;
	// rank 0 prints, samples and saves.
	DDP bool

	EvalEvery   int // measure the validation loss every EvalEvery steps, and at the end
	EvalBatches int // batches of validation windows measured (fixed windows)
	Progress    int // print a line every Progress steps (0: never)

	Save      string // checkpoint path ("": none)
	SaveEvery int    // also save every SaveEvery steps (0: at the end only)
	Resume    string // start from this checkpoint
	Plots     string // directory for loss.png, metrics and the final sample ("": none)

	Prompt      string  // sample after training from this prompt ("": no sample)
	Tokens      int     // tokens to sample
	Temperature float64 // sampling temperature (0: greedy)
	TopK        int     // sample among the TopK most likely (0: all)
	NoCache     bool    // sample without the key-value cache

	// Snapshot, when set, is a PNG file of the dashboard drawn by the
	// training device at the end of training, and every SnapshotEvery
	// steps if positive.
	Snapshot      string
	SnapshotEvery int
	// Window, when set, shows the dashboard live and gives the device to
	// train on (the one presenting on it); Device is then ignored.
	Window Screen
	// OnFrame, if set, is given each dashboard frame, read back from the
	// device, and the state it shows (for tests).
	OnFrame func(img *image.RGBA, s dashboard.LM)

	GoRoot string    // the corpus's Go root ("": gosrc.Root())
	Bar    io.Writer // a progress bar here when it is a terminal

	corpus *gosrc.Corpus        // the corpus, when loaded already
	dev    device.Device        // the device to run on, when opened already (not closed)
	onStep func(step int)       // called after each step (tests)
	onDone func(net *model.GPT) // called with the trained model (tests)
}

// Result is what a run measured.
type Result struct {
	Losses    []float64 // the training loss of each step run, from the first
	First     int       // the first step run (1, or after the resumed one)
	Evals     []Eval    // validation losses
	TokensSec float64   // training tokens a second, evaluation excluded
	Sample    string    // the final sample
}

// Eval is a validation measurement.
type Eval struct {
	Step int
	Loss float64
}

func main() {
	c := flags(flag.CommandLine)
	flag.Parse()
	log.SetFlags(0)
	if err := run.NoArgs(flag.CommandLine); err != nil {
		log.Fatalf("gpt: %v", err)
	}
	cfg, sample, live, export := c.cfg, c.sample, c.live, c.export
	cfg.Bar = os.Stderr
	var err error
	switch {
	case *export != "":
		err = Export(cfg, *export)
	case *sample != "":
		cfg.Prompt = *sample
		err = run.Caught(func() error { return Sample(cfg, os.Stdout) })
	case *live:
		err = watch(cfg)
	default:
		err = train(cfg)
	}
	if err != nil {
		log.Fatalf("gpt: %v", err)
	}
}

// command is what the command line sets: the configuration, and the
// flags that choose what to do.
type command struct {
	cfg            Config
	sample, export *string
	live           *bool
}

// flags defines the command's flags on fs, parsed into the returned
// command.
func flags(fs *flag.FlagSet) *command {
	c := &command{}
	fs.StringVar(&c.cfg.Device, "device", "auto", `device: "auto", "webgpu" or "cpu"`)
	fs.IntVar(&c.cfg.Model.Context, "context", 128, "context length (tokens)")
	fs.IntVar(&c.cfg.Model.Layers, "layers", 4, "transformer blocks")
	fs.IntVar(&c.cfg.Model.Heads, "heads", 4, "attention heads")
	fs.IntVar(&c.cfg.Model.Width, "width", 128, "features")
	fs.Float64Var(&c.cfg.Model.Dropout, "dropout", 0, "dropout probability")
	fs.IntVar(&c.cfg.Batch, "batch", 8, "windows a step")
	fs.IntVar(&c.cfg.Steps, "steps", 1200, "training steps")
	fs.Uint64Var(&c.cfg.Seed, "seed", 1, "random seed")
	fs.Float64Var(&c.cfg.LR, "lr", 2e-3, "peak learning rate")
	fs.Float64Var(&c.cfg.MinLR, "min-lr", 2e-4, "the cosine decay's final learning rate")
	fs.IntVar(&c.cfg.Warmup, "warmup", 100, "warmup steps")
	fs.IntVar(&c.cfg.DecaySteps, "decay-steps", 0, "the step the cosine decay ends at (0: -steps)")
	fs.Float64Var(&c.cfg.WeightDecay, "wd", 0.01, "AdamW weight decay")
	fs.Float64Var(&c.cfg.Clip, "clip", 1, "clip the gradients' global norm to this (0: no clipping)")
	fs.BoolVar(&c.cfg.AMP, "amp", false, "mixed precision: float16 blocks, float32 master weights, dynamic loss scaling")
	fs.BoolVar(&c.cfg.DDP, "ddp", false, "data-parallel over the ranks mpirun started: -batch is split across them")
	fs.IntVar(&c.cfg.EvalEvery, "eval-every", 100, "validation loss every N steps")
	fs.IntVar(&c.cfg.EvalBatches, "eval-batches", 8, "validation batches measured")
	fs.IntVar(&c.cfg.Progress, "progress", 100, "print progress every N steps (0: never)")
	fs.StringVar(&c.cfg.Save, "save", "gpt.safetensors", `checkpoint path ("": none)`)
	fs.IntVar(&c.cfg.SaveEvery, "save-every", 500, "save a checkpoint every N steps too (0: at the end only)")
	fs.StringVar(&c.cfg.Resume, "resume", "", "checkpoint to resume from (with -sample: to sample from)")
	fs.StringVar(&c.cfg.Plots, "plots", "gpt-report", `directory for loss.png, metrics.tsv and sample.txt ("": none)`)
	fs.IntVar(&c.cfg.Tokens, "tokens", 400, "tokens to sample")
	fs.Float64Var(&c.cfg.Temperature, "temperature", 0.8, "sampling temperature (0: greedy)")
	fs.IntVar(&c.cfg.TopK, "top-k", 0, "sample among the K most likely tokens (0: all)")
	fs.BoolVar(&c.cfg.NoCache, "no-cache", false, "sample without the key-value cache (each token reruns the whole window)")
	fs.StringVar(&c.cfg.Snapshot, "snapshot", "", "write the dashboard, drawn on the training device, to this PNG at the end")
	fs.IntVar(&c.cfg.SnapshotEvery, "snapshot-every", 0, "also rewrite the snapshot every N steps (0: only at the end)")
	c.sample = fs.String("sample", "", "only sample: generate from this prompt with the -resume checkpoint (else the -save one), no training")
	c.live = fs.Bool("window", false, "watch training in a window drawn by the training GPU (Space pauses, Escape stops with a checkpoint)")
	c.export = fs.String("export", "", "write the corpus, the windows and the configuration for torch_gpt.py to this directory, and exit")
	c.cfg.Model.Vocab = 256 // bytes
	c.cfg.Prompt = "func main() {"
	return c
}

// train runs Train, printing to standard output (run.Caught).
func train(cfg Config) error {
	return run.Caught(func() error {
		_, err := Train(cfg, os.Stdout)
		return err
	})
}

// watch trains with the live window: the window first, on the main
// thread, then the device that presents on it; training runs on another
// goroutine.
func watch(cfg Config) error {
	if err := cfg.Check(); err != nil {
		return err
	}
	if cfg.DDP {
		return fmt.Errorf("-ddp with -window: the window shows one process's training")
	}
	return window.Train("extensor: a transformer learns to write Go", dashboard.Width, dashboard.Height, func(win *window.Window) error {
		cfg.Window = win
		return train(cfg)
	})
}

// Check returns an error for a configuration that cannot run: sizes and
// counts out of range, rates not finite, a checkpoint to resume from that
// does not load or holds another model, a checkpoint or snapshot that
// cannot be written. It makes their directories (run.Writable).
func (cfg Config) Check() error {
	if err := cfg.Model.Check(); err != nil {
		return err
	}
	switch {
	case cfg.Batch < 1 || cfg.Steps < 0 || cfg.Warmup < 0 || cfg.DecaySteps < 0 || cfg.EvalEvery < 1 || cfg.EvalBatches < 1 || cfg.Progress < 0 || cfg.SaveEvery < 0 || cfg.Tokens < 0 || cfg.TopK < 0:
		return fmt.Errorf("-batch %d, -steps %d, -warmup %d, -eval-every %d, -eval-batches %d, -progress %d, -save-every %d, -tokens %d, -top-k %d: want batch, eval-every and eval-batches ≥ 1, the rest ≥ 0",
			cfg.Batch, cfg.Steps, cfg.Warmup, cfg.EvalEvery, cfg.EvalBatches, cfg.Progress, cfg.SaveEvery, cfg.Tokens, cfg.TopK)
	case cfg.Batch > maxStepTokens/cfg.Model.Context:
		return fmt.Errorf("-batch %d of windows of %d tokens: want at most %d tokens a step", cfg.Batch, cfg.Model.Context, maxStepTokens)
	case !finite(cfg.LR) || !finite(cfg.MinLR) || !finite(cfg.WeightDecay) || !finite(cfg.Clip) || !finite(cfg.Temperature) || cfg.LR <= 0:
		return fmt.Errorf("-lr %v, -min-lr %v, -wd %v, -clip %v, -temperature %v: want finite values ≥ 0, the learning rate > 0", cfg.LR, cfg.MinLR, cfg.WeightDecay, cfg.Clip, cfg.Temperature)
	case cfg.DDP && (cfg.Snapshot != "" || cfg.Window != nil):
		return fmt.Errorf("-ddp with -snapshot or -window: the dashboard shows one process's training")
	}
	if cfg.Resume != "" {
		if _, _, err := readCheckpoint(cfg.Resume, cfg.Model); err != nil {
			return fmt.Errorf("-resume: %w", err)
		}
	}
	return run.Writable(map[string]string{"-save": cfg.Save, "-snapshot": cfg.Snapshot})
}

// maxStepTokens bounds the tokens of a training step, batch × context:
// more than a step's activations fit in any device's memory.
const maxStepTokens = 1 << 24

func finite(v float64) bool { return v >= 0 && !math.IsInf(v, 0) }

// Schedule is the learning rate of each step from 0: linear warmup to LR
// over Warmup steps, then cosine decay to MinLR at DecaySteps (or Steps).
func (cfg Config) Schedule() optim.Schedule {
	end := cfg.DecaySteps
	if end == 0 {
		end = cfg.Steps
	}
	return func(step int) float64 {
		if step < cfg.Warmup {
			return cfg.LR * float64(step+1) / float64(cfg.Warmup)
		}
		t := float64(step-cfg.Warmup) / float64(max(1, end-cfg.Warmup))
		return cfg.MinLR + (cfg.LR-cfg.MinLR)*(1+math.Cos(math.Pi*min(t, 1)))/2
	}
}

// open loads the corpus and opens the device unless they are already;
// the caller closes a device it opened (close reports whether).
func (cfg *Config) open(w io.Writer) (close bool, err error) {
	if cfg.corpus == nil {
		c, err := gosrc.Load(orRoot(cfg.GoRoot))
		if err != nil {
			return false, err
		}
		cfg.corpus = c
		fmt.Fprintf(w, "corpus: %s, %d files: %.1f MB training, %.1f MB validation (%d files)\n", c.Root, c.Files, float64(len(c.Train))/1e6, float64(len(c.Val))/1e6, c.ValFiles)
	}
	if cfg.dev == nil && cfg.Window != nil {
		cfg.dev = cfg.Window.Device()
		fmt.Fprintf(w, "presenting on the window: ")
	}
	if cfg.dev == nil {
		d, err := device.Open(cfg.Device)
		if err != nil {
			return false, err
		}
		cfg.dev, close = d, true
	}
	fmt.Fprintf(w, "device: %s\n", cfg.dev)
	return close, nil
}

func orRoot(r string) string {
	if r == "" {
		return gosrc.Root()
	}
	return r
}

// windows returns the training and validation windows: job's parts of
// them.
func (cfg Config) windows(job *parallel.Run) (train, val *loader.Windows) {
	train = &loader.Windows{Tokens: gosrc.Tokens(cfg.corpus.Train), Context: cfg.Model.Context, Batch: cfg.Batch, Seed: cfg.Seed, Rank: job.Rank(), Ranks: job.Size()}
	val = &loader.Windows{Tokens: gosrc.Tokens(cfg.corpus.Val), Context: cfg.Model.Context, Batch: cfg.Batch, Seed: valSeed, Rank: job.Rank(), Ranks: job.Size()}
	return train, val
}

// valSeed draws the validation windows: the same in every run.
const valSeed = 0x5eed

// Train trains as cfg says, printing to w.
func Train(cfg Config, w io.Writer) (res *Result, err error) {
	job, err := parallel.Open(cfg.DDP)
	if err != nil {
		return nil, err
	}
	defer job.End(&err) // with other ranks, an error ends the job
	resume := cfg.Resume
	if !job.Lead() { // rank 0 alone reads and writes files and prints
		w, cfg.Bar, cfg.Resume, cfg.Plots, cfg.Prompt = io.Discard, nil, "", "", ""
	}
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	if job.Size() > cfg.Batch {
		return nil, fmt.Errorf("-batch %d over %d ranks: want at least one window a rank", cfg.Batch, job.Size())
	}
	closeDev, err := cfg.open(w)
	if err != nil {
		return nil, err
	}
	dev := cfg.dev
	if closeDev {
		job.Own(dev) // closed after the reductions end
	}
	net, err := model.New(dev, cfg.Model, cfg.Seed)
	if err != nil {
		return nil, err
	}
	net.Half = cfg.AMP
	opt := optim.AdamW(net.Params(), cfg.LR, cfg.WeightDecay)
	defer opt.Release()
	var scaler *optim.Scaler
	if cfg.AMP {
		scaler = optim.NewScaler()
		defer scaler.Release()
	}
	first := 1
	if cfg.Resume != "" {
		steps, err := load(cfg.Resume, net, opt)
		if err != nil {
			return nil, err
		}
		first = steps + 1
	}
	if job.Size() > 1 {
		all, err := run.State(net, opt)
		if err != nil {
			return nil, err
		}
		if err := job.Begin(all, opt); err != nil {
			return nil, err
		}
		first = opt.Steps() + 1
		fmt.Fprintf(w, "ddp: %d ranks, the batch of %d windows split across them\n", job.Size(), cfg.Batch)
	}
	if resume != "" {
		fmt.Fprintf(w, "resumed from %s after step %d\n", resume, first-1)
	}
	train, val := cfg.windows(job)
	res = &Result{First: first}
	sched := cfg.Schedule()
	bar := newBar(cfg.Bar, cfg.Steps-first+1)
	var trainTime time.Duration
	start := time.Now()
	var pending report.Pending
	var shares []float64 // each pending loss's share of its step's batch
	flush := func() error {
		v, err := pending.Read()
		if err != nil {
			return err
		}
		for i := range v {
			v[i] *= shares[i]
		}
		shares = shares[:0]
		v, err = job.Sum(v) // the global batch's mean losses
		res.Losses = append(res.Losses, v...)
		return err
	}
	view, err := newViewer(cfg, dev, gosrc.Tokens(cfg.corpus.Val))
	if err != nil {
		return nil, err
	}
	defer view.release()
	if first == 1 { // the untrained model's loss, where the curves start
		v, err := evaluate(net, val, cfg.EvalBatches, dev, job)
		if err != nil {
			return nil, err
		}
		res.Evals = append(res.Evals, Eval{Step: 0, Loss: v})
	}
	start = time.Now()
	for s, b := range train.Steps(dev, first-1, cfg.Steps) {
		step := s + 1
		if b.Err != nil {
			return nil, b.Err
		}
		opt.Hyper.LR = sched(step - 1)
		job.Share(b.Size, b.Global)
		loss, err := trainStep(net, opt, scaler, cfg.Clip, b.X, b.Y, job.Reduce)
		b.X.Release()
		b.Y.Release()
		if err != nil {
			return nil, err
		}
		pending, shares = append(pending, loss), append(shares, float64(b.Size)/float64(b.Global))
		if step == first {
			job.ResetStats() // the first step compiles kernels
		}
		if cfg.onStep != nil {
			cfg.onStep(step)
		}
		last := step == cfg.Steps
		eval := step%cfg.EvalEvery == 0 || last
		saving := cfg.Save != "" && (last || cfg.SaveEvery > 0 && step%cfg.SaveEvery == 0)
		closed := cfg.Window != nil && cfg.Window.Closed()
		if eval || saving || closed || cfg.Progress > 0 && step%cfg.Progress == 0 || view.due(step) {
			if err := flush(); err != nil {
				return nil, err
			}
			trainTime += time.Since(start)
			tokSec := float64((step-first+1)*cfg.Batch*cfg.Model.Context) / trainTime.Seconds()
			bar.set(step-first+1, res.Losses[len(res.Losses)-1], tokSec)
			if eval {
				v, err := evaluate(net, val, cfg.EvalBatches, dev, job)
				if err != nil {
					return nil, err
				}
				res.Evals = append(res.Evals, Eval{Step: step, Loss: v})
				if view.d != nil { // the dashboard's sample
					if view.sample, err = sample(net, dev, cfg, min(cfg.Tokens, viewTokens)); err != nil {
						return nil, err
					}
				}
			}
			if cfg.Progress > 0 && (step%cfg.Progress == 0 || last) {
				line := fmt.Sprintf("step %d: loss %.4f, lr %.2e, %.0f tokens/s", step, res.Losses[len(res.Losses)-1], opt.Hyper.LR, tokSec)
				if e := res.Evals; len(e) > 0 && e[len(e)-1].Step == step {
					line += fmt.Sprintf(", validation loss %.4f", e[len(e)-1].Loss)
				}
				bar.println(w, line)
			}
			if view.due(step) || eval && view.d != nil {
				if err := view.frame(net, res, step, last); err != nil {
					return nil, err
				}
			}
			if (saving || closed && cfg.Save != "") && job.Lead() {
				if err := save(cfg.Save, net, opt); err != nil {
					return nil, err
				}
			}
			if closed {
				bar.finish()
				if cfg.Save == "" {
					fmt.Fprintf(w, "window closed at step %d; no checkpoint (-save is empty)\n", step)
				} else {
					fmt.Fprintf(w, "window closed at step %d: wrote %s; -resume %s goes on from step %d\n", step, cfg.Save, cfg.Save, step+1)
				}
				return res, nil
			}
			if cfg.Window != nil {
				view.WaitWhilePaused() // pauses are not training time
			}
			start = time.Now()
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	bar.finish()
	if trainTime > 0 {
		res.TokensSec = float64(len(res.Losses)*cfg.Batch*cfg.Model.Context) / trainTime.Seconds()
	}
	if len(res.Evals) > 0 {
		e := res.Evals[len(res.Evals)-1]
		fmt.Fprintf(w, "step %d: validation loss %.4f nats a byte (%.3f bits), %.0f training tokens/s\n", e.Step, e.Loss, e.Loss/math.Ln2, res.TokensSec)
	}
	job.Report(w)
	if cfg.onDone != nil {
		cfg.onDone(net)
	}
	printProfile(w, dev)
	view.Report(w, trainTime)
	if cfg.Prompt != "" && cfg.Tokens > 0 {
		if res.Sample, err = sample(net, dev, cfg, cfg.Tokens); err != nil {
			return nil, err
		}
		fmt.Fprintf(w, "sample (temperature %g):\n%s\n", cfg.Temperature, res.Sample)
	}
	if cfg.Plots != "" && len(res.Losses) > 0 { // a resumed run past its last step has nothing to plot
		paths, err := writePlots(cfg.Plots, res)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(w, "plots: %v\n", paths)
	}
	return res, nil
}

// viewTokens is the length of the dashboard's samples, drawn at each
// validation.
const viewTokens = 200

// sample returns the prompt and n tokens the model draws after it.
func sample(net *model.GPT, dev device.Device, cfg Config, n int) (string, error) {
	if cfg.Prompt == "" || n == 0 {
		return "", nil
	}
	out, err := net.Generate(dev, tokensOf(cfg.Prompt), n, model.Sampling{Temperature: cfg.Temperature, TopK: cfg.TopK, Seed: cfg.Seed}, !cfg.NoCache)
	if err != nil {
		return "", err
	}
	return cfg.Prompt + string(bytesOf(out)), nil
}

// trainStep runs one step: the loss, its gradients, their reduction
// across ranks (reduce, which may be nil), clipping, the optimiser; it
// returns the loss, on the device.
func trainStep(net *model.GPT, opt *optim.Optimizer, scaler *optim.Scaler, clip float64, x, y *tensor.Tensor, reduce func() error) (*tensor.Tensor, error) {
	loss := net.Loss(autograd.Leaf(x, false), autograd.Leaf(y, false)).Retain()
	back := loss
	if scaler != nil {
		back = scaler.ScaleLoss(loss)
	}
	if err := back.Backward(); err != nil {
		return nil, err
	}
	if reduce != nil {
		if err := reduce(); err != nil {
			return nil, err
		}
	}
	if clip > 0 {
		if scaler != nil { // clip the unscaled gradients
			scaler.Unscale(opt)
		}
		optim.ClipGradNorm(net.Params(), clip).Release()
	}
	if scaler != nil {
		if err := scaler.Step(opt); err != nil {
			return nil, err
		}
	} else {
		opt.Step()
	}
	opt.ZeroGrad()
	return loss.Value(), nil
}

// evaluate returns the mean loss over the first n batches of val, in
// evaluation mode: each rank of job measures its part of each batch.
func evaluate(net *model.GPT, val *loader.Windows, n int, dev device.Device, job *parallel.Run) (float64, error) {
	net.Train(false)
	defer net.Train(true)
	sum := 0.0
	for i := range n {
		var v []float64
		var err error
		tensor.Tidy(func(s *tensor.Scope) *tensor.Tensor {
			b := val.Upload(dev, val.Part(val.Starts(i)))
			if b.Err != nil {
				err = b.Err
				return nil
			}
			x, y := autograd.Leaf(s.Track(b.X), false).NoGrad(), autograd.Leaf(s.Track(b.Y), false).NoGrad()
			v, err = net.Loss(x, y).Value().Float64s()
			return nil
		})
		if err != nil {
			return 0, err
		}
		sum += v[0] * float64(len(val.Part(val.Starts(i)))) / float64(val.Batch)
	}
	s, err := job.Sum([]float64{sum / float64(n)})
	if err != nil {
		return 0, err
	}
	return s[0], nil
}
