// Command cnn trains a convolutional network on Fashion-MNIST with the
// tape (autograd), the layers of package nn and a fused optimiser:
// Conv2d(1→32, 3×3) → ReLU → MaxPool(2) → Conv2d(32→64, 3×3) → ReLU →
// MaxPool(2) → Flatten → Linear(1600→128) → ReLU → Dropout(0.25) →
// Linear(128→10), batch 64, Adam (lr 1e-3) or SGD with momentum.
package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"image"
	"io"
	"log"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/checkpoint"
	"github.com/extensor/extensor/dataset/fashionmnist"
	"github.com/extensor/extensor/dataset/loader"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/examples/cnn/model"
	"github.com/extensor/extensor/examples/internal/dashboard"
	"github.com/extensor/extensor/examples/internal/parallel"
	"github.com/extensor/extensor/examples/internal/report"
	"github.com/extensor/extensor/examples/internal/run"
	"github.com/extensor/extensor/examples/internal/window"
	"github.com/extensor/extensor/nn"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/optim"
	"github.com/extensor/extensor/tensor"
)

// Config sets up a training run.
type Config struct {
	Device   string  // "auto", "webgpu" or "cpu"
	Data     string  // directory of the Fashion-MNIST IDX files
	Epochs   int     // passes over the training set
	Batch    int     // examples per step
	Opt      string  // "adam" or "sgd" (momentum 0.9)
	LR       float64 // learning rate
	Seed     uint64  // initialisation, dropout and shuffling
	Limit    int     // train on the first Limit examples only (0: all)
	Test     int     // test on the first Test examples only (0: all)
	Progress int     // print progress every Progress steps (0: never)
	// AMP trains in mixed precision: float16 activations and gradients,
	// float32 master weights, dynamic loss scaling (optim.Scaler).
	AMP bool
	// Dropout is the dropout layer's probability (-dropout: 0.25).
	Dropout float64
	// DDP trains data-parallel over the ranks an MPI launcher started
	// (package dist): Batch is the global batch, split across the ranks;
	// rank 0 prints, plots and saves.
	DDP    bool
	Save   string // write a checkpoint here after each epoch ("": none)
	Resume string // start from this checkpoint ("": from scratch)
	Plots  string // write the metrics log and plots into this directory ("": none)
	// PlotEvery, if positive, redraws the plots every PlotEvery steps too.
	PlotEvery int
	// Snapshot, when set, is a PNG file of the dashboard drawn by the
	// training device at the end of training, and every SnapshotEvery
	// steps if positive.
	Snapshot      string
	SnapshotEvery int
	// Window, when set, shows the dashboard live and gives the device to
	// train on (the one presenting on it); Device is then ignored.
	Window Screen
	Bar    io.Writer // a progress bar here when it is a terminal (nil: none)
	// OnFrame, if set, is given each dashboard frame, read back from the
	// device, and the state it shows (for tests).
	OnFrame func(img *image.RGBA, s dashboard.State)

	onLoss func(loss float64)      // called with each step's loss, as flushed (tests)
	onDone func(net nn.Sequential) // called with the trained network (tests)
	onPred func(pred []int32)      // called with each epoch's test predictions (tests)
}

// Screen is a live window for the dashboard (package window's Window).
type Screen = dashboard.Screen

// Epoch is what one epoch achieved (report.Epoch's TestAcc).
type Epoch = report.Epoch

func main() {
	cfg, live := flags(flag.CommandLine)
	flag.Parse()
	log.SetFlags(0)
	if err := run.NoArgs(flag.CommandLine); err != nil {
		log.Fatalf("cnn: %v", err)
	}
	cfg.Bar = os.Stderr
	if err := cfg.Check(); err != nil {
		log.Fatalf("cnn: %v", err)
	}
	if !*live {
		if err := train(*cfg); err != nil {
			log.Fatalf("cnn: %v", err)
		}
		return
	}
	if cfg.DDP {
		log.Fatalf("cnn: -ddp with -window: the window shows one process's training")
	}
	// The window first (on the main thread), then the device that presents
	// on it; training runs on another goroutine.
	err := window.Train("extensor: a CNN learns Fashion-MNIST", dashboard.Width, dashboard.Height, func(win *window.Window) error {
		cfg.Window = win
		return train(*cfg)
	})
	if err != nil {
		log.Fatalf("cnn: %v", err)
	}
}

