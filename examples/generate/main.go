// Command generate continues a prompt with a Hugging Face causal language
// model: a model directory (config.json, the safetensors weights,
// tokenizer.json) or a repository id in the local Hugging Face cache,
// run on WebGPU or the CPU, the text streamed as it is drawn.
//
//	go run ./examples/generate -model models/gpt2/testdata/tiny -prompt "Hello" -tokens 20
//
// Tokens are picked greedily unless -temperature is above 0; the
// sampling flags not given take the model's generation_config.json values
// where it samples (do_sample), and its eos_token_id ends the text.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/extensor/extensor/device"
	_ "github.com/extensor/extensor/device/webgpu" // registers "webgpu"
	"github.com/extensor/extensor/examples/internal/report"
	"github.com/extensor/extensor/examples/internal/run"
	"github.com/extensor/extensor/hf"
	"github.com/extensor/extensor/models"
	"github.com/extensor/extensor/models/generate"
)

// Config sets up a run.
type Config struct {
	Device string // "auto", "webgpu" or "cpu"
	Model  string // a model directory or a repository id in the Hugging Face cache
	// Download fetches the repository Model names into the cache first
	// (hf.Download).
	Download bool
	DType    string // the weights' dtype on the device: "float32" or "float16"
	Prompt   string
	// Prompts, if set, is a file of prompts, one a line, continued in one
	// batch (generate.GenerateBatch), each printed when all are done.
	Prompts string
	Tokens  int // the most tokens to draw
	generate.Sampling
	NoStop  bool // go on past the model's eos tokens
	NoCache bool // rerun every position for each token

	set map[string]bool // the flags given
}

func main() {
	cfg := flags(flag.CommandLine)
	run.Main("generate", func() error {
		cfg.set = map[string]bool{}
		flag.Visit(func(f *flag.Flag) { cfg.set[f.Name] = true })
		return Run(*cfg, os.Stdout)
	})
}

// flags defines the command's flags on fs, parsed into the returned
// Config.
func flags(fs *flag.FlagSet) *Config {
	c := &Config{}
	fs.StringVar(&c.Device, "device", "auto", `device: "auto", "webgpu" or "cpu"`)
	fs.StringVar(&c.Model, "model", "", "model directory, or ORG/NAME[@REVISION] in the Hugging Face cache")
	fs.BoolVar(&c.Download, "download", false, "download the -model repository into the Hugging Face cache first (HF_TOKEN, HF_ENDPOINT)")
	fs.StringVar(&c.DType, "dtype", "float32", `weights on the device: "float32" or "float16"`)
	fs.StringVar(&c.Prompt, "prompt", "Hello", "the text to continue")
	fs.StringVar(&c.Prompts, "prompts", "", "a file of prompts, one a line, continued in one batch (instead of -prompt)")
	fs.IntVar(&c.Tokens, "tokens", 64, "the most tokens to draw")
	fs.Float64Var(&c.Temperature, "temperature", 0, "sampling temperature (0: greedy)")
	fs.IntVar(&c.TopK, "top-k", 0, "sample among the K most likely tokens (0: all)")
	fs.Float64Var(&c.TopP, "top-p", 0, "sample among the most likely tokens holding this probability (0 or 1: all)")
	fs.Float64Var(&c.RepetitionPenalty, "repetition-penalty", 0, "penalise the tokens seen already (1 or 0: none)")
	fs.Uint64Var(&c.Seed, "seed", 1, "sampling seed")
	fs.BoolVar(&c.NoStop, "no-stop", false, "draw past the model's end-of-text tokens")
	fs.BoolVar(&c.NoCache, "no-cache", false, "rerun every position for each token (no key-value cache)")
	return c
}

// Check returns an error for flags out of range, before any work.
func (c Config) Check() error {
	switch {
	case c.Model == "":
		return fmt.Errorf("-model: want a model directory or a repository id")
	case c.DType != "float32" && c.DType != "float16":
		return fmt.Errorf("-dtype %q: want float32 or float16", c.DType)
	case c.Tokens < 0:
		return fmt.Errorf("-tokens %d: want ≥ 0", c.Tokens)
	case c.Prompt == "":
		return fmt.Errorf("-prompt: want some text")
	}
	for name, s := range map[string]generate.Sampling{
		"temperature": {Temperature: c.Temperature}, "top-k": {TopK: c.TopK}, "top-p": {TopP: c.TopP},
		"repetition-penalty": {RepetitionPenalty: c.RepetitionPenalty},
	} {
		if err := s.Check(); err != nil {
			return fmt.Errorf("-%s: %w", name, err)
		}
	}
	return nil
}

