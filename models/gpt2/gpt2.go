package gpt2

import (
	"fmt"
	"strings"

	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/hf"
	"github.com/extensor/extensor/models/generate"
	"github.com/extensor/extensor/models/internal/params"
	"github.com/extensor/extensor/models/lora"
	"github.com/extensor/extensor/nn"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/tensor"
)

// Config is the part of a GPT-2 config.json the model reads.
type Config struct {
	VocabSize  int     `json:"vocab_size"`
	Positions  int     `json:"n_positions"`
	Embd       int     `json:"n_embd"`
	Layers     int     `json:"n_layer"`
	Heads      int     `json:"n_head"`
	Inner      *int    `json:"n_inner"` // the MLP's width; nil: 4·Embd
	Eps        float64 `json:"layer_norm_epsilon"`
	Activation string  `json:"activation_function"`
	Tied       *bool   `json:"tie_word_embeddings"` // nil: true
}

// inner returns the MLP's width.
func (c Config) inner() int {
	if c.Inner != nil {
		return *c.Inner
	}
	return 4 * c.Embd
}

// Check returns an error for a configuration the model cannot run: sizes
// below 1, heads that do not divide the width, an activation other than
// gelu_new, an untied head, an eps that is not a finite value ≥ 0.
func (c Config) Check() error {
	switch {
	case c.VocabSize < 1 || c.Positions < 1 || c.Embd < 1 || c.Layers < 0 || c.Heads < 1 || c.inner() < 1:
		return fmt.Errorf("gpt2: vocab_size %d, n_positions %d, n_embd %d, n_layer %d, n_head %d, n_inner %d; want sizes ≥ 1 (n_layer ≥ 0)", c.VocabSize, c.Positions, c.Embd, c.Layers, c.Heads, c.inner())
	case c.Embd%c.Heads != 0:
		return fmt.Errorf("gpt2: n_embd %d in %d heads; want heads dividing it", c.Embd, c.Heads)
	case c.Activation != "gelu_new":
		return fmt.Errorf("gpt2: activation_function %q; want gelu_new (GPT-2's)", c.Activation)
	case c.Tied != nil && !*c.Tied:
		return fmt.Errorf("gpt2: tie_word_embeddings false; GPT-2's head is the token embedding")
	case !(c.Eps >= 0) || c.Eps > 1:
		return fmt.Errorf("gpt2: layer_norm_epsilon %v; want a finite value in [0, 1]", c.Eps)
	}
	if _, err := device.CheckNumel([]int{c.VocabSize, c.Embd}); err != nil {
		return fmt.Errorf("gpt2: a token embedding of %d×%d: %w", c.VocabSize, c.Embd, err)
	}
	return nil
}

// Block is one transformer block's parameters, named as transformers
// names them under h.N.
type Block struct {
	Ln1W, Ln1B, AttnW, AttnB, AttnProjW, AttnProjB *autograd.Var
	Ln2W, Ln2B, FcW, FcB, MlpProjW, MlpProjB       *autograd.Var
}

// Model is GPT-2.
type Model struct {
	Cfg        Config
	WTE, WPE   *autograd.Var
	Blocks     []Block
	LnFW, LnFB *autograd.Var
	adapters   map[string]*lora.Adapter // by module name
}

// Modules returns the Conv1D projections by GPT2LMHeadModel's module
// names (transformer.h.N.attn.c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj),
// for package lora.
func (m *Model) Modules() map[string]lora.Module {
	mods := map[string]lora.Module{}
	for i, b := range m.Blocks {
		p := fmt.Sprintf("transformer.h.%d.", i)
		for name, w := range map[string]*autograd.Var{"attn.c_attn": b.AttnW, "attn.c_proj": b.AttnProjW, "mlp.c_fc": b.FcW, "mlp.c_proj": b.MlpProjW} {
			mods[p+name] = lora.Module{W: w, FanInFanOut: true}
		}
	}
	return mods
}

// SetAdapters makes Forward add the adapters to their modules' outputs.
func (m *Model) SetAdapters(a map[string]*lora.Adapter) { m.adapters = a }

// New returns a GPT-2 of cfg on dev in dt, its parameters zeros (Load
// fills them).
func New(dev device.Device, dt device.DType, cfg Config) (*Model, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	p := params.New("gpt2", dev, dt)
	param := p.Zeros
	m := &Model{Cfg: cfg}
	e, f := cfg.Embd, cfg.inner()
	m.WTE, m.WPE = param(cfg.VocabSize, e), param(cfg.Positions, e)
	for range cfg.Layers {
		m.Blocks = append(m.Blocks, Block{
			Ln1W: param(e), Ln1B: param(e), AttnW: param(e, 3*e), AttnB: param(3 * e), AttnProjW: param(e, e), AttnProjB: param(e),
			Ln2W: param(e), Ln2B: param(e), FcW: param(e, f), FcB: param(f), MlpProjW: param(f, e), MlpProjB: param(e),
		})
	}
	m.LnFW, m.LnFB = param(e), param(e)
	if err := p.Err(); err != nil {
		return nil, err
	}
	return m, nil
}

