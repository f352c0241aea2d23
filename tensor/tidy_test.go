package tensor_test

import (
	"errors"
	"runtime"
	"sync"
	"testing"

	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/tensor"
)

func TestTidy(t *testing.T) {
	dev := cpu.New()
	ones := func() *tensor.Tensor { return tensor.Must(tensor.Ones(dev, device.Float32, 4)) }
	var a, b, c, inner, view, other *tensor.Tensor
	kept := tensor.Tidy(func() []*tensor.Tensor {
		a, b = ones(), ones()
		c = tensor.Tidy(func() *tensor.Tensor {
			inner = ones()
			return ones()
		})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); other = ones() }() // not this goroutine's
		wg.Wait()
		view = a.Reshape(2, 2)
		return []*tensor.Tensor{b, c, view}
	})
	for _, tt := range []struct {
		name     string
		t        *tensor.Tensor
		released bool
	}{
		{"a, not returned", a, true},
		{"inner Tidy's intermediate", inner, true},
		{"b, returned", b, false},
		{"c, returned through two scopes", c, false},
		{"a view of a, returned", view, false},
		{"another goroutine's tensor", other, false},
	} {
		if tt.t.Released() != tt.released {
			t.Errorf("%s: Released() = %v; want %v", tt.name, tt.t.Released(), tt.released)
		}
	}
	if len(kept) != 3 {
		t.Fatalf("Tidy returned %d tensors; want 3", len(kept))
	}
	// The view keeps a's memory.
	if v, err := view.Float32s(); err != nil || v[3] != 1 {
		t.Errorf("view of a released tensor: %v, %v", v, err)
	}
	for _, x := range []*tensor.Tensor{b, c, view, other} {
		x.Release()
	}
	runtime.GC()
	if n := dev.MemoryInUse(); n != 0 {
		t.Errorf("%d bytes in use after releasing everything", n)
	}
}

func TestTidyPanics(t *testing.T) {
	dev := cpu.New()
	var a *tensor.Tensor
	boom := errors.New("boom")
	func() {
		defer func() {
			if r := recover(); r != boom {
				t.Errorf("recovered %v; want the panic of fn", r)
			}
		}()
		tensor.Tidy(func() *tensor.Tensor {
			a = tensor.Must(tensor.Ones(dev, device.Float32, 4))
			panic(boom)
		})
	}()
	if !a.Released() {
		t.Error("a tensor created before fn panicked was not released")
	}
	// Outside any scope, nothing is recorded or released.
	b := tensor.Must(tensor.Ones(dev, device.Float32, 4))
	if b.Released() {
		t.Error("a tensor created outside Tidy was released")
	}
}

// TestUnreachableTensorsFreeMemory drops tensors without Release: their
// cleanups give the memory back.
func TestUnreachableTensorsFreeMemory(t *testing.T) {
	dev := cpu.New()
	for range 100 {
		tensor.Must(tensor.Zeros(dev, device.Float32, 1000))
	}
	for range 10 {
		runtime.GC()
		if dev.MemoryInUse() == 0 {
			return
		}
		runtime.Gosched()
	}
	t.Errorf("%d bytes still in use after the tensors became unreachable", dev.MemoryInUse())
}

func TestSizeOverflowIsAnError(t *testing.T) {
	dev := cpu.New()
	for _, shape := range [][]int{{1 << 40, 1 << 40}, {1 << 62, 4}} {
		_, err := tensor.Zeros(dev, device.Float32, shape...)
		if !errors.Is(err, device.ErrOutOfMemory) {
			t.Errorf("Zeros%v: err = %v; want ErrOutOfMemory", shape, err)
		}
	}
	// Past the device's memory, the same kind of error.
	_, err := tensor.Zeros(dev, device.Float32, 1<<20, 1<<20)
	if !errors.Is(err, device.ErrOutOfMemory) {
		t.Errorf("Zeros(1<<20, 1<<20): err = %v; want ErrOutOfMemory", err)
	}
}