// flags defines the command's flags on fs, parsed into the returned
// configuration and -window.
func flags(fs *flag.FlagSet) (cfg *Config, live *bool) {
	cfg = &Config{}
	fs.StringVar(&cfg.Device, "device", "auto", `device: "auto", "webgpu" or "cpu"`)
	fs.StringVar(&cfg.Data, "data", fashionmnist.DefaultDir, "directory of the Fashion-MNIST .gz files")
	fs.IntVar(&cfg.Epochs, "epochs", 3, "training epochs")
	fs.IntVar(&cfg.Batch, "batch", 64, "batch size")
	fs.StringVar(&cfg.Opt, "opt", "adam", `optimiser: "adam" or "sgd" (momentum 0.9)`)
	fs.BoolVar(&cfg.AMP, "amp", false, "mixed precision: float16 activations and gradients, float32 master weights, dynamic loss scaling")
	fs.Float64Var(&cfg.Dropout, "dropout", 0.25, "the dropout layer's probability")
	fs.BoolVar(&cfg.DDP, "ddp", false, "data-parallel over the ranks mpirun started: -batch is split across them")
	fs.Float64Var(&cfg.LR, "lr", 0, "learning rate (0: 1e-3 for adam, 0.01 for sgd)")
	fs.Uint64Var(&cfg.Seed, "seed", 1, "random seed")
	fs.IntVar(&cfg.Limit, "limit", 0, "train on the first N examples only (0: all)")
	fs.IntVar(&cfg.Test, "test", 0, "test on the first N examples only (0: all)")
	fs.IntVar(&cfg.Progress, "progress", 100, "print progress every N steps (0: never)")
	fs.StringVar(&cfg.Save, "save", "cnn.safetensors", `checkpoint written after each epoch ("": none)`)
	fs.StringVar(&cfg.Resume, "resume", "", "checkpoint to resume from")
	fs.StringVar(&cfg.Plots, "plots", "cnn-report", `directory for the metrics log and PNG plots ("": none)`)
	fs.StringVar(&cfg.Snapshot, "snapshot", "", "write the dashboard, drawn on the training device, to this PNG at the end")
	fs.IntVar(&cfg.SnapshotEvery, "snapshot-every", 0, "also rewrite the snapshot every N steps (0: only at the end)")
	fs.IntVar(&cfg.PlotEvery, "plot-every", 0, "also redraw the plots every N steps (0: only at the end)")
	live = fs.Bool("window", false, "watch training in a window drawn by the training GPU (Space pauses, Escape stops)")
	return cfg, live
}

// train runs Train, printing to standard output (run.Caught).
func train(cfg Config) error {
	return run.Caught(func() error {
		_, err := Train(cfg, os.Stdout)
		return err
	})
}

// Check returns an error for a configuration that cannot train: sizes
// and counts out of range, a learning rate that is negative or not
// finite, an unknown optimiser, a checkpoint to resume from that does not
// load or carries no sane epoch and step count, and a place to save a
// checkpoint or snapshot that cannot be written. Train checks it before
// it opens the device, so that no work is lost to a bad flag.
func (cfg Config) Check() error {
	switch {
	case cfg.Epochs < 1:
		return fmt.Errorf("-epochs %d; want ≥ 1", cfg.Epochs)
	case cfg.Batch < 1:
		return fmt.Errorf("-batch %d; want ≥ 1", cfg.Batch)
	case cfg.Opt != "adam" && cfg.Opt != "sgd":
		return fmt.Errorf("-opt %q; want adam or sgd", cfg.Opt)
	case !(cfg.LR >= 0) || math.IsInf(cfg.LR, 0):
		return fmt.Errorf("-lr %v; want a finite learning rate ≥ 0 (0: the optimiser's default)", cfg.LR)
	case cfg.Limit < 0 || cfg.Test < 0 || cfg.Progress < 0 || cfg.PlotEvery < 0 || cfg.SnapshotEvery < 0:
		return fmt.Errorf("-limit %d, -test %d, -progress %d, -plot-every %d, -snapshot-every %d; want counts ≥ 0", cfg.Limit, cfg.Test, cfg.Progress, cfg.PlotEvery, cfg.SnapshotEvery)
	case !(cfg.Dropout >= 0 && cfg.Dropout < 1):
		return fmt.Errorf("-dropout %v; want a probability 0 ≤ p < 1", cfg.Dropout)
	case cfg.DDP && (cfg.Snapshot != "" || cfg.Window != nil):
		return fmt.Errorf("-ddp with -snapshot or -window: the dashboard shows one process's training")
	}
	if cfg.Resume != "" {
		if _, _, _, err := readResume(cfg.Resume); err != nil {
			return err
		}
	}
	return run.Writable(map[string]string{"-save": cfg.Save, "-snapshot": cfg.Snapshot})
}

