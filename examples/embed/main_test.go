package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/extensor/extensor/internal/fuzzin"
	"github.com/extensor/extensor/internal/gputest"
)

const tiny = "../../models/bert/testdata/tiny"

// TestRun embeds three texts with the tiny BERT on both backends: the
// diagonal of the similarity matrix is 1, the two same texts score 1,
// the vectors file holds three unit vectors, and both backends agree.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	texts := filepath.Join(dir, "texts.txt")
	os.WriteFile(texts, []byte("Hello, world!\nThe gopher runs fast on every GPU.\n\nHello, world!\n"), 0o644)
	outs := map[string]string{}
	for _, name := range []string{"cpu", "webgpu"} {
		if name == "webgpu" && gputest.OrNil(t) == nil {
			continue
		}
		vectors := filepath.Join(dir, name+".tsv")
		var out strings.Builder
		if err := Run(Config{Device: name, Model: tiny, Texts: texts, Vectors: vectors, Batch: 2}, &out); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if len(lines) != 6 || !strings.HasPrefix(lines[0], "3 texts, 16 features") {
			t.Fatalf("%s: wrote %q", name, out.String())
		}
		row := func(i int) []string { return strings.Fields(lines[3+i])[1:4] }
		if row(0)[0] != "1.000" || row(1)[1] != "1.000" || row(0)[2] != "1.000" || row(0)[1] == "1.000" {
			t.Errorf("%s: similarity %q", name, out.String())
		}
		b, err := os.ReadFile(vectors)
		if err != nil {
			t.Fatal(err)
		}
		vs := strings.Split(strings.TrimSpace(string(b)), "\n")
		for _, v := range vs {
			sum := 0.0
			for _, f := range strings.Split(v, "\t") {
				x, _ := strconv.ParseFloat(f, 64)
				sum += x * x
			}
			if len(vs) != 3 || sum < 0.999 || sum > 1.001 {
				t.Errorf("%s: vectors %q", name, b)
			}
		}
		outs[name] = strings.Join(lines[1:], "\n")
	}
	if g, ok := outs["webgpu"]; ok && g != outs["cpu"] {
		t.Errorf("webgpu's matrix\n%s\ncpu's\n%s", g, outs["cpu"])
	}
}

// TestRefuses checks the errors before any work.
func TestRefuses(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.txt")
	os.WriteFile(empty, []byte("\n\n"), 0o644)
	for _, tt := range []struct {
		cfg  Config
		says string
	}{
		{Config{Device: "cpu", Texts: empty, Batch: 1}, "-model"},
		{Config{Device: "cpu", Model: tiny, Texts: empty, Batch: 0}, "-batch 0"},
		{Config{Device: "cpu", Model: tiny, Texts: empty, Batch: 1}, "no text"},
		{Config{Device: "cpu", Model: tiny, Texts: filepath.Join(dir, "none"), Batch: 1}, "-texts"},
		{Config{Device: "cpu", Model: tiny, Texts: "-", Batch: 1}, "no standard input"},
		{Config{Device: "cpu", Model: tiny, Texts: empty, Batch: 1, Vectors: filepath.Join(empty, "x")}, "-vectors"},
		{Config{Device: "cpu", Model: "../../models/gpt2/testdata/tiny", Texts: "main.go", Batch: 1}, "not an encoder"},
	} {
		if err := Run(tt.cfg, &strings.Builder{}); err == nil || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("%+v: %v; want an error saying %s", tt.cfg, err, tt.says)
		}
	}
}

// FuzzFlags: what Check accepts names a model and a file, in batches of
// at least one (fuzzin.FuzzCommandLine).
func FuzzFlags(f *testing.F) {
	fuzzin.FuzzCommandLine(f, "embed", func(fs *flag.FlagSet) fuzzin.Command {
		cfg := flags(fs)
		return fuzzin.Command{Check: func() error { return cfg.Check() }, Accepted: func() error {
			if cfg.Model == "" || cfg.Texts == "" || cfg.Batch < 1 {
				return fmt.Errorf("%+v is out of range", *cfg)
			}
			return nil
		}}
	})
}
