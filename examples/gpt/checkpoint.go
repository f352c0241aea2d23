package main

// Checkpoints: the model and optimiser state saved and resumed.

import (
	"fmt"
	"strconv"

	"github.com/extensor/extensor/checkpoint"
	"github.com/extensor/extensor/examples/gpt/model"
	"github.com/extensor/extensor/examples/internal/run"
	"github.com/extensor/extensor/optim"
)

// save writes the model's parameters (the PyTorch model's names), the
// optimiser's state ("optim.<name>.<k>") and the step count.
func save(path string, net *model.GPT, opt *optim.Optimizer) error {
	all, err := run.State(net, opt)
	if err != nil {
		return err
	}
	return checkpoint.Save(path, all, map[string]string{"steps": strconv.Itoa(opt.Steps()), "model": modelMeta(net.Cfg)})
}

// load reads what save wrote into net and opt (opt may be nil) and
// returns the step count.
func load(path string, net *model.GPT, opt *optim.Optimizer) (int, error) {
	f, steps, err := readCheckpoint(path, net.Cfg)
	if err != nil {
		return 0, err
	}
	if opt == nil { // the optimiser's state is read, and dropped
		opt = optim.AdamW(net.Params(), 1, 0)
		defer opt.Release()
	}
	all, err := run.State(net, opt)
	if err != nil {
		return 0, err
	}
	opt.SetSteps(steps)
	if err := f.LoadInto(all); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return steps, nil
}

// readCheckpoint reads a checkpoint that save wrote of a model of c's
// size, and its step count.
func readCheckpoint(path string, c model.Config) (*checkpoint.File, int, error) {
	f, err := checkpoint.Read(path)
	if err != nil {
		return nil, 0, err
	}
	if m := f.Metadata["model"]; m != modelMeta(c) {
		return nil, 0, fmt.Errorf("%s: a model of %s; this run's is %s", path, m, modelMeta(c))
	}
	steps, err := strconv.Atoi(f.Metadata["steps"])
	if err != nil || steps < 0 || steps > optim.MaxSteps {
		return nil, 0, fmt.Errorf("%s: step count %q in its metadata; want a count from 0 to %d", path, f.Metadata["steps"], optim.MaxSteps)
	}
	return f, steps, nil
}

func modelMeta(c model.Config) string {
	return fmt.Sprintf("vocab %d, context %d, layers %d, heads %d, width %d", c.Vocab, c.Context, c.Layers, c.Heads, c.Width)
}
