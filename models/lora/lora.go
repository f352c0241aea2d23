package lora

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/checkpoint"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/nn"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/tensor"
)

// The files of an adapter directory.
const (
	ConfigFile  = "adapter_config.json"
	WeightsFile = "adapter_model.safetensors"
)

// A Module is a linear projection a model offers to adapters: its
// weight, [out, in] as PyTorch's nn.Linear holds it or, with FanInFanOut,
// [in, out] as transformers' Conv1D does (GPT-2's).
type Module struct {
	W           *autograd.Var
	FanInFanOut bool
}

// A Model is what adapters attach to.
type Model interface {
	// Modules returns the projections by their module names in the
	// Hugging Face model (model.layers.0.self_attn.q_proj, say).
	Modules() map[string]Module
	// SetAdapters makes the model's forward add each adapter to its
	// module's output (nil: none).
	SetAdapters(map[string]*Adapter)
	// Params returns the model's own parameters.
	Params() []*autograd.Var
}

// Config is an adapter set's settings (adapter_config.json's).
type Config struct {
	Rank    int      `json:"r"`
	Alpha   float64  `json:"lora_alpha"`
	Dropout float64  `json:"lora_dropout"`
	Targets []string `json:"target_modules"` // module names or their last parts (q_proj, c_attn)
	// Seed draws the A matrices and the dropout masks.
	Seed uint64 `json:"-"`
	// DType is the adapters' dtype (0: each base weight's); float32
	// adapters on float16 base weights train in float32.
	DType device.DType `json:"-"`
}

// Check returns an error for settings out of range.
func (c Config) Check() error {
	switch {
	case c.Rank < 1:
		return fmt.Errorf("lora: rank %d; want ≥ 1", c.Rank)
	case !(c.Alpha > 0) || math.IsInf(c.Alpha, 0):
		return fmt.Errorf("lora: alpha %v; want a finite value > 0", c.Alpha)
	case !(c.Dropout >= 0 && c.Dropout < 1):
		return fmt.Errorf("lora: dropout %v; want a value in [0, 1)", c.Dropout)
	case len(c.Targets) == 0:
		return fmt.Errorf("lora: no target modules")
	}
	return nil
}

// matches reports whether module name is one of targets: the whole name
// or its last dot-separated parts, as PEFT matches target_modules.
func matches(name string, targets []string) bool {
	return slices.ContainsFunc(targets, func(t string) bool { return name == t || strings.HasSuffix(name, "."+t) })
}

// Adapter is one module's low-rank update.
type Adapter struct {
	A, B        *autograd.Var // [r, in], [out, r]
	Scale       float64       // alpha / r
	FanInFanOut bool
	drop        *nn.DropoutLayer
}

// Apply returns y + Scale·B·A·dropout(x), y the module's output for x.
func (a *Adapter) Apply(x, y *autograd.Var) *autograd.Var {
	dt := a.A.Value().DType()
	if x.Value().DType() != dt {
		x = ops.Cast(x, dt)
	}
	if a.drop != nil {
		x = a.drop.Forward(x)
	}
	d := ops.Linear(ops.Linear(x, a.A, nil), a.B, nil)
	d = ops.Mul(d, autograd.Temp(scalar(d.Value().Device(), dt, a.Scale)))
	if yt := y.Value().DType(); yt != dt {
		d = ops.Cast(d, yt)
	}
	return ops.Add(y, d)
}

// scalar returns v as a tensor on dev, or a failed one that reports why.
func scalar(dev device.Device, dt device.DType, v float64) *tensor.Tensor {
	k, err := tensor.Scalar(dev, dt, v)
	if err != nil {
		return tensor.Failed(dev, dt, err)
	}
	return k
}

// Set is the adapters attached to a model.
type Set struct {
	Config   Config
	Adapters map[string]*Adapter // by module name
	model    Model
}

