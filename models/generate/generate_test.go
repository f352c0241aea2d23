package generate_test

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/extensor/extensor/models/generate"
)

// counter is a Model whose next token is the last one plus 1 (mod its
// vocabulary); it records each Step's tokens.
type counter struct {
	context, vocab int
	steps          [][]int32
	wrongLogits    bool
}

type positions struct{ n int }

func (p *positions) Len() int { return p.n }
func (p *positions) Release() { p.n = 0 }

func (c *counter) Context() int             { return c.context }
func (c *counter) VocabSize() int           { return c.vocab }
func (c *counter) NewCache() generate.Cache { return &positions{} }
func (c *counter) Step(ids []int32, k generate.Cache) ([]float64, error) {
	p := k.(*positions)
	if p.n+len(ids) > c.context {
		return nil, fmt.Errorf("past the context")
	}
	p.n += len(ids)
	c.steps = append(c.steps, slices.Clone(ids))
	l := make([]float64, c.vocab)
	if c.wrongLogits {
		l = l[1:]
	}
	l[(int(ids[len(ids)-1])+1)%c.vocab] = 10
	return l, nil
}

// TestGenerate checks the prefill (the prompt in one step), one token a
// step after it, the window past the context, the stream and the stop
// tokens.
func TestGenerate(t *testing.T) {
	m := &counter{context: 6, vocab: 10}
	var streamed []int32
	got, err := generate.Generate(m, []int32{1, 2, 3}, generate.Options{Tokens: 5, Emit: func(t int32) { streamed = append(streamed, t) }})
	want := []int32{4, 5, 6, 7, 8}
	if err != nil || !slices.Equal(got, want) || !slices.Equal(streamed, want) {
		t.Fatalf("Generate: %v (streamed %v), %v; want %v", got, streamed, err, want)
	}
	// Prefill, then one token a step up to the context of 6, then the
	// last 6 tokens each step.
	steps := [][]int32{{1, 2, 3}, {4}, {5}, {6}, {2, 3, 4, 5, 6, 7}}
	if fmt.Sprint(m.steps) != fmt.Sprint(steps) {
		t.Errorf("steps %v; want %v", m.steps, steps)
	}
	m.steps = nil
	got, err = generate.Generate(m, []int32{7}, generate.Options{Tokens: 9, Stop: []int32{0, 5}})
	if want := []int32{8, 9, 0}; err != nil || !slices.Equal(got, want) {
		t.Errorf("Generate to a stop token: %v, %v; want %v", got, err, want)
	}
	got, err = generate.Generate(m, []int32{7}, generate.Options{Tokens: 3, NoCache: true})
	if want := []int32{8, 9, 0}; err != nil || !slices.Equal(got, want) {
		t.Errorf("Generate without the cache: %v, %v; want %v", got, err, want)
	}
	if got, err := generate.Generate(m, []int32{7}, generate.Options{}); err != nil || len(got) != 0 {
		t.Errorf("Generate of 0 tokens: %v, %v", got, err)
	}
}

// TestGenerateRefuses checks the errors before any work.
func TestGenerateRefuses(t *testing.T) {
	for _, tt := range []struct {
		prompt []int32
		o      generate.Options
		says   string
	}{
		{nil, generate.Options{Tokens: 1}, "a prompt of 0 tokens"},
		{make([]int32, 7), generate.Options{Tokens: 1}, "a prompt of 7 tokens; want 1 to 6"},
		{[]int32{1}, generate.Options{Tokens: -1}, "-1 tokens to draw"},
		{[]int32{1, 10}, generate.Options{Tokens: 1}, "prompt token 1 is 10"},
		{[]int32{1}, generate.Options{Tokens: 1, Stop: []int32{-3}}, "stop token 0 is -3"},
		{[]int32{1}, generate.Options{Tokens: 1, Sampling: generate.Sampling{Temperature: -1}}, "temperature -1"},
		{[]int32{1}, generate.Options{Tokens: 1, Sampling: generate.Sampling{Temperature: math.Inf(1)}}, "temperature +Inf"},
		{[]int32{1}, generate.Options{Tokens: 1, Sampling: generate.Sampling{TopK: -2}}, "top-k -2"},
		{[]int32{1}, generate.Options{Tokens: 1, Sampling: generate.Sampling{TopP: 1.5}}, "top-p 1.5"},
		{[]int32{1}, generate.Options{Tokens: 1, Sampling: generate.Sampling{TopP: math.NaN()}}, "top-p NaN"},
		{[]int32{1}, generate.Options{Tokens: 1, Sampling: generate.Sampling{RepetitionPenalty: -1}}, "repetition penalty -1"},
	} {
		m := &counter{context: 6, vocab: 10}
		if _, err := generate.Generate(m, tt.prompt, tt.o); err == nil || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("Generate(%v, %+v): %v; want an error saying %s", tt.prompt, tt.o, err, tt.says)
		}
		if len(m.steps) != 0 {
			t.Errorf("Generate(%v, %+v) ran %d steps before its error", tt.prompt, tt.o, len(m.steps))
		}
	}
	m := &counter{context: 6, vocab: 10, wrongLogits: true}
	if _, err := generate.Generate(m, []int32{1}, generate.Options{Tokens: 1}); err == nil || !strings.Contains(err.Error(), "9 logits") {
		t.Errorf("a model of 9 logits: %v", err)
	}
}

