package llama

import (
	"fmt"
	"math"
	"slices"
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

// ModelTypes are the config.json model_type values Load reads.
var ModelTypes = []string{"llama", "mistral", "qwen2"}

// Config is the part of a Llama-family config.json the model reads.
type Config struct {
	ModelType    string   `json:"model_type"`
	VocabSize    int      `json:"vocab_size"`
	Hidden       int      `json:"hidden_size"`
	Intermediate int      `json:"intermediate_size"`
	Layers       int      `json:"num_hidden_layers"`
	Heads        int      `json:"num_attention_heads"`
	KVHeads      int      `json:"num_key_value_heads"` // 0: Heads
	HeadDim      int      `json:"head_dim"`            // 0: Hidden / Heads
	Positions    int      `json:"max_position_embeddings"`
	Eps          float64  `json:"rms_norm_eps"`
	Theta        float64  `json:"rope_theta"`
	Scaling      *Scaling `json:"rope_scaling"`
	Act          string   `json:"hidden_act"`
	Tied         bool     `json:"tie_word_embeddings"`
	AttnBias     bool     `json:"attention_bias"` // biases on q, k, v and o
	MLPBias      bool     `json:"mlp_bias"`
	SlidingWin   *int     `json:"sliding_window"`
	UseSliding   *bool    `json:"use_sliding_window"`
}

// Scaling is rope_scaling: only linear (positions divided by Factor) is
// read; other kinds are refused by name.
type Scaling struct {
	Type   string  `json:"type"`
	Kind   string  `json:"rope_type"` // newer files' name for Type
	Factor float64 `json:"factor"`
}

// kind returns the scaling's kind by either name.
func (s *Scaling) kind() string {
	if s.Kind != "" {
		return s.Kind
	}
	return s.Type
}

func (c Config) kv() int {
	if c.KVHeads == 0 {
		return c.Heads
	}
	return c.KVHeads
}

func (c Config) headDim() int {
	if c.HeadDim == 0 && c.Heads > 0 {
		return c.Hidden / c.Heads
	}
	return c.HeadDim
}

// qkvBias reports whether q, k and v have biases (Qwen2's always do),
// and outBias whether o does.
func (c Config) qkvBias() bool { return c.AttnBias || c.ModelType == "qwen2" }
func (c Config) outBias() bool { return c.AttnBias }

// Check returns an error for a configuration the model cannot run.
func (c Config) Check() error {
	d := c.headDim()
	switch {
	case c.VocabSize < 1 || c.Hidden < 1 || c.Intermediate < 1 || c.Layers < 0 || c.Heads < 1 || c.kv() < 1 || d < 1 || c.Positions < 1:
		return fmt.Errorf("llama: vocab_size %d, hidden_size %d, intermediate_size %d, num_hidden_layers %d, num_attention_heads %d, num_key_value_heads %d, head_dim %d, max_position_embeddings %d; want sizes ≥ 1 (layers ≥ 0)", c.VocabSize, c.Hidden, c.Intermediate, c.Layers, c.Heads, c.kv(), d, c.Positions)
	case c.Heads%c.kv() != 0:
		return fmt.Errorf("llama: %d attention heads over %d key-value heads; want a divisor", c.Heads, c.kv())
	case d%2 != 0:
		return fmt.Errorf("llama: head_dim %d; rotary embeddings want an even one", d)
	case c.HeadDim == 0 && c.Hidden%c.Heads != 0:
		return fmt.Errorf("llama: hidden_size %d in %d heads; want heads dividing it (or a head_dim)", c.Hidden, c.Heads)
	case c.Act != "silu":
		return fmt.Errorf("llama: hidden_act %q; want silu", c.Act)
	case c.MLPBias:
		return fmt.Errorf("llama: mlp_bias true is not supported")
	case !(c.Eps >= 0) || c.Eps > 1:
		return fmt.Errorf("llama: rms_norm_eps %v; want a finite value in [0, 1]", c.Eps)
	case !(c.Theta > 0) || math.IsInf(c.Theta, 0):
		return fmt.Errorf("llama: rope_theta %v; want a finite value > 0", c.Theta)
	case c.ModelType == "mistral" && c.SlidingWin != nil && *c.SlidingWin < c.Positions,
		c.UseSliding != nil && *c.UseSliding:
		return fmt.Errorf("llama: a sliding window of %d positions is not supported", *c.SlidingWin)
	}
	if s := c.Scaling; s != nil {
		switch k := s.kind(); {
		case k == "default" || k == "":
		case k != "linear":
			return fmt.Errorf("llama: rope_scaling %q; want none or linear", k)
		case !(s.Factor >= 1) || math.IsInf(s.Factor, 0):
			return fmt.Errorf("llama: linear rope_scaling by %v; want a finite factor ≥ 1", s.Factor)
		}
	}
	for _, s := range [][]int{{c.VocabSize, c.Hidden}, {c.Intermediate, c.Hidden}, {c.Heads * d, c.Hidden}} {
		if _, err := device.CheckNumel(s); err != nil {
			return fmt.Errorf("llama: a weight of %v: %w", s, err)
		}
	}
	return nil
}

// Block is one decoder layer's parameters, by transformers' names under
// model.layers.N.
type Block struct {
	InputNorm, PostNorm *autograd.Var
	Q, K, V, O          *autograd.Var // [out, in], as nn.Linear
	QB, KB, VB, OB      *autograd.Var // nil without biases
	Gate, Up, Down      *autograd.Var
}

// Model is a Llama-family causal language model.
type Model struct {
	Cfg    Config
	Embed  *autograd.Var // model.embed_tokens.weight
	Blocks []Block
	Norm   *autograd.Var // model.norm.weight
	Head   *autograd.Var // lm_head.weight; Embed when tied

	adapters map[string]*lora.Adapter // by module name
}

// Modules returns the projections by LlamaForCausalLM's module names
// (model.layers.N.self_attn.{q,k,v,o}_proj, mlp.{gate,up,down}_proj), for
// package lora.
func (m *Model) Modules() map[string]lora.Module {
	mods := map[string]lora.Module{}
	for i, b := range m.Blocks {
		p := fmt.Sprintf("model.layers.%d.", i)
		for name, w := range map[string]*autograd.Var{
			"self_attn.q_proj": b.Q, "self_attn.k_proj": b.K, "self_attn.v_proj": b.V, "self_attn.o_proj": b.O,
			"mlp.gate_proj": b.Gate, "mlp.up_proj": b.Up, "mlp.down_proj": b.Down,
		} {
			mods[p+name] = lora.Module{W: w}
		}
	}
	return mods
}

// SetAdapters makes Forward add the adapters to their modules' outputs.
func (m *Model) SetAdapters(a map[string]*lora.Adapter) { m.adapters = a }

// New returns a model of cfg on dev in dt, its parameters zeros (Load
// fills them).
func New(dev device.Device, dt device.DType, cfg Config) (*Model, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	p := params.New("llama", dev, dt)
	param, bias := p.Zeros, p.Maybe
	e, d, h, k, f := cfg.Hidden, cfg.headDim(), cfg.Heads, cfg.kv(), cfg.Intermediate
	m := &Model{Cfg: cfg, Embed: param(cfg.VocabSize, e)}
	for range cfg.Layers {
		m.Blocks = append(m.Blocks, Block{
			InputNorm: param(e), PostNorm: param(e),
			Q: param(h*d, e), K: param(k*d, e), V: param(k*d, e), O: param(e, h*d),
			QB: bias(cfg.qkvBias(), h*d), KB: bias(cfg.qkvBias(), k*d), VB: bias(cfg.qkvBias(), k*d), OB: bias(cfg.outBias(), e),
			Gate: param(f, e), Up: param(f, e), Down: param(e, f),
		})
	}
	m.Norm = param(e)
	m.Head = m.Embed
	if !cfg.Tied {
		m.Head = param(cfg.VocabSize, e)
	}
	if err := p.Err(); err != nil {
		return nil, err
	}
	return m, nil
}

// Load returns the model of the directory opened as mdl on dev in dt:
// config.json's model_type one of ModelTypes; the rotary inv_freq
// buffers older checkpoints hold, and a tied lm_head.weight, are left
// out; every other name and shape must match (hf.Model.LoadInto lists
// what does not).
func Load(mdl *hf.Model, dev device.Device, dt device.DType) (*Model, error) {
	if mt := mdl.Config.ModelType; !slices.Contains(ModelTypes, mt) {
		return nil, fmt.Errorf("llama: %s: model_type %q; want one of %v", mdl.Dir, mt, ModelTypes)
	}
	cfg := Config{Eps: 1e-6, Theta: 10000, Act: "silu"}
	if err := mdl.Config.Decode(&cfg); err != nil {
		return nil, err
	}
	m, err := New(dev, dt, cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", mdl.Dir, err)
	}
	for _, n := range mdl.Names() {
		if strings.HasSuffix(n, ".rotary_emb.inv_freq") || cfg.Tied && n == "lm_head.weight" {
			mdl.Ignore(n)
		}
	}
	if err := mdl.LoadInto(m.StateDict()); err != nil {
		m.Release()
		return nil, fmt.Errorf("llama: %s: %w", mdl.Dir, err)
	}
	return m, nil
}

// StateDict returns the parameters by transformers' names
// (LlamaForCausalLM's: model. prefixed, lm_head.weight unless tied).
func (m *Model) StateDict() map[string]*tensor.Tensor {
	d := map[string]*tensor.Tensor{"model.embed_tokens.weight": m.Embed.Value(), "model.norm.weight": m.Norm.Value()}
	if !m.Cfg.Tied {
		d["lm_head.weight"] = m.Head.Value()
	}
	for i, b := range m.Blocks {
		p := fmt.Sprintf("model.layers.%d.", i)
		for name, v := range map[string]*autograd.Var{
			"input_layernorm.weight": b.InputNorm, "post_attention_layernorm.weight": b.PostNorm,
			"self_attn.q_proj.weight": b.Q, "self_attn.k_proj.weight": b.K, "self_attn.v_proj.weight": b.V, "self_attn.o_proj.weight": b.O,
			"self_attn.q_proj.bias": b.QB, "self_attn.k_proj.bias": b.KB, "self_attn.v_proj.bias": b.VB, "self_attn.o_proj.bias": b.OB,
			"mlp.gate_proj.weight": b.Gate, "mlp.up_proj.weight": b.Up, "mlp.down_proj.weight": b.Down,
		} {
			if v != nil {
				d[p+name] = v.Value()
			}
		}
	}
	return d
}

// Params returns the parameters, for an optimiser (the tied head once).
func (m *Model) Params() []*autograd.Var {
	ps := []*autograd.Var{m.Embed}
	for _, b := range m.Blocks {
		for _, v := range []*autograd.Var{b.InputNorm, b.PostNorm, b.Q, b.K, b.V, b.O, b.QB, b.KB, b.VB, b.OB, b.Gate, b.Up, b.Down} {
			if v != nil {
				ps = append(ps, v)
			}
		}
	}
	ps = append(ps, m.Norm)
	if !m.Cfg.Tied {
		ps = append(ps, m.Head)
	}
	return ps
}

// Release frees the parameters.
func (m *Model) Release() {
	for _, p := range m.Params() {
		p.Value().Release()
	}
}

// Forward returns the logits [B, T, vocab_size] of the int32 token ids
// [B, T], T at most max_position_embeddings (else ErrShape).
func (m *Model) Forward(ids *autograd.Var) *autograd.Var {
	return m.forward("llama.Forward", ids, nn.Positions{}, nil)
}

// rope returns the rotary tables cos and sin of n rows of t tokens at
// positions at: [T, D], or [N, 1, T, D] for a padded batch; position p's
// angle for dimensions i and i + D/2 is p/factor · theta^(-2i/D).
func (m *Model) rope(dev device.Device, dt device.DType, at nn.Positions, n, t int) (cos, sin *autograd.Var) {
	d := m.Cfg.headDim()
	factor := 1.0
	if s := m.Cfg.Scaling; s != nil && s.kind() == "linear" {
		factor = s.Factor
	}
	rows, shape := 1, []int{t, d}
	if at.Pads != nil {
		rows, shape = n, []int{n, 1, t, d}
	}
	pos := at.IDs(rows, t)
	c, s := make([]float64, len(pos)*d), make([]float64, len(pos)*d)
	for k, p := range pos {
		for i := range d / 2 {
			a := float64(p) / factor / math.Pow(m.Cfg.Theta, float64(2*i)/float64(d))
			c[k*d+i], c[k*d+i+d/2] = math.Cos(a), math.Cos(a)
			s[k*d+i], s[k*d+i+d/2] = math.Sin(a), math.Sin(a)
		}
	}
	ct := tensor.Must(tensor.FromValues(dev, dt, c, shape...))
	st := tensor.Must(tensor.FromValues(dev, dt, s, shape...))
	return autograd.Temp(ct), autograd.Temp(st)
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
	n, t, e, d, h, k := s[0], s[1], m.Cfg.Hidden, m.Cfg.headDim(), m.Cfg.Heads, m.Cfg.kv()
	x := ops.Embedding(ids, m.Embed) // [B, T, E]
	w := m.Embed.Value()
	cos, sin := m.rope(w.Device(), w.DType(), at, n, t)
	rotate := func(x *autograd.Var) *autograd.Var { // x·cos + rotate_half(x)·sin, x [B, heads, T, D]
		half := ops.Concat([]*autograd.Var{ops.Neg(ops.Narrow(x, 3, d/2, d/2)), ops.Narrow(x, 3, 0, d/2)}, 3)
		return ops.Add(ops.Mul(x, cos), ops.Mul(half, sin))
	}
	heads := func(x *autograd.Var, hs int) *autograd.Var {
		return ops.Permute(ops.Reshape(x, n, t, hs, d), 0, 2, 1, 3)
	}
	repeat := func(x *autograd.Var) *autograd.Var { // [B, K, T, D] → [B, H, T, D], head i from K head i/(H/K)
		if k == h {
			return x
		}
		return ops.Reshape(ops.BroadcastTo(ops.Reshape(x, n, k, 1, t, d), []int{n, k, h / k, t, d}), n, h, t, d)
	}
	eps := m.Cfg.Eps
	for i, b := range m.Blocks {
		// linear is nn.Linear with the adapter of module name, if any.
		linear := func(name string, x, w, bias *autograd.Var) *autograd.Var {
			y := ops.Linear(x, w, bias)
			if m.adapters != nil {
				if a := m.adapters[fmt.Sprintf("model.layers.%d.%s", i, name)]; a != nil {
					y = a.Apply(x, y)
				}
			}
			return y
		}
		a := ops.RMSNorm(x, []int{e}, b.InputNorm, eps)
		q := rotate(heads(linear("self_attn.q_proj", a, b.Q, b.QB), h))
		kk := repeat(rotate(heads(linear("self_attn.k_proj", a, b.K, b.KB), k)))
		v := repeat(heads(linear("self_attn.v_proj", a, b.V, b.VB), k))
		var o *autograd.Var
		if caches != nil {
			o = caches[i].Attend(q, kk.Value(), v.Value(), true, at.Pads, 0)
		} else {
			o = ops.ScaledDotProductAttention(q, kk, v, nil, ops.AttentionAttrs{Causal: true})
		}
		x = ops.Add(x, linear("self_attn.o_proj", ops.Reshape(ops.Permute(o, 0, 2, 1, 3), n, t, h*d), b.O, b.OB))
		f := ops.RMSNorm(x, []int{e}, b.PostNorm, eps)
		x = ops.Add(x, linear("mlp.down_proj", ops.Mul(ops.Silu(linear("mlp.gate_proj", f, b.Gate, nil)), linear("mlp.up_proj", f, b.Up, nil)), b.Down, nil))
	}
	x = ops.RMSNorm(x, []int{e}, m.Norm, eps)
	return ops.Linear(x, m.Head, nil)
}

// Context returns max_position_embeddings.
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
	return nn.Decode("llama.Step", c, len(m.Blocks), m.Embed.Value().Device(), ids, m.Cfg.VocabSize, m.Cfg.Positions, m.forward)
}

// StepBatch is Step for rows of sequences, left-padded as pads says (for
// generate.GenerateBatch).
func (m *Model) StepBatch(ids [][]int32, pads []int, c generate.Cache) ([][]float64, error) {
	return nn.DecodeBatch("llama.StepBatch", c, len(m.Blocks), m.Embed.Value().Device(), ids, pads, m.Cfg.VocabSize, m.Cfg.Positions, m.forward)
}
