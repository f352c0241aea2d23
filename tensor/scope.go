package tensor

import (
	"slices"
	"sync"
	"sync/atomic"
)

// A Scope releases a group of tensors at once, instead of when the
// garbage collector finds them: the tensors passed to Track, the views
// that Use makes, and every tensor computed from one of them while the
// scope is open. Membership follows the data, not the goroutine: an op's
// result joins the newest open scope among its inputs' (Join), and a
// view (Reshape) its tensor's scope. A tensor computed only from tensors
// of no open scope (parameters, say) joins none.
//
// What joins includes gradients computed from a scope's tensors and state
// built from them (a key-value cache): return such tensors from Tidy, or
// Keep them, to use them after the scope. The results of a Tidy leave its
// scope and join no other (TF.js hands them to the enclosing tidy; here
// Track them into the scope that should hold them).
//
// A Scope may be used by many goroutines. The zero value is not usable;
// use NewScope or Tidy.
type Scope struct {
	seq    uint64 // newer scopes have larger numbers
	closed atomic.Bool
	mu     sync.Mutex
	ts     []*Tensor
}

// scopes numbers the scopes in the order they open.
var scopes atomic.Uint64

// NewScope returns an open scope.
func NewScope() *Scope { return &Scope{seq: scopes.Add(1)} }

// Track adds t to s and returns it; a nil t is returned as is (the
// tensor of a failed creation). t must not belong to another scope.
func (s *Scope) Track(t *Tensor) *Tensor {
	if t != nil {
		s.add(t)
	}
	return t
}

// Use returns a view of t that belongs to s: what is computed from the
// view joins s, and releasing s releases the view but not t. It is how a
// scope takes in a tensor that outlives it (a parameter, a function's
// argument).
func (s *Scope) Use(t *Tensor) *Tensor {
	t.notNil("Scope.Use")
	t.live("Scope.Use")
	v := newTensor(t.st, t.shape, t.dtype)
	s.add(v)
	return v
}

// Keep takes ts out of s: releasing s leaves them alone. A tensor of
// another scope, or of none, is left as it is.
func (s *Scope) Keep(ts ...*Tensor) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range ts {
		if t == nil || t.scope.Load() != s {
			continue
		}
		t.scope.Store(nil)
		if i := slices.Index(s.ts, t); i >= 0 {
			s.ts = slices.Delete(s.ts, i, i+1)
		}
	}
}

// Owns reports whether t belongs to s.
func (s *Scope) Owns(t *Tensor) bool { return t != nil && t.scope.Load() == s }

// add records t in s, unless s is closed (an op that finished after
// Release: its result is the garbage collector's).
func (s *Scope) add(t *Tensor) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return
	}
	t.scope.Store(s)
	s.ts = append(s.ts, t)
}

// Release closes s and releases its tensors except keep, which leave the
// scope. Releasing twice is safe.
func (s *Scope) Release(keep ...*Tensor) {
	s.mu.Lock()
	if s.closed.Swap(true) {
		s.mu.Unlock()
		return
	}
	ts := s.ts
	s.ts = nil
	s.mu.Unlock()
	kept := make(map[*Tensor]bool, len(keep))
	for _, t := range keep {
		kept[t] = true
	}
	for _, t := range ts {
		t.scope.Store(nil)
		if !kept[t] {
			t.Release()
		}
	}
}

// Tidy calls fn with a new scope and then releases the scope's tensors
// except those fn returns: TF.js's tidy, with the scope explicit. A loop
// body wrapped in Tidy frees its intermediates at once; what fn creates
// from nothing (a batch read from Go slices) joins the scope by
// s.Track, and tensors from outside it by s.Use where what is computed
// from them should. If fn panics, Tidy releases the scope and panics
// again.
//
//	loss := tensor.Tidy(func(s *tensor.Scope) *tensor.Tensor {
//		x := s.Track(tensor.Must(tensor.FromFloat32(dev, batch, n, 784)))
//		return ops.MSELoss(ops.Add(ops.MatMul(x, w), b), y)
//	})
func Tidy[T *Tensor | []*Tensor](fn func(s *Scope) T) T {
	s := NewScope()
	var out T
	done := false
	defer func() {
		var keep []*Tensor
		if done {
			switch v := any(out).(type) {
			case *Tensor:
				keep = []*Tensor{v}
			case []*Tensor:
				keep = v
			}
		}
		s.Release(keep...)
	}()
	out = fn(s)
	done = true
	return out
}

// Join adds t, computed from ins, to the newest open scope among theirs,
// if any, and returns t. The ops call it for each result they allocate;
// code that computes a tensor outside the ops (a backend's own kernel)
// calls it too, so that scopes follow its data.
func Join(t *Tensor, ins ...*Tensor) *Tensor {
	if t == nil {
		return t
	}
	var newest *Scope
	for _, in := range ins {
		if in == nil {
			continue
		}
		if s := in.scope.Load(); s != nil && !s.closed.Load() && (newest == nil || s.seq > newest.seq) {
			newest = s
		}
	}
	if newest != nil && t.scope.Load() == nil {
		newest.add(t)
	}
	return t
}
