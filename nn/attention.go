package nn

import (
	"fmt"
	"math"

	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/tensor"
)

// Namer is a layer whose parameters have names of their own, as PyTorch's
// state_dict gives them within the layer ("weight", "out_proj.bias"), in
// the order of Params. Sequential prefixes them with the layer's index.
type Namer interface {
	ParamNames() []string
}

// Trainer is a layer with a training and an evaluation mode.
type Trainer interface {
	Train(on bool)
}

// EmbeddingLayer is PyTorch's Embedding: row i of W for index i.
type EmbeddingLayer struct{ W *autograd.Var }

// Embedding returns a table of num rows of dim features, N(0, 1) as
// PyTorch initialises it, from seed.
func Embedding(dev device.Device, dt device.DType, num, dim int, seed uint64) (*EmbeddingLayer, error) {
	w, err := tensor.Normal(dev, dt, 0, 1, seed, num, dim)
	if err != nil {
		return nil, err
	}
	return &EmbeddingLayer{W: autograd.Leaf(w, true)}, nil
}

// Forward returns the rows of W named by idx, int32 of any shape:
// [idx's shape..., dim].
func (e *EmbeddingLayer) Forward(idx *autograd.Var) *autograd.Var {
	return ops.Embedding(idx, e.W)
}

// Params returns W.
func (e *EmbeddingLayer) Params() []*autograd.Var { return []*autograd.Var{e.W} }

// ParamNames returns "weight".
func (e *EmbeddingLayer) ParamNames() []string { return []string{"weight"} }

// MultiheadAttentionLayer is PyTorch's MultiheadAttention with
// batch_first: inputs [N, L, E], Heads heads of E/Heads features, the
// projections of q, k and v stacked in InProjW [3E, E] and InProjB [3E],
// then OutProj. The attention runs through the fused kernels
// (ops.ScaledDotProductAttention), with Causal masking and, while
// Training, dropout of the attention probabilities with probability
// Dropout (a new seed each call, from Seed).
type MultiheadAttentionLayer struct {
	InProjW, InProjB *autograd.Var
	OutProj          *LinearLayer
	Heads            int
	Causal           bool
	Dropout          float64
	Seed             uint64
	Training         bool
	calls            uint64
}

// MultiheadAttention returns a layer of embed features and heads heads,
// initialised as PyTorch does (in_proj_weight Xavier-uniform, the biases
// zero, out_proj.weight as Linear's), from seed, in training mode.
func MultiheadAttention(dev device.Device, dt device.DType, embed, heads int, seed uint64) (*MultiheadAttentionLayer, error) {
	if heads < 1 || embed%heads != 0 {
		tensor.Panicf("nn.MultiheadAttention", tensor.ErrArgument, "%d features in %d heads; want heads ≥ 1 dividing the features", embed, heads)
	}
	w, err := uniform(dev, dt, math.Sqrt(6/float64(4*embed)), seed, 3*embed, embed)
	if err != nil {
		return nil, err
	}
	b, err := tensor.Zeros(dev, dt, 3*embed)
	if err != nil {
		return nil, err
	}
	out, err := Linear(dev, dt, embed, embed, seed+1)
	if err != nil {
		return nil, err
	}
	ob, err := tensor.Zeros(dev, dt, embed)
	if err != nil {
		return nil, err
	}
	out.B.Release()
	out.B = autograd.Leaf(ob, true)
	return &MultiheadAttentionLayer{InProjW: w, InProjB: autograd.Leaf(b, true), OutProj: out, Heads: heads, Seed: seed, Training: true}, nil
}

// Forward returns the self-attention of x [N, L, E].
func (m *MultiheadAttentionLayer) Forward(x *autograd.Var) *autograd.Var {
	return m.Attend(x, x, x, nil)
}

// Attend returns the attention of the queries q [N, Lq, E] to the keys k
// and values v [N, Lk, E]: [N, Lq, E]. mask, if not nil, is added to the
// scores (PyTorch's float attn_mask): [Lq, Lk], or any shape that
// broadcasts to [N, Heads, Lq, Lk].
func (m *MultiheadAttentionLayer) Attend(q, k, v, mask *autograd.Var) *autograd.Var {
	e := m.InProjW.Value().Dim(1)
	w, b := like(m.InProjW, q), like(m.InProjB, q)
	a := ops.AttentionAttrs{Causal: m.Causal}
	if m.Training && m.Dropout > 0 {
		a.Dropout, a.Seed = m.Dropout, m.Seed+m.calls
		m.calls++
	}
	if q == k && k == v { // one product for the three, its heads read in place
		m.check(q)
		return m.OutProj.Forward(ops.MultiHeadAttention(ops.Linear(q, w, b), mask, ops.MultiHeadAttrs{Heads: m.Heads, AttentionAttrs: a}))
	}
	proj := func(x *autograd.Var, i int) *autograd.Var {
		return m.heads(ops.Linear(x, ops.Slice(w, 0, i*e, (i+1)*e, 1), ops.Slice(b, 0, i*e, (i+1)*e, 1)))
	}
	o := ops.ScaledDotProductAttention(proj(q, 0), proj(k, 1), proj(v, 2), mask, a)
	s := o.Value().Shape()
	o = ops.Reshape(ops.Permute(o, 0, 2, 1, 3), s[0], s[2], e)
	return m.OutProj.Forward(o)
}

