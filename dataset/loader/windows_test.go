package loader_test

import (
	"slices"
	"testing"

	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/dataset/loader"
)

// TestWindows: each step's windows are drawn again alike (by step, not
// by the order of the calls), the targets are the inputs shifted by one,
// and a resumed range yields the steps an uninterrupted one does.
func TestWindows(t *testing.T) {
	tokens := make([]int32, 100)
	for i := range tokens {
		tokens[i] = int32(i)
	}
	w := &loader.Windows{Tokens: tokens, Context: 8, Batch: 3, Seed: 5}
	if !slices.Equal(w.Starts(4), w.Starts(4)) || slices.Equal(w.Starts(4), w.Starts(5)) {
		t.Errorf("Starts(4) = %v twice, Starts(5) = %v; want step 4's alike and step 5's different", w.Starts(4), w.Starts(5))
	}
	dev := cpu.New()
	var all [][]int32
	for s, b := range w.Steps(dev, 0, 6) {
		if b.Err != nil {
			t.Fatal(b.Err)
		}
		x, _ := b.X.Int32s()
		y, _ := b.Y.Int32s()
		starts := w.Starts(s)
		for i, st := range starts {
			for j := range 8 {
				if x[i*8+j] != int32(st+j) || y[i*8+j] != int32(st+j+1) {
					t.Fatalf("step %d, window %d: x %v, y %v; want %d… and %d…", s, i, x[i*8:i*8+8], y[i*8:i*8+8], st, st+1)
				}
			}
		}
		all = append(all, x)
	}
	if len(all) != 6 {
		t.Fatalf("%d steps; want 6", len(all))
	}
	for s, b := range w.Steps(dev, 4, 6) {
		x, _ := b.X.Int32s()
		if !slices.Equal(x, all[s]) {
			t.Errorf("resumed step %d: %v; want %v", s, x, all[s])
		}
	}
	for _, bad := range []loader.Windows{{Tokens: tokens, Context: 0, Batch: 1}, {Tokens: tokens[:8], Context: 8, Batch: 1}, {Tokens: tokens, Context: 8}} {
		for _, b := range bad.Steps(dev, 0, 1) {
			if b.Err == nil {
				t.Errorf("%d tokens, context %d, batch %d: no error", len(bad.Tokens), bad.Context, bad.Batch)
			}
		}
	}
}
