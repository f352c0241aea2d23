package bert

import (
	"fmt"
	"math"
	"strings"

	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/hf"
	"github.com/extensor/extensor/models/internal/params"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/tensor"
)

// Config is the part of a BERT config.json the model reads.
type Config struct {
	VocabSize    int     `json:"vocab_size"`
	Hidden       int     `json:"hidden_size"`
	Layers       int     `json:"num_hidden_layers"`
	Heads        int     `json:"num_attention_heads"`
	Intermediate int     `json:"intermediate_size"`
	Act          string  `json:"hidden_act"`
	Positions    int     `json:"max_position_embeddings"`
	TypeVocab    int     `json:"type_vocab_size"`
	Eps          float64 `json:"layer_norm_eps"`
	PosType      string  `json:"position_embedding_type"`
}

// Check returns an error for a configuration the model cannot run.
func (c Config) Check() error {
	switch {
	case c.VocabSize < 1 || c.Hidden < 1 || c.Layers < 0 || c.Heads < 1 || c.Intermediate < 1 || c.Positions < 1 || c.TypeVocab < 1:
		return fmt.Errorf("bert: vocab_size %d, hidden_size %d, num_hidden_layers %d, num_attention_heads %d, intermediate_size %d, max_position_embeddings %d, type_vocab_size %d; want sizes ≥ 1 (layers ≥ 0)", c.VocabSize, c.Hidden, c.Layers, c.Heads, c.Intermediate, c.Positions, c.TypeVocab)
	case c.Hidden%c.Heads != 0:
		return fmt.Errorf("bert: hidden_size %d in %d heads; want heads dividing it", c.Hidden, c.Heads)
	case c.Act != "gelu" && c.Act != "gelu_new":
		return fmt.Errorf("bert: hidden_act %q; want gelu or gelu_new", c.Act)
	case c.PosType != "absolute":
		return fmt.Errorf("bert: position_embedding_type %q; want absolute", c.PosType)
	case !(c.Eps >= 0) || c.Eps > 1:
		return fmt.Errorf("bert: layer_norm_eps %v; want a finite value in [0, 1]", c.Eps)
	}
	for _, s := range [][]int{{c.VocabSize, c.Hidden}, {c.Intermediate, c.Hidden}, {c.Positions, c.Hidden}} {
		if _, err := device.CheckNumel(s); err != nil {
			return fmt.Errorf("bert: a weight of %v: %w", s, err)
		}
	}
	return nil
}

// Layer is one encoder layer's parameters, by transformers' names under
// encoder.layer.N ([out, in] weights, as nn.Linear).
type Layer struct {
	Q, QB, K, KB, V, VB, O, OB *autograd.Var // attention.self.{query,key,value}, attention.output.dense
	AttnNormW, AttnNormB       *autograd.Var // attention.output.LayerNorm
	In, InB, Out, OutB         *autograd.Var // intermediate.dense, output.dense
	NormW, NormB               *autograd.Var // output.LayerNorm
}

// Model is a BERT encoder.
type Model struct {
	Cfg                    Config
	Word, Position, Type   *autograd.Var // embeddings.*_embeddings
	EmbedNormW, EmbedNormB *autograd.Var // embeddings.LayerNorm
	Layers                 []Layer
}

// New returns a BERT of cfg on dev in dt, its parameters zeros (Load
// fills them).
func New(dev device.Device, dt device.DType, cfg Config) (*Model, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	p := params.New("bert", dev, dt)
	z := p.Zeros
	e, f := cfg.Hidden, cfg.Intermediate
	m := &Model{Cfg: cfg, Word: z(cfg.VocabSize, e), Position: z(cfg.Positions, e), Type: z(cfg.TypeVocab, e), EmbedNormW: z(e), EmbedNormB: z(e)}
	for range cfg.Layers {
		m.Layers = append(m.Layers, Layer{
			Q: z(e, e), QB: z(e), K: z(e, e), KB: z(e), V: z(e, e), VB: z(e), O: z(e, e), OB: z(e),
			AttnNormW: z(e), AttnNormB: z(e), In: z(f, e), InB: z(f), Out: z(e, f), OutB: z(e), NormW: z(e), NormB: z(e),
		})
	}
	if err := p.Err(); err != nil {
		return nil, err
	}
	return m, nil
}

