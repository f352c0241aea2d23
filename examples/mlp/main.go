package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"os"
	"time"

	"github.com/extensor/extensor/dataset/fashionmnist"
	"github.com/extensor/extensor/dataset/loader"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/examples/internal/report"
	"github.com/extensor/extensor/examples/internal/run"
	"github.com/extensor/extensor/examples/mlp/model"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/optim"
	"github.com/extensor/extensor/tensor"
)

// Config sets up a training run.
type Config struct {
	Device   string    // "auto", "webgpu" or "cpu"
	Data     string    // directory of the Fashion-MNIST IDX files
	Epochs   int       // passes over the training set
	Batch    int       // examples per SGD step
	LR       float64   // learning rate
	Hidden   int       // hidden units
	Seed     uint64    // initialisation and shuffling
	Limit    int       // use only the first Limit training examples (0: all)
	Progress int       // update the progress bar every Progress steps (0: never)
	Bar      io.Writer // a progress bar here when it is a terminal (nil: none)
}

// Epoch is what one epoch achieved.
type Epoch struct {
	Loss     float64 // mean training loss over the epoch
	Accuracy float64 // test accuracy after the epoch, in [0, 1]
	Seconds  float64 // wall time of the epoch's training steps
}

func main() {
	cfg := flags(flag.CommandLine)
	flag.Parse()
	log.SetFlags(0)
	if err := run.NoArgs(flag.CommandLine); err != nil {
		log.Fatalf("mlp: %v", err)
	}
	cfg.Bar = os.Stderr
	if err := cfg.Check(); err != nil {
		log.Fatalf("mlp: %v", err)
	}
	if _, err := Train(*cfg, os.Stdout); err != nil {
		log.Fatalf("mlp: %v", err)
	}
}

// flags defines the command's flags on fs, parsed into the returned
// configuration.
func flags(fs *flag.FlagSet) *Config {
	cfg := &Config{}
	fs.StringVar(&cfg.Device, "device", "auto", `device: "auto", "webgpu" or "cpu"`)
	fs.StringVar(&cfg.Data, "data", fashionmnist.DefaultDir, "directory of the Fashion-MNIST .gz files")
	fs.IntVar(&cfg.Epochs, "epochs", 3, "training epochs")
	fs.IntVar(&cfg.Batch, "batch", 128, "batch size")
	fs.Float64Var(&cfg.LR, "lr", 0.1, "SGD learning rate")
	fs.IntVar(&cfg.Hidden, "hidden", 256, "hidden units")
	fs.Uint64Var(&cfg.Seed, "seed", 2, "random seed (initialisation and shuffling)")
	fs.IntVar(&cfg.Limit, "limit", 0, "train on the first N examples only (0: all)")
	fs.IntVar(&cfg.Progress, "progress", 50, "update the progress bar every N steps (0: never)")
	return cfg
}

// Check returns an error for a configuration that cannot train: counts
// out of range, or a learning rate that is negative or not finite. Train
// checks it before it opens the device.
func (cfg Config) Check() error {
	switch {
	case cfg.Epochs < 1 || cfg.Batch < 1 || cfg.Hidden < 1:
		return fmt.Errorf("-epochs %d, -batch %d, -hidden %d; want each ≥ 1", cfg.Epochs, cfg.Batch, cfg.Hidden)
	case cfg.Limit < 0 || cfg.Progress < 0:
		return fmt.Errorf("-limit %d, -progress %d; want counts ≥ 0", cfg.Limit, cfg.Progress)
	case !(cfg.LR >= 0) || math.IsInf(cfg.LR, 0):
		return fmt.Errorf("-lr %v; want a finite learning rate ≥ 0", cfg.LR)
	}
	return nil
}

// Train trains the MLP as cfg says, printing progress to w, and returns
// what each epoch achieved.
func Train(cfg Config, w io.Writer) ([]Epoch, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	dev, train, test, err := run.Open(cfg.Device, cfg.Data, w, cfg.Bar)
	if err != nil {
		return nil, err
	}
	defer dev.Close()
	feat := train.Features()
	m, err := model.New(dev, feat, cfg.Hidden, 10, cfg.Seed)
	if err != nil {
		return nil, err
	}
	defer m.Release()
	opt := optim.SGD(m.Params(), cfg.LR, device.StepParams{})

	data := loader.New(train.Images, train.Labels, feat, cfg.Batch, cfg.Seed)
	data.Limit = cfg.Limit
	stepsPerEpoch := data.Steps()
	var epochs []Epoch
	for e := 1; e <= cfg.Epochs; e++ {
		lossSum, err := tensor.Zeros(dev, device.Float32)
		if err != nil {
			return nil, err
		}
		start := time.Now()
		bar := report.NewProgress(cfg.Bar, e, stepsPerEpoch)
		for s, b := range data.Epoch(dev) {
			if b.Err != nil {
				return nil, b.Err
			}
			x, y := b.X, b.Y
			loss := m.TapeStep(x, y, opt)
			ops.Axpy(lossSum, loss, 1)
			loss.Release()
			x.Release()
			y.Release()
			if cfg.Progress > 0 && (s+1)%cfg.Progress == 0 && s+1 < stepsPerEpoch && bar.Shown() {
				v, err := lossSum.Float64s()
				if err != nil {
					return nil, err
				}
				bar.Set(e, s+1, v[0]/float64(s+1))
			}
		}
		bar.Finish()
		v, err := lossSum.Float64s()
		lossSum.Release()
		if err != nil {
			return nil, err
		}
		secs := time.Since(start).Seconds()
		acc, err := m.Accuracy(test)
		if err != nil {
			return nil, err
		}
		ep := Epoch{Loss: v[0] / float64(stepsPerEpoch), Accuracy: acc, Seconds: secs}
		epochs = append(epochs, ep)
		fmt.Fprintf(w, "epoch %d: train loss %.4f, test accuracy %.2f%%, %.1fs (%.1f ms/step)\n",
			e, ep.Loss, 100*ep.Accuracy, ep.Seconds, 1000*ep.Seconds/float64(stepsPerEpoch))
	}
	return epochs, nil
}
