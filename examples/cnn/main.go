// Command cnn trains a convolutional network on Fashion-MNIST with the
// tape (autograd), the layers of package nn and a fused optimiser:
// Conv2d(1→32, 3×3) → ReLU → MaxPool(2) → Conv2d(32→64, 3×3) → ReLU →
// MaxPool(2) → Flatten → Linear(1600→128) → ReLU → Dropout(0.25) →
// Linear(128→10), batch 64, Adam (lr 1e-3) or SGD with momentum.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"maps"
	"os"
	"strconv"
	"time"

	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/checkpoint"
	"github.com/extensor/extensor/dataset/fashionmnist"
	"github.com/extensor/extensor/dataset/loader"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/examples/cnn/model"
	"github.com/extensor/extensor/examples/internal/run"
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
	Save     string  // write a checkpoint here after each epoch ("": none)
	Resume   string  // start from this checkpoint ("": from scratch)
}

// Epoch is what one epoch achieved.
type Epoch struct {
	Loss     float64 // mean training loss
	Accuracy float64 // test accuracy after the epoch, in [0, 1]
	StepMS   float64 // mean wall time of a training step, ms
}

func main() {
	cfg := Config{}
	flag.StringVar(&cfg.Device, "device", "auto", `device: "auto", "webgpu" or "cpu"`)
	flag.StringVar(&cfg.Data, "data", fashionmnist.DefaultDir, "directory of the Fashion-MNIST .gz files")
	flag.IntVar(&cfg.Epochs, "epochs", 3, "training epochs")
	flag.IntVar(&cfg.Batch, "batch", 64, "batch size")
	flag.StringVar(&cfg.Opt, "opt", "adam", `optimiser: "adam" or "sgd" (momentum 0.9)`)
	flag.Float64Var(&cfg.LR, "lr", 0, "learning rate (0: 1e-3 for adam, 0.01 for sgd)")
	flag.Uint64Var(&cfg.Seed, "seed", 1, "random seed")
	flag.IntVar(&cfg.Limit, "limit", 0, "train on the first N examples only (0: all)")
	flag.IntVar(&cfg.Test, "test", 0, "test on the first N examples only (0: all)")
	flag.IntVar(&cfg.Progress, "progress", 100, "print progress every N steps (0: never)")
	flag.StringVar(&cfg.Save, "save", "cnn.safetensors", `checkpoint written after each epoch ("": none)`)
	flag.StringVar(&cfg.Resume, "resume", "", "checkpoint to resume from")
	flag.Parse()
	log.SetFlags(0)
	if _, err := Train(cfg, os.Stdout); err != nil {
		log.Fatalf("cnn: %v", err)
	}
}

