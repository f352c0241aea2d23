package main

// The data-parallel tests. This file's name sorts after main_test.go's,
// so that go test runs them after the tests there, whose kernels lavapipe
// then has compiled (Mesa's shader cache, shared by the ranks).

import (
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/extensor/extensor/dataset/fashionmnist"
	"github.com/extensor/extensor/internal/gputest"
	"github.com/extensor/extensor/internal/mpitest"
	"github.com/extensor/extensor/nn"
)

// ranked is what a rank of TestDataParallel's job reports.
type ranked struct {
	Losses []float64
	Epochs []Epoch
	Params string  // the digest of the trained parameters' bits
	Pred   []int32 // the test predictions (each rank's part, gathered)
}

// ddpConfig is the run of TestDataParallel, data-parallel or alone: no
// dropout, whose masks each rank draws for itself; 7 batches of 64 and
// a last one of 3, which the ranks split 1 and 2 (weights 1/3 and 2/3
// where the others' are 1/2).
func ddpConfig(dev string) Config {
	return Config{Device: dev, Data: fashionmnist.DefaultDir, Epochs: 1, Batch: 64, Opt: "adam", Seed: 1, Limit: 451, Test: 200, Dropout: 0}
}

// trainReported trains cfg and reports what a rank reports.
func trainReported(cfg Config) (ranked, error) {
	var r ranked
	cfg.onLoss = func(l float64) { r.Losses = append(r.Losses, l) }
	cfg.onDone = func(net nn.Sequential) { r.Params = mpitest.Digest(net.Params()) }
	cfg.onPred = func(pred []int32) { r.Pred = pred }
	epochs, err := Train(cfg, io.Discard)
	r.Epochs = epochs
	return r, err
}

// rank runs this process's part of a job mpirun started (TestMain):
// "train-<device>", ddpConfig's run.
func rank(mode string) int {
	dev, ok := strings.CutPrefix(mode, "train-")
	if !ok {
		fmt.Fprintf(os.Stderr, "unknown mode %q\n", mode)
		return 1
	}
	cfg := ddpConfig(dev)
	cfg.DDP = true
	return mpitest.Finish(trainReported(cfg)) // an error has ended the job
}

// TestDataParallel trains the CNN over mpirun -np 2, on each backend: the
// losses and accuracies of the global batch equal those of one process
// training on the whole batch, within float32's summation order, and
// the two ranks end with the same parameters, bit for bit.
func TestDataParallel(t *testing.T) {
	for _, dev := range []string{"cpu", "webgpu"} {
		t.Run(dev, func(t *testing.T) {
			if dev == "webgpu" {
				gputest.Open(t)
			}
			// Alone first: the ranks then find most kernels compiled in
			// Mesa's shader cache.
			alone, err := trainReported(ddpConfig(dev))
			if err != nil {
				t.Fatal(err)
			}
			r := mpitest.Results[ranked](t, 2, "train-"+dev)
			if r[0].Params != r[1].Params {
				t.Errorf("the ranks' parameters differ: digests %s and %s", r[0].Params, r[1].Params)
			}
			if !slices.Equal(r[0].Losses, r[1].Losses) {
				t.Errorf("the ranks report different losses: %v and %v", r[0].Losses, r[1].Losses)
			}
			same := 0
			for i := range min(len(r[0].Pred), len(alone.Pred)) {
				if r[0].Pred[i] == alone.Pred[i] {
					same++
				}
			}
			if !slices.Equal(r[0].Pred, r[1].Pred) || len(r[0].Pred) != len(alone.Pred) || same < len(alone.Pred)-2 {
				t.Errorf("test predictions gathered from the ranks: %d and %d, %d of %d as one process's", len(r[0].Pred), len(r[1].Pred), same, len(alone.Pred))
			}
			if len(r[0].Losses) != len(alone.Losses) || len(alone.Losses) != 8 || len(r[0].Epochs) != 1 {
				t.Fatalf("%d losses and %d epochs; want %d and 1", len(r[0].Losses), len(r[0].Epochs), len(alone.Losses))
			}
			worst := 0.0
			for i, l := range alone.Losses {
				worst = max(worst, math.Abs(l-r[0].Losses[i]))
			}
			t.Logf("%s: 2 ranks against one process, %d steps: losses differ by at most %.2g; test accuracy %.3f and %.3f",
				dev, len(alone.Losses), worst, r[0].Epochs[0].TestAcc, alone.Epochs[0].TestAcc)
			if worst > 1e-4 || math.Abs(r[0].Epochs[0].TestAcc-alone.Epochs[0].TestAcc) > 0.01 || math.Abs(r[0].Epochs[0].TrainAcc-alone.Epochs[0].TrainAcc) > 0.01 {
				t.Errorf("2 ranks' losses %v, epoch %+v; one process's %v, %+v: want within 1e-4, and the accuracy within 1%%", r[0].Losses, r[0].Epochs, alone.Losses, alone.Epochs)
			}
		})
	}
}
