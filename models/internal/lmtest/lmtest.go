// Package lmtest checks a causal language model of package models
// against the values its testdata/reference.py recorded with PyTorch:
// the logits, the greedy continuation with and without the cache,
// decoding through the cache, the sharded and BF16 copies, and
// fine-tuning steps.
package lmtest

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/hf"
	"github.com/extensor/extensor/internal/gputest"
	"github.com/extensor/extensor/models/generate"
	"github.com/extensor/extensor/models/lora"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/optim"
	"github.com/extensor/extensor/tensor"
)

// Backends returns the CPU device and, where there is an adapter, a
// WebGPU one (always under CI: gputest.OrNil).
func Backends(t *testing.T) []device.Device {
	if g := gputest.OrNil(t); g != nil {
		return []device.Device{cpu.New(), g}
	}
	return []device.Device{cpu.New()}
}

// An LM is what the checks drive.
type LM interface {
	Forward(ids *autograd.Var) *autograd.Var
	Params() []*autograd.Var
	StateDict() map[string]*tensor.Tensor
	Release()
	generate.BatchModel
	lora.Model
}

// A Loader loads the model directory dir on dev in float32.
type Loader func(mdl *hf.Model, dev device.Device) (LM, error)

// Ref is one model's reference values.
type Ref struct {
	IDs    [][]int32 `json:"ids"`
	Logits []float64 `json:"logits"`
	Shape  []int     `json:"shape"`
	Prompt []int32   `json:"prompt"`
	Greedy []int32   `json:"greedy"`
	// LoRA is the logits with the adapter of the dir-lora directory, and
	// the losses of five AdamW steps on it.
	LoRA struct {
		Logits []float64 `json:"logits"`
		Losses []float64 `json:"losses"`
	} `json:"lora"`
}

// Read returns the reference of file (JSON), or of its entry at key
// under "models" when key is not empty.
func Read(t testing.TB, file, key string) Ref {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var r Ref
	if key == "" {
		err = json.Unmarshal(b, &r)
	} else {
		var all struct{ Models map[string]Ref }
		err = json.Unmarshal(b, &all)
		r = all.Models[key]
	}
	if err != nil || len(r.Logits) == 0 {
		t.Fatalf("%s %s: %v (%d logits)", file, key, err, len(r.Logits))
	}
	return r
}

// Load opens dir and loads it with load on dev, released when t ends.
func Load(t testing.TB, load Loader, dir string, dev device.Device) LM {
	t.Helper()
	mdl, err := hf.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := load(mdl, dev)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Release)
	return m
}

// ids returns rows as an int32 tensor [len(rows), len(rows[0])] on dev.
func ids(dev device.Device, rows [][]int32) *autograd.Var {
	var flat []int32
	for _, r := range rows {
		flat = append(flat, r...)
	}
	return autograd.Leaf(tensor.Must(tensor.FromInt32(dev, flat, len(rows), len(rows[0]))), false)
}