// Run loads the model, prints the prompt and streams what follows it to
// w, then a newline.
func Run(cfg Config, w io.Writer) error {
	if err := cfg.Check(); err != nil {
		return err
	}
	var texts []string // -prompts' lines, read before any work
	if cfg.Prompts != "" {
		b, err := os.ReadFile(cfg.Prompts)
		if err != nil {
			return fmt.Errorf("-prompts: %w", err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if line = strings.TrimSpace(line); line != "" {
				texts = append(texts, line)
			}
		}
		if len(texts) == 0 {
			return fmt.Errorf("-prompts %s: no prompt", cfg.Prompts)
		}
	}
	if cfg.Download {
		if _, err := hf.Download(cfg.Model, true); err != nil {
			return err
		}
	}
	dev, err := device.Open(cfg.Device)
	if err != nil {
		return err
	}
	defer dev.Close()
	dt := device.Float32
	if cfg.DType == "float16" {
		dt = device.Float16
	}
	m, err := models.LoadWith(cfg.Model, dev, dt, report.Loading(os.Stderr, "loading "+cfg.Model))
	if err != nil {
		return err
	}
	defer m.Release()
	if m.Tokenizer == nil {
		return fmt.Errorf("%s has no tokenizer.json", m.Dir)
	}
	s := cfg.Sampling
	if g := m.Generation; g.DoSample {
		for name, v := range map[string]func(){
			"temperature":        func() { s.Temperature = g.Temperature },
			"top-k":              func() { s.TopK = g.TopK },
			"top-p":              func() { s.TopP = g.TopP },
			"repetition-penalty": func() { s.RepetitionPenalty = g.RepetitionPenalty },
		} {
			if !cfg.set[name] {
				v()
			}
		}
		if !cfg.set["temperature"] && s.Temperature == 0 {
			s.Temperature = 1 // transformers' default where do_sample
		}
	}
	var stop []int32
	if !cfg.NoStop {
		stop = m.Generation.EOS
	}
	if texts != nil {
		return batch(texts, cfg, m, s, stop, w)
	}
	prompt := m.Tokenizer.Encode(cfg.Prompt)
	out := &stream{w: w, decode: m.Tokenizer.Decode}
	fmt.Fprint(w, cfg.Prompt)
	_, err = generate.Generate(m, prompt, generate.Options{Tokens: cfg.Tokens, Sampling: s, Stop: stop, NoCache: cfg.NoCache, Emit: out.add})
	out.flush()
	if err == nil {
		err = out.err
	}
	fmt.Fprintln(w)
	return err
}

// batch continues texts in one batch and writes each, with what follows
// it, on a line of its own.
func batch(texts []string, cfg Config, m *models.Pretrained, s generate.Sampling, stop []int32, w io.Writer) error {
	var prompts [][]int32
	for _, t := range texts {
		prompts = append(prompts, m.Tokenizer.Encode(t))
	}
	out, err := generate.GenerateBatch(m, prompts, generate.Options{Tokens: cfg.Tokens, Sampling: s, Stop: stop})
	if err != nil {
		return err
	}
	for r, toks := range out {
		text, err := m.Tokenizer.Decode(toks)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "%s%s\n", texts[r], text); err != nil {
			return err
		}
	}
	return nil
}

// stream writes the text of the tokens drawn as they come: the decoded
// text past what is written, once it is whole UTF-8 (a character can
// take several byte-level tokens; flush writes what is left).
type stream struct {
	w       io.Writer
	decode  func([]int32) (string, error)
	tokens  []int32
	written int
	err     error
}

func (s *stream) add(tok int32) {
	s.tokens = append(s.tokens, tok)
	text, err := s.decode(s.tokens)
	if err != nil {
		s.err = err
		return
	}
	if utf8.ValidString(text[s.written:]) {
		s.write(text)
	}
}

func (s *stream) flush() {
	if text, err := s.decode(s.tokens); err == nil {
		s.write(text)
	}
}

func (s *stream) write(text string) {
	if len(text) > s.written && s.err == nil {
		_, s.err = io.WriteString(s.w, text[s.written:])
		s.written = len(text)
	}
}