// Load returns the GPT-2 of the model directory opened as mdl (its
// config.json and weights), on dev in dt: the weights' names with or
// without GPT2LMHeadModel's "transformer." prefix; the causal-mask
// buffers (attn.bias, attn.masked_bias) and a tied lm_head.weight that
// older checkpoints hold are left out; every other name and shape must
// match (hf.Model.LoadInto lists what does not).
func Load(mdl *hf.Model, dev device.Device, dt device.DType) (*Model, error) {
	if mt := mdl.Config.ModelType; mt != "gpt2" {
		return nil, fmt.Errorf("gpt2: %s: model_type %q; want gpt2", mdl.Dir, mt)
	}
	cfg := Config{Eps: 1e-5, Activation: "gelu_new"}
	if err := mdl.Config.Decode(&cfg); err != nil {
		return nil, err
	}
	m, err := New(dev, dt, cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", mdl.Dir, err)
	}
	prefix := ""
	for _, n := range mdl.Names() {
		if strings.HasPrefix(n, "transformer.") {
			prefix = "transformer."
		}
	}
	for _, n := range mdl.Names() {
		rest := strings.TrimPrefix(n, prefix)
		if n == "lm_head.weight" || strings.HasPrefix(rest, "h.") && (strings.HasSuffix(rest, ".attn.bias") || strings.HasSuffix(rest, ".attn.masked_bias")) {
			mdl.Ignore(n)
		}
	}
	into := map[string]*tensor.Tensor{}
	for name, t := range m.StateDict() {
		into[prefix+name] = t
	}
	if err := mdl.LoadInto(into); err != nil {
		m.Release()
		return nil, fmt.Errorf("gpt2: %s: %w", mdl.Dir, err)
	}
	return m, nil
}

// StateDict returns the parameters by transformers' names (GPT2Model's,
// without the "transformer." prefix).
func (m *Model) StateDict() map[string]*tensor.Tensor {
	d := map[string]*tensor.Tensor{"wte.weight": m.WTE.Value(), "wpe.weight": m.WPE.Value(), "ln_f.weight": m.LnFW.Value(), "ln_f.bias": m.LnFB.Value()}
	for i, b := range m.Blocks {
		p := fmt.Sprintf("h.%d.", i)
		for name, v := range map[string]*autograd.Var{
			"ln_1.weight": b.Ln1W, "ln_1.bias": b.Ln1B, "attn.c_attn.weight": b.AttnW, "attn.c_attn.bias": b.AttnB,
			"attn.c_proj.weight": b.AttnProjW, "attn.c_proj.bias": b.AttnProjB, "ln_2.weight": b.Ln2W, "ln_2.bias": b.Ln2B,
			"mlp.c_fc.weight": b.FcW, "mlp.c_fc.bias": b.FcB, "mlp.c_proj.weight": b.MlpProjW, "mlp.c_proj.bias": b.MlpProjB,
		} {
			d[p+name] = v.Value()
		}
	}
	return d
}

// Params returns the parameters, for an optimiser.
func (m *Model) Params() []*autograd.Var {
	ps := []*autograd.Var{m.WTE, m.WPE}
	for _, b := range m.Blocks {
		ps = append(ps, b.Ln1W, b.Ln1B, b.AttnW, b.AttnB, b.AttnProjW, b.AttnProjB, b.Ln2W, b.Ln2B, b.FcW, b.FcB, b.MlpProjW, b.MlpProjB)
	}
	return append(ps, m.LnFW, m.LnFB)
}

// Release frees the parameters.
func (m *Model) Release() {
	for _, p := range m.Params() {
		p.Value().Release()
	}
}

// Forward returns the logits [B, T, vocab_size] of the int32 token ids
// [B, T], T at most n_positions (else ErrShape).
func (m *Model) Forward(ids *autograd.Var) *autograd.Var {
	return m.forward("gpt2.Forward", ids, nn.Positions{}, nil)
}

