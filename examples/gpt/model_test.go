package main

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/examples/gpt/model"
	"github.com/extensor/extensor/internal/gputest"
	"github.com/extensor/extensor/nn"
	"github.com/extensor/extensor/tensor"
)

var small = model.Config{Vocab: 256, Context: 16, Layers: 2, Heads: 4, Width: 32}

func devices(t *testing.T) map[string]device.Device {
	return map[string]device.Device{"cpu": cpu.New(), "webgpu": gputest.Open(t)}
}

func tokens(n int, seed uint64) []int32 {
	rng := rand.New(rand.NewPCG(seed, 1))
	t := make([]int32, n)
	for i := range t {
		t[i] = int32(rng.IntN(256))
	}
	return t
}

// TestDecodeMatchesForward: logits decoded through the key-value caches,
// in pieces of 5, 1, 3 and 1 tokens (the 3 through a mask that lines
// their causality up after the cache), equal Forward's of the whole.
func TestDecodeMatchesForward(t *testing.T) {
	for name, dev := range devices(t) {
		m, err := model.New(dev, small, 3)
		if err != nil {
			t.Fatal(err)
		}
		m.Train(false)
		seq := tokens(10, 4)
		x, _ := tensor.FromInt32(dev, seq, 1, len(seq))
		var want []float64
		want, err = m.Forward(autograd.Leaf(x, false).NoGrad()).Value().Float64s()
		if err != nil {
			t.Fatal(err)
		}
		caches := m.Caches()
		var got []float64
		at := 0
		for _, n := range []int{5, 1, 3, 1} {
			p, _ := tensor.FromInt32(dev, seq[at:at+n], 1, n)
			v, err := m.Decode(autograd.Leaf(p, false), caches).Value().Float64s()
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, v...)
			at += n
		}
		if caches[0].Len() != len(seq) {
			t.Errorf("%s: the caches hold %d positions; want %d", name, caches[0].Len(), len(seq))
		}
		worst := 0.0
		for i := range want {
			worst = max(worst, math.Abs(got[i]-want[i]))
		}
		if len(got) != len(want) || worst > 1e-4 {
			t.Errorf("%s: decoded logits differ from Forward's by %g (%d and %d values)", name, worst, len(got), len(want))
		}
	}
}

// TestCachedGenerationEqualsUncached: the same tokens with and without
// the caches, through two slides of the window, greedy and sampled.
func TestCachedGenerationEqualsUncached(t *testing.T) {
	for name, dev := range devices(t) {
		m, err := model.New(dev, small, 5)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []model.Sampling{{Temperature: 0}, {Temperature: 1, TopK: 20, Seed: 7}, {Temperature: 0.8, Seed: 8}} {
			prompt := tokens(4, 9)
			cached, err := m.Generate(dev, prompt, 30, s, true)
			if err != nil {
				t.Fatal(err)
			}
			plain, err := m.Generate(dev, prompt, 30, s, false)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(cached, plain) {
				t.Errorf("%s %+v: cached generation %v; uncached %v", name, s, cached, plain)
			}
		}
	}
}

// TestAttentionMap: each row of the map is a distribution over the keys
// up to its query.
func TestAttentionMap(t *testing.T) {
	for name, dev := range devices(t) {
		m, err := model.New(dev, small, 6)
		if err != nil {
			t.Fatal(err)
		}
		x, _ := tensor.FromInt32(dev, tokens(12, 2), 1, 12)
		a, err := m.AttentionMap(autograd.Leaf(x, false), 1, 3).Float64s()
		if err != nil {
			t.Fatal(err)
		}
		for i := range 12 {
			sum := 0.0
			for j := range 12 {
				v := a[i*12+j]
				if j > i && v != 0 || v < 0 {
					t.Errorf("%s: map[%d, %d] = %g; want a probability, 0 after the query", name, i, j, v)
				}
				sum += v
			}
			if math.Abs(sum-1) > 1e-5 {
				t.Errorf("%s: row %d sums to %g; want 1", name, i, sum)
			}
		}
	}
}

// TestGenerateBadInput: a prompt or sampling that cannot generate is an
// error naming what is wrong.
func TestGenerateBadInput(t *testing.T) {
	dev := cpu.New()
	m, err := model.New(dev, small, 7)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		prompt []int32
		s      model.Sampling
		want   string
	}{
		{"empty prompt", nil, model.Sampling{}, "empty prompt"},
		{"token past the vocabulary", []int32{1, 256}, model.Sampling{}, "prompt token 256"},
		{"negative temperature", []int32{1}, model.Sampling{Temperature: -1}, "temperature -1"},
		{"infinite temperature", []int32{1}, model.Sampling{Temperature: math.Inf(1)}, "temperature +Inf"},
		{"negative top-k", []int32{1}, model.Sampling{Temperature: 1, TopK: -2}, "top-k -2"},
	} {
		if _, err := m.Generate(dev, c.prompt, 3, c.s, true); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want an error containing %q", c.name, err, c.want)
		}
	}
	if _, err := m.Generate(dev, []int32{1}, -3, model.Sampling{}, true); err == nil || !strings.Contains(err.Error(), "-3 tokens") {
		t.Errorf("Generate of -3 tokens: %v; want an error", err)
	}
	caches := m.Caches()
	idx := autograd.Leaf(tensor.Must(tensor.FromInt32(dev, []int32{1}, 1, 1)), false)
	for name, cs := range map[string][]*nn.KVCache{"nil": nil, "one short": caches[1:], "a nil cache": append([]*nn.KVCache{nil}, caches[1:]...)} {
		if err := tensor.Maybe(func() { m.Decode(idx, cs) }); !errors.Is(err, tensor.ErrArgument) {
			t.Errorf("Decode with %s caches: %v; want ErrArgument", name, err)
		}
	}
	// A context of 1: sliding keeps the newest token.
	one := small
	one.Context = 1
	m1, err := model.New(dev, one, 7)
	if err != nil {
		t.Fatal(err)
	}
	for _, cached := range []bool{false, true} {
		if out, err := m1.Generate(dev, []int32{1}, 5, model.Sampling{}, cached); err != nil || len(out) != 5 {
			t.Errorf("Generate of 5 tokens with a context of 1 (cached %v): %v, %v", cached, out, err)
		}
	}
}
