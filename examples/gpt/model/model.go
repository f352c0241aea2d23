// Package model is examples/gpt's decoder-only transformer: token and
// learned position embeddings, pre-norm blocks (nn.Transformer with causal
// self-attention through the fused kernel, a GELU MLP of four times the
// width, residuals), a final LayerNorm, and the output layer tied to the
// token embedding (logits = h·Tokᵀ). Its state_dict names are those of
// examples/gpt/torch_gpt.py's PyTorch model.
package model

import (
	"fmt"
	"math"

	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/nn"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/tensor"
)

// Config is the model's size.
type Config struct {
	Vocab   int     // tokens (256: bytes)
	Context int     // positions
	Layers  int     // blocks
	Heads   int     // attention heads
	Width   int     // features
	Dropout float64 // after the embeddings, in each block's branches and attention
}

// Check returns an error for sizes that make no model.
func (c Config) Check() error {
	switch {
	case c.Vocab < 1 || c.Context < 1 || c.Layers < 1 || c.Heads < 1 || c.Width < 1:
		return fmt.Errorf("model: vocab %d, context %d, layers %d, heads %d, width %d; want ≥ 1 each", c.Vocab, c.Context, c.Layers, c.Heads, c.Width)
	case c.Width%c.Heads != 0:
		return fmt.Errorf("model: width %d in %d heads; want heads dividing the width", c.Width, c.Heads)
	case !(c.Dropout >= 0 && c.Dropout < 1):
		return fmt.Errorf("model: dropout %v; want 0 ≤ p < 1", c.Dropout)
	}
	if n, ok := c.params(); !ok || n > MaxParams {
		return fmt.Errorf("model: vocab %d, context %d, layers %d, width %d: more than %d parameters", c.Vocab, c.Context, c.Layers, c.Width, MaxParams)
	}
	return nil
}

// MaxParams bounds a model's parameters (2³¹ float32: 8 GiB, and their
// gradients and Adam's state three times as much): a configuration past
// it is refused before anything is allocated.
const MaxParams = 1 << 31

// params returns the model's parameter count, Vocab·Width + Context·Width
// for the embeddings and Layers·(12·Width² + 13·Width) for the blocks (and
// the final norm's 2·Width), false if it overflows an int.
func (c Config) params() (int, bool) {
	mul, add := device.CheckedMul, device.CheckedAdd
	emb, ok1 := mul(c.Vocab, c.Width)
	pos, ok2 := mul(c.Context, c.Width)
	w2, ok3 := mul(c.Width, c.Width)
	b12, ok4 := mul(w2, 12)
	b13, ok5 := mul(c.Width, 13)
	block, ok6 := add(b12, b13)
	blocks, ok7 := mul(block, c.Layers)
	n, ok8 := add(emb, pos)
	n, ok9 := add(n, blocks)
	n, ok10 := add(n, 2*c.Width)
	return n, ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7 && ok8 && ok9 && ok10
}

// GPT is the model.
type GPT struct {
	Cfg      Config
	Tok, Pos *nn.EmbeddingLayer
	Blocks   []*nn.TransformerLayer
	Norm     *nn.NormLayer
	Drop     *nn.DropoutLayer
	// Half runs the blocks in float16 (mixed precision): the embeddings'
	// sum is cast to float16 and the logits back to float32.
	Half      bool
	positions *tensor.Tensor // int32 0, 1, …, Context−1
}

// Std is the initialisation's standard deviation (GPT-2's): every
// weight matrix and embedding is N(0, Std²), the residual branches'
// output projections N(0, Std²/(2·Layers)); biases are zero and the
// LayerNorms ones and zeros.
const Std = 0.02

