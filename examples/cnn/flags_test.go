package main

import (
	"flag"
	"fmt"
	"math"
	"testing"

	"github.com/extensor/extensor/internal/fuzzin"
)

// FuzzFlags: what Check accepts trains at least one epoch of batches of
// at least one example with a known optimiser, at a finite learning rate
// ≥ 0; a checkpoint to resume from may fail in its own words
// (fuzzin.FuzzCommandLine).
func FuzzFlags(f *testing.F) {
	fuzzin.FuzzCommandLine(f, "cnn", func(fs *flag.FlagSet) fuzzin.Command {
		cfg, _ := flags(fs)
		return fuzzin.Command{Check: func() error { return cfg.Check() }, Unnamed: func(error) bool { return cfg.Resume != "" }, Accepted: func() error {
			if cfg.Epochs < 1 || cfg.Batch < 1 || cfg.Limit < 0 || cfg.Test < 0 || cfg.Progress < 0 || cfg.PlotEvery < 0 || cfg.SnapshotEvery < 0 ||
				!(cfg.LR >= 0) || math.IsInf(cfg.LR, 0) || cfg.Opt != "adam" && cfg.Opt != "sgd" {
				return fmt.Errorf("%+v is out of range", *cfg)
			}
			return nil
		}}
	})
}
