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