// Attach adds new adapters to every module of m that cfg targets, and
// freezes m's own parameters: A drawn as PyTorch's
// kaiming_uniform_(a=√5) (uniform in ±1/√in), B zeros, so that the model
// computes what it did until a step trains them. Targets that match no
// module are an error naming the modules there are.
func Attach(m Model, cfg Config) (*Set, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	mods := m.Modules()
	var names []string
	for name := range mods {
		if matches(name, cfg.Targets) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	if len(names) == 0 {
		return nil, fmt.Errorf("lora: target modules %v match none of the model's %d (%s, …)", cfg.Targets, len(mods), strings.Join(first(sortedKeys(mods), 4), ", "))
	}
	s := &Set{Config: cfg, Adapters: map[string]*Adapter{}, model: m}
	for i, name := range names {
		mod := mods[name]
		in, out := shape(mod)
		w := mod.W.Value()
		dt := cfg.DType
		if dt == 0 {
			dt = w.DType()
		}
		bound := 1 / math.Sqrt(float64(in))
		a, err := tensor.Uniform(w.Device(), dt, -bound, bound, cfg.Seed+uint64(i)*0x9e3779b97f4a7c15, cfg.Rank, in)
		if err != nil {
			s.release()
			return nil, fmt.Errorf("lora: %s: %w", name, err)
		}
		b, err := tensor.Zeros(w.Device(), dt, out, cfg.Rank)
		if err != nil {
			a.Release()
			s.release()
			return nil, fmt.Errorf("lora: %s: %w", name, err)
		}
		s.Adapters[name] = s.adapter(a, b, mod.FanInFanOut, i)
	}
	s.attach()
	return s, nil
}

// adapter returns the adapter of A and B, its dropout seeded by the
// module's index.
func (s *Set) adapter(a, b *tensor.Tensor, fanInFanOut bool, i int) *Adapter {
	ad := &Adapter{A: autograd.Leaf(a, true), B: autograd.Leaf(b, true), Scale: s.Config.Alpha / float64(s.Config.Rank), FanInFanOut: fanInFanOut}
	if s.Config.Dropout > 0 {
		ad.drop = nn.Dropout(s.Config.Dropout, s.Config.Seed^uint64(i+1))
	}
	return ad
}

// attach freezes the model's parameters and sets the adapters.
func (s *Set) attach() {
	for _, p := range s.model.Params() {
		p.SetRequiresGrad(false)
	}
	s.model.SetAdapters(s.Adapters)
}

func shape(m Module) (in, out int) {
	sh := m.W.Value().Shape()
	if m.FanInFanOut {
		return sh[0], sh[1]
	}
	return sh[1], sh[0]
}

func sortedKeys[V any](m map[string]V) []string {
	var k []string
	for n := range m {
		k = append(k, n)
	}
	slices.Sort(k)
	return k
}

func first(s []string, n int) []string { return s[:min(n, len(s))] }

// Params returns the adapters' parameters (A then B, by module name),
// for an optimiser.
func (s *Set) Params() []*autograd.Var {
	var ps []*autograd.Var
	for _, name := range sortedKeys(s.Adapters) {
		ps = append(ps, s.Adapters[name].A, s.Adapters[name].B)
	}
	return ps
}

// Train sets the adapters' dropout on (training) or off.
func (s *Set) Train(on bool) {
	for _, a := range s.Adapters {
		if a.drop != nil {
			a.drop.Training = on
		}
	}
}

// release frees the adapters' tensors.
func (s *Set) release() {
	for _, a := range s.Adapters {
		a.A.Value().Release()
		a.B.Value().Release()
	}
}

// Detach removes the adapters from the model, frees them, and thaws the
// model's parameters.
func (s *Set) Detach() {
	s.model.SetAdapters(nil)
	s.release()
	s.Adapters = nil
	for _, p := range s.model.Params() {
		p.SetRequiresGrad(true)
	}
}

// Merge adds each adapter's update, Scale·B·A, to its module's weight (in
// the weight's dtype), then detaches the adapters: the model computes
// what it computed with them, at a plain model's cost. Every merged
// weight is computed before any is written: a failure changes nothing.
func (s *Set) Merge() error {
	mods := s.model.Modules()
	names := sortedKeys(s.Adapters)
	merged := make([]*tensor.Tensor, len(names))
	free := func() {
		for _, m := range merged {
			if m != nil {
				m.Release()
			}
		}
	}
	for i, name := range names {
		a := s.Adapters[name]
		w := mods[name].W.Value()
		err := tensor.Maybe(func() {
			d := ops.MatMul(a.B.Value(), a.A.Value()) // [out, in]
			if a.FanInFanOut {
				t := ops.Transpose(d)
				d.Release()
				d = t
			}
			k := scalar(d.Device(), d.DType(), a.Scale)
			dk := ops.Mul(d, k)
			d.Release()
			k.Release()
			if dk.DType() != w.DType() {
				c := ops.Cast(dk, w.DType())
				dk.Release()
				dk = c
			}
			merged[i] = ops.Add(w, dk)
			dk.Release()
		})
		if err == nil {
			err = w.Device().Sync()
		}
		if err != nil {
			free()
			return fmt.Errorf("lora: merging %s: %w", name, err)
		}
	}
	for i, name := range names {
		w := mods[name].W.Value()
		w.Device().Copy(w.Buffer(), merged[i].Buffer())
	}
	for _, name := range names {
		if err := mods[name].W.Value().Device().Sync(); err != nil {
			free()
			return fmt.Errorf("lora: merging %s: %w", name, err)
		}
	}
	free()
	s.Detach()
	return nil
}

// file is adapter_config.json as PEFT writes it.
type file struct {
	PEFTType    string         `json:"peft_type"`
	TaskType    string         `json:"task_type,omitempty"`
	Base        string         `json:"base_model_name_or_path"`
	Rank        int            `json:"r"`
	Alpha       float64        `json:"lora_alpha"`
	Dropout     float64        `json:"lora_dropout"`
	Targets     []string       `json:"target_modules"`
	FanInFanOut bool           `json:"fan_in_fan_out"`
	Bias        string         `json:"bias"`
	Inference   bool           `json:"inference_mode"`
	RSLoRA      bool           `json:"use_rslora,omitempty"`
	RankPattern map[string]any `json:"rank_pattern,omitempty"`
	AlphaPatt   map[string]any `json:"alpha_pattern,omitempty"`
	DoRA        bool           `json:"use_dora,omitempty"`
}

// prefix is PEFT's name of the wrapped model.
const prefix = "base_model.model."

// Save writes the adapters to the directory dir in PEFT's layout:
// adapter_model.safetensors (base_model.model.NAME.lora_A.weight and
// .lora_B.weight) and adapter_config.json, base naming the base model.
func (s *Set) Save(dir, base string) error {
	tensors := map[string]*tensor.Tensor{}
	fan := false
	for name, a := range s.Adapters {
		tensors[prefix+name+".lora_A.weight"] = a.A.Value()
		tensors[prefix+name+".lora_B.weight"] = a.B.Value()
		fan = fan || a.FanInFanOut
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("lora: %w", err)
	}
	if err := checkpoint.Save(filepath.Join(dir, WeightsFile), tensors, nil); err != nil {
		return fmt.Errorf("lora: %w", err)
	}
	c := s.Config
	b, err := json.MarshalIndent(file{PEFTType: "LORA", TaskType: "CAUSAL_LM", Base: base, Rank: c.Rank, Alpha: c.Alpha, Dropout: c.Dropout,
		Targets: c.Targets, FanInFanOut: fan, Bias: "none", Inference: true}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, ConfigFile), append(b, '\n'), 0o644)
}

