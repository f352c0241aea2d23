package bench

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/models/generate"
	"github.com/extensor/extensor/models/gpt2"
	"github.com/extensor/extensor/tensor"
)

// gpt2Small is GPT-2 small's configuration (124 M parameters).
var gpt2Small = gpt2.Config{VocabSize: 50257, Positions: 1024, Embd: 768, Layers: 12, Heads: 12, Eps: 1e-5, Activation: "gelu_new"}

// randomGPT2 returns GPT-2 small (of cfg's vocabulary) on dev in dt with random weights
// (uniform in ±0.02; the layer norms' gains 1) in GPT-2's layout, and the
// bytes of weights a decoded token reads: every parameter but the
// position table, of which one row.
func randomGPT2(b *testing.B, dev device.Device, dt device.DType, cfg gpt2.Config) (*gpt2.Model, int64) {
	m, err := gpt2.New(dev, dt, cfg)
	if err != nil {
		b.Fatal(err)
	}
	var bytes int64
	seed := uint64(1)
	for name, t := range m.StateDict() {
		lo, hi := -0.02, 0.02
		if strings.Contains(name, "ln_") && strings.HasSuffix(name, ".weight") {
			lo, hi = 1, 1
		}
		seed++
		r := tensor.Must(tensor.Uniform(dev, dt, lo, hi, seed, t.Shape()...))
		dev.Copy(t.Buffer(), r.Buffer())
		wait(b, dev)
		r.Release()
		if name != "wpe.weight" {
			bytes += int64(t.Len() * dt.Size())
		}
	}
	return m, bytes + int64(cfg.Embd*dt.Size())
}

// BenchmarkGPT2 runs a GPT-2-small-sized model (124 M parameters: 12
// blocks of 768 features, 12 heads, 50,257 tokens, 1,024 positions;
// random weights in GPT-2's layout, models/gpt2) at batch 1, in float32
// and float16: Prefill128, the prompt of 128 tokens in one pass into the
// key-value cache, in tokens/s; Decode, one token a step through the
// cache after it (the logits read back each step, as generation reads
// them), in tokens/s, and Decode/…/weights, the weight bytes that reads a
// second (each weight once a token) in GB/s; CopyBandwidth is the host's
// memory copy rate (a 256 MiB copy), measured in the same run, to set it
// against. GPT2Vocab16k is the same model with 16,384 tokens (98 M
// parameters): the share of the head and the embedding. A device that
// cannot run a model is left out, its error printed.
// testdata/torch_bench.py runs the same models in PyTorch.
func BenchmarkGPT2(b *testing.B) {
	b.Run("CopyBandwidth/cpu", func(b *testing.B) {
		src, dst := make([]byte, 256<<20), make([]byte, 256<<20)
		for i := range src {
			src[i] = byte(i)
		}
		b.SetBytes(int64(len(src)))
		b.ResetTimer()
		for range b.N {
			copy(dst, src)
		}
		report(b, float64(len(src))*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
	})
	prompt := make([]int32, 128)
	for i := range prompt {
		prompt[i] = int32(i*389+7) % 16384
	}
	small16k := gpt2Small
	small16k.VocabSize = 16384
	for _, dev := range devices(b) {
		for _, model := range []struct {
			name string
			cfg  gpt2.Config
		}{{"", gpt2Small}, {"Vocab16k", small16k}} {
			for _, dt := range []device.DType{device.Float32, device.Float16} {
				m, weights := randomGPT2(b, dev, dt, model.cfg)
				c := m.NewCache()
				_, err := m.Step(prompt[:1], c)
				c.Release()
				if errors.Is(err, device.ErrOutOfMemory) { // an adapter's binding limit, say
					fmt.Fprintf(os.Stderr, "BenchmarkGPT2%s on %s in %v: %v\n", model.name, dev.Name(), dt, err)
					m.Release()
					continue
				}
				step := func(ids []int32, c generate.Cache) {
					if _, err := m.Step(ids, c); err != nil {
						b.Fatal(err)
					}
				}
				b.Run(fmt.Sprintf("Prefill128%s/%s/%v", model.name, dev.Name(), dt), func(b *testing.B) {
					c := m.NewCache()
					step(prompt, c) // the kernels compiled
					c.Release()
					b.ResetTimer()
					for range b.N {
						c := m.NewCache()
						step(prompt, c)
						c.Release()
					}
					report(b, float64(len(prompt)*b.N)/b.Elapsed().Seconds(), "tokens/s")
				})
				b.Run(fmt.Sprintf("Decode%s/%s/%v", model.name, dev.Name(), dt), func(b *testing.B) {
					c := m.NewCache()
					defer func() { c.Release() }()
					step(prompt, c)
					tok := []int32{11}
					step(tok, c) // the one-token kernels compiled
					b.ResetTimer()
					var paused time.Duration
					for i := range b.N {
						if c.Len() == model.cfg.Positions {
							t0 := time.Now()
							c.Release()
							c = m.NewCache()
							step(prompt, c)
							paused += time.Since(t0)
						}
						tok[0] = int32(i*7919+11) % int32(model.cfg.VocabSize)
						step(tok, c)
					}
					s := (b.Elapsed() - paused).Seconds()
					report(b, float64(b.N)/s, "tokens/s")
					gbs := float64(weights) * float64(b.N) / s / 1e9
					b.ReportMetric(gbs, "weightGB/s")
					runner := dev.Name()
					keep(fmt.Sprintf("GPT2/Decode%s/%v/weights", model.name, dt), runner, metric{gbs, "GB/s"})
				})
				m.Release()
			}
		}
	}
}
