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
	param := ones() // outlives the scopes
	var a, b, c, inner, view, used, fromParam, other *tensor.Tensor
	var outer *tensor.Scope
	kept := tensor.Tidy(func(s *tensor.Scope) []*tensor.Tensor {
		outer = s
		a, b = s.Track(ones()), s.Track(ones())
		c = tensor.Tidy(func(s2 *tensor.Scope) *tensor.Tensor {
			inner = s2.Track(ones())
			return s2.Track(ones())
		})
		view = a.Reshape(2, 2)
		used = s.Use(param).Reshape(2, 2) // a view of a view: the scope's
		fromParam = param.Reshape(4)      // computed from no scope's tensor
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); other = b.Reshape(1, 4) }() // the data's scope, whatever the goroutine
		wg.Wait()
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
		{"c, returned by the inner Tidy", c, false},
		{"a view of a, returned", view, false},
		{"a view of a Use of a parameter", used, true},
		{"the parameter", param, false},
		{"a view of the parameter", fromParam, false},
		{"a view of b made by another goroutine", other, true},
	} {
		if tt.t.Released() != tt.released {
			t.Errorf("%s: Released() = %v; want %v", tt.name, tt.t.Released(), tt.released)
		}
	}
	if len(kept) != 3 {
		t.Fatalf("Tidy returned %d tensors; want 3", len(kept))
	}
	// The view keeps a's memory, and the parameter its own.
	if v, err := view.Float32s(); err != nil || v[3] != 1 {
		t.Errorf("view of a released tensor: %v, %v", v, err)
	}
	if v, err := param.Float32s(); err != nil || v[3] != 1 {
		t.Errorf("the parameter after its Use was released: %v, %v", v, err)
	}
	// A closed scope takes in nothing more; what is computed from its
	// kept tensors belongs to no scope.
	after := view.Reshape(4)
	outer.Release()
	if after.Released() {
		t.Error("a view made after the scope closed was released by a second Release")
	}
	for _, x := range []*tensor.Tensor{b, c, view, param, fromParam, after} {
		x.Release()
	}
	runtime.GC()
	if n := dev.MemoryInUse(); n != 0 {
		t.Errorf("%d bytes in use after releasing everything", n)
	}
}

func TestScopeKeep(t *testing.T) {
	dev := cpu.New()
	s := tensor.NewScope()
	a := s.Track(tensor.Must(tensor.Ones(dev, device.Float32, 4)))
	b := a.Reshape(2, 2)
	other := tensor.Must(tensor.Ones(dev, device.Float32, 4))
	if !s.Owns(a) || !s.Owns(b) || s.Owns(other) {
		t.Errorf("Owns: a %v, its view %v, a tensor of no scope %v; want true, true, false", s.Owns(a), s.Owns(b), s.Owns(other))
	}
	s.Keep(b, other)
	if s.Owns(b) {
		t.Error("a kept tensor still belongs to the scope")
	}
	s.Release()
	if !a.Released() || b.Released() || other.Released() {
		t.Errorf("after Release: a %v, kept view %v, a tensor of no scope %v; want released, kept, kept", a.Released(), b.Released(), other.Released())
	}
	if v, err := b.Float32s(); err != nil || v[3] != 1 {
		t.Errorf("the kept view: %v, %v", v, err)
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
		tensor.Tidy(func(s *tensor.Scope) *tensor.Tensor {
			a = s.Track(tensor.Must(tensor.Ones(dev, device.Float32, 4)))
			panic(boom)
		})
	}()
	if !a.Released() {
		t.Error("a tensor tracked before fn panicked was not released")
	}
	// Outside any scope, nothing is tracked or released.
	b := tensor.Must(tensor.Ones(dev, device.Float32, 4))
	if b.Reshape(2, 2); b.Released() {
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