// heads returns x [N, L, E] as [N, Heads, L, E/Heads].
func (m *MultiheadAttentionLayer) heads(x *autograd.Var) *autograd.Var {
	s := m.check(x)
	return ops.Permute(ops.Reshape(x, s[0], s[1], m.Heads, s[2]/m.Heads), 0, 2, 1, 3)
}

// check returns the shape of x, [N, L, E] with E a multiple of Heads,
// or panics.
func (m *MultiheadAttentionLayer) check(x *autograd.Var) []int {
	s := x.Value().Shape()
	if len(s) != 3 {
		tensor.Panicf("nn.MultiheadAttention", tensor.ErrShape, "input of shape %v; want [N, L, E] (batch first)", s)
	}
	if m.Heads < 1 || s[2]%m.Heads != 0 {
		tensor.Panicf("nn.MultiheadAttention", tensor.ErrArgument, "%d heads for embeddings of %d features; want heads ≥ 1 dividing the features", m.Heads, s[2])
	}
	return s
}

// Params returns InProjW, InProjB and OutProj's W and B.
func (m *MultiheadAttentionLayer) Params() []*autograd.Var {
	return []*autograd.Var{m.InProjW, m.InProjB, m.OutProj.W, m.OutProj.B}
}

// ParamNames returns PyTorch's names of Params.
func (m *MultiheadAttentionLayer) ParamNames() []string {
	return []string{"in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"}
}

// Train sets training (dropout on) or evaluation mode.
func (m *MultiheadAttentionLayer) Train(on bool) { m.Training = on }

// TransformerLayer is PyTorch's TransformerEncoderLayer with
// norm_first=True, batch_first=True and GELU: x + SelfAttn(Norm1(x)),
// then that plus Linear2(GELU(Linear1(Norm2(·)))), each branch's output
// (and the hidden activations) through dropout while training. With
// SelfAttn.Causal it is a decoder-only model's block.
type TransformerLayer struct {
	SelfAttn                    *MultiheadAttentionLayer
	Linear1, Linear2            *LinearLayer
	Norm1, Norm2                *NormLayer
	Dropout, Dropout1, Dropout2 *DropoutLayer
}

// Transformer returns a pre-norm transformer layer of embed features,
// heads heads and hidden feed-forward features, with dropout p, from
// seed, in training mode.
func Transformer(dev device.Device, dt device.DType, embed, heads, hidden int, p float64, seed uint64) (*TransformerLayer, error) {
	attn, err := MultiheadAttention(dev, dt, embed, heads, seed)
	if err != nil {
		return nil, err
	}
	l1, err := Linear(dev, dt, embed, hidden, seed+2)
	if err != nil {
		return nil, err
	}
	l2, err := Linear(dev, dt, hidden, embed, seed+4)
	if err != nil {
		return nil, err
	}
	n1, err := LayerNorm(dev, dt, embed)
	if err != nil {
		return nil, err
	}
	n2, err := LayerNorm(dev, dt, embed)
	if err != nil {
		return nil, err
	}
	return &TransformerLayer{SelfAttn: attn, Linear1: l1, Linear2: l2, Norm1: n1, Norm2: n2,
		Dropout: Dropout(p, seed+5), Dropout1: Dropout(p, seed+6), Dropout2: Dropout(p, seed+7)}, nil
}

// Forward applies the layer to x [N, L, E].
func (t *TransformerLayer) Forward(x *autograd.Var) *autograd.Var {
	h := ops.Add(x, t.Dropout1.Forward(t.SelfAttn.Forward(t.Norm1.Forward(x))))
	ff := t.Linear2.Forward(t.Dropout.Forward(ops.Gelu(t.Linear1.Forward(t.Norm2.Forward(h)))))
	return ops.Add(h, t.Dropout2.Forward(ff))
}

