package autograd

import (
	"sync"
	"sync/atomic"

	"github.com/extensor/extensor/internal/goid"
)

// noGrad counts the open NoGrad scopes of each goroutine.
var noGrad = struct {
	mu     sync.Mutex
	active atomic.Int32 // open scopes, on any goroutine
	byG    map[uint64]int
}{byG: map[uint64]int{}}

// NoGrad runs fn without recording: ops inside it, on the calling
// goroutine, give variables that require no gradient, as under PyTorch's
// torch.no_grad (evaluation, say). Scopes nest; other goroutines record
// as usual.
func NoGrad(fn func()) {
	id := goid.Get()
	noGrad.mu.Lock()
	noGrad.byG[id]++
	noGrad.mu.Unlock()
	noGrad.active.Add(1)
	defer func() {
		noGrad.active.Add(-1)
		noGrad.mu.Lock()
		if noGrad.byG[id]--; noGrad.byG[id] == 0 {
			delete(noGrad.byG, id)
		}
		noGrad.mu.Unlock()
	}()
	fn()
}

// recording reports whether the calling goroutine records ops.
func recording() bool {
	if noGrad.active.Load() == 0 {
		return true
	}
	id := goid.Get()
	noGrad.mu.Lock()
	defer noGrad.mu.Unlock()
	return noGrad.byG[id] == 0
}
