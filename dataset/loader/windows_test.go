package loader_test

import (
	"math"
	"slices"
	"strings"
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

// TestWindowsHostile: sizes that overflow or outgrow memory are errors
// from Check, and from Steps' first batch, before anything is allocated.
func TestWindowsHostile(t *testing.T) {
	tokens := make([]int32, 100)
	for _, tt := range []struct {
		name           string
		context, batch int
		says           string
	}{
		{"no context", 0, 2, "want ≥ 1"},
		{"a negative batch", 4, -1, "want ≥ 1"},
		{"a context of MaxInt", math.MaxInt, 2, "at least one window"},
		{"a context past the tokens", 100, 2, "at least one window"},
		{"a batch of 2⁴⁰", 4, 1 << 40, "exceed the host memory"},
		{"a batch of MaxInt", 4, math.MaxInt, "than an int counts"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := &loader.Windows{Tokens: tokens, Context: tt.context, Batch: tt.batch}
			if err := w.Check(); err == nil || !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("Check: %v; want an error saying %q", err, tt.says)
			}
			for _, b := range w.Steps(cpu.New(), 0, 3) {
				if b.Err == nil {
					t.Fatal("Steps yielded a batch without the error")
				}
			}
		})
	}
}
