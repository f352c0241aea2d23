package main

import (
	"flag"
	"fmt"
	"math"
	"testing"

	"github.com/extensor/extensor/internal/fuzzin"
)

// FuzzFlags: what Check accepts is a model that Model.Check accepts (whose
// errors name the model's fields), steps of at most maxStepTokens tokens
// and a learning rate schedule finite and ≥ 0 at every step it reaches:
// the first, the warmup's end, the decay's, the last
// (fuzzin.FuzzCommandLine).
func FuzzFlags(f *testing.F) {
	fuzzin.FuzzCommandLine(f, "gpt", func(fs *flag.FlagSet) fuzzin.Command {
		cfg := &flags(fs).cfg
		return fuzzin.Command{Check: func() error { return cfg.Check() }, Unnamed: func(error) bool { return cfg.Model.Check() != nil }, Accepted: func() error {
			if err := cfg.Model.Check(); err != nil || cfg.Batch < 1 || cfg.Batch*cfg.Model.Context > maxStepTokens {
				return fmt.Errorf("%+v is out of range (model: %v)", *cfg, err)
			}
			s := cfg.Schedule()
			for _, step := range []int{0, cfg.Warmup - 1, cfg.Warmup, cfg.DecaySteps, cfg.Steps - 1, cfg.Steps} {
				if lr := s(step); step >= 0 && (!(lr >= 0) || math.IsInf(lr, 0)) {
					return fmt.Errorf("a learning rate of %v at step %d", lr, step)
				}
			}
			return nil
		}}
	})
}
