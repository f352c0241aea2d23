package main

import (
	"bytes"
	"errors"
	"io/fs"
	"math"
	"strings"
	"testing"

	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/dataset/fashionmnist"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/examples/mlp/model"
	"github.com/extensor/extensor/internal/gputest"
	"github.com/extensor/extensor/optim"
	"github.com/extensor/extensor/tensor"
)

// config is the configuration of make train.
func config(dev string) Config {
	return Config{Device: dev, Data: fashionmnist.DefaultDir, Epochs: 3, Batch: 128, LR: 0.1, Hidden: 256, Seed: 2, Progress: 100}
}

// needData skips (fails under CI, where make deps installs it) without the data.
func needData(t *testing.T, err error) {
	t.Helper()
	if errors.Is(err, fs.ErrNotExist) && !gputest.CI() {
		t.Skipf("no Fashion-MNIST data: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestTrainWebGPU is make train on the WebGPU backend: 3 epochs of the
// 784-256-10 MLP must reach 83.5% test accuracy.
func TestTrainWebGPU(t *testing.T) {
	if testing.Short() {
		t.Skip("trains for 3 epochs; skipped with -short")
	}
	gputest.Open(t)
	var out bytes.Buffer
	epochs, err := Train(config("webgpu"), &out)
	t.Log(out.String())
	needData(t, err)
	if len(epochs) != 3 {
		t.Fatalf("%d epochs reported; want 3", len(epochs))
	}
	if acc := epochs[2].Accuracy; acc < 0.835 {
		t.Errorf("test accuracy after 3 epochs on webgpu: %.2f%%; want ≥ 83.5%%", 100*acc)
	}
	if !(epochs[2].Loss < epochs[0].Loss) {
		t.Errorf("training loss did not fall: %+v", epochs)
	}
	for _, want := range []string{"device: webgpu#", "epoch 3: train loss"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

// TestTrainCPU runs the same code on the CPU, on a fifth of the data.
func TestTrainCPU(t *testing.T) {
	cfg := config("cpu")
	cfg.Epochs, cfg.Limit, cfg.Progress = 2, 12000, 0
	var out bytes.Buffer
	epochs, err := Train(cfg, &out)
	needData(t, err)
	if len(epochs) != 2 || !(epochs[1].Loss < epochs[0].Loss) || epochs[1].Accuracy < 0.75 {
		t.Errorf("cpu training on 12000 examples: %+v; want 2 epochs, falling loss, ≥ 75%% accuracy\n%s", epochs, out.String())
	}
}

func TestTrainUnknownDevice(t *testing.T) {
	_, err := Train(config("tpu"), &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "unknown device") {
		t.Errorf("device tpu: %v; want an unknown-device error", err)
	}
}

// TestBadConfig refuses flags that cannot train before the device opens.
func TestBadConfig(t *testing.T) {
	for _, edit := range []func(*Config){
		func(c *Config) { c.LR = -1 },
		func(c *Config) { c.LR = math.NaN() },
		func(c *Config) { c.Batch = 0 },
		func(c *Config) { c.Hidden = -5 },
		func(c *Config) { c.Limit = -1 },
	} {
		cfg := config("cpu")
		edit(&cfg)
		var out bytes.Buffer
		if _, err := Train(cfg, &out); err == nil || out.Len() > 0 {
			t.Errorf("%+v: error %v, output %q; want an error before any output", cfg, err, out.String())
		}
	}
}

// TestTapeMatchesHandWritten trains two copies of the MLP on the CPU, one
// with the tape and an optimiser (as Train does), one with the
// hand-written backward, and checks that their losses agree step for step.
func TestTapeMatchesHandWritten(t *testing.T) {
	dev := cpu.New()
	tape, err := model.New(dev, 20, 16, 10, 3)
	if err != nil {
		t.Fatal(err)
	}
	hand, err := model.New(dev, 20, 16, 10, 3)
	if err != nil {
		t.Fatal(err)
	}
	opt := optim.SGD(tape.Params(), 0.1, device.StepParams{})
	for s := range 20 {
		x := tensor.Must(tensor.Uniform(dev, device.Float32, 0, 1, uint64(100+s), 8, 20))
		labels := make([]int32, 8)
		for i := range labels {
			labels[i] = int32((i + s) % 10)
		}
		y := tensor.Must(tensor.FromInt32(dev, labels))
		a, err := tape.TapeStep(x, y, opt).Float64s()
		if err != nil {
			t.Fatal(err)
		}
		b, err := hand.Step(x, y, 0.1).Float64s()
		if err != nil {
			t.Fatal(err)
		}
		if a[0] != b[0] {
			t.Fatalf("step %d: tape loss %v, hand-written %v", s, a[0], b[0])
		}
	}
}

// TestHostileFlags: a count below its range is refused before any work;
// huge counts do what they say without wrapping (a batch past the data is
// one batch of all of it, a limit past it all of it) or fail with an
// error (a hidden layer that cannot be allocated).
func TestHostileFlags(t *testing.T) {
	base := Config{Device: "cpu", Data: fashionmnist.DefaultDir, Epochs: 1, Batch: 16, LR: 0.1, Hidden: 8, Seed: 1, Limit: 64}
	fields := []struct {
		name string
		at   func(c *Config) *int
		min  int
	}{
		{"-epochs", func(c *Config) *int { return &c.Epochs }, 1},
		{"-batch", func(c *Config) *int { return &c.Batch }, 1},
		{"-hidden", func(c *Config) *int { return &c.Hidden }, 1},
		{"-limit", func(c *Config) *int { return &c.Limit }, 0},
		{"-progress", func(c *Config) *int { return &c.Progress }, 0},
	}
	for _, f := range fields {
		for _, v := range []int{f.min - 1, -1, math.MinInt} {
			c := base
			*f.at(&c) = v
			if err := c.Check(); err == nil || !strings.Contains(err.Error(), f.name) {
				t.Errorf("%s %d: Check gave %v; want an error naming %s", f.name, v, err, f.name)
			}
		}
	}
	huge := []struct {
		name string
		set  func(c *Config)
		fail bool
	}{
		{"-batch MaxInt", func(c *Config) { c.Batch = math.MaxInt }, false},
		{"-limit MaxInt", func(c *Config) { c.Limit, c.Batch = math.MaxInt, 4096 }, false},
		{"-progress MaxInt", func(c *Config) { c.Progress = math.MaxInt }, false},
		{"-hidden 2⁴⁰", func(c *Config) { c.Hidden = 1 << 40 }, true},
	}
	for _, h := range huge {
		c := base
		h.set(&c)
		epochs, err := Train(c, new(bytes.Buffer))
		if !h.fail {
			needData(t, err)
		}
		switch {
		case h.fail && err == nil:
			t.Errorf("%s: trained; want an error", h.name)
		case !h.fail && (len(epochs) != 1 || math.IsNaN(epochs[0].Loss)):
			t.Errorf("%s: %v; want one epoch trained", h.name, epochs)
		}
	}
}
