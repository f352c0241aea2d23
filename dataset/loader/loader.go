// Package loader feeds a training loop: it yields the examples of a
// labelled set in seeded random order, as batches of device tensors, and
// prepares and uploads the next batch on its own goroutine while the
// current one trains.
package loader

import (
	"fmt"
	"iter"
	"math/rand/v2"
	"slices"

	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/internal/half"
	"github.com/extensor/extensor/tensor"
)

// Loader batches a set of N examples: Images holds N·Features float32
// values, Labels N int32 classes.
type Loader struct {
	Images   []float32
	Labels   []int32
	Features int   // values per example
	Shape    []int // an example's shape on the device (nil: [Features])
	Batch    int   // examples per batch
	Limit    int   // use only the first Limit examples (0: all)
	DropLast bool  // drop the last, partial batch
	Half     bool  // upload the images as float16 (mixed precision: half the bytes); labels stay int32
	// Rank and Ranks split each batch, in order, into Ranks parts, and
	// Epoch yields part Rank (data-parallel training, package dist): the
	// ranks together see the batches one process sees. A last batch of
	// fewer than Ranks examples is dropped. Ranks 0 or 1: whole batches.
	Rank, Ranks int
	rng         *rand.Rand
	order       []int // the example order, reshuffled each epoch
}

// New returns a loader of batches of the given size, shuffled with seed.
func New(images []float32, labels []int32, features, batch int, seed uint64) *Loader {
	return &Loader{Images: images, Labels: labels, Features: features, Batch: max(batch, 1), rng: rand.New(rand.NewPCG(seed, 7))}
}

// Len returns the number of examples used.
func (l *Loader) Len() int {
	n := len(l.Labels)
	if l.Limit > 0 {
		n = min(n, l.Limit)
	}
	return n
}

// Steps returns the number of batches in an epoch: 0 for a loader that
// Check refuses.
func (l *Loader) Steps() int {
	if l.Check() != nil {
		return 0
	}
	n := l.Len()
	if l.DropLast || n%l.Batch == 0 || n%l.Batch < l.Ranks {
		return n / l.Batch
	}
	return n/l.Batch + 1 // (n + Batch − 1)/Batch would overflow for a huge Batch
}

// A Batch is one batch on a device; the consumer releases X and Y.
type Batch struct {
	X, Y   *tensor.Tensor
	Size   int   // examples in X
	Global int   // examples in the whole batch, of which X is this rank's part
	Err    error // a failed upload; X and Y are nil
}

// Epoch returns the batches of one epoch on dev, the order of the last
// epoch shuffled again (rand.Rand.Shuffle of a PCG seeded (seed, 7); seed
// 0 for a Loader made without New).
// While the loop body trains on one batch, the next is gathered and
// uploaded on another goroutine. Stopping the loop early is fine.
func (l *Loader) Epoch(dev device.Device) iter.Seq2[int, Batch] {
	if err := l.Check(); err != nil {
		return func(yield func(int, Batch) bool) { yield(0, Batch{Err: err}) }
	}
	if l.rng == nil { // a Loader made without New
		l.rng = rand.New(rand.NewPCG(0, 7))
	}
	n := l.Len()
	if len(l.order) != n {
		l.order = make([]int, n)
		for i := range l.order {
			l.order[i] = i
		}
	}
	l.rng.Shuffle(n, func(i, j int) { l.order[i], l.order[j] = l.order[j], l.order[i] })
	order := slices.Clone(l.order)
	shape := l.Shape
	if shape == nil {
		shape = []int{l.Features}
	}
	return prefetch(0, l.Steps(), func(s int) Batch { return l.upload(dev, order, s, shape) })
}