// Load returns the BERT of the directory opened as mdl on dev in dt:
// BertModel's names, with or without BertForMaskedLM's "bert." prefix;
// the pooler, the position_ids buffer and any task head are left out;
// every other name and shape must match (hf.Model.LoadInto lists what
// does not). Older checkpoints' LayerNorm.gamma and .beta are read as
// .weight and .bias.
func Load(mdl *hf.Model, dev device.Device, dt device.DType) (*Model, error) {
	if mt := mdl.Config.ModelType; mt != "bert" {
		return nil, fmt.Errorf("bert: %s: model_type %q; want bert", mdl.Dir, mt)
	}
	cfg := Config{Act: "gelu", Eps: 1e-12, TypeVocab: 2, PosType: "absolute"}
	if err := mdl.Config.Decode(&cfg); err != nil {
		return nil, err
	}
	m, err := New(dev, dt, cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", mdl.Dir, err)
	}
	prefix := ""
	for _, n := range mdl.Names() {
		if strings.HasPrefix(n, "bert.") {
			prefix = "bert."
		}
	}
	renamed := map[string]string{} // the checkpoint's name of each of ours
	for _, n := range mdl.Names() {
		rest, ok := strings.CutPrefix(n, prefix)
		switch {
		case !ok || strings.HasPrefix(rest, "pooler.") || rest == "embeddings.position_ids":
			mdl.Ignore(n)
		case strings.HasSuffix(rest, "LayerNorm.gamma"):
			renamed[strings.TrimSuffix(rest, "gamma")+"weight"] = n
		case strings.HasSuffix(rest, "LayerNorm.beta"):
			renamed[strings.TrimSuffix(rest, "beta")+"bias"] = n
		}
	}
	into := map[string]*tensor.Tensor{}
	for name, t := range m.StateDict() {
		if old, ok := renamed[name]; ok {
			into[old] = t
		} else {
			into[prefix+name] = t
		}
	}
	if err := mdl.LoadInto(into); err != nil {
		m.Release()
		return nil, fmt.Errorf("bert: %s: %w", mdl.Dir, err)
	}
	return m, nil
}

// StateDict returns the parameters by BertModel's names.
func (m *Model) StateDict() map[string]*tensor.Tensor {
	d := map[string]*tensor.Tensor{
		"embeddings.word_embeddings.weight": m.Word.Value(), "embeddings.position_embeddings.weight": m.Position.Value(),
		"embeddings.token_type_embeddings.weight": m.Type.Value(),
		"embeddings.LayerNorm.weight":             m.EmbedNormW.Value(), "embeddings.LayerNorm.bias": m.EmbedNormB.Value(),
	}
	for i, l := range m.Layers {
		p := fmt.Sprintf("encoder.layer.%d.", i)
		for name, v := range map[string]*autograd.Var{
			"attention.self.query.weight": l.Q, "attention.self.query.bias": l.QB,
			"attention.self.key.weight": l.K, "attention.self.key.bias": l.KB,
			"attention.self.value.weight": l.V, "attention.self.value.bias": l.VB,
			"attention.output.dense.weight": l.O, "attention.output.dense.bias": l.OB,
			"attention.output.LayerNorm.weight": l.AttnNormW, "attention.output.LayerNorm.bias": l.AttnNormB,
			"intermediate.dense.weight": l.In, "intermediate.dense.bias": l.InB,
			"output.dense.weight": l.Out, "output.dense.bias": l.OutB,
			"output.LayerNorm.weight": l.NormW, "output.LayerNorm.bias": l.NormB,
		} {
			d[p+name] = v.Value()
		}
	}
	return d
}

