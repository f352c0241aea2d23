// Command embed computes sentence embeddings with a Hugging Face BERT
// encoder (sentence-transformers' mean pooling and L2 normalisation, as
// all-MiniLM-L6-v2): texts in, one a line, the cosine similarity matrix
// out, and the vectors as tab-separated values with -vectors.
//
//	go run ./examples/embed -model models/bert/testdata/tiny -texts texts.txt -vectors out.tsv
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/extensor/extensor/device"
	_ "github.com/extensor/extensor/device/webgpu" // registers "webgpu"
	"github.com/extensor/extensor/examples/internal/run"
	"github.com/extensor/extensor/hf"
	"github.com/extensor/extensor/models"
	"github.com/extensor/extensor/models/bert"
)

// Config sets up a run.
type Config struct {
	Device string // "auto", "webgpu" or "cpu"
	Model  string // a model directory or a repository id in the Hugging Face cache
	// Download fetches the repository Model names into the cache first
	// (hf.Download).
	Download bool
	Texts    string // the file of texts, one a line ("-": standard input)
	Vectors  string // write the vectors here, one a line, tab-separated ("": not)
	Batch    int    // texts a forward pass

	stdin io.Reader
}

func main() {
	cfg := flags(flag.CommandLine)
	run.Main("embed", func() error {
		cfg.stdin = os.Stdin
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
	fs.StringVar(&c.Texts, "texts", "-", `file of texts, one a line ("-": standard input)`)
	fs.StringVar(&c.Vectors, "vectors", "", "write the embeddings here, one a line, tab-separated")
	fs.IntVar(&c.Batch, "batch", 32, "texts a forward pass")
	return c
}

// Check returns an error for flags out of range, before any work.
func (c Config) Check() error {
	switch {
	case c.Model == "":
		return fmt.Errorf("-model: want a model directory or a repository id")
	case c.Batch < 1:
		return fmt.Errorf("-batch %d: want ≥ 1", c.Batch)
	case c.Texts == "":
		return fmt.Errorf(`-texts: want a file ("-": standard input)`)
	}
	return run.Writable(map[string]string{"-vectors": c.Vectors})
}

// Run reads the texts, embeds them and writes the similarity matrix to
// w (and the vectors to cfg.Vectors).
func Run(cfg Config, w io.Writer) error {
	if err := cfg.Check(); err != nil {
		return err
	}
	texts, err := readTexts(cfg)
	if err != nil {
		return err
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
	e, err := models.LoadEncoder(cfg.Model, dev, device.Float32)
	if err != nil {
		return err
	}
	defer e.Release()
	var embs [][]float32
	for i := 0; i < len(texts); i += cfg.Batch {
		part, err := e.Embed(texts[i:min(len(texts), i+cfg.Batch)])
		if err != nil {
			return err
		}
		embs = append(embs, part...)
	}
	fmt.Fprintf(w, "%d texts, %d features (%s on %s)\n", len(texts), e.Cfg.Hidden, e.Dir, dev)
	fmt.Fprint(w, "cosine similarity:\n    ")
	for j := range embs {
		fmt.Fprintf(w, " %6d", j+1)
	}
	fmt.Fprintln(w)
	for i := range embs {
		fmt.Fprintf(w, "%4d", i+1)
		for j := range embs {
			fmt.Fprintf(w, " %6.3f", bert.Cosine(embs[i], embs[j]))
		}
		fmt.Fprintf(w, "  %s\n", texts[i])
	}
	if cfg.Vectors == "" {
		return nil
	}
	var b strings.Builder
	for _, v := range embs {
		for j, x := range v {
			if j > 0 {
				b.WriteByte('\t')
			}
			fmt.Fprintf(&b, "%g", x)
		}
		b.WriteByte('\n')
	}
	return os.WriteFile(cfg.Vectors, []byte(b.String()), 0o644)
}

// readTexts returns the non-empty lines of cfg.Texts.
func readTexts(cfg Config) ([]string, error) {
	var r io.Reader = cfg.stdin
	if cfg.Texts != "-" {
		f, err := os.Open(cfg.Texts)
		if err != nil {
			return nil, fmt.Errorf("-texts: %w", err)
		}
		defer f.Close()
		r = f
	} else if r == nil {
		return nil, fmt.Errorf("-texts -: no standard input")
	}
	var texts []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if t := strings.TrimSpace(sc.Text()); t != "" {
			texts = append(texts, t)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("-texts: %w", err)
	}
	if len(texts) == 0 {
		return nil, fmt.Errorf("-texts %s: no text", cfg.Texts)
	}
	return texts, nil
}
