package generate

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Sampling says how each token is picked from the logits of the last
// position, in transformers' order: the repetition penalty, then the
// temperature, top-k and top-p.
type Sampling struct {
	// Temperature divides the logits; 0 picks the largest (greedy
	// decoding, transformers' do_sample=False).
	Temperature float64
	// TopK, if above 0, draws among the TopK largest logits only (and
	// those tied with the TopK-th, as transformers keeps them).
	TopK int
	// TopP, if in (0, 1), draws among the fewest tokens whose
	// probabilities add up to at least TopP (nucleus sampling); 0 and 1
	// leave every token.
	TopP float64
	// RepetitionPenalty, if not 0 or 1, divides the positive logits and
	// multiplies the negative logits of every token of the prompt and of
	// those drawn so far (CTRL's penalty, transformers'
	// repetition_penalty).
	RepetitionPenalty float64
	// Seed seeds the draws (PCG): the same seed draws the same tokens.
	Seed uint64
}

// Check returns an error for settings out of range: a temperature that
// is negative or not finite, a negative top-k, a top-p outside [0, 1], a
// repetition penalty that is negative or not finite.
func (s Sampling) Check() error {
	switch {
	case !(s.Temperature >= 0) || math.IsInf(s.Temperature, 0):
		return fmt.Errorf("generate: temperature %v; want a finite value ≥ 0", s.Temperature)
	case s.TopK < 0:
		return fmt.Errorf("generate: top-k %d; want ≥ 0", s.TopK)
	case !(s.TopP >= 0 && s.TopP <= 1):
		return fmt.Errorf("generate: top-p %v; want a value in [0, 1]", s.TopP)
	case !(s.RepetitionPenalty >= 0) || math.IsInf(s.RepetitionPenalty, 0):
		return fmt.Errorf("generate: repetition penalty %v; want a finite value ≥ 0 (1 or 0: none)", s.RepetitionPenalty)
	}
	return nil
}

// A Sampler picks tokens as its Sampling says. It is not safe for use by
// several goroutines.
type Sampler struct {
	s   Sampling
	rng *rand.Rand
}

// NewSampler returns a Sampler of s, or s.Check's error.
func NewSampler(s Sampling) (*Sampler, error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	return &Sampler{s: s, rng: rand.New(rand.NewPCG(s.Seed, 0x9e))}, nil
}

// Pick returns the token of logits (one a vocabulary entry) to follow
// seen, the prompt and the tokens drawn so far. A NaN logit is never
// picked (unless every logit is NaN: then token 0). Pick draws one
// number whatever the settings, so draws stay aligned from token to
// token.
func (p *Sampler) Pick(logits []float64, seen []int32) int {
	u := p.rng.Float64()
	if r := p.s.RepetitionPenalty; r != 0 && r != 1 {
		logits = slices.Clone(logits)
		done := map[int32]bool{}
		for _, t := range seen {
			if t < 0 || int(t) >= len(logits) || done[t] {
				continue
			}
			done[t] = true
			if logits[t] < 0 {
				logits[t] *= r
			} else {
				logits[t] /= r
			}
		}
	}
	if p.s.Temperature == 0 {
		best := 0
		for i, v := range logits {
			if v > logits[best] || math.IsNaN(logits[best]) && !math.IsNaN(v) {
				best = i
			}
		}
		return best
	}
	idx := make([]int, 0, len(logits))
	for i, v := range logits {
		if !math.IsNaN(v) {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return 0
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case logits[a] > logits[b]:
			return -1
		case logits[a] < logits[b]:
			return 1
		}
		return 0
	})
	if p.s.TopK > 0 && p.s.TopK < len(idx) {
		k := p.s.TopK // and the tokens tied with the k-th, as transformers keeps them
		for k < len(idx) && logits[idx[k]] == logits[idx[p.s.TopK-1]] {
			k++
		}
		idx = idx[:k]
	}
	if top := logits[idx[0]]; math.IsInf(top, 0) {
		// +Inf: those tokens alone, equally likely; all −Inf: the first.
		n := 1
		for n < len(idx) && logits[idx[n]] == top && top > 0 {
			n++
		}
		return idx[int(u*float64(n))%n]
	}
	w := make([]float64, len(idx))
	sum := 0.0
	for i, k := range idx {
		w[i] = math.Exp((logits[k] - logits[idx[0]]) / p.s.Temperature)
		sum += w[i]
	}
	if q := p.s.TopP; q > 0 && q < 1 {
		// Keep each token whose more likely tokens hold less than q.
		above := 0.0
		for i := range w {
			if above >= q*sum {
				idx, w = idx[:i], w[:i]
				break
			}
			above += w[i]
		}
		sum = 0
		for _, x := range w {
			sum += x
		}
	}
	u *= sum
	for i, k := range idx {
		if u < w[i] {
			return k
		}
		u -= w[i]
	}
	return idx[len(idx)-1]
}