// Train trains the network as cfg says, printing to w, and returns what
// each epoch achieved.
func Train(cfg Config, w io.Writer) (_ []Epoch, err error) {
	job, err := parallel.Open(cfg.DDP)
	if err != nil {
		return nil, err
	}
	defer job.End(&err) // with other ranks, an error ends the job
	plotEvery := 0      // the steps that redraw the plots flush the losses on every rank
	if cfg.Plots != "" {
		plotEvery = cfg.PlotEvery
	}
	resumed := cfg.Resume
	if !job.Lead() { // rank 0 alone reads and writes files and prints
		w, cfg.Bar, cfg.Resume, cfg.Plots, cfg.Save = io.Discard, nil, "", "", ""
	}
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	if job.Size() > cfg.Batch {
		return nil, fmt.Errorf("-batch %d over %d ranks: want at least one example a rank", cfg.Batch, job.Size())
	}
	var dev device.Device
	var train, test *fashionmnist.Set
	if cfg.Window != nil {
		dev = cfg.Window.Device()
		fmt.Fprintf(w, "device: %s, presenting on the window\n", dev)
		train, test, err = run.Load(cfg.Data, cfg.Bar)
	} else {
		dev, train, test, err = run.Open(cfg.Device, cfg.Data, w, cfg.Bar)
		if err == nil {
			job.Own(dev) // closed after the reductions end
		}
	}
	if err != nil {
		return nil, err
	}
	if train.Rows != model.Side || train.Cols != model.Side || test.Rows != model.Side || test.Cols != model.Side {
		return nil, fmt.Errorf("%s: images of %d×%d (training) and %d×%d (test); the network takes %d×%d", cfg.Data, train.Rows, train.Cols, test.Rows, test.Cols, model.Side, model.Side)
	}
	net, err := model.New(dev, cfg.Seed)
	if err != nil {
		return nil, err
	}
	for _, l := range net {
		if d, ok := l.(*nn.DropoutLayer); ok {
			d.P = cfg.Dropout
		}
	}
	var opt *optim.Optimizer
	switch cfg.Opt {
	case "adam":
		opt = optim.Adam(net.Params(), or(cfg.LR, 1e-3))
	case "sgd":
		opt = optim.SGD(net.Params(), or(cfg.LR, 0.01), device.StepParams{Momentum: 0.9})
	default:
		return nil, fmt.Errorf("unknown optimiser %q; want adam or sgd", cfg.Opt)
	}
	defer opt.Release()
	var scaler *optim.Scaler
	if cfg.AMP {
		scaler = optim.NewScaler()
		defer scaler.Release()
	}
	first := 1
	if cfg.Resume != "" {
		if first, err = resume(cfg.Resume, net, opt); err != nil {
			return nil, err
		}
	}
	if job.Size() > 1 { // rank 0's parameters, optimiser state and epoch on every rank
		all, err := run.State(net, opt)
		if err != nil {
			return nil, err
		}
		if err := job.Begin(all, opt); err != nil {
			return nil, err
		}
		if first, err = job.Comm.BroadcastInt(first, 0); err != nil {
			return nil, err
		}
		fmt.Fprintf(w, "ddp: %d ranks, the batch of %d examples split across them\n", job.Size(), cfg.Batch)
	}
	if resumed != "" {
		fmt.Fprintf(w, "resumed from %s after epoch %d (%d steps)\n", resumed, first-1, opt.Steps())
	}

	data := loader.New(train.Images, train.Labels, train.Features(), cfg.Batch, cfg.Seed)
	data.Limit, data.Shape, data.Half = cfg.Limit, []int{1, train.Rows, train.Cols}, cfg.AMP
	data.Rank, data.Ranks = job.Rank(), job.Size()
	rec, err := report.New(cfg.Plots, fashionmnist.Classes)
	if err != nil {
		return nil, err
	}
	defer rec.Close()
	n, steps := data.Len(), data.Steps()
	view := &viewer{Pacer: dashboard.Pacer{Snapshot: cfg.Snapshot, Every: cfg.SnapshotEvery, Win: cfg.Window}, onFrame: cfg.OnFrame}
	if cfg.Snapshot != "" || cfg.Window != nil {
		if view.b, err = newDashboard(dev, net, test); err != nil {
			return nil, err
		}
		defer view.release()
	}
	var trainTime time.Duration
	var stepPeak uint64 // the most device memory training steps held
	for e := first; e <= cfg.Epochs; e++ {
		net.Train(true)
		if r, ok := dev.(interface{ ResetPeak() }); ok {
			r.ResetPeak() // from here the peak is the training steps'
		}
		start := time.Now()
		bar := report.NewProgress(cfg.Bar, e, steps)
		var pending report.Pending
		var sizes, globals []int
		sum, last := 0.0, 0.0
		done := 0
		// flush reads the pending losses back in one readback, and
		// reduces them to the global batches' across the ranks.
		flush := func() error {
			v, err := pending.Read()
			if err != nil {
				return err
			}
			for i := range v {
				v[i] *= float64(sizes[i]) / float64(globals[i])
			}
			if v, err = job.Sum(v); err != nil {
				return err
			}
			for i := range v {
				if err != nil {
					break
				}
				sum += v[i] * float64(globals[i]) / float64(n)
				last = v[i]
				if cfg.onLoss != nil {
					cfg.onLoss(v[i])
				}
				err = rec.AddSteps(report.Step{Epoch: e, Step: opt.Steps() - len(v) + i + 1, Loss: v[i]})
			}
			sizes, globals = sizes[:0], globals[:0]
			return err
		}
		for s, b := range data.Epoch(dev) {
			if b.Err != nil {
				return nil, b.Err
			}
			job.Share(b.Size, b.Global)
			loss, err := model.StepReduced(net, opt, scaler, b.X, b.Y, job.Reduce)
			b.X.Release()
			b.Y.Release()
			if err != nil {
				return nil, err
			}
			pending, sizes, globals = append(pending, loss), append(sizes, b.Size), append(globals, b.Global)
			if e == first && s == 0 {
				job.ResetStats() // the first step compiles kernels
			}
			done = s + 1
			if view.due(opt.Steps()) {
				if err := flush(); err != nil {
					return nil, err
				}
				if err := view.frame(rec, e, net, false); err != nil {
					return nil, err
				}
			}
			if cfg.Window != nil {
				start = start.Add(view.WaitWhilePaused()) // pauses are not training time
				if cfg.Window.Closed() {
					if err := flush(); err != nil {
						return nil, err
					}
					return rec.Epochs, stopEarly(cfg, w, net, opt, e, done)
				}
			}
			if plotEvery > 0 && opt.Steps()%plotEvery == 0 {
				if err := flush(); err != nil {
					return nil, err
				}
				if _, err := rec.Plot(); cfg.Plots != "" && err != nil {
					return nil, err
				}
			}
			if cfg.Progress > 0 && done%cfg.Progress == 0 {
				if err := flush(); err != nil {
					return nil, err
				}
				bar.Set(e, done, last)
			}
		}
		if err := flush(); err != nil {
			return nil, err
		}
		bar.Finish()
		if peak, ok := device.PeakMemory(dev); ok {
			stepPeak = max(stepPeak, peak)
		}
		trainTime += time.Since(start)
		ms := time.Since(start).Seconds() * 1e3 / float64(steps)
		trainAcc, _, err := accuracy(dev, net, train, cmp.Or(cfg.Test, trainEval), job)
		if err != nil {
			return nil, err
		}
		testAcc, pred, err := accuracy(dev, net, test, cfg.Test, job)
		if err != nil {
			return nil, err
		}
		if cfg.onPred != nil {
			cfg.onPred(pred)
		}
		ep := Epoch{Epoch: e, Loss: sum, TrainAcc: trainAcc, TestAcc: testAcc, StepMS: ms}
		if err := rec.AddEpoch(ep); err != nil {
			return nil, err
		}
		fmt.Fprintf(w, "epoch %d: loss %.4f, train accuracy %.2f%%, test accuracy %.2f%%, %.1f ms/step\n", e, sum, 100*trainAcc, 100*testAcc, ms)
		if cfg.Save != "" {
			if err := save(cfg.Save, net, opt, e); err != nil {
				return nil, err
			}
		}
		if view.b != nil {
			if err := view.frame(rec, e, net, e == cfg.Epochs); err != nil {
				return nil, err
			}
			if e == cfg.Epochs {
				view.Report(w, trainTime)
			}
		}
		if e == cfg.Epochs {
			mode := "float32"
			if scaler != nil {
				scale, skipped, err := scaler.Stats()
				if err != nil {
					return nil, err
				}
				mode = fmt.Sprintf("mixed precision (loss scale %g, %d steps skipped)", scale, skipped)
			}
			if _, ok := device.PeakMemory(dev); ok {
				fmt.Fprintf(w, "%s: peak device memory of the training steps %.1f MiB, %.1f ms/step\n", mode, float64(stepPeak)/(1<<20), trainTime.Seconds()*1e3/float64(steps*(cfg.Epochs-first+1)))
			}
		}
		if e == cfg.Epochs {
			job.Report(w)
			if cfg.onDone != nil {
				cfg.onDone(net)
			}
		}
		if e == cfg.Epochs && cfg.Plots != "" {
			if err := rec.SetConfusion(test.Labels[:len(pred)], pred); err != nil {
				return nil, err
			}
			paths, err := rec.Plot()
			if err != nil {
				return nil, err
			}
			fmt.Fprintf(w, "plots: %s\n", strings.Join(paths, ", "))
		}
	}
	return rec.Epochs, nil
}

