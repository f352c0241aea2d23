package loader_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/dataset/loader"
)

// TestRankParts: the ranks' parts of each batch, in rank order, are the
// batch one process sees, for windows and for labelled examples; a last
// batch of fewer examples than ranks is dropped; bad ranks are refused.
func TestRankParts(t *testing.T) {
	dev := cpu.New()
	tokens := make([]int32, 200)
	for i := range tokens {
		tokens[i] = int32(i)
	}
	for _, ranks := range []int{2, 3} {
		whole := &loader.Windows{Tokens: tokens, Context: 4, Batch: 7, Seed: 3}
		var want [][]int32
		for _, b := range whole.Steps(dev, 0, 3) {
			x, _ := b.X.Int32s()
			want = append(want, x)
		}
		got := make([][]int32, 3)
		for r := range ranks {
			w := *whole
			w.Rank, w.Ranks = r, ranks
			for s, b := range w.Steps(dev, 0, 3) {
				if b.Err != nil {
					t.Fatal(b.Err)
				}
				if b.Global != 7 || b.Size != (r+1)*7/ranks-r*7/ranks {
					t.Errorf("%d ranks, rank %d: a batch of %d of %d; want %d of 7", ranks, r, b.Size, b.Global, (r+1)*7/ranks-r*7/ranks)
				}
				x, _ := b.X.Int32s()
				got[s] = append(got[s], x...)
			}
		}
		for s := range want {
			if !slices.Equal(got[s], want[s]) {
				t.Errorf("%d ranks, step %d: the parts join to %v; want %v", ranks, s, got[s], want[s])
			}
		}
	}
	// 11 examples in batches of 4 over 3 ranks: 4, 4 and a last 3, split
	// 1+1+1; over 4 ranks the last 3 are dropped.
	images := make([]float32, 11)
	labels := make([]int32, 11)
	for i := range labels {
		images[i], labels[i] = float32(i), int32(i)
	}
	for _, c := range []struct{ ranks, steps int }{{1, 3}, {3, 3}, {4, 2}} {
		var joined [][]int32
		for r := range c.ranks {
			l := loader.New(images, labels, 1, 4, 9)
			l.Rank, l.Ranks = r, c.ranks
			if l.Steps() != c.steps {
				t.Errorf("%d ranks: %d steps; want %d", c.ranks, l.Steps(), c.steps)
			}
			s := 0
			for i, b := range l.Epoch(dev) {
				if b.Err != nil {
					t.Fatal(b.Err)
				}
				y, _ := b.Y.Int32s()
				if r == 0 {
					joined = append(joined, nil)
				}
				joined[i] = append(joined[i], y...)
				s++
			}
			if s != c.steps {
				t.Errorf("%d ranks, rank %d: %d batches; want %d", c.ranks, r, s, c.steps)
			}
		}
		one := loader.New(images, labels, 1, 4, 9)
		i := 0
		for _, b := range one.Epoch(dev) {
			if i == c.steps {
				break
			}
			y, _ := b.Y.Int32s()
			if !slices.Equal(joined[i], y) {
				t.Errorf("%d ranks, batch %d: the parts join to %v; want %v", c.ranks, i, joined[i], y)
			}
			i++
		}
	}
	for _, bad := range []struct{ rank, ranks int }{{-1, 2}, {2, 2}, {0, -1}, {1, 0}, {0, 5}} {
		l := loader.New(images, labels, 1, 4, 9)
		l.Rank, l.Ranks = bad.rank, bad.ranks
		w := &loader.Windows{Tokens: tokens, Context: 4, Batch: 4, Rank: bad.rank, Ranks: bad.ranks}
		for name, err := range map[string]error{"Loader": l.Check(), "Windows": w.Check()} {
			if err == nil || !strings.Contains(err.Error(), "rank") {
				t.Errorf("%s: rank %d of %d: %v; want an error naming the rank", name, bad.rank, bad.ranks, err)
			}
		}
	}
}
