package tensor

import (
	"sync"
	"sync/atomic"

	"github.com/extensor/extensor/internal/goid"
)

// Tidy calls fn and then releases every tensor that the calling goroutine
// created while fn ran, except the tensors fn returns, which are handed to
// the enclosing Tidy, if any. It is TF.js's tidy: a loop body wrapped in
// Tidy frees its intermediates at once instead of when the garbage
// collector finds them. Tensors created by other goroutines, including
// ones fn starts, are not affected. If fn panics, Tidy releases what fn
// created and panics again.
//
//	loss := tensor.Tidy(func() *tensor.Tensor {
//		return ops.MSELoss(ops.Add(ops.MatMul(x, w), b), y)
//	})
func Tidy[T *Tensor | []*Tensor](fn func() T) T {
	id := goid.Get()
	s := &scope{}
	scopes.mu.Lock()
	scopes.byG[id] = append(scopes.byG[id], s)
	scopes.mu.Unlock()
	scopes.active.Add(1)

	var out T
	done := false
	defer func() {
		scopes.active.Add(-1)
		scopes.mu.Lock()
		stack := scopes.byG[id]
		stack = stack[:len(stack)-1]
		if len(stack) == 0 {
			delete(scopes.byG, id)
		} else {
			scopes.byG[id] = stack
		}
		scopes.mu.Unlock()
		keep := map[*Tensor]bool{}
		if done {
			switch v := any(out).(type) {
			case *Tensor:
				keep[v] = true
			case []*Tensor:
				for _, t := range v {
					keep[t] = true
				}
			}
		}
		for _, t := range s.ts {
			if keep[t] {
				record(t) // into the enclosing scope
				continue
			}
			t.Release()
		}
	}()
	out = fn()
	done = true
	return out
}

// scope is the tensors created during one Tidy.
type scope struct{ ts []*Tensor }

// scopes are the open Tidy scopes of each goroutine, innermost last.
var scopes = struct {
	mu     sync.Mutex
	active atomic.Int32 // open scopes, on any goroutine
	byG    map[uint64][]*scope
}{byG: map[uint64][]*scope{}}

// record adds t to the calling goroutine's innermost scope, if it has one.
func record(t *Tensor) {
	if scopes.active.Load() == 0 {
		return
	}
	id := goid.Get()
	scopes.mu.Lock()
	defer scopes.mu.Unlock()
	if stack := scopes.byG[id]; len(stack) > 0 {
		s := stack[len(stack)-1]
		s.ts = append(s.ts, t)
	}
}