// Params returns the parameters, for an optimiser.
func (m *Model) Params() []*autograd.Var {
	ps := []*autograd.Var{m.Word, m.Position, m.Type, m.EmbedNormW, m.EmbedNormB}
	for _, l := range m.Layers {
		ps = append(ps, l.Q, l.QB, l.K, l.KB, l.V, l.VB, l.O, l.OB, l.AttnNormW, l.AttnNormB, l.In, l.InB, l.Out, l.OutB, l.NormW, l.NormB)
	}
	return ps
}

// Release frees the parameters.
func (m *Model) Release() {
	for _, p := range m.Params() {
		p.Value().Release()
	}
}

// Forward returns the hidden states [B, T, hidden_size] of the int32
// token ids [B, T] (token type 0), T at most max_position_embeddings
// (else ErrShape), each position attending to the keys that mask (of the
// model's dtype, [B, T], ≠ 0 where a token is; nil: every position)
// allows.
func (m *Model) Forward(ids, mask *autograd.Var) *autograd.Var {
	const op = "bert.Forward"
	if ids == nil {
		tensor.Panicf(op, tensor.ErrArgument, "ids are nil")
	}
	s := ids.Value().Shape()
	if len(s) != 2 || s[1] > m.Cfg.Positions || ids.Value().DType() != device.Int32 {
		tensor.Panicf(op, tensor.ErrShape, "ids %v %v; want int32 [batch, tokens] of at most %d tokens", ids.Value().DType(), s, m.Cfg.Positions)
	}
	n, t, e, h := s[0], s[1], m.Cfg.Hidden, m.Cfg.Heads
	dev := ids.Value().Device()
	if mask != nil {
		if ms := mask.Value().Shape(); len(ms) != 2 || ms[0] != n || ms[1] != t {
			tensor.Panicf(op, tensor.ErrShape, "mask %v for ids %v; want [batch, tokens]", ms, s)
		}
		mask = ops.Reshape(mask, n, 1, 1, t)
	}
	pos := make([]int32, t)
	for i := range pos {
		pos[i] = int32(i)
	}
	p := autograd.Temp(tensor.Must(tensor.FromInt32(dev, pos, t)))
	types := autograd.Temp(tensor.Must(tensor.Zeros(dev, device.Int32, n, t)))
	x := ops.Add(ops.Add(ops.Embedding(ids, m.Word), ops.Embedding(p, m.Position)), ops.Embedding(types, m.Type))
	eps := m.Cfg.Eps
	x = ops.LayerNorm(x, []int{e}, m.EmbedNormW, m.EmbedNormB, eps)
	act := ops.Gelu[*autograd.Var]
	if m.Cfg.Act == "gelu_new" {
		act = ops.GeluTanh[*autograd.Var]
	}
	heads := func(x *autograd.Var) *autograd.Var { return ops.Permute(ops.Reshape(x, n, t, h, e/h), 0, 2, 1, 3) }
	for _, l := range m.Layers {
		q, k, v := heads(ops.Linear(x, l.Q, l.QB)), heads(ops.Linear(x, l.K, l.KB)), heads(ops.Linear(x, l.V, l.VB))
		o := ops.ScaledDotProductAttention(q, k, v, mask, ops.AttentionAttrs{BoolMask: mask != nil})
		o = ops.Linear(ops.Reshape(ops.Permute(o, 0, 2, 1, 3), n, t, e), l.O, l.OB)
		x = ops.LayerNorm(ops.Add(o, x), []int{e}, l.AttnNormW, l.AttnNormB, eps)
		f := ops.Linear(act(ops.Linear(x, l.In, l.InB)), l.Out, l.OutB)
		x = ops.LayerNorm(ops.Add(f, x), []int{e}, l.NormW, l.NormB, eps)
	}
	return x
}

