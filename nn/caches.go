package nn

import (
	"fmt"

	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/tensor"
)

// Caches holds the key-value caches of a decoder's layers, one a layer,
// for one sequence, and the number of positions they hold.
type Caches struct {
	Layers []KVCache
	n      int
}

// NewCaches returns empty caches for layers layers.
func NewCaches(layers int) *Caches { return &Caches{Layers: make([]KVCache, layers)} }

// Len returns the number of positions held.
func (c *Caches) Len() int { return c.n }

// Release frees the keys and values held and empties the caches.
func (c *Caches) Release() {
	for i := range c.Layers {
		c.Layers[i].Release()
	}
	c.n = 0
}

// A DecodeFunc returns a decoder's logits [1, L, vocabulary] of the
// token ids x [1, L] at positions start onwards, attending through the
// layers' caches (KVCache.Attend); op names the caller in its panics.
type DecodeFunc func(op string, x *autograd.Var, start int, layers []KVCache) *autograd.Var

// Decode runs the tokens ids through decode on dev after the positions
// that cache (a *Caches of layers layers) holds, with no tape, adds them
// to it and returns the logits of the last (vocab of them). Another
// cache, and tokens that do not fit with the cache's in context
// positions or are not ids of the vocabulary, are errors before any
// work; op names the caller in errors. A failure empties the cache.
func Decode(op string, cache any, layers int, dev device.Device, ids []int32, vocab, context int, decode DecodeFunc) ([]float64, error) {
	c, ok := cache.(*Caches)
	if !ok || len(c.Layers) != layers {
		return nil, fmt.Errorf("%s: a cache %T, not the model's own (NewCache)", op, cache)
	}
	if len(ids) == 0 || c.n+len(ids) > context {
		return nil, fmt.Errorf("%s: %d tokens after %d; want 1 or more, at most %d positions in all", op, len(ids), c.n, context)
	}
	for i, tok := range ids {
		if tok < 0 || int(tok) >= vocab {
			return nil, fmt.Errorf("%s: token %d is %d; want one of the %d of the vocabulary", op, i, tok, vocab)
		}
	}
	x, err := tensor.FromInt32(dev, ids, 1, len(ids))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	defer x.Release()
	var logits []float64
	var read error
	err = tensor.Maybe(func() {
		tensor.Tidy(func(*tensor.Scope) []*tensor.Tensor {
			y := decode(op, autograd.Leaf(x, false).NoGrad(), c.n, c.Layers).Value()
			logits, read = ops.Narrow(ops.Reshape(y, len(ids), vocab), 0, len(ids)-1, 1).Float64s()
			var keep []*tensor.Tensor
			for _, l := range c.Layers {
				keep = append(keep, l.K, l.V)
			}
			return keep
		})
	})
	if err == nil {
		err = read
	}
	if err != nil {
		c.Release()
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	c.n += len(ids)
	return logits, nil
}