// Train trains the network as cfg says, printing to w, and returns what
// each epoch achieved.
func Train(cfg Config, w io.Writer) ([]Epoch, error) {
	dev, train, test, err := run.Open(cfg.Device, cfg.Data, w)
	if err != nil {
		return nil, err
	}
	defer dev.Close()
	net, err := model.New(dev, cfg.Seed)
	if err != nil {
		return nil, err
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
	first := 1
	if cfg.Resume != "" {
		if first, err = resume(cfg.Resume, net, opt); err != nil {
			return nil, err
		}
		fmt.Fprintf(w, "resumed from %s after epoch %d (%d steps)\n", cfg.Resume, first-1, opt.Steps())
	}

	data := loader.New(train.Images, train.Labels, train.Features(), cfg.Batch, cfg.Seed)
	data.Limit, data.Shape = cfg.Limit, []int{1, train.Rows, train.Cols}
	n, steps := data.Len(), data.Steps()
	var epochs []Epoch
	for e := first; e <= cfg.Epochs; e++ {
		net.Train(true)
		lossSum, err := tensor.Zeros(dev, device.Float32)
		if err != nil {
			return nil, err
		}
		start := time.Now()
		seen := 0
		for s, b := range data.Epoch(dev) {
			if b.Err != nil {
				return nil, b.Err
			}
			seen += b.Size
			loss, err := step(net, opt, b.X, b.Y)
			b.X.Release()
			b.Y.Release()
			if err != nil {
				return nil, err
			}
			ops.Axpy(lossSum, loss, float64(b.Size)/float64(n))
			loss.Release()
			if cfg.Progress > 0 && (s+1)%cfg.Progress == 0 {
				v, err := lossSum.Float64s()
				if err != nil {
					return nil, err
				}
				fmt.Fprintf(w, "epoch %d: step %d/%d, loss so far %.4f, %.1f ms/step\n", e, s+1, steps,
					v[0]*float64(n)/float64(seen), time.Since(start).Seconds()*1e3/float64(s+1))
			}
		}
		v, err := lossSum.Float64s()
		lossSum.Release()
		if err != nil {
			return nil, err
		}
		ms := time.Since(start).Seconds() * 1e3 / float64(steps)
		acc, err := accuracy(dev, net, test, cfg.Test)
		if err != nil {
			return nil, err
		}
		epochs = append(epochs, Epoch{Loss: v[0], Accuracy: acc, StepMS: ms})
		fmt.Fprintf(w, "epoch %d: loss %.4f, test accuracy %.2f%%, %.1f ms/step\n", e, v[0], 100*acc, ms)
		if cfg.Save != "" {
			if err := save(cfg.Save, net, opt, e); err != nil {
				return nil, err
			}
		}
	}
	return epochs, nil
}

// save writes the network's parameters (PyTorch's state_dict names), the
// optimiser's state ("optim.<name>.<m|v|momentum>") and the epoch and
// step count (metadata) to path.
func save(path string, net nn.Sequential, opt *optim.Optimizer, epoch int) error {
	all := net.StateDict()
	st, err := opt.StateDict(optimNames(net))
	if err != nil {
		return err
	}
	maps.Copy(all, st)
	return checkpoint.Save(path, all, map[string]string{"epoch": strconv.Itoa(epoch), "steps": strconv.Itoa(opt.Steps())})
}

// resume loads a checkpoint that save wrote into net and opt and returns
// the epoch to continue from.
func resume(path string, net nn.Sequential, opt *optim.Optimizer) (int, error) {
	f, err := checkpoint.Read(path)
	if err != nil {
		return 0, err
	}
	epoch, err1 := strconv.Atoi(f.Metadata["epoch"])
	steps, err2 := strconv.Atoi(f.Metadata["steps"])
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("%s: no epoch and step count in its metadata: %w", path, err)
	}
	all := net.StateDict()
	st, err := opt.StateDict(optimNames(net))
	if err != nil {
		return 0, err
	}
	maps.Copy(all, st)
	if err := f.LoadInto(all); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	opt.SetSteps(steps)
	return epoch + 1, nil
}

// optimNames names the optimiser's state of each parameter.
func optimNames(net nn.Sequential) []string {
	names := net.ParamNames()
	for i := range names {
		names[i] = "optim." + names[i]
	}
	return names
}

func or(v, def float64) float64 {
	if v == 0 {
		return def
	}
	return v
}

// step runs one training step on a batch and returns its loss (0-D).
func step(net nn.Sequential, opt *optim.Optimizer, x, y *tensor.Tensor) (*tensor.Tensor, error) {
	loss := autograd.CrossEntropy(net.Forward(autograd.Leaf(x, false)), autograd.Leaf(y, false), ops.MeanReduction)
	if err := loss.Backward(); err != nil {
		return nil, err
	}
	opt.Step()
	opt.ZeroGrad()
	return loss.Value(), nil
}

// accuracy returns the share of the first limit (0: all) test examples
// that the model classifies right, in evaluation mode.
func accuracy(dev device.Device, net nn.Sequential, test *fashionmnist.Set, limit int) (float64, error) {
	net.Train(false)
	defer net.Train(true)
	n := test.N
	if limit > 0 {
		n = min(n, limit)
	}
	const batch = 500
	feat := test.Features()
	right := 0
	for lo := 0; lo < n; lo += batch {
		bs := min(batch, n-lo)
		var pred []int32
		var err error
		tensor.Tidy(func() *tensor.Tensor {
			x, e := tensor.FromFloat32(dev, test.Images[lo*feat:(lo+bs)*feat], bs, 1, 28, 28)
			if e != nil {
				err = e
				return nil
			}
			autograd.NoGrad(func() {
				logits := net.Forward(autograd.Leaf(x, false)).Value()
				pred, err = ops.ArgMaxAxis(logits, 1, false).Int32s()
			})
			return nil
		})
		if err != nil {
			return 0, err
		}
		for i, p := range pred {
			if p == test.Labels[lo+i] {
				right++
			}
		}
	}
	return float64(right) / float64(n), nil
}