// Params returns the parameters in ParamNames' order.
func (t *TransformerLayer) Params() []*autograd.Var {
	ps := t.SelfAttn.Params()
	for _, l := range []Layer{t.Linear1, t.Linear2, t.Norm1, t.Norm2} {
		ps = append(ps, l.Params()...)
	}
	return ps
}

// ParamNames returns PyTorch's names of Params.
func (t *TransformerLayer) ParamNames() []string {
	var names []string
	for _, n := range t.SelfAttn.ParamNames() {
		names = append(names, "self_attn."+n)
	}
	for _, n := range []string{"linear1", "linear2", "norm1", "norm2"} {
		names = append(names, n+".weight", n+".bias")
	}
	return names
}

// Train sets training (dropout on) or evaluation mode.
func (t *TransformerLayer) Train(on bool) {
	t.SelfAttn.Train(on)
	for _, d := range []*DropoutLayer{t.Dropout, t.Dropout1, t.Dropout2} {
		d.Training = on
	}
}

// GroupNormLayer is PyTorch's GroupNorm: the channels (axis 1) in Groups
// groups, each normalised over its channels and every later axis, then
// an affine transform per channel: W (weight) ones and B (bias) zeros at
// first.
type GroupNormLayer struct {
	W, B   *autograd.Var
	Groups int
	Eps    float64
}

// GroupNorm returns a group normalisation of c channels in groups groups,
// eps 1e-5, with an affine transform.
func GroupNorm(dev device.Device, dt device.DType, groups, c int) (*GroupNormLayer, error) {
	if groups < 1 || c < 0 || c%groups != 0 {
		return nil, fmt.Errorf("nn.GroupNorm: %d channels in %d groups; want groups ≥ 1 dividing the channels", c, groups)
	}
	w, err := tensor.Ones(dev, dt, c)
	if err != nil {
		return nil, err
	}
	b, err := tensor.Zeros(dev, dt, c)
	if err != nil {
		return nil, err
	}
	return &GroupNormLayer{W: autograd.Leaf(w, true), B: autograd.Leaf(b, true), Groups: groups, Eps: ops.DefaultLayerNormEps}, nil
}

// Forward normalises x (N, C, …).
func (l *GroupNormLayer) Forward(x *autograd.Var) *autograd.Var {
	return ops.GroupNorm(x, l.Groups, like(l.W, x), like(l.B, x), l.Eps)
}

// Params returns W and B.
func (l *GroupNormLayer) Params() []*autograd.Var { return []*autograd.Var{l.W, l.B} }

// ParamNames returns "weight" and "bias".
func (l *GroupNormLayer) ParamNames() []string { return []string{"weight", "bias"} }

// ResidualLayer is x + Layer(x): a residual connection around a layer
// (a Sequential, say) whose output has x's shape.
type ResidualLayer struct{ Layer Layer }

// Residual returns x + l(x).
func Residual(l Layer) ResidualLayer { return ResidualLayer{Layer: l} }

// Forward returns x + Layer(x).
func (r ResidualLayer) Forward(x *autograd.Var) *autograd.Var {
	return ops.Add(x, r.Layer.Forward(x))
}

// Params returns the layer's parameters.
func (r ResidualLayer) Params() []*autograd.Var { return r.Layer.Params() }

// ParamNames returns the layer's names of Params (a Namer's; a Linear's
// or Conv2d's "weight" and "bias") as PyTorch names a module holding it
// as "layer": "layer.<name>".
func (r ResidualLayer) ParamNames() []string {
	names := []string{"weight", "bias"}
	if l, ok := r.Layer.(Namer); ok {
		names = l.ParamNames()
	}
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "layer." + n
	}
	return out[:len(r.Params())]
}

// Train sets the layer's mode, if it has one.
func (r ResidualLayer) Train(on bool) {
	if l, ok := r.Layer.(Trainer); ok {
		l.Train(on)
	}
}

// KVCache holds one attention layer's keys and values of the positions
// decoded so far, [N, Heads, L, E/Heads] each, for generation: each new
// position then costs the work of one position, not of the whole prefix.
// The cache owns its tensors; Release frees them. Decoded inside a
// tensor.Scope, they are computed from the scope's input and join it:
// return or Keep them to decode on after the scope.
type KVCache struct {
	K, V *tensor.Tensor
}

// Len returns the number of positions held.
func (c *KVCache) Len() int {
	if c.K == nil {
		return 0
	}
	return c.K.Dim(2)
}

// Release frees the cached keys and values and empties the cache.
func (c *KVCache) Release() {
	if c.K != nil {
		c.K.Release()
		c.V.Release()
	}
	c.K, c.V = nil, nil
}