// forward returns the logits of ids at positions at, their attention
// through caches (one a block; none when caches is nil, and then at is
// zero).
func (m *Model) forward(op string, ids *autograd.Var, at nn.Positions, caches []nn.KVCache) *autograd.Var {
	if ids == nil {
		tensor.Panicf(op, tensor.ErrArgument, "ids are nil")
	}
	s := ids.Value().Shape()
	if len(s) != 2 || at.Start+s[1] > m.Cfg.Positions || ids.Value().DType() != device.Int32 {
		tensor.Panicf(op, tensor.ErrShape, "ids %v %v after %d cached positions; want int32 [batch, tokens], at most %d tokens in all", ids.Value().DType(), s, at.Start, m.Cfg.Positions)
	}
	n, t, e, h := s[0], s[1], m.Cfg.Embd, m.Cfg.Heads
	p := tensor.Must(tensor.FromInt32(ids.Value().Device(), at.IDs(n, t), n, t))
	x := ops.Add(ops.Embedding(ids, m.WTE), ops.Embedding(autograd.Temp(p), m.WPE)) // [B, T, E]
	eps := m.Cfg.Eps
	// conv1d is transformers' Conv1D: x·W + b, x [B·T, in], W [in, out],
	// with the adapter of module name, if any.
	conv1d := func(name string, x, w, b *autograd.Var) *autograd.Var {
		y := ops.Add(ops.MatMul(x, w), b)
		if a := m.adapters[name]; a != nil {
			y = a.Apply(x, y)
		}
		return y
	}
	heads := func(x *autograd.Var) *autograd.Var { return ops.Permute(ops.Reshape(x, n, t, h, e/h), 0, 2, 1, 3) }
	for i, b := range m.Blocks {
		mod := func(name string) string {
			if m.adapters == nil {
				return ""
			}
			return fmt.Sprintf("transformer.h.%d.%s", i, name)
		}
		a := ops.Reshape(ops.LayerNorm(x, []int{e}, b.Ln1W, b.Ln1B, eps), n*t, e)
		qkv := conv1d(mod("attn.c_attn"), a, b.AttnW, b.AttnB)
		var o *autograd.Var
		if caches != nil {
			q, k, v := heads(ops.Narrow(qkv, 1, 0, e)), heads(ops.Narrow(qkv, 1, e, e)), heads(ops.Narrow(qkv, 1, 2*e, e))
			o = caches[i].Attend(q, k.Value(), v.Value(), true, at.Pads, 0)
			o = ops.Reshape(ops.Permute(o, 0, 2, 1, 3), n*t, e)
		} else { // the heads read where c_attn wrote them
			o = ops.MultiHeadAttention(ops.Reshape(qkv, n, t, 3*e), nil, ops.MultiHeadAttrs{Heads: h, AttentionAttrs: ops.AttentionAttrs{Causal: true}})
			o = ops.Reshape(o, n*t, e)
		}
		x = ops.Add(x, ops.Reshape(conv1d(mod("attn.c_proj"), o, b.AttnProjW, b.AttnProjB), n, t, e))
		f := ops.Reshape(ops.LayerNorm(x, []int{e}, b.Ln2W, b.Ln2B, eps), n*t, e)
		f = conv1d(mod("mlp.c_proj"), ops.GeluTanh(conv1d(mod("mlp.c_fc"), f, b.FcW, b.FcB)), b.MlpProjW, b.MlpProjB)
		x = ops.Add(x, ops.Reshape(f, n, t, e))
	}
	x = ops.Reshape(ops.LayerNorm(x, []int{e}, m.LnFW, m.LnFB, eps), n*t, e)
	return ops.Reshape(ops.Linear(x, m.WTE, nil), n, t, m.Cfg.VocabSize) // x·WTEᵀ, the head tied to the embedding
}

// Context returns n_positions, the most positions the model sees.
func (m *Model) Context() int { return m.Cfg.Positions }

// VocabSize returns vocab_size.
func (m *Model) VocabSize() int { return m.Cfg.VocabSize }

// NewCache returns an empty cache (an *nn.Caches, one a block) of one
// sequence.
func (m *Model) NewCache() generate.Cache { return nn.NewCaches(len(m.Blocks)) }

// Step runs ids after the positions c (one of m.NewCache's) holds, adds
// them to it and returns the logits of the last, without a tape (for
// generate.Generate).
func (m *Model) Step(ids []int32, c generate.Cache) ([]float64, error) {
	return nn.Decode("gpt2.Step", c, len(m.Blocks), m.WTE.Value().Device(), ids, m.Cfg.VocabSize, m.Cfg.Positions, m.forward)
}

// StepBatch is Step for rows of sequences, left-padded as pads says (for
// generate.GenerateBatch).
func (m *Model) StepBatch(ids [][]int32, pads []int, c generate.Cache) ([][]float64, error) {
	return nn.DecodeBatch("gpt2.StepBatch", c, len(m.Blocks), m.WTE.Value().Device(), ids, pads, m.Cfg.VocabSize, m.Cfg.Positions, m.forward)
}
