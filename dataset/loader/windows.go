package loader

import (
	"fmt"
	"iter"
	"math/rand/v2"

	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/tensor"
)

// Windows feeds a language model: each step's batch is Batch windows of
// Context+1 consecutive tokens of Tokens at random starts, split into the
// inputs X (the first Context tokens) and the targets Y (the last
// Context), both int32 [Batch, Context]. The starts of step s are drawn
// by a PCG seeded (Seed, s), so a run resumed at step s sees what an
// uninterrupted run sees there, and another program can draw them again
// (Starts).
//
// With Ranks above 1 (data-parallel training, package dist), each step's
// batch is split into Ranks parts in order and Steps yields part Rank:
// the ranks together see the windows one process sees.
type Windows struct {
	Tokens  []int32
	Context int
	Batch   int
	Seed    uint64
	Rank    int // this process's part of each batch
	Ranks   int // the parts (0 or 1: the whole batch)
}

// Check returns an error unless Context and Batch are positive, a
// batch's Batch×Context tokens a tensor can hold, and Tokens holds at
// least one window.
func (w *Windows) Check() error {
	switch {
	case w.Context < 1 || w.Batch < 1:
		return fmt.Errorf("loader: windows of %d tokens, %d a batch; want ≥ 1 of each", w.Context, w.Batch)
	case len(w.Tokens) <= w.Context: // Context+1 would overflow for a huge Context
		return fmt.Errorf("loader: %d tokens for windows of %d+1; want at least one window", len(w.Tokens), w.Context)
	}
	if err := checkPart(w.Batch, w.Rank, w.Ranks); err != nil {
		return err
	}
	n, err := device.CheckNumel([]int{w.Batch, w.Context})
	if err == nil {
		err = device.CheckHostAlloc("loader: a batch's tokens", n, 4)
	}
	if err != nil {
		return fmt.Errorf("loader: batches of %d windows of %d tokens: %w", w.Batch, w.Context, err)
	}
	return nil
}

// Starts returns the starts of step s's windows.
func (w *Windows) Starts(s int) []int {
	rng := rand.New(rand.NewPCG(w.Seed, uint64(s)))
	starts := make([]int, w.Batch)
	for i := range starts {
		starts[i] = rng.IntN(len(w.Tokens) - w.Context)
	}
	return starts
}

// Part returns this process's part of starts (all of them unless Ranks
// is above 1).
func (w *Windows) Part(starts []int) []int {
	lo, hi := Part(len(starts), w.Rank, w.Ranks)
	return starts[lo:hi]
}

// Upload returns the batch of the windows at starts on dev.
func (w *Windows) Upload(dev device.Device, starts []int) Batch {
	t := w.Context
	x := make([]int32, len(starts)*t)
	y := make([]int32, len(starts)*t)
	for i, s := range starts {
		copy(x[i*t:(i+1)*t], w.Tokens[s:s+t])
		copy(y[i*t:(i+1)*t], w.Tokens[s+1:s+t+1])
	}
	xt, err := tensor.FromInt32(dev, x, len(starts), t)
	if err != nil {
		return Batch{Err: err}
	}
	yt, err := tensor.FromInt32(dev, y, len(starts), t)
	if err != nil {
		xt.Release()
		return Batch{Err: err}
	}
	return Batch{X: xt, Y: yt, Size: len(starts), Global: len(starts)}
}

// Steps returns the batches of steps first, first+1, …, last−1 on dev
// (this process's parts of them).
// While the loop body trains on one batch, the next is gathered and
// uploaded on another goroutine. Stopping the loop early is fine.
func (w *Windows) Steps(dev device.Device, first, last int) iter.Seq2[int, Batch] {
	if err := w.Check(); err != nil {
		return func(yield func(int, Batch) bool) { yield(first, Batch{Err: err}) }
	}
	return prefetch(first, last, func(s int) Batch {
		b := w.Upload(dev, w.Part(w.Starts(s)))
		b.Global = w.Batch
		return b
	})
}