// append adds the keys and values of new positions, [N, Heads, L, D].
func (c *KVCache) append(k, v *tensor.Tensor) {
	if c.K == nil {
		c.K, c.V = ops.Clone(k), ops.Clone(v)
		return
	}
	nk, nv := ops.Concat([]*tensor.Tensor{c.K, k}, 2), ops.Concat([]*tensor.Tensor{c.V, v}, 2)
	c.Release()
	c.K, c.V = nk, nv
}

// Attend adds the keys k and values v [N, Heads, L, D] of L new
// positions to c and returns the attention of their queries q
// [N, Heads, L, D] to every position c holds (a scale of 0 is
// 1/sqrt(D)), with no tape: with causal, new position i sees the P
// positions held before and the new positions ≤ i, as a causal
// attention over all P + L positions gives for the last L. pads, if not
// nil, holds for each of the N sequences the positions at its start that
// are padding (left padding): no query sees them but their own (a
// padding query, whose output is unused, sees itself alone).
func (c *KVCache) Attend(q *autograd.Var, k, v *tensor.Tensor, causal bool, pads []int, scale float64) *autograd.Var {
	if pads != nil && len(pads) != k.Dim(0) {
		tensor.Panicf("nn.KVCache.Attend", tensor.ErrArgument, "%d paddings for %d sequences; want one a sequence", len(pads), k.Dim(0))
	}
	p, l := c.Len(), k.Dim(2)
	c.append(k, v)
	var mask *autograd.Var
	seen := causal // whether new position i sees only keys ≤ p + i
	causal = causal && l > 1
	if pads != nil || causal && p > 0 { // new position i sees keys ≤ p + i, past the padding
		n, s := k.Dim(0), p+l
		rows := 1
		if pads != nil {
			rows = n
		}
		allow := make([]float64, rows*l*s)
		for r := range rows {
			pad := 0
			if pads != nil {
				pad = pads[r]
			}
			for i := range l {
				last := s - 1
				if seen {
					last = p + i
				}
				for j := range last + 1 {
					if j >= pad || j == p+i {
						allow[(r*l+i)*s+j] = 1
					}
				}
			}
		}
		shape := []int{l, s}
		if pads != nil {
			shape = []int{n, 1, l, s}
		}
		t, err := tensor.FromValues(k.Device(), k.DType(), allow, shape...)
		if err != nil {
			t = tensor.Failed(k.Device(), k.DType(), err, shape...)
		}
		mask, causal = autograd.Temp(t), false
	}
	a := ops.AttentionAttrs{Causal: causal, BoolMask: mask != nil, Scale: scale}
	return ops.ScaledDotProductAttention(q.NoGrad(), autograd.Temp(c.K), autograd.Temp(c.V), mask, a)
}

// Decode returns the self-attention of the new positions x [N, L, E]
// (evaluation mode: no dropout, no tape) to every position in c and to
// themselves, and adds their keys and values to c. With Causal, new
// position i sees the cached positions and new positions ≤ i; a cache
// of P positions then gives what Forward gives for the last L of P + L
// positions.
func (m *MultiheadAttentionLayer) Decode(x *autograd.Var, c *KVCache) *autograd.Var {
	var out *autograd.Var
	x = x.NoGrad()
	e := m.InProjW.Value().Dim(1)
	y := ops.Linear(x, like(m.InProjW, x), like(m.InProjB, x))
	q := m.heads(ops.Slice(y, -1, 0, e, 1))
	k := m.heads(ops.Slice(y, -1, e, 2*e, 1)).Value()
	v := m.heads(ops.Slice(y, -1, 2*e, 3*e, 1)).Value()
	o := c.Attend(q, k, v, m.Causal, nil, 0)
	s := o.Value().Shape()
	o = ops.Reshape(ops.Permute(o, 0, 2, 1, 3), s[0], s[2], e)
	out = m.OutProj.Forward(o)
	return out
}

// Decode applies the layer to the new positions x [N, L, E] in
// evaluation mode, its self-attention through c (MultiheadAttentionLayer's
// Decode).
func (t *TransformerLayer) Decode(x *autograd.Var, c *KVCache) *autograd.Var {
	var out *autograd.Var
	x = x.NoGrad()
	h := ops.Add(x, t.SelfAttn.Decode(t.Norm1.Forward(x), c))
	ff := t.Linear2.Forward(ops.Gelu(t.Linear1.Forward(t.Norm2.Forward(h))))
	out = ops.Add(h, ff)
	return out
}
