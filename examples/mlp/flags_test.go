package main

import (
	"flag"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/extensor/extensor/examples/internal/run"
	"github.com/extensor/extensor/internal/fuzzin"
)

// FuzzFlags: what Check accepts trains at least one epoch of batches of
// at least one example, through at least one hidden unit, at a finite
// learning rate ≥ 0 (fuzzin.FuzzCommandLine).
func FuzzFlags(f *testing.F) {
	fuzzin.FuzzCommandLine(f, "mlp", func(fs *flag.FlagSet) fuzzin.Command {
		cfg := flags(fs)
		return fuzzin.Command{Check: func() error { return cfg.Check() }, Accepted: func() error {
			if cfg.Epochs < 1 || cfg.Batch < 1 || cfg.Hidden < 1 || cfg.Limit < 0 || cfg.Progress < 0 || !(cfg.LR >= 0) || math.IsInf(cfg.LR, 0) {
				return fmt.Errorf("%+v is out of range", *cfg)
			}
			return nil
		}}
	})
}

// TestStrayArguments: an argument that is not a flag is refused, named,
// before any work (flag parsing stops at it, so the flags after it would
// be lost too).
func TestStrayArguments(t *testing.T) {
	fs := flag.NewFlagSet("mlp", flag.ContinueOnError)
	flags(fs)
	if err := fs.Parse([]string{"-epochs=1", "5", "-batch=2"}); err != nil {
		t.Fatal(err)
	}
	if err := run.NoArgs(fs); err == nil || !strings.Contains(err.Error(), `"5" "-batch=2"`) {
		t.Errorf("NoArgs: %v; want an error naming the arguments", err)
	}
}
