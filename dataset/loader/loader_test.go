package loader_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/dataset/loader"
	"github.com/extensor/extensor/device"
	"github.com/x448/float16"
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

// TestEpochReportsBadLoaders yields one batch carrying an error, never a
// panic on the loader's goroutine, for fields that do not agree.
func TestEpochReportsBadLoaders(t *testing.T) {
	dev := cpu.New()
	for _, tt := range []struct {
		name string
		l    *loader.Loader
		says string
	}{
		{"fewer images than labels", loader.New(make([]float32, 2*3), make([]int32, 5), 3, 2, 1), "for 5 labels"},
		{"a partial image", loader.New(make([]float32, 7), make([]int32, 2), 3, 2, 1), "for 2 labels"},
		{"no features", loader.New(nil, make([]int32, 2), 0, 2, 1), "features"},
		{"a shape of other features", &loader.Loader{Images: make([]float32, 8), Labels: make([]int32, 2), Features: 4, Shape: []int{1, 3}, Batch: 1}, "shape [1 3]"},
		{"no batch", &loader.Loader{Images: make([]float32, 8), Labels: make([]int32, 2), Features: 4}, "batches of 0"},
		{"a negative limit", &loader.Loader{Images: make([]float32, 8), Labels: make([]int32, 2), Features: 4, Batch: 1, Limit: -1}, "limit -1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n := 0
			for _, b := range tt.l.Epoch(dev) {
				n++
				if b.Err == nil || !strings.Contains(b.Err.Error(), tt.says) {
					t.Fatalf("batch %d: %v; want an error saying %q", n, b.Err, tt.says)
				}
				if b.X != nil || b.Y != nil {
					t.Errorf("a failed batch carries tensors")
				}
			}
			if n != 1 {
				t.Errorf("%d batches; want one, carrying the error", n)
			}
		})
	}
}

// panicky is a device whose uploads panic.
type panicky struct{ *cpu.Device }

func (panicky) Write(device.Buffer, any) error { panic("an upload that panics") }

// TestEpochRecoversItsGoroutine turns a panic while a batch is prepared
// into a batch carrying the error: no goroutine of the library ends the
// process.
func TestEpochRecoversItsGoroutine(t *testing.T) {
	l := loader.New(make([]float32, 10*3), make([]int32, 10), 3, 2, 1)
	n := 0
	for _, b := range l.Epoch(panicky{cpu.New()}) {
		n++
		if b.Err == nil || !strings.Contains(b.Err.Error(), "loader: preparing a batch: an upload that panics") {
			t.Fatalf("batch %d: %v; want the preparing goroutine's panic", n, b.Err)
		}
	}
	if n != 1 {
		t.Errorf("%d batches; want one, carrying the error", n)
	}
}

// TestEpochHalf checks that a loader with Half uploads its images as
// float16, rounded to nearest even, and its labels as int32.
func TestEpochHalf(t *testing.T) {
	dev := cpu.New()
	images := []float32{0.1, 1, 65519, 1e-8, -2.5, 3}
	l := loader.New(images, []int32{0, 1}, 3, 2, 1)
	l.Half = true
	for _, b := range l.Epoch(dev) {
		if b.Err != nil {
			t.Fatal(b.Err)
		}
		if b.X.DType() != device.Float16 || b.Y.DType() != device.Int32 {
			t.Fatalf("dtypes %v, %v; want float16, int32", b.X.DType(), b.Y.DType())
		}
		got, err := b.X.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		labels, _ := b.Y.Int32s()
		for i, c := range labels {
			for j := range 3 {
				want := float16.Fromfloat32(images[int(c)*3+j]).Float32()
				if got[i*3+j] != want {
					t.Errorf("example %d, value %d: %v; want %v", c, j, got[i*3+j], want)
				}
			}
		}
		b.X.Release()
		b.Y.Release()
	}
}

// TestHugeBatches: a batch larger than the data is one batch of all of
// it (Steps never wraps), and a loader Check refuses has no steps.
func TestHugeBatches(t *testing.T) {
	dev := cpu.New()
	for _, batch := range []int{5, 1 << 40, math.MaxInt} {
		l := &loader.Loader{Images: make([]float32, 5*3), Labels: make([]int32, 5), Features: 3, Batch: batch}
		if got := l.Steps(); got != 1 {
			t.Errorf("batch %d: %d steps; want 1", batch, got)
		}
		n := 0
		for _, b := range l.Epoch(dev) {
			if b.Err != nil || b.Size != 5 {
				t.Fatalf("batch %d: a batch of %d, %v; want all 5", batch, b.Size, b.Err)
			}
			n++
		}
		if n != 1 {
			t.Errorf("batch %d: %d batches; want 1", batch, n)
		}
	}
	if got := (&loader.Loader{Images: make([]float32, 3), Labels: make([]int32, 1), Features: 3}).Steps(); got != 0 {
		t.Errorf("batches of 0: %d steps; want 0", got)
	}
}