// MeanPool returns sentence-transformers' embeddings of hidden states
// h [B, T, E] under mask [B, T] (1 where a token is): the mean of each
// sequence's tokens, L2-normalised (max(‖x‖, 10⁻¹²)).
func MeanPool(h, mask *autograd.Var) *autograd.Var {
	s := h.Value().Shape()
	m := ops.Reshape(mask, s[0], s[1], 1)
	sum := ops.Sum(ops.Mul(h, m), 1) // [B, E]
	count := ops.Sum(m, 1)           // [B, 1]
	mean := ops.Div(sum, ops.Maximum(count, scalar(h, 1e-9)))
	norm := ops.Sqrt(ops.SumKeepdims(ops.Mul(mean, mean), 1))
	return ops.Div(mean, ops.Maximum(norm, scalar(h, 1e-12)))
}

// scalar returns v as a one-element tensor like x's.
func scalar(x *autograd.Var, v float64) *autograd.Var {
	t := tensor.Must(tensor.FromValues(x.Value().Device(), x.Value().DType(), []float64{v}, 1))
	return autograd.Temp(t)
}

// Embed returns the sentence embeddings of the token id sequences seqs
// (each 1 to max_position_embeddings ids), batched with padding and a
// mask, with no tape: MeanPool of the last hidden states.
func (m *Model) Embed(seqs [][]int32) ([][]float32, error) {
	if len(seqs) == 0 {
		return nil, nil
	}
	t := 0
	for i, s := range seqs {
		if len(s) == 0 || len(s) > m.Cfg.Positions {
			return nil, fmt.Errorf("bert: Embed: sequence %d has %d tokens; want 1 to %d", i, len(s), m.Cfg.Positions)
		}
		for _, id := range s {
			if id < 0 || int(id) >= m.Cfg.VocabSize {
				return nil, fmt.Errorf("bert: Embed: sequence %d holds %d; want ids of the %d of the vocabulary", i, id, m.Cfg.VocabSize)
			}
		}
		t = max(t, len(s))
	}
	ids := make([]int32, len(seqs)*t)
	mask := make([]float64, len(seqs)*t)
	for i, s := range seqs {
		copy(ids[i*t:], s)
		for j := range s {
			mask[i*t+j] = 1
		}
	}
	dev, dt := m.Word.Value().Device(), m.Word.Value().DType()
	x, err := tensor.FromInt32(dev, ids, len(seqs), t)
	if err != nil {
		return nil, fmt.Errorf("bert: Embed: %w", err)
	}
	defer x.Release()
	mk, err := tensor.FromValues(dev, dt, mask, len(seqs), t)
	if err != nil {
		return nil, fmt.Errorf("bert: Embed: %w", err)
	}
	defer mk.Release()
	var out []float32
	var read error
	err = tensor.Maybe(func() {
		tensor.Tidy(func(*tensor.Scope) []*tensor.Tensor {
			xv, mv := autograd.Leaf(x, false).NoGrad(), autograd.Leaf(mk, false).NoGrad()
			out, read = MeanPool(m.Forward(xv, mv), mv).Value().Float32s()
			return nil
		})
	})
	if err == nil {
		err = read
	}
	if err != nil {
		return nil, fmt.Errorf("bert: Embed: %w", err)
	}
	e := m.Cfg.Hidden
	vs := make([][]float32, len(seqs))
	for i := range vs {
		vs[i] = out[i*e : (i+1)*e]
	}
	return vs, nil
}

// Cosine returns the cosine similarity of a and b.
func Cosine(a, b []float32) float64 {
	var ab, aa, bb float64
	for i := range a {
		ab += float64(a[i]) * float64(b[i])
		aa += float64(a[i]) * float64(a[i])
		bb += float64(b[i]) * float64(b[i])
	}
	return ab / math.Sqrt(aa*bb)
}