// New returns a model of cfg's size, initialised from seed, in training
// mode.
func New(dev device.Device, cfg Config, seed uint64) (*GPT, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	m := &GPT{Cfg: cfg}
	idx := make([]int32, cfg.Context)
	for i := range idx {
		idx[i] = int32(i)
	}
	var err error
	if m.positions, err = tensor.FromInt32(dev, idx, cfg.Context); err != nil {
		return nil, err
	}
	normal := func(std float64, shape ...int) *autograd.Var {
		seed++
		t, e := tensor.Normal(dev, device.Float32, 0, std, seed, shape...)
		if e != nil && err == nil {
			err = e
		}
		return autograd.Leaf(t, true)
	}
	if m.Tok, err = nn.Embedding(dev, device.Float32, cfg.Vocab, cfg.Width, seed); err != nil {
		return nil, err
	}
	if m.Pos, err = nn.Embedding(dev, device.Float32, cfg.Context, cfg.Width, seed+1); err != nil {
		return nil, err
	}
	seed += 2
	m.Tok.W.Release()
	m.Pos.W.Release()
	m.Tok.W, m.Pos.W = normal(Std, cfg.Vocab, cfg.Width), normal(Std, cfg.Context, cfg.Width)
	proj := Std / math.Sqrt(2*float64(cfg.Layers))
	for i := range cfg.Layers {
		b, e := nn.Transformer(dev, device.Float32, cfg.Width, cfg.Heads, 4*cfg.Width, cfg.Dropout, seed+uint64(100*i))
		if e != nil {
			return nil, e
		}
		b.SelfAttn.Causal, b.SelfAttn.Dropout = true, cfg.Dropout
		b.SelfAttn.InProjW.Release()
		b.SelfAttn.OutProj.W.Release()
		b.Linear1.W.Release()
		b.Linear2.W.Release()
		b.SelfAttn.InProjW = normal(Std, 3*cfg.Width, cfg.Width)
		b.SelfAttn.OutProj.W = normal(proj, cfg.Width, cfg.Width)
		b.Linear1.W = normal(Std, 4*cfg.Width, cfg.Width)
		b.Linear2.W = normal(proj, cfg.Width, 4*cfg.Width)
		for _, bias := range []**autograd.Var{&b.Linear1.B, &b.Linear2.B} {
			z, e := tensor.Zeros(dev, device.Float32, (*bias).Value().Shape()...)
			(*bias).Release()
			if e != nil && err == nil {
				err = e
			}
			*bias = autograd.Leaf(z, true)
		}
		m.Blocks = append(m.Blocks, b)
	}
	if m.Norm, err = nn.LayerNorm(dev, device.Float32, cfg.Width); err != nil {
		return nil, err
	}
	m.Drop = nn.Dropout(cfg.Dropout, seed+7)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// Train sets training (dropout on) or evaluation mode.
func (m *GPT) Train(on bool) {
	m.Drop.Training = on
	for _, b := range m.Blocks {
		b.Train(on)
	}
}

// embed returns the tokens' and positions' embeddings, summed.
func (m *GPT) embed(idx *autograd.Var, offset int) *autograd.Var {
	s := idx.Value().Shape()
	if len(s) != 2 {
		tensor.Panicf("model.GPT", tensor.ErrShape, "tokens of shape %v; want [N, L]", s)
	}
	if offset+s[1] > m.Cfg.Context {
		tensor.Panicf("model.GPT", tensor.ErrShape, "positions %d…%d; the model has %d", offset, offset+s[1]-1, m.Cfg.Context)
	}
	pos := ops.Slice(autograd.Leaf(m.positions, false), 0, offset, offset+s[1], 1)
	h := ops.Add(m.Tok.Forward(idx), m.Pos.Forward(pos))
	if m.Half {
		h = ops.Cast(h, device.Float16)
	}
	return h
}

// logits returns the final norm and the tied output layer of h.
func (m *GPT) logits(h *autograd.Var) *autograd.Var {
	h = m.Norm.Forward(h)
	w := m.Tok.W
	if m.Half {
		w = ops.Cast(w, device.Float16)
	}
	out := ops.Linear(h, w, nil)
	if m.Half {
		out = ops.Cast(out, device.Float32)
	}
	return out
}

// Forward returns the logits [N, L, Vocab] of the int32 tokens idx
// [N, L], L ≤ Context, each position seeing itself and those before it.
func (m *GPT) Forward(idx *autograd.Var) *autograd.Var {
	h := m.Drop.Forward(m.embed(idx, 0))
	for _, b := range m.Blocks {
		h = b.Forward(h)
	}
	return m.logits(h)
}

// Loss returns the mean cross-entropy of Forward(x) against the next
// tokens y [N, L].
func (m *GPT) Loss(x, y *autograd.Var) *autograd.Var {
	logits := m.Forward(x)
	s := logits.Value().Shape()
	return ops.CrossEntropyLoss(ops.Reshape(logits, s[0]*s[1], s[2]), ops.Reshape(y, s[0]*s[1]), ops.MeanReduction)
}

// Caches returns an empty key-value cache for each block.
func (m *GPT) Caches() []*nn.KVCache {
	c := make([]*nn.KVCache, len(m.Blocks))
	for i := range c {
		c[i] = &nn.KVCache{}
	}
	return c
}

// Decode returns the logits [N, L, Vocab] of the new tokens idx [N, L]
// that follow the positions held in caches, in evaluation mode, and adds
// their keys and values to caches. The positions in all must not pass
// Context.
func (m *GPT) Decode(idx *autograd.Var, caches []*nn.KVCache) *autograd.Var {
	const op = "model.GPT.Decode"
	if len(caches) != len(m.Blocks) {
		tensor.Panicf(op, tensor.ErrArgument, "%d key-value caches for %d blocks; want one a block (GPT.Caches)", len(caches), len(m.Blocks))
	}
	for i, c := range caches {
		if c == nil {
			tensor.Panicf(op, tensor.ErrArgument, "key-value cache %d is nil", i)
		}
		if c.Len() != caches[0].Len() {
			tensor.Panicf(op, tensor.ErrArgument, "key-value cache %d holds %d positions and cache 0 %d; want caches of one sequence (GPT.Caches)", i, c.Len(), caches[0].Len())
		}
	}
	var out *autograd.Var
	idx = idx.NoGrad()
	h := m.embed(idx, caches[0].Len())
	for i, b := range m.Blocks {
		h = b.Decode(h, caches[i])
	}
	out = m.logits(h)
	return out
}

// Params returns the parameters in ParamNames' order.
func (m *GPT) Params() []*autograd.Var {
	ps := []*autograd.Var{m.Tok.W, m.Pos.W}
	for _, b := range m.Blocks {
		ps = append(ps, b.Params()...)
	}
	return append(ps, m.Norm.Params()...)
}

// ParamNames returns the PyTorch model's state_dict names of Params.
func (m *GPT) ParamNames() []string {
	names := []string{"tok.weight", "pos.weight"}
	for i, b := range m.Blocks {
		for _, n := range b.ParamNames() {
			names = append(names, fmt.Sprintf("blocks.%d.%s", i, n))
		}
	}
	return append(names, "norm.weight", "norm.bias")
}

// StateDict returns the parameters by name.
func (m *GPT) StateDict() map[string]*tensor.Tensor {
	d := map[string]*tensor.Tensor{}
	names := m.ParamNames()
	for i, p := range m.Params() {
		d[names[i]] = p.Value()
	}
	return d
}

// AttentionMap returns the attention probabilities of head head of
// block layer for the tokens idx [1, L], in evaluation mode: [L, L], row
// i the weights query i gives each key (zero after i). It runs the fused
// attention kernel with the identity as the values, so the map is the one
// the model uses.
func (m *GPT) AttentionMap(idx *autograd.Var, layer, head int) *tensor.Tensor {
	if layer < 0 || layer >= len(m.Blocks) || head < 0 || head >= m.Cfg.Heads {
		tensor.Panicf("model.AttentionMap", tensor.ErrArgument, "layer %d, head %d; the model has %d layers of %d heads", layer, head, len(m.Blocks), m.Cfg.Heads)
	}
	var out *tensor.Tensor
	m.Train(false)
	half := m.Half
	m.Half = false // in float32, whatever the training's precision
	defer func() { m.Train(true); m.Half = half }()
	idx = idx.NoGrad()
	h := m.embed(idx, 0)
	for _, b := range m.Blocks[:layer] {
		h = b.Forward(h)
	}
	b := m.Blocks[layer]
	x := b.Norm1.Forward(h)
	y := ops.Linear(x, b.SelfAttn.InProjW, b.SelfAttn.InProjB)
	e, d := m.Cfg.Width, m.Cfg.Width/m.Cfg.Heads
	q := ops.Slice(y, -1, head*d, (head+1)*d, 1)
	k := ops.Slice(y, -1, e+head*d, e+(head+1)*d, 1)
	l := y.Value().Dim(1)
	eye := make([]float64, l*l)
	for i := range l {
		eye[i*l+i] = 1
	}
	dev := y.Value().Device()
	id, err := tensor.FromValues(dev, y.Value().DType(), eye, 1, l, l)
	if err != nil {
		id = tensor.Failed(dev, y.Value().DType(), err, 1, l, l)
	}
	p := ops.ScaledDotProductAttention(q, k, autograd.Temp(id), nil, ops.AttentionAttrs{Causal: true})
	out = ops.Reshape(p, l, l).Value()
	return out
}