// board is the dashboard of a run, with the test images it shows.
type board struct {
	*dashboard.Dashboard
	images *tensor.Tensor // the first dashboard.Shown test images, on the device
	labels []int32
}

func newDashboard(dev device.Device, net nn.Sequential, test *fashionmnist.Set) (*board, error) {
	d, err := dashboard.New(dev)
	if err != nil {
		return nil, err
	}
	n := min(dashboard.Shown, test.N)
	if n == 0 {
		d.Release()
		return nil, errors.New("the dashboard shows test images, and the test set has none")
	}
	x, err := tensor.FromFloat32(dev, test.Images[:n*test.Features()], n, 1, test.Rows, test.Cols)
	if err != nil {
		d.Release()
		return nil, err
	}
	return &board{Dashboard: d, images: x, labels: test.Labels[:n]}, nil
}

func (b *board) release() {
	b.Release()
	b.images.Release()
}

// draw draws a frame: the metrics so far, the network's predictions for
// the test images now, and its first convolution's filters.
func (b *board) draw(rec *report.Recorder, epoch int, net nn.Sequential) (dashboard.State, error) {
	var pred []int32
	var err error
	net.Train(false)
	logits := net.Forward(autograd.Leaf(b.images, false).NoGrad()).Value()
	am := ops.ArgMaxAxis(logits, 1, false)
	pred, err = am.Int32s()
	logits.Release()
	am.Release()
	net.Train(true)
	if err != nil {
		return dashboard.State{}, err
	}
	losses := make([]float64, len(rec.Steps))
	for i, s := range rec.Steps {
		losses[i] = s.Loss
	}
	acc := make([]float64, len(rec.Epochs))
	for i, e := range rec.Epochs {
		acc[i] = e.TestAcc
	}
	title := fmt.Sprintf("extensor CNN, Fashion-MNIST: epoch %d, step %d", epoch, len(losses))
	if n := len(losses); n > 0 {
		title += fmt.Sprintf(", loss %.3f", losses[n-1])
	}
	s := dashboard.State{Title: title, Epoch: epoch, Losses: losses, TestAcc: acc, Images: b.images, Pred: pred,
		Labels: b.labels, Classes: fashionmnist.Classes, Filters: net[0].Params()[0].Value(), FilterShape: [2]int{3, 3}}
	return s, b.Draw(s)
}