// Logits returns m's logits of rows, with no tape.
func Logits(t testing.TB, m LM, dev device.Device, rows [][]int32) []float64 {
	t.Helper()
	x := ids(dev, rows)
	defer x.Value().Release()
	y := m.Forward(x.NoGrad()).Value()
	defer y.Release()
	v, err := y.Float64s()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// MatchesPyTorch compares m's logits with the reference's: each within
// tol·(1 + |reference|).
func MatchesPyTorch(t *testing.T, m LM, dev device.Device, ref Ref, tol float64) {
	t.Helper()
	got := Logits(t, m, dev, ref.IDs)
	if len(got) != len(ref.Logits) {
		t.Fatalf("%d logits; want %d", len(got), len(ref.Logits))
	}
	worst := 0.0
	for i, w := range ref.Logits {
		d := math.Abs(got[i]-w) / (1 + math.Abs(w))
		worst = max(worst, d)
		if d > tol {
			t.Fatalf("%v: logit %d: %v; PyTorch %v", dev, i, got[i], w)
		}
	}
	t.Logf("%v: logits within %.2g·(1 + |PyTorch's|)", dev, worst)
}

// Greedy decodes greedily from the reference's prompt, streaming, with
// the cache and without, and compares the tokens with PyTorch's.
func Greedy(t *testing.T, m LM, ref Ref) {
	t.Helper()
	for _, uncached := range []bool{false, true} {
		var streamed []int32
		got, err := generate.Generate(m, ref.Prompt, generate.Options{Tokens: len(ref.Greedy), NoCache: uncached, Emit: func(tok int32) { streamed = append(streamed, tok) }})
		if err != nil || !slices.Equal(got, ref.Greedy) || !slices.Equal(streamed, got) {
			t.Errorf("uncached %v: Generate: %v (streamed %v), %v; PyTorch %v", uncached, got, streamed, err, ref.Greedy)
		}
	}
}

// Cache checks that decoding seq through the cache, in three steps,
// gives Forward's logits of each step's last position, that sampled
// tokens equal uncached decoding's, token for token, and that a step
// past the context is an error.
func Cache(t *testing.T, m LM, dev device.Device, seq []int32) {
	t.Helper()
	full := Logits(t, m, dev, [][]int32{seq})
	c := m.NewCache()
	defer c.Release()
	v := m.VocabSize()
	parts := [][]int32{seq[:len(seq)-3], seq[len(seq)-3 : len(seq)-2], seq[len(seq)-2:]}
	for at, part := range parts {
		got, err := m.Step(part, c)
		if err != nil {
			t.Fatal(err)
		}
		last := c.Len() - 1
		for j, w := range full[last*v : (last+1)*v] {
			if math.Abs(got[j]-w) > 1e-4*(1+math.Abs(w)) {
				t.Fatalf("%v: step %d: logit %d of position %d: %v; Forward %v", dev, at, j, last, got[j], w)
			}
		}
	}
	if _, err := m.Step(make([]int32, m.Context()), c); err == nil || !strings.Contains(err.Error(), "tokens after") {
		t.Errorf("a step past the context: %v", err)
	}
	s := generate.Sampling{Temperature: 0.9, TopK: 20, TopP: 0.95, RepetitionPenalty: 1.3, Seed: 5}
	prompt := seq[:5]
	cached, err := generate.Generate(m, prompt, generate.Options{Tokens: 11, Sampling: s})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := generate.Generate(m, prompt, generate.Options{Tokens: 11, Sampling: s, NoCache: true})
	if err != nil || !slices.Equal(cached, plain) {
		t.Errorf("%v: cached %v; uncached %v, %v", dev, cached, plain, err)
	}
}

// Batch decodes prompts of different lengths in one left-padded batch:
// each row's logits of the prompt equal those of the prompt alone (within
// 10⁻⁴), and greedy GenerateBatch gives each row Generate's tokens.
func Batch(t *testing.T, m LM, dev device.Device) {
	t.Helper()
	prompts := [][]int32{{300, 1, 4}, {5, 9, 2, 6, 5, 3, 1}, {44}}
	c := m.NewCache()
	rows, err := m.StepBatch([][]int32{append([]int32{0, 0, 0, 0}, prompts[0]...), prompts[1], append(make([]int32, 6), prompts[2]...)}, []int{4, 0, 6}, c)
	c.Release()
	if err != nil {
		t.Fatal(err)
	}
	for r, p := range prompts {
		one := m.NewCache()
		alone, err := m.Step(p, one)
		one.Release()
		if err != nil {
			t.Fatal(err)
		}
		for j, w := range alone {
			if math.Abs(rows[r][j]-w) > 1e-4*(1+math.Abs(w)) {
				t.Fatalf("%v: row %d (padded by %d), logit %d: %v; alone %v", dev, r, 7-len(p), j, rows[r][j], w)
			}
		}
	}
	got, err := generate.GenerateBatch(m, prompts, generate.Options{Tokens: 6})
	if err != nil {
		t.Fatal(err)
	}
	for r, p := range prompts {
		want, err := generate.Generate(m, p, generate.Options{Tokens: 6})
		if err != nil || !slices.Equal(got[r], want) {
			t.Errorf("%v: batch row %d: %v; alone %v, %v", dev, r, got[r], want, err)
		}
	}
}

// StoredForms loads the model's copies in two shards (dir-sharded) and
// in BF16 (dir-bf16): the shards give the single file's logits exactly,
// and BF16 exactly those of the float32 weights rounded to bfloat16.
func StoredForms(t *testing.T, load Loader, dir string, dev device.Device, rows [][]int32) {
	t.Helper()
	m := Load(t, load, dir, dev)
	want := Logits(t, m, dev, rows)
	if got := Logits(t, Load(t, load, dir+"-sharded", dev), dev, rows); !slices.Equal(got, want) {
		t.Errorf("%v: the sharded copy's logits differ from the single file's", dev)
	}
	RoundToBF16(t, m.StateDict())
	got, rounded := Logits(t, Load(t, load, dir+"-bf16", dev), dev, rows), Logits(t, m, dev, rows)
	switch {
	case !slices.Equal(got, rounded):
		t.Errorf("%v: the BF16 copy's logits differ from those of the float32 weights rounded to bfloat16", dev)
	case slices.Equal(got, want):
		t.Errorf("%v: the BF16 copy's logits equal the float32 weights'; the rounding is not seen", dev)
	}
}

// LoRA loads the adapter of dir-lora (PEFT's layout) onto the model of
// dir and checks, against PyTorch's values, its logits and the losses of
// five AdamW steps on the adapters alone (the base weights frozen and
// unchanged); the trained adapters saved and loaded onto a fresh model
// give the same logits, merging them into the base gives them within
// 10⁻⁵, and the merged model saved in Hugging Face's layout loads back
// to them exactly.
func LoRA(t *testing.T, load Loader, dir string, dev device.Device, ref Ref) {
	t.Helper()
	m := Load(t, load, dir, dev)
	s, err := lora.Load(m, dir+"-lora", 0)
	if err != nil {
		t.Fatal(err)
	}
	MatchesPyTorch(t, m, dev, Ref{IDs: ref.IDs, Logits: ref.LoRA.Logits}, 1e-4)
	base := m.Params()[len(m.Params())-1]
	before, err := base.Value().Float32s()
	if err != nil {
		t.Fatal(err)
	}
	losses := FineTune(t, lmWith(m, s.Params()), dev, ref.IDs, len(ref.LoRA.Losses))
	for i, w := range ref.LoRA.Losses {
		if math.Abs(losses[i]-w) > 1e-4*(1+math.Abs(w)) {
			t.Errorf("%v: LoRA step %d: loss %v; PyTorch %v", dev, i, losses[i], w)
		}
	}
	if after, err := base.Value().Float32s(); err != nil || !slices.Equal(before, after) || base.Grad() != nil {
		t.Errorf("%v: a frozen base weight changed (%v) or has a gradient", dev, err)
	}
	trained := Logits(t, m, dev, ref.IDs)
	saved := t.TempDir()
	if err := s.Save(saved, dir); err != nil {
		t.Fatal(err)
	}
	fresh := Load(t, load, dir, dev)
	if _, err := lora.Load(fresh, saved, 0); err != nil {
		t.Fatal(err)
	}
	if got := Logits(t, fresh, dev, ref.IDs); !slices.Equal(got, trained) {
		t.Errorf("%v: the saved adapters' logits differ from the trained ones", dev)
	}
	if err := s.Merge(); err != nil {
		t.Fatal(err)
	}
	merged := Logits(t, m, dev, ref.IDs)
	for i := range merged {
		if math.Abs(merged[i]-trained[i]) > 1e-5*(1+math.Abs(trained[i])) {
			t.Fatalf("%v: merged logit %d: %v; with the adapters %v", dev, i, merged[i], trained[i])
		}
	}
	out := t.TempDir()
	if err := hf.Save(out, dir, m.StateDict()); err != nil {
		t.Fatal(err)
	}
	if got := Logits(t, Load(t, load, out, dev), dev, ref.IDs); !slices.Equal(got, merged) {
		t.Errorf("%v: the saved merged model's logits differ", dev)
	}
}

// withParams is an LM whose Params are another set (the adapters').
type withParams struct {
	LM
	ps []*autograd.Var
}

func (w withParams) Params() []*autograd.Var { return w.ps }

func lmWith(m LM, ps []*autograd.Var) LM { return withParams{m, ps} }

// RoundToBF16 rounds each float32 tensor of state, in place, to the
// nearest bfloat16 (ties to even), as torch's .bfloat16() rounds.
func RoundToBF16(t testing.TB, state map[string]*tensor.Tensor) {
	t.Helper()
	for _, p := range state {
		v, err := p.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		for i, x := range v {
			b := math.Float32bits(x)
			v[i] = math.Float32frombits((b + 0x7fff + (b >> 16 & 1)) &^ 0xffff)
		}
		dev := p.Device()
		r := tensor.Must(tensor.FromFloat32(dev, v, p.Shape()...))
		dev.Copy(p.Buffer(), r.Buffer())
		if err := dev.Sync(); err != nil {
			t.Fatal(err)
		}
		r.Release()
	}
}

// FineTune takes steps AdamW steps on m's next-token loss over rows and
// returns the losses, which must fall.
func FineTune(t *testing.T, m LM, dev device.Device, rows [][]int32, steps int) []float64 {
	t.Helper()
	var x, y [][]int32
	for _, r := range rows {
		x, y = append(x, r[:len(r)-1]), append(y, r[1:])
	}
	xs := ids(dev, x)
	n := len(rows) * (len(rows[0]) - 1)
	ys := autograd.Leaf(tensor.Must(tensor.FromInt32(dev, slices.Concat(y...), n)), false)
	opt := optim.AdamW(m.Params(), 1e-2, 0.01)
	defer opt.Release()
	var run []float64
	for range steps {
		opt.ZeroGrad()
		loss := ops.CrossEntropyLoss(ops.Reshape(m.Forward(xs), n, m.VocabSize()), ys, ops.MeanReduction)
		v, err := loss.Value().Float64s()
		if err != nil {
			t.Fatal(err)
		}
		run = append(run, v[0])
		if err := loss.Backward(); err != nil {
			t.Fatal(err)
		}
		opt.Step()
	}
	if !(run[len(run)-1] < run[0]) {
		t.Errorf("%v: losses %v; want them to fall", dev, run)
	}
	return run
}

// Agree checks that two backends' losses agree step by step.
func Agree(t *testing.T, a, b []float64) {
	t.Helper()
	for i := range a {
		if d := math.Abs(a[i] - b[i]); d > 1e-4*(1+a[i]) {
			t.Errorf("step %d: cpu loss %v, webgpu %v", i, a[i], b[i])
		}
	}
}

// All runs every check on both backends for the model of dir and its
// reference: MatchesPyTorch (within 10⁻⁴), Greedy, Cache over seq,
// StoredForms where dir-sharded exists, and five FineTune steps whose
// losses agree across the backends.
func All(t *testing.T, load Loader, dir string, ref Ref, seq []int32) {
	t.Helper()
	_, err := os.Stat(dir + "-sharded")
	stored := err == nil
	var losses [][]float64
	for _, dev := range Backends(t) {
		t.Run(dev.String(), func(t *testing.T) {
			m := Load(t, load, dir, dev)
			MatchesPyTorch(t, m, dev, ref, 1e-4)
			Greedy(t, m, ref)
			Cache(t, m, dev, seq)
			Batch(t, m, dev)
			if stored {
				StoredForms(t, load, dir, dev, ref.IDs)
			}
			losses = append(losses, FineTune(t, m, dev, ref.IDs, 5))
			if ref.LoRA.Logits != nil {
				LoRA(t, load, dir, dev, ref)
			}
		})
	}
	if len(losses) == 2 {
		Agree(t, losses[0], losses[1])
	}
	t.Logf("%s: AdamW losses %v", dir, losses)
}

// Edited returns a copy of the model directory from (config.json and
// model.safetensors) in a temporary directory, its config.json changed
// by edit.
func Edited(t *testing.T, from string, edit func(cfg map[string]any)) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{hf.ConfigFile, hf.WeightsFile} {
		b, err := os.ReadFile(filepath.Join(from, f))
		if err != nil {
			t.Fatal(err)
		}
		if f == hf.ConfigFile {
			var cfg map[string]any
			if err := json.Unmarshal(b, &cfg); err != nil {
				t.Fatal(err)
			}
			edit(cfg)
			if b, err = json.Marshal(cfg); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
