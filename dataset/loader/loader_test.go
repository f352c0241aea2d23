package loader_test

import (
	"slices"
	"testing"

	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/dataset/loader"
)

func TestEpoch(t *testing.T) {
	dev := cpu.New()
	const n, f = 10, 3
	images := make([]float32, n*f)
	labels := make([]int32, n)
	for i := range n {
		labels[i] = int32(i)
		for j := range f {
			images[i*f+j] = float32(i)
		}
	}
	for _, drop := range []bool{false, true} {
		l := loader.New(images, labels, f, 4, 1)
		l.DropLast, l.Shape = drop, []int{1, f}
		var seen []int32
		sizes := []int{}
		for s, b := range l.Epoch(dev) {
			if b.Err != nil {
				t.Fatal(b.Err)
			}
			if s != len(sizes) || !slices.Equal(b.X.Shape(), []int{b.Size, 1, f}) {
				t.Fatalf("batch %d: step %d, shape %v", len(sizes), s, b.X.Shape())
			}
			x, _ := b.X.Float32s()
			y, _ := b.Y.Int32s()
			for i, c := range y {
				if x[i*f] != float32(c) {
					t.Fatalf("image %v carries label %d", x[i*f:(i+1)*f], c)
				}
			}
			seen = append(seen, y...)
			sizes = append(sizes, b.Size)
			b.X.Release()
			b.Y.Release()
		}
		want := []int{4, 4, 2}
		if drop {
			want = want[:2]
		}
		if !slices.Equal(sizes, want) || len(sizes) != l.Steps() {
			t.Errorf("DropLast %v: batch sizes %v; want %v", drop, sizes, want)
		}
		if !drop {
			slices.Sort(seen)
			for i, c := range seen {
				if c != int32(i) {
					t.Fatalf("an epoch saw %v; want every example once", seen)
				}
			}
		}
	}
	// Stopping early releases what was prepared.
	l := loader.New(images, labels, f, 2, 1)
	for _, b := range l.Epoch(dev) {
		b.X.Release()
		b.Y.Release()
		break
	}
	if dev.MemoryInUse() != 0 {
		t.Errorf("%d bytes still in use after an epoch stopped early", dev.MemoryInUse())
	}
}