// trainEval is how many training examples the train accuracy is measured
// on, in evaluation mode after each epoch (unless Config.Test is set).
const trainEval = 10000

// save writes the network's parameters (PyTorch's state_dict names), the
// optimiser's state ("optim.<name>.<m|v|momentum>") and the epoch and
// step count (metadata) to path.
func save(path string, net nn.Sequential, opt *optim.Optimizer, epoch int) error {
	all, err := run.State(net, opt)
	if err != nil {
		return err
	}
	return checkpoint.Save(path, all, map[string]string{"epoch": strconv.Itoa(epoch), "steps": strconv.Itoa(opt.Steps())})
}

// readResume reads a checkpoint that save wrote and its epoch and step
// count, which must lie in [0, optim.MaxSteps].
func readResume(path string) (f *checkpoint.File, epoch, steps int, err error) {
	if f, err = checkpoint.Read(path); err != nil {
		return nil, 0, 0, err
	}
	epoch, err1 := strconv.Atoi(f.Metadata["epoch"])
	steps, err2 := strconv.Atoi(f.Metadata["steps"])
	if err := errors.Join(err1, err2); err != nil {
		return nil, 0, 0, fmt.Errorf("%s: no epoch and step count in its metadata: %w", path, err)
	}
	if epoch < 0 || steps < 0 || epoch > optim.MaxSteps || steps > optim.MaxSteps {
		return nil, 0, 0, fmt.Errorf("%s: epoch %d and step count %d in its metadata; want counts from 0 to %d", path, epoch, steps, optim.MaxSteps)
	}
	return f, epoch, steps, nil
}

