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

// Positions says where the tokens of a decode step sit: after Start
// positions (those the caches hold), in rows that are left-padded when
// Pads is not nil: row b's first Pads[b] positions of the whole sequence
// are padding.
type Positions struct {
	Start int
	Pads  []int
}

// IDs returns the position ids [rows·l] of l new tokens in each of rows
// rows: Start + i, less the row's padding, as transformers counts them
// for a left-padded batch (its attention mask's cumulative sum, less
// one); a padding position counts as 0.
func (p Positions) IDs(rows, l int) []int32 {
	ids := make([]int32, rows*l)
	for r := range rows {
		pad := 0
		if p.Pads != nil {
			pad = p.Pads[r]
		}
		for i := range l {
			ids[r*l+i] = int32(max(0, p.Start+i-pad))
		}
	}
	return ids
}

// A DecodeFunc returns a decoder's logits [B, L, vocabulary] of the
// token ids x [B, L] at positions at, attending through the layers'
// caches (KVCache.Attend with at.Pads); op names the caller in its
// panics.
type DecodeFunc func(op string, x *autograd.Var, at Positions, layers []KVCache) *autograd.Var

// Decode runs the tokens ids through decode on dev after the positions
// that cache (a *Caches of layers layers) holds, with no tape, adds them
// to it and returns the logits of the last (vocab of them). Another
// cache, and tokens that do not fit with the cache's in context
// positions or are not ids of the vocabulary, are errors before any
// work; op names the caller in errors. A failure empties the cache.
func Decode(op string, cache any, layers int, dev device.Device, ids []int32, vocab, context int, decode DecodeFunc) ([]float64, error) {
	out, err := DecodeBatch(op, cache, layers, dev, [][]int32{ids}, nil, vocab, context, decode)
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// DecodeBatch is Decode for rows of tokens of one length, one a
// sequence, left-padded as pads says (Positions.Pads; nil: none): the
// logits of each row's last position.
func DecodeBatch(op string, cache any, layers int, dev device.Device, ids [][]int32, pads []int, vocab, context int, decode DecodeFunc) ([][]float64, error) {
	c, ok := cache.(*Caches)
	if !ok || len(c.Layers) != layers {
		return nil, fmt.Errorf("%s: a cache %T, not the model's own (NewCache)", op, cache)
	}
	if len(ids) == 0 || pads != nil && len(pads) != len(ids) {
		return nil, fmt.Errorf("%s: %d rows, %d paddings; want rows, and a padding a row", op, len(ids), len(pads))
	}
	l := len(ids[0])
	if l == 0 || c.n+l > context {
		return nil, fmt.Errorf("%s: %d tokens after %d; want 1 or more, at most %d positions in all", op, l, c.n, context)
	}
	flat := make([]int32, 0, len(ids)*l)
	for r, row := range ids {
		if len(row) != l {
			return nil, fmt.Errorf("%s: row %d has %d tokens, row 0 %d; want rows of one length", op, r, len(row), l)
		}
		if pads != nil && (pads[r] < 0 || pads[r] > c.n+l) {
			return nil, fmt.Errorf("%s: row %d has %d positions of padding of %d; want 0 to %d", op, r, pads[r], c.n+l, c.n+l)
		}
		for i, tok := range row {
			if tok < 0 || int(tok) >= vocab {
				return nil, fmt.Errorf("%s: row %d, token %d is %d; want one of the %d of the vocabulary", op, r, i, tok, vocab)
			}
		}
		flat = append(flat, row...)
	}
	x, err := tensor.FromInt32(dev, flat, len(ids), l)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	defer x.Release()
	var logits []float64
	var read error
	err = tensor.Maybe(func() {
		tensor.Tidy(func(*tensor.Scope) []*tensor.Tensor {
			y := decode(op, autograd.Leaf(x, false).NoGrad(), Positions{Start: c.n, Pads: pads}, c.Layers).Value()
			logits, read = ops.Narrow(ops.Reshape(y, len(ids), l, vocab), 1, l-1, 1).Float64s()
			var keep []*tensor.Tensor
			for _, layer := range c.Layers {
				keep = append(keep, layer.K, layer.V)
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
	c.n += l
	out := make([][]float64, len(ids))
	for r := range out {
		out[r] = logits[r*vocab : (r+1)*vocab]
	}
	return out, nil
}
