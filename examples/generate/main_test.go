package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/internal/fuzzin"
	"github.com/extensor/extensor/internal/gputest"
	"github.com/extensor/extensor/models"
	"github.com/extensor/extensor/models/generate"
)

const tiny = "../../models/gpt2/testdata/tiny"

// TestRun continues a prompt with the tiny GPT-2 on both backends: the
// prompt, then the text of the greedy tokens that generate.Generate
// draws, streamed.
func TestRun(t *testing.T) {
	m, err := models.Load(tiny, cpu.New(), device.Float32)
	if err != nil {
		t.Fatal(err)
	}
	toks, err := generate.Generate(m, m.Tokenizer.Encode("Hello, world"), generate.Options{Tokens: 12, Stop: m.Generation.EOS})
	m.Release()
	if err != nil {
		t.Fatal(err)
	}
	text, err := m.Tokenizer.Decode(toks)
	if err != nil {
		t.Fatal(err)
	}
	want := "Hello, world" + text + "\n"
	for _, name := range []string{"cpu", "webgpu"} {
		if name == "webgpu" && gputest.OrNil(t) == nil {
			continue
		}
		var out strings.Builder
		cfg := Config{Device: name, Model: tiny, DType: "float32", Prompt: "Hello, world", Tokens: 12}
		if err := Run(cfg, &out); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if out.String() != want {
			t.Errorf("%s: wrote %q; want %q", name, out.String(), want)
		}
	}
}

// TestBatch continues two prompts in one batch: each line is its
// prompt and what generate.GenerateBatch drew for it.
func TestBatch(t *testing.T) {
	file := filepath.Join(t.TempDir(), "prompts.txt")
	os.WriteFile(file, []byte("Hello, world\n\nfunc main() {\n"), 0o644)
	var out strings.Builder
	if err := Run(Config{Device: "cpu", Model: tiny, DType: "float32", Prompt: "x", Prompts: file, Tokens: 6}, &out); err != nil {
		t.Fatal(err)
	}
	m, err := models.Load(tiny, cpu.New(), device.Float32)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Release()
	toks, err := generate.GenerateBatch(m, [][]int32{m.Tokenizer.Encode("Hello, world"), m.Tokenizer.Encode("func main() {")}, generate.Options{Tokens: 6, Stop: m.Generation.EOS})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := m.Tokenizer.Decode(toks[0])
	b, _ := m.Tokenizer.Decode(toks[1])
	if want := "Hello, world" + a + "\nfunc main() {" + b + "\n"; out.String() != want {
		t.Errorf("wrote %q; want %q", out.String(), want)
	}
}

// TestRefuses checks the errors before any work: flags out of range, a
// directory that is no model.
func TestRefuses(t *testing.T) {
	ok := Config{Device: "cpu", Model: tiny, DType: "float32", Prompt: "Hi", Tokens: 1}
	for _, tt := range []struct {
		edit func(*Config)
		says string
	}{
		{func(c *Config) { c.Model = "" }, "-model"},
		{func(c *Config) { c.DType = "int8" }, `-dtype "int8"`},
		{func(c *Config) { c.Tokens = -1 }, "-tokens -1"},
		{func(c *Config) { c.Prompt = "" }, "-prompt"},
		{func(c *Config) { c.TopP = 2 }, "-top-p"},
		{func(c *Config) { c.Temperature = -1 }, "-temperature"},
		{func(c *Config) { c.Model = t.TempDir() }, "config.json"},
		{func(c *Config) { c.Prompts = filepath.Join(t.TempDir(), "none") }, "-prompts"},
		{func(c *Config) { c.Device = "tpu" }, "tpu"},
	} {
		c := ok
		tt.edit(&c)
		var out strings.Builder
		if err := Run(c, &out); err == nil || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("%+v: %v; want an error saying %s", c, err, tt.says)
		}
	}
}

// FuzzFlags: what Check accepts names a model, a dtype, a prompt, a
// count ≥ 0 and sampling settings in range (fuzzin.FuzzCommandLine).
func FuzzFlags(f *testing.F) {
	fuzzin.FuzzCommandLine(f, "generate", func(fs *flag.FlagSet) fuzzin.Command {
		cfg := flags(fs)
		return fuzzin.Command{Check: func() error { return cfg.Check() }, Accepted: func() error {
			if cfg.Model == "" || cfg.Prompt == "" || cfg.Tokens < 0 || cfg.Sampling.Check() != nil {
				return fmt.Errorf("%+v is out of range", *cfg)
			}
			return nil
		}}
	})
}
