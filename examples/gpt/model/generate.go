package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/nn"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/tensor"
)

// Sampling says how Generate draws each token.
type Sampling struct {
	Temperature float64 // divides the logits; 0 takes the most likely token
	TopK        int     // draw among the TopK most likely tokens only (0: all)
	Seed        uint64  // the draws' PCG seed
	// Emit, if not nil, is given each token as it is drawn.
	Emit func(token int32)
}

// Generate returns n tokens that follow prompt (at least one token), in
// evaluation mode, one sequence. The model sees at most Context tokens:
// when a new token would not fit, the window slides to keep the newest
// max(1, Context/2) and goes on from them. With cached, each new token runs
// through Decode with the blocks' key-value caches (the window's tokens
// once, after each slide); without, the whole window runs through
// Forward for each token. Both draw the same tokens but for rounding.
func (m *GPT) Generate(dev device.Device, prompt []int32, n int, s Sampling, cached bool) ([]int32, error) {
	if len(prompt) == 0 {
		return nil, fmt.Errorf("model: generating from an empty prompt")
	}
	if n < 0 {
		return nil, fmt.Errorf("model: generating %d tokens; want a count ≥ 0", n)
	}
	if !(s.Temperature >= 0) || math.IsInf(s.Temperature, 0) || s.TopK < 0 {
		return nil, fmt.Errorf("model: temperature %v, top-k %d; want a finite temperature ≥ 0 and top-k ≥ 0", s.Temperature, s.TopK)
	}
	for _, t := range prompt {
		if t < 0 || int(t) >= m.Cfg.Vocab {
			return nil, fmt.Errorf("model: prompt token %d; the vocabulary has %d", t, m.Cfg.Vocab)
		}
	}
	m.Train(false)
	defer m.Train(true)
	rng := rand.New(rand.NewPCG(s.Seed, 0x9e))
	seq := slices.Clone(prompt)
	start := max(0, len(seq)-m.Cfg.Context) // the window is seq[start:]
	var caches []*nn.KVCache
	release := func() {
		for _, c := range caches {
			c.Release()
		}
		caches = nil
	}
	defer release()
	for range n {
		var feed []int32 // what runs through the model this step
		if cached && caches != nil {
			feed = seq[len(seq)-1:]
		} else {
			feed = seq[start:]
		}
		var last []float64
		var err error
		tensor.Tidy(func(sc *tensor.Scope) []*tensor.Tensor {
			x, e := tensor.FromInt32(dev, feed, 1, len(feed))
			if e != nil {
				err = e
				return nil
			}
			in := autograd.Leaf(sc.Track(x), false).NoGrad()
			var logits *autograd.Var
			if cached {
				if caches == nil {
					caches = m.Caches()
				}
				logits = m.Decode(in, caches)
			} else {
				logits = m.Forward(in)
			}
			l := logits.Value()
			last, err = ops.Slice(l.Reshape(l.Len()), 0, l.Len()-m.Cfg.Vocab, l.Len(), 1).Float64s()
			var keep []*tensor.Tensor
			for _, c := range caches {
				keep = append(keep, c.K, c.V)
			}
			return keep
		})
		if err != nil {
			return nil, err
		}
		seq = append(seq, draw(last, s, rng))
		if s.Emit != nil {
			s.Emit(seq[len(seq)-1])
		}
		if len(seq)-start > m.Cfg.Context { // slide
			start = len(seq) - max(1, m.Cfg.Context/2) // a context of 1 keeps the newest
			release()
		}
	}
	return seq[len(prompt):], nil
}

// draw picks a token from logits as s says.
func draw(logits []float64, s Sampling, rng *rand.Rand) int32 {
	u := rng.Float64() // drawn whatever the temperature, so draws stay aligned
	if s.Temperature == 0 {
		best := 0
		for i, v := range logits {
			if v > logits[best] {
				best = i
			}
		}
		return int32(best)
	}
	idx := make([]int, len(logits))
	for i := range idx {
		idx[i] = i
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
	if s.TopK > 0 && s.TopK < len(idx) {
		idx = idx[:s.TopK]
	}
	p := make([]float64, len(idx))
	sum := 0.0
	for i, k := range idx {
		p[i] = math.Exp((logits[k] - logits[idx[0]]) / s.Temperature)
		sum += p[i]
	}
	u *= sum
	for i, k := range idx {
		if u < p[i] {
			return int32(k)
		}
		u -= p[i]
	}
	return int32(idx[len(idx)-1])
}
