package loader_test

import (
	"math"
	"slices"
	"testing"

	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/dataset/loader"
	"github.com/extensor/extensor/internal/fuzzin"
)

// hostileCounts are the sizes a loader's fields are given besides small
// ones: empty, negative, huge and overflowing.
var hostileCounts = []int{0, -1, 1, 2, 3, 7, 1 << 31, 1 << 40, math.MaxInt, math.MinInt, -(1 << 40)}

// count draws a small count or a hostile one.
func count(in *fuzzin.Bytes) int {
	if in.Next(0, 1) == 0 {
		return in.Next(0, 9)
	}
	return fuzzin.Pick(in, hostileCounts...)
}

// FuzzLoader builds loaders of hostile fields (features, example shapes,
// batch sizes, limits, sets whose values and labels disagree) and runs two
// epochs of each. A loader that Check refuses yields one batch, its
// error, and has no steps; one it accepts yields Steps() batches of the
// example shape that hold each of the first Len() examples once an epoch
// (the last, partial batch dropped with DropLast), the image rows with
// their labels.
func FuzzLoader(f *testing.F) {
	for _, seed := range [][]byte{
		// n, features, batch, seed, limit, DropLast, Half, a shape and its
		// sizes, one value too many.
		{}, {5, 0, 3, 0, 2, 1, 0, 0, 0, 0, 0, 0}, {9, 0, 4, 0, 4, 7, 0, 5, 1, 1, 1, 0, 2, 0, 2, 0},
		{7, 0, 2, 1, 6, 3, 1, 7, 0, 0, 0, 0}, {4, 1, 8, 0, 2, 0, 0, 0, 0, 0, 0, 0},
		{6, 0, 3, 1, 2, 0, 0, 0, 0, 0, 1, 0, 3, 1, 8, 0}, {3, 0, 3, 0, 2, 0, 0, 0, 0, 0, 0, 1},
		{8, 0, 1, 1, 9, 2, 1, 1, 1, 0, 0, 0},
	} {
		f.Add(seed)
	}
	dev := cpu.New()
	f.Fuzz(func(t *testing.T, data []byte) {
		in := fuzzin.Bytes(data)
		n, features := in.Next(0, 9), count(&in)
		l := loader.New(nil, nil, 1, count(&in), uint64(in.Next(0, 255)))
		l.Features, l.Limit = features, count(&in)
		l.DropLast, l.Half = in.Next(0, 1) == 1, in.Next(0, 1) == 1
		if in.Next(0, 1) == 1 {
			l.Shape = []int{count(&in), count(&in)}
		}
		// A set of n examples; a row of features values each where that
		// is a small count, else a few values (which Check refuses).
		rows := features
		if rows < 1 || rows > 9 {
			rows = 2
		}
		l.Labels = make([]int32, n)
		l.Images = make([]float32, n*rows+in.Next(0, 1))
		for i := range l.Labels {
			l.Labels[i] = int32(i)
		}
		for i := range l.Images {
			l.Images[i] = float32(i / rows)
		}
		err := l.Check()
		for epoch := range 2 {
			var sizes []int
			seen := map[int32]bool{}
			for s, b := range l.Epoch(dev) {
				if b.Err != nil {
					if err == nil {
						t.Fatalf("epoch %d step %d: %v from a loader Check accepts", epoch, s, b.Err)
					}
					if len(sizes) > 0 || b.X != nil {
						t.Fatalf("epoch %d: an error after %d batches, or with tensors", epoch, len(sizes))
					}
					sizes = append(sizes, -1)
					continue
				}
				if err != nil {
					t.Fatalf("a batch from a loader Check refuses (%v)", err)
				}
				shape := l.Shape
				if shape == nil {
					shape = []int{l.Features}
				}
				if s != len(sizes) || !slices.Equal(b.X.Shape(), append([]int{b.Size}, shape...)) || !slices.Equal(b.Y.Shape(), []int{b.Size}) {
					t.Fatalf("epoch %d batch %d: step %d, shapes %v and %v of %d examples %v", epoch, len(sizes), s, b.X.Shape(), b.Y.Shape(), b.Size, shape)
				}
				x, errX := b.X.Float64s()
				y, errY := b.Y.Int32s()
				if errX != nil || errY != nil {
					t.Fatal(errX, errY)
				}
				for i, c := range y {
					if seen[c] || int(c) >= l.Len() || x[i*l.Features] != float64(c) || x[(i+1)*l.Features-1] != float64(c) {
						t.Fatalf("epoch %d batch %d: example %d labelled %d (seen: %v) holds %v; want each of the first %d once, with its row", epoch, s, i, c, seen[c], x[i*l.Features:(i+1)*l.Features], l.Len())
					}
					seen[c] = true
				}
				sizes = append(sizes, b.Size)
				b.X.Release()
				b.Y.Release()
			}
			if err != nil {
				if !slices.Equal(sizes, []int{-1}) || l.Steps() != 0 {
					t.Fatalf("Check: %v; the epoch gave %v, Steps %d; want the error alone and no steps", err, sizes, l.Steps())
				}
				continue
			}
			total := 0
			for _, s := range sizes {
				total += s
			}
			want := l.Len()
			if l.DropLast {
				want -= l.Len() % l.Batch
			}
			if len(sizes) != l.Steps() || total != want || len(seen) != want {
				t.Fatalf("epoch %d: batches %v (Steps %d) of %d examples; want %d of the first %d", epoch, sizes, l.Steps(), total, want, l.Len())
			}
		}
	})
}

