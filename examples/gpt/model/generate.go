package model

import (
	"fmt"
	"slices"

	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/models/generate"
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
	pick, err := generate.NewSampler(generate.Sampling{Temperature: s.Temperature, TopK: s.TopK, Seed: s.Seed})
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	for _, t := range prompt {
		if t < 0 || int(t) >= m.Cfg.Vocab {
			return nil, fmt.Errorf("model: prompt token %d; the vocabulary has %d", t, m.Cfg.Vocab)
		}
	}
	m.Train(false)
	defer m.Train(true)
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
		seq = append(seq, int32(pick.Pick(last, nil)))
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