// Load attaches the adapters of the PEFT directory dir to m (as Attach,
// m's parameters frozen): a LoRA adapter_config.json (bias none) and
// adapter_model.safetensors whose lora_A and lora_B weights name modules
// of m in the shapes r and the modules' sizes give. Every mismatch is an
// error, before anything is attached.
func Load(m Model, dir string, seed uint64) (*Set, error) {
	b, err := os.ReadFile(filepath.Join(dir, ConfigFile))
	if err != nil {
		return nil, fmt.Errorf("lora: %w", err)
	}
	var f file
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("lora: %s: %w", filepath.Join(dir, ConfigFile), err)
	}
	if f.PEFTType != "LORA" || f.Bias != "" && f.Bias != "none" {
		return nil, fmt.Errorf("lora: %s: peft_type %q, bias %q; want LORA without biases", dir, f.PEFTType, f.Bias)
	}
	if f.RSLoRA || f.DoRA || len(f.RankPattern) > 0 || len(f.AlphaPatt) > 0 {
		return nil, fmt.Errorf("lora: %s: use_rslora %v, use_dora %v, rank_pattern %v, alpha_pattern %v: not supported (one rank and one alpha/r scale for every module)", dir, f.RSLoRA, f.DoRA, f.RankPattern, f.AlphaPatt)
	}
	cfg := Config{Rank: f.Rank, Alpha: f.Alpha, Dropout: f.Dropout, Targets: f.Targets, Seed: seed}
	if err := cfg.Check(); err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	ck, err := checkpoint.Read(filepath.Join(dir, WeightsFile))
	if err != nil {
		return nil, fmt.Errorf("lora: %w", err)
	}
	mods := m.Modules()
	s := &Set{Config: cfg, Adapters: map[string]*Adapter{}, model: m}
	into := map[string]*tensor.Tensor{}
	var problems []string
	names := ck.Names()
	slices.Sort(names)
	for _, n := range names {
		rest, ok := strings.CutPrefix(n, prefix)
		mod, part := "", ""
		if ok {
			for _, suffix := range []string{".lora_A.weight", ".lora_B.weight"} {
				if base, cut := strings.CutSuffix(rest, suffix); cut {
					mod, part = base, suffix
				}
			}
		}
		if part == "" {
			problems = append(problems, fmt.Sprintf("%s: not a LoRA weight (%sNAME.lora_A.weight or .lora_B.weight)", n, prefix))
			continue
		}
		if _, ok := mods[mod]; !ok {
			problems = append(problems, fmt.Sprintf("%s: the model has no module %s", n, mod))
			continue
		}
		in, out := shape(mods[mod])
		want := []int{cfg.Rank, in}
		if part == ".lora_B.weight" {
			want = []int{out, cfg.Rank}
		}
		w := mods[mod].W.Value()
		t, err := tensor.Zeros(w.Device(), w.DType(), want...)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", n, err))
			continue
		}
		into[n] = t
	}
	for mod := range mods {
		_, a := into[prefix+mod+".lora_A.weight"]
		_, b := into[prefix+mod+".lora_B.weight"]
		if a != b {
			problems = append(problems, fmt.Sprintf("%s: lora_A without lora_B, or lora_B without lora_A", mod))
		}
	}
	free := func() {
		for _, t := range into {
			t.Release()
		}
	}
	if len(problems) == 0 {
		if err := ck.LoadInto(into); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if len(problems) > 0 {
		free()
		slices.Sort(problems)
		return nil, fmt.Errorf("lora: %s: %s", dir, strings.Join(problems, "; "))
	}
	for i, mod := range sortedKeys(mods) {
		a, ok := into[prefix+mod+".lora_A.weight"]
		if !ok {
			continue
		}
		s.Adapters[mod] = s.adapter(a, into[prefix+mod+".lora_B.weight"], mods[mod].FanInFanOut, i)
	}
	if len(s.Adapters) == 0 {
		return nil, fmt.Errorf("lora: %s holds no adapter", dir)
	}
	s.attach()
	s.Train(false) // PEFT loads adapters for inference: dropout off until Train(true)
	return s, nil
}