// TestPick checks greedy picks, the repetition penalty and NaN logits.
func TestPick(t *testing.T) {
	nan := math.NaN()
	for _, tt := range []struct {
		s      generate.Sampling
		logits []float64
		seen   []int32
		want   int
	}{
		{generate.Sampling{}, []float64{1, 3, 3, 2}, nil, 1},
		{generate.Sampling{}, []float64{nan, 1, nan, 2}, nil, 3},
		{generate.Sampling{}, []float64{nan, nan}, nil, 0},
		// [2, 1, -1] with 0 and 2 seen, penalty 4: [0.5, 1, -4].
		{generate.Sampling{RepetitionPenalty: 4}, []float64{2, 1, -1}, []int32{0, 2, 0}, 1},
		// With -1 seen, penalty 4: -4, below the unseen -3.
		{generate.Sampling{RepetitionPenalty: 4}, []float64{-1, -3}, []int32{0}, 1},
		{generate.Sampling{RepetitionPenalty: 1}, []float64{2, 1}, []int32{0}, 0},
		{generate.Sampling{Temperature: 5, TopK: 1}, []float64{1, 3, 2}, nil, 1},
		{generate.Sampling{Temperature: 1, TopP: 0.5}, []float64{math.Log(.5), math.Log(.3), math.Log(.2)}, nil, 0},
		{generate.Sampling{Temperature: 1}, []float64{nan, 0, nan}, nil, 1},
		// +Inf: that token (an overflowing float16 logit, say).
		{generate.Sampling{Temperature: 1}, []float64{0, math.Inf(1), -5}, nil, 1},
		{generate.Sampling{Temperature: 1}, []float64{math.Inf(-1), math.Inf(-1)}, nil, 0},
	} {
		p, err := generate.NewSampler(tt.s)
		if err != nil {
			t.Fatal(err)
		}
		for range 50 {
			if got := p.Pick(tt.logits, tt.seen); got != tt.want {
				t.Fatalf("%+v: Pick(%v, %v) = %d; want %d", tt.s, tt.logits, tt.seen, got, tt.want)
			}
		}
	}
}

// TestDraws checks the frequencies of sampled tokens: softmax(l/T),
// restricted by top-k and top-p and renormalised, and that a seed draws
// the same tokens again.
func TestDraws(t *testing.T) {
	logits := []float64{math.Log(.5), math.Log(.3), math.Log(.15), math.Log(.05)}
	for _, tt := range []struct {
		s    generate.Sampling
		want []float64
	}{
		{generate.Sampling{Temperature: 1}, []float64{.5, .3, .15, .05}},
		{generate.Sampling{Temperature: 1, TopK: 2}, []float64{.5 / .8, .3 / .8, 0, 0}},
		// Top-p 0.85: 0.5 + 0.3 < 0.85, so the third stays.
		{generate.Sampling{Temperature: 1, TopP: 0.85}, []float64{.5 / .95, .3 / .95, .15 / .95, 0}},
		{generate.Sampling{Temperature: 1, TopP: 0.75}, []float64{.5 / .8, .3 / .8, 0, 0}},
		// Temperature 2: probabilities ∝ √p.
		{generate.Sampling{Temperature: 2, Seed: 3}, sqrtNorm(.5, .3, .15, .05)},
	} {
		p, err := generate.NewSampler(tt.s)
		if err != nil {
			t.Fatal(err)
		}
		const n = 20000
		count := make([]float64, len(logits))
		var first []int
		for i := range n {
			k := p.Pick(logits, nil)
			count[k]++
			if i < 20 {
				first = append(first, k)
			}
		}
		for k := range count {
			if got := count[k] / n; math.Abs(got-tt.want[k]) > 0.015 || tt.want[k] == 0 && got != 0 {
				t.Errorf("%+v: token %d drawn %.4f of the time; want %.4f", tt.s, k, got, tt.want[k])
			}
		}
		again, _ := generate.NewSampler(tt.s)
		for i, k := range first {
			if got := again.Pick(logits, nil); got != k {
				t.Fatalf("%+v: draw %d is %d, then %d with the same seed", tt.s, i, k, got)
			}
		}
	}
}