// FuzzWindows builds token windows of hostile contexts, batch sizes and
// steps. Windows that Check refuses yield their error alone; accepted ones
// of a small batch yield one batch a step, the same each time a step is
// drawn, of windows of the corpus whose targets are the inputs shifted
// by one token.
func FuzzWindows(f *testing.F) {
	for _, seed := range [][]byte{
		// tokens, context, batch, seed, first step, steps.
		{}, {20, 0, 4, 0, 3, 2, 0, 3}, {9, 0, 9, 0, 1, 0, 1, 4}, {30, 1, 7, 0, 2, 0, 0, 2},
		{40, 0, 7, 0, 8, 250, 4, 4}, {12, 0, 2, 1, 8, 0, 0, 1}, {10, 0, 3, 0, 2, 5, 3, 3}, {15, 0, 5, 0, 1, 9, 5, 0},
	} {
		f.Add(seed)
	}
	dev := cpu.New()
	f.Fuzz(func(t *testing.T, data []byte) {
		in := fuzzin.Bytes(data)
		tokens := make([]int32, in.Next(0, 40))
		for i := range tokens {
			tokens[i] = int32(i)
		}
		w := &loader.Windows{Tokens: tokens, Context: count(&in), Batch: count(&in), Seed: uint64(in.Next(0, 255))}
		first := fuzzin.Pick(&in, 0, 1, 5, -1, math.MaxInt-1, math.MinInt)
		k := in.Next(-1, 3)
		last := first + k
		if k > 0 && last < first || k < 0 && last > first { // wrapped
			last = first
		}
		err := w.Check()
		if err == nil && w.Batch*w.Context > 1<<16 {
			return // accepted, and too large a batch to draw here
		}
		steps := 0
		for s, b := range w.Steps(dev, first, last) {
			if b.Err != nil {
				if err == nil || steps > 0 || s != first {
					t.Fatalf("step %d: %v (Check: %v) after %d batches", s, b.Err, err, steps)
				}
				steps = -1
				continue
			}
			if err != nil {
				t.Fatalf("a batch from windows Check refuses (%v)", err)
			}
			if s != first+steps || !slices.Equal(b.X.Shape(), []int{w.Batch, w.Context}) || !slices.Equal(b.Y.Shape(), []int{w.Batch, w.Context}) {
				t.Fatalf("step %d (batch %d from %d): shapes %v, %v; want [%d %d]", s, steps, first, b.X.Shape(), b.Y.Shape(), w.Batch, w.Context)
			}
			x, _ := b.X.Int32s()
			y, _ := b.Y.Int32s()
			starts := w.Starts(s)
			for i := range x {
				start := starts[i/w.Context]
				if j := int32(i % w.Context); x[i] != int32(start)+j || y[i] != x[i]+1 || start < 0 || start+w.Context >= len(tokens) {
					t.Fatalf("step %d: window %d from %d holds %d, %d at %d; want tokens %d and %d", s, i/w.Context, start, x[i], y[i], j, int32(start)+j, int32(start)+j+1)
				}
			}
			if again := w.Starts(s); !slices.Equal(again, starts) {
				t.Fatalf("step %d: starts %v, then %v", s, starts, again)
			}
			b.X.Release()
			b.Y.Release()
			steps++
		}
		switch {
		case err != nil && steps != -1:
			t.Fatalf("Check: %v; Steps gave %d batches and no error", err, steps)
		case err == nil && steps != max(0, last-first):
			t.Fatalf("steps %d to %d: %d batches", first, last, steps)
		}
	})
}
