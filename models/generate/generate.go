package generate

import (
	"fmt"
	"slices"
)

// A Model is a causal language model that decodes through a key-value
// cache.
type Model interface {
	// Context returns the most positions the model sees.
	Context() int
	// VocabSize returns the number of token ids.
	VocabSize() int
	// NewCache returns an empty cache, one sequence.
	NewCache() Cache
	// Step runs ids (one sequence) after the positions c holds, adds
	// them to c and returns the logits of the last position. It is not
	// recorded on the tape.
	Step(ids []int32, c Cache) ([]float64, error)
}

// A BatchModel decodes rows of sequences at once.
type BatchModel interface {
	Model
	// StepBatch is Step for rows of tokens of one length, one a
	// sequence, the sequences left-padded: row b's first pads[b]
	// positions are padding, which no other position attends to. It
	// returns each row's logits of its last position.
	StepBatch(ids [][]int32, pads []int, c Cache) ([][]float64, error)
}

// A Cache holds a model's keys and values of the positions decoded.
type Cache interface {
	// Len returns the number of positions held.
	Len() int
	// Release frees the cache's memory.
	Release()
}

// Options says what Generate draws.
type Options struct {
	// Tokens is the most tokens to draw.
	Tokens int
	Sampling
	// Stop ends the generation after any of these tokens (a model's
	// eos_token_id), which is returned last.
	Stop []int32
	// Emit, if not nil, is given each token as it is drawn.
	Emit func(token int32)
	// EmitRow, if not nil, is given each token GenerateBatch draws, with
	// its row.
	EmitRow func(row int, token int32)
	// NoCache runs every position for each token (for tests and
	// benchmarks of the cache).
	NoCache bool
}

// Generate returns up to o.Tokens tokens that follow prompt: the prompt
// runs through m in one pass, then each token drawn runs alone through
// the cache. Past the model's context each token reruns the window of
// the last Context() tokens (the positions shift), as transformers'
// models without a cache would. An empty prompt, one longer than the
// context or holding a token outside the vocabulary, a negative count
// and sampling settings out of range are errors before any work; so is
// a stop token outside the vocabulary.
func Generate(m Model, prompt []int32, o Options) ([]int32, error) {
	n, v := m.Context(), m.VocabSize()
	switch {
	case len(prompt) == 0 || len(prompt) > n:
		return nil, fmt.Errorf("generate: a prompt of %d tokens; want 1 to %d (the model's context)", len(prompt), n)
	case o.Tokens < 0:
		return nil, fmt.Errorf("generate: %d tokens to draw; want ≥ 0", o.Tokens)
	}
	for what, ts := range map[string][]int32{"prompt": prompt, "stop": o.Stop} {
		for i, t := range ts {
			if t < 0 || int(t) >= v {
				return nil, fmt.Errorf("generate: %s token %d is %d; want one of the %d of the vocabulary", what, i, t, v)
			}
		}
	}
	pick, err := NewSampler(o.Sampling)
	if err != nil {
		return nil, err
	}
	seq := slices.Clone(prompt)
	c := m.NewCache()
	defer func() { c.Release() }()
	fed := 0 // the tokens of seq the cache holds
	for len(seq)-len(prompt) < o.Tokens {
		var logits []float64
		switch {
		case o.NoCache || len(seq) > n:
			c.Release()
			c = m.NewCache()
			logits, err = m.Step(seq[max(0, len(seq)-n):], c)
		default:
			logits, err = m.Step(seq[fed:], c)
			fed = len(seq)
		}
		if err != nil {
			return seq[len(prompt):], fmt.Errorf("generate: token %d: %w", len(seq)-len(prompt), err)
		}
		if len(logits) != v {
			return seq[len(prompt):], fmt.Errorf("generate: %d logits; want the vocabulary's %d", len(logits), v)
		}
		t := int32(pick.Pick(logits, seq))
		seq = append(seq, t)
		if o.Emit != nil {
			o.Emit(t)
		}
		if slices.Contains(o.Stop, t) {
			break
		}
	}
	return seq[len(prompt):], nil
}

// GenerateBatch draws for each prompt what Generate draws for it, in one
// batch: the prompts left-padded to the longest (no position attends to
// the padding; positions count from each prompt's first token) and run in
// one pass, then one token a row a step through the cache. Row r picks
// with its own Sampler, seeded o.Seed + r. A row ends after a stop token
// (its later steps discarded); the batch ends when every row has, after
// o.Tokens, or when the longest row fills the context (a batch's window
// does not slide). The errors are Generate's, for each prompt, before any
// work; o.Emit is not called (o.EmitRow is).
func GenerateBatch(m BatchModel, prompts [][]int32, o Options) ([][]int32, error) {
	n, v := m.Context(), m.VocabSize()
	if len(prompts) == 0 {
		return nil, fmt.Errorf("generate: no prompts")
	}
	if o.Tokens < 0 {
		return nil, fmt.Errorf("generate: %d tokens to draw; want ≥ 0", o.Tokens)
	}
	long := 0
	for r, p := range prompts {
		if len(p) == 0 || len(p) > n {
			return nil, fmt.Errorf("generate: prompt %d has %d tokens; want 1 to %d (the model's context)", r, len(p), n)
		}
		for i, t := range p {
			if t < 0 || int(t) >= v {
				return nil, fmt.Errorf("generate: prompt %d, token %d is %d; want one of the %d of the vocabulary", r, i, t, v)
			}
		}
		long = max(long, len(p))
	}
	for i, t := range o.Stop {
		if t < 0 || int(t) >= v {
			return nil, fmt.Errorf("generate: stop token %d is %d; want one of the %d of the vocabulary", i, t, v)
		}
	}
	picks := make([]*Sampler, len(prompts))
	for r := range picks {
		s := o.Sampling
		s.Seed += uint64(r)
		var err error
		if picks[r], err = NewSampler(s); err != nil {
			return nil, err
		}
	}
	pads := make([]int, len(prompts))
	feed := make([][]int32, len(prompts))
	seqs := make([][]int32, len(prompts)) // each row's prompt and tokens
	for r, p := range prompts {
		pads[r] = long - len(p)
		feed[r] = append(make([]int32, pads[r]), p...)
		seqs[r] = slices.Clone(p)
	}
	out := make([][]int32, len(prompts))
	done := make([]bool, len(prompts))
	c := m.NewCache()
	defer c.Release()
	for step := range o.Tokens {
		logits, err := m.StepBatch(feed, pads, c)
		if err != nil {
			return out, fmt.Errorf("generate: token %d: %w", step, err)
		}
		if len(logits) != len(prompts) {
			return out, fmt.Errorf("generate: %d rows of logits; want %d", len(logits), len(prompts))
		}
		left := false
		for r := range prompts {
			if done[r] {
				feed[r] = feed[r][len(feed[r])-1:]
				continue
			}
			if len(logits[r]) != v {
				return out, fmt.Errorf("generate: %d logits; want the vocabulary's %d", len(logits[r]), v)
			}
			t := int32(picks[r].Pick(logits[r], seqs[r]))
			seqs[r], out[r] = append(seqs[r], t), append(out[r], t)
			feed[r] = []int32{t}
			if o.EmitRow != nil {
				o.EmitRow(r, t)
			}
			done[r] = slices.Contains(o.Stop, t)
			left = left || !done[r]
		}
		if !left || c.Len() >= n {
			break
		}
	}
	return out, nil
}