func sqrtNorm(p ...float64) []float64 {
	sum := 0.0
	for i := range p {
		p[i] = math.Sqrt(p[i])
		sum += p[i]
	}
	for i := range p {
		p[i] /= sum
	}
	return p
}

// batchCounter is counter for rows: each row's next token is its last
// plus 1; it records each step's rows and paddings.
type batchCounter struct {
	counter
	pads [][]int
}

func (c *batchCounter) StepBatch(ids [][]int32, pads []int, k generate.Cache) ([][]float64, error) {
	p := k.(*positions)
	if p.n+len(ids[0]) > c.context {
		return nil, fmt.Errorf("past the context")
	}
	p.n += len(ids[0])
	c.steps = append(c.steps, slices.Concat(ids...))
	c.pads = append(c.pads, slices.Clone(pads))
	var out [][]float64
	for _, row := range ids {
		l := make([]float64, c.vocab)
		l[(int(row[len(row)-1])+1)%c.vocab] = 10
		out = append(out, l)
	}
	return out, nil
}

// TestGenerateBatch checks the left padding, one token a row a step, the
// rows that stop early and the end at the context.
func TestGenerateBatch(t *testing.T) {
	m := &batchCounter{counter: counter{context: 6, vocab: 10}}
	var emitted []string
	got, err := generate.GenerateBatch(m, [][]int32{{1, 2, 3}, {7}}, generate.Options{Tokens: 4, Stop: []int32{9},
		EmitRow: func(r int, t int32) { emitted = append(emitted, fmt.Sprint(r, ":", t)) }})
	if err != nil {
		t.Fatal(err)
	}
	// Row 0 fills the context of 6 with 1 2 3 4 5 6, whose logits draw
	// its 7; row 1 stops at 9.
	if fmt.Sprint(got) != "[[4 5 6 7] [8 9]]" {
		t.Errorf("GenerateBatch: %v; want [[4 5 6 7] [8 9]]", got)
	}
	if want := "[[1 2 3 0 0 7] [4 8] [5 9] [6 9]]"; fmt.Sprint(m.steps) != want {
		t.Errorf("steps %v; want %s (row 1 padded by 2, then fed its stop token)", m.steps, want)
	}
	if fmt.Sprint(m.pads[0]) != "[0 2]" {
		t.Errorf("paddings %v; want [0 2]", m.pads[0])
	}
	if fmt.Sprint(emitted) != "[0:4 1:8 0:5 1:9 0:6 0:7]" {
		t.Errorf("emitted %v", emitted)
	}
	for _, tt := range []struct {
		prompts [][]int32
		o       generate.Options
		says    string
	}{
		{nil, generate.Options{Tokens: 1}, "no prompts"},
		{[][]int32{{1}, {}}, generate.Options{Tokens: 1}, "prompt 1 has 0 tokens"},
		{[][]int32{{1}, make([]int32, 7)}, generate.Options{Tokens: 1}, "prompt 1 has 7 tokens"},
		{[][]int32{{1, 10}}, generate.Options{Tokens: 1}, "prompt 0, token 1 is 10"},
		{[][]int32{{1}}, generate.Options{Tokens: -1}, "-1 tokens"},
		{[][]int32{{1}}, generate.Options{Tokens: 1, Stop: []int32{10}}, "stop token 0 is 10"},
		{[][]int32{{1}}, generate.Options{Tokens: 1, Sampling: generate.Sampling{TopK: -1}}, "top-k -1"},
	} {
		m := &batchCounter{counter: counter{context: 6, vocab: 10}}
		if _, err := generate.GenerateBatch(m, tt.prompts, tt.o); err == nil || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("GenerateBatch(%v, %+v): %v; want an error saying %s", tt.prompts, tt.o, err, tt.says)
		}
		if len(m.steps) != 0 {
			t.Errorf("GenerateBatch(%v) ran steps before its error", tt.prompts)
		}
	}
}

// TestTopKTies keeps the tokens tied with the k-th, as transformers does.
func TestTopKTies(t *testing.T) {
	p, err := generate.NewSampler(generate.Sampling{Temperature: 1, TopK: 1, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for range 300 {
		seen[p.Pick([]float64{1, 1, 1, 0}, nil)] = true
	}
	if !seen[0] || !seen[1] || !seen[2] || seen[3] {
		t.Errorf("top-1 of three tied logits drew %v; want each of the three, never the fourth", seen)
	}
}