// prefetch yields the batches that upload makes for s = first, …, last−1,
// upload making the next on its own goroutine while the loop body uses
// the current one. Stopping the loop early ends that goroutine and
// releases what it made; a panic there is yielded as a batch's error.
func prefetch(first, last int, upload func(s int) Batch) iter.Seq2[int, Batch] {
	return func(yield func(int, Batch) bool) {
		next := make(chan Batch, 1)
		stop := make(chan struct{})
		defer func() {
			// Stopped early: end the producer and release what it made.
			close(stop)
			for b := range next {
				b.X.Release()
				b.Y.Release()
			}
		}()
		go func() {
			defer close(next)
			defer func() {
				// A panic here would end the process: hand it to the loop.
				if r := recover(); r != nil {
					select {
					case next <- Batch{Err: fmt.Errorf("loader: preparing a batch: %v", r)}:
					case <-stop:
					}
				}
			}()
			for s := first; s < last; s++ {
				b := upload(s)
				select {
				case next <- b:
				case <-stop:
					b.X.Release()
					b.Y.Release()
					return
				}
			}
		}()
		for s := first; ; s++ {
			b, ok := <-next
			if !ok || !yield(s, b) {
				return
			}
		}
	}
}

// Check returns an error unless the loader's fields agree: Features
// positive, Images holding Features values for each of the Labels,
// Shape (if set) of Features elements, Batch and Limit not negative.
// Epoch checks it first.
func (l *Loader) Check() error {
	switch {
	case l.Features <= 0:
		return fmt.Errorf("loader: %d features an example; want > 0", l.Features)
	case l.Batch < 1:
		return fmt.Errorf("loader: batches of %d; want ≥ 1", l.Batch)
	case l.Limit < 0:
		return fmt.Errorf("loader: limit %d; want ≥ 0 (0: all)", l.Limit)
	case len(l.Images)/l.Features != len(l.Labels) || len(l.Images)%l.Features != 0:
		return fmt.Errorf("loader: %d values of %d features an example for %d labels; want %d values", len(l.Images), l.Features, len(l.Labels), len(l.Labels)*l.Features)
	}
	if err := checkPart(l.Batch, l.Rank, l.Ranks); err != nil {
		return err
	}
	if l.Shape != nil {
		if n, err := device.CheckNumel(l.Shape); err != nil || n != l.Features {
			return fmt.Errorf("loader: example shape %v for %d features; want a shape of %d elements", l.Shape, l.Features, l.Features)
		}
	}
	return nil
}

// checkPart returns an error unless rank is one of ranks parts of
// batches of batch examples, each part at least one example.
func checkPart(batch, rank, ranks int) error {
	switch {
	case ranks < 0 || rank < 0 || rank >= max(ranks, 1):
		return fmt.Errorf("loader: rank %d of %d; want 0 ≤ rank < ranks (ranks 0: one process)", rank, ranks)
	case batch < ranks:
		return fmt.Errorf("loader: batches of %d split over %d ranks; want at least one example a rank", batch, ranks)
	}
	return nil
}

// Part returns the bounds of part rank of n items split into ranks
// parts in order, their sizes differing by at most one (ranks 0 or 1:
// all of them): how the loaders split a batch among the ranks of a
// data-parallel job.
func Part(n, rank, ranks int) (lo, hi int) {
	if ranks <= 1 {
		return 0, n
	}
	return rank * n / ranks, (rank + 1) * n / ranks
}

// upload gathers this rank's part of batch s and makes its tensors.
func (l *Loader) upload(dev device.Device, order []int, s int, shape []int) Batch {
	lo := s * l.Batch
	global := min(l.Batch, len(order)-lo)
	a, b := Part(global, l.Rank, l.Ranks)
	lo += a
	bs := b - a
	f := l.Features
	x := make([]float32, bs*f)
	y := make([]int32, bs)
	for i := range bs {
		src := order[lo+i]
		copy(x[i*f:(i+1)*f], l.Images[src*f:(src+1)*f])
		y[i] = l.Labels[src]
	}
	var xt *tensor.Tensor
	var err error
	if l.Half {
		h := make([]uint16, len(x))
		for i, v := range x {
			h[i] = half.FromFloat32(v)
		}
		xt, err = tensor.FromFloat16Bits(dev, h, append([]int{bs}, shape...)...)
	} else {
		xt, err = tensor.FromFloat32(dev, x, append([]int{bs}, shape...)...)
	}
	if err != nil {
		return Batch{Err: err}
	}
	yt, err := tensor.FromInt32(dev, y, bs)
	if err != nil {
		xt.Release()
		return Batch{Err: err}
	}
	return Batch{X: xt, Y: yt, Size: bs, Global: global}
}