// resume loads a checkpoint that save wrote into net and opt and returns
// the epoch to continue from.
func resume(path string, net nn.Sequential, opt *optim.Optimizer) (int, error) {
	f, epoch, steps, err := readResume(path)
	if err != nil {
		return 0, err
	}
	all, err := run.State(net, opt)
	if err != nil {
		return 0, err
	}
	if err := f.LoadInto(all); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	opt.SetSteps(steps)
	return epoch + 1, nil
}

func or(v, def float64) float64 {
	if v == 0 {
		return def
	}
	return v
}

// accuracy returns the share of the first limit (0: all) examples of set
// that the model classifies right, in evaluation mode, and its
// predictions: each rank of job classifies its part of them.
func accuracy(dev device.Device, net nn.Sequential, set *fashionmnist.Set, limit int, job *parallel.Run) (float64, []int32, error) {
	net.Train(false)
	defer net.Train(true)
	n := set.N
	if limit > 0 {
		n = min(n, limit)
	}
	const batch = 500
	feat := set.Features()
	right := 0
	first, last := loader.Part(n, job.Rank(), job.Size())
	all := make([]int32, 0, last-first)
	for lo := first; lo < last; lo += batch {
		bs := min(batch, last-lo)
		var pred []int32
		var err error
		tensor.Tidy(func(s *tensor.Scope) *tensor.Tensor {
			x, e := tensor.FromFloat32(dev, set.Images[lo*feat:(lo+bs)*feat], bs, 1, set.Rows, set.Cols)
			if e != nil {
				err = e
				return nil
			}
			logits := net.Forward(autograd.Leaf(s.Track(x), false).NoGrad()).Value()
			pred, err = ops.ArgMaxAxis(logits, 1, false).Int32s()
			return nil
		})
		if err != nil {
			return 0, nil, err
		}
		for i, p := range pred {
			if p == set.Labels[lo+i] {
				right++
			}
		}
		all = append(all, pred...)
	}
	sum, err := job.Sum([]float64{float64(right)})
	if err != nil {
		return 0, nil, err
	}
	if all, err = job.Gather(all, n); err != nil {
		return 0, nil, err
	}
	return sum[0] / float64(n), all, nil
}
