package hf

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/extensor/extensor/checkpoint"
	"github.com/extensor/extensor/tensor"
)

// The files of a model directory.
const (
	ConfigFile  = "config.json"
	WeightsFile = "model.safetensors"
	IndexFile   = "model.safetensors.index.json"
	// GenerationFile is the optional file of generation settings.
	GenerationFile = "generation_config.json"
)

// CacheDir returns the Hugging Face hub cache: $HF_HUB_CACHE, else
// $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else
// ~/.cache/huggingface/hub, as huggingface_hub resolves it.
func CacheDir() string {
	if d := os.Getenv("HF_HUB_CACHE"); d != "" {
		return d
	}
	if d := os.Getenv("HF_HOME"); d != "" {
		return filepath.Join(d, "hub")
	}
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			home = "."
		}
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "huggingface", "hub")
}

// Find returns the directory of the model name: a directory holding
// config.json, or a repository id, ORG/NAME with an optional @REVISION
// (a branch, a tag or a commit; main if none), whose snapshot the cache
// (CacheDir) holds. Its error says where it looked.
func Find(name string) (string, error) {
	if st, err := os.Stat(filepath.Join(name, ConfigFile)); err == nil && st.Mode().IsRegular() {
		return name, nil
	}
	repo, rev, _ := strings.Cut(name, "@")
	if rev == "" {
		rev = "main"
	}
	parts := strings.Split(repo, "/")
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" || slices.ContainsFunc(parts, func(p string) bool { return p == "." || p == ".." || strings.ContainsAny(p, `\`) }) {
		return "", fmt.Errorf("hf: %q: no %s there, and not a repository id ORG/NAME[@REVISION]", name, ConfigFile)
	}
	if !validRef(rev) {
		return "", fmt.Errorf("hf: %q: revision %q is not a branch, tag or commit name", name, rev)
	}
	dir := filepath.Join(CacheDir(), "models--"+parts[0]+"--"+parts[1])
	commit := rev
	if b, err := os.ReadFile(filepath.Join(dir, "refs", rev)); err == nil {
		commit = strings.TrimSpace(string(b))
	}
	snap := filepath.Join(dir, "snapshots", commit)
	if st, err := os.Stat(filepath.Join(snap, ConfigFile)); err != nil || !st.Mode().IsRegular() {
		return "", fmt.Errorf("hf: %q: not a directory with %s, nor in the Hugging Face cache (%s has no %s at revision %s); download it first, or set HF_HOME or HF_HUB_CACHE", name, ConfigFile, dir, ConfigFile, rev)
	}
	return snap, nil
}

// validRef reports whether a revision names a ref (main, v1.0, refs/pr/1,
// a branch feature/x) or a commit without leaving the cache's directories.
func validRef(rev string) bool {
	for _, p := range strings.Split(rev, "/") {
		if p == "" || p == "." || p == ".." || strings.Contains(p, `\`) {
			return false
		}
	}
	return true
}

// Config is a model's config.json: the fields every architecture has,
// and the whole file for the fields of each (Decode).
type Config struct {
	ModelType     string   `json:"model_type"`
	Architectures []string `json:"architectures"`
	TorchDType    string   `json:"torch_dtype"`
	raw           []byte
}

// Decode decodes the configuration into v, an architecture's own fields.
func (c *Config) Decode(v any) error {
	if err := json.Unmarshal(c.raw, v); err != nil {
		return fmt.Errorf("hf: %s: %w", ConfigFile, err)
	}
	return nil
}

// IDs is one token id or a list of them, as the *_token_id fields of
// Hugging Face's files hold them.
type IDs []int32

// UnmarshalJSON reads a number, a list of numbers or null.
func (ids *IDs) UnmarshalJSON(b []byte) error {
	var one *int32
	if err := json.Unmarshal(b, &one); err == nil {
		*ids = nil
		if one != nil {
			*ids = IDs{*one}
		}
		return nil
	}
	var many []int32
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf("a token id or a list of them: %s", b)
	}
	*ids = many
	return nil
}

// Generation is a model's generation_config.json (the fields read here),
// with config.json's bos_token_id and eos_token_id where it lacks them.
type Generation struct {
	BOS IDs `json:"bos_token_id"`
	EOS IDs `json:"eos_token_id"` // the tokens that end a generation
	PAD IDs `json:"pad_token_id"`
	// DoSample, Temperature, TopK, TopP and RepetitionPenalty are the
	// model's sampling defaults (0 where unset).
	DoSample          bool    `json:"do_sample"`
	Temperature       float64 `json:"temperature"`
	TopK              int     `json:"top_k"`
	TopP              float64 `json:"top_p"`
	RepetitionPenalty float64 `json:"repetition_penalty"`
	MaxNewTokens      int     `json:"max_new_tokens"`
}

// Model is a model directory, opened: its configuration and the
// safetensors files that hold its weights.
type Model struct {
	Dir        string
	Config     Config
	Generation Generation
	// Progress, if set, is told the bytes loaded so far of LoadInto's
	// total after each tensor (a progress bar's feed).
	Progress func(done, total int64)
	shards   map[string]*checkpoint.File // by file name
	where    map[string]string           // tensor name → file name
}

// Open reads the model directory dir (Find's result): config.json, and
// model.safetensors or the shards of model.safetensors.index.json, each
// checked (checkpoint.Read): a tensor that the index maps to a shard
// without it, a shard that holds a tensor the index maps elsewhere, or a
// tensor in two shards is an error.
func Open(dir string) (*Model, error) {
	b, err := os.ReadFile(filepath.Join(dir, ConfigFile))
	if err != nil {
		return nil, fmt.Errorf("hf: %w", err)
	}
	m := &Model{Dir: dir, shards: map[string]*checkpoint.File{}, where: map[string]string{}}
	if err := json.Unmarshal(b, &m.Config); err != nil {
		return nil, fmt.Errorf("hf: %s: %w", filepath.Join(dir, ConfigFile), err)
	}
	m.Config.raw = b
	if err := json.Unmarshal(b, &m.Generation); err != nil {
		return nil, fmt.Errorf("hf: %s: %w", filepath.Join(dir, ConfigFile), err)
	}
	switch g, err := os.ReadFile(filepath.Join(dir, GenerationFile)); {
	case err == nil:
		if err := json.Unmarshal(g, &m.Generation); err != nil {
			return nil, fmt.Errorf("hf: %s: %w", filepath.Join(dir, GenerationFile), err)
		}
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("hf: %w", err)
	}
	index, err := os.ReadFile(filepath.Join(dir, IndexFile))
	switch {
	case errors.Is(err, os.ErrNotExist):
		f, err := checkpoint.Read(filepath.Join(dir, WeightsFile))
		if err != nil {
			return nil, fmt.Errorf("hf: %w", err)
		}
		m.shards[WeightsFile] = f
		for _, n := range f.Names() {
			m.where[n] = WeightsFile
		}
		return m, nil
	case err != nil:
		return nil, fmt.Errorf("hf: %w", err)
	}
	var idx struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(index, &idx); err != nil {
		return nil, fmt.Errorf("hf: %s: %w", filepath.Join(dir, IndexFile), err)
	}
	if len(idx.WeightMap) == 0 {
		return nil, fmt.Errorf("hf: %s maps no tensor to a file", filepath.Join(dir, IndexFile))
	}
	for name, file := range idx.WeightMap {
		if file != filepath.Base(file) || file == "." || file == ".." {
			return nil, fmt.Errorf("hf: %s maps %q to %q; want a file of the directory", filepath.Join(dir, IndexFile), name, file)
		}
		if m.shards[file] == nil {
			f, err := checkpoint.Read(filepath.Join(dir, file))
			if err != nil {
				return nil, fmt.Errorf("hf: %w", err)
			}
			m.shards[file] = f
		}
		m.where[name] = file
	}
	for _, file := range slices.Sorted(maps.Keys(m.shards)) {
		for _, n := range m.shards[file].Names() {
			if m.where[n] != file {
				return nil, fmt.Errorf("hf: %s holds %q, which %s maps to %q", file, n, IndexFile, m.where[n])
			}
		}
	}
	for _, n := range m.Names() {
		if file := m.where[n]; !slices.Contains(m.shards[file].Names(), n) {
			return nil, fmt.Errorf("hf: %s maps %q to %s, which does not hold it", IndexFile, n, file)
		}
	}
	return m, nil
}

// Names returns the names of the model's tensors, sorted.
func (m *Model) Names() []string { return slices.Sorted(maps.Keys(m.where)) }

// Ignore leaves the named tensors of the checkpoint out of Names and
// LoadInto: buffers an architecture recomputes (GPT-2's causal masks,
// attn.bias) and weights tied to others (a tied lm_head.weight). Names
// the checkpoint lacks are ignored.
func (m *Model) Ignore(names ...string) {
	for _, n := range names {
		delete(m.where, n)
	}
}

// LoadInto copies the model's tensors into into's, by name: every name,
// shape and dtype is checked across all the shards first (a tensor
// missing from either side, of another shape, or of a dtype that does not
// load into the model's), and any mismatch is a checkpoint.Mismatch
// listing them all, with nothing copied. Floats load into floats of any
// dtype, rounded to the model's (BF16 and F16 weights into a float32
// model), as PyTorch's load_state_dict.
func (m *Model) LoadInto(into map[string]*tensor.Tensor) error {
	byShard := map[string]map[string]*tensor.Tensor{}
	var mismatch checkpoint.Mismatch
	for name, t := range into {
		file, ok := m.where[name]
		if !ok {
			mismatch = append(mismatch, fmt.Sprintf("%q: in the model (%v %v), not in the checkpoint", name, t.DType(), t.Shape()))
			continue
		}
		if byShard[file] == nil {
			byShard[file] = map[string]*tensor.Tensor{}
		}
		byShard[file][name] = t
	}
	for file, sub := range byShard {
		mismatch = append(mismatch, m.shards[file].Fits(sub)...)
	}
	kept := func(name string) bool { _, ok := m.where[name]; return ok } // not ignored
	for _, f := range m.shards {
		mismatch = append(mismatch, f.Unused(into, kept)...)
	}
	if len(mismatch) > 0 {
		sort.Strings(mismatch)
		return mismatch
	}
	var total, before int64
	for _, t := range into {
		total += int64(t.Len()) * int64(t.DType().Size())
	}
	for _, file := range slices.Sorted(maps.Keys(byShard)) {
		f := m.shards[file]
		if m.Progress != nil {
			f.Progress = func(done, _ int64) { m.Progress(before+done, total) }
		}
		err := f.LoadSome(byShard[file])
		f.Progress = nil
		if err != nil {
			return fmt.Errorf("hf: %s: %w", file, err)
		}
		for _, t := range byShard[file] {
			before += int64(t.Len()) * int64(t.DType().Size())
		}
	}
	return nil
}

// Save writes a model to the directory dir in Hugging Face's layout:
// model.safetensors holding tensors by their names, and the
// configuration, generation settings and tokenizer files of the model
// directory from (config.json, generation_config.json, tokenizer.json,
// tokenizer_config.json, those it has) copied beside it. Open reads it
// back.
func Save(dir, from string, tensors map[string]*tensor.Tensor) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("hf: %w", err)
	}
	for _, f := range []string{ConfigFile, GenerationFile, "tokenizer.json", "tokenizer_config.json"} {
		b, err := os.ReadFile(filepath.Join(from, f))
		switch {
		case errors.Is(err, os.ErrNotExist) && f != ConfigFile:
			continue
		case err != nil:
			return fmt.Errorf("hf: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			return fmt.Errorf("hf: %w", err)
		}
	}
	if err := checkpoint.Save(filepath.Join(dir, WeightsFile), tensors, map[string]string{"format": "pt"}); err != nil {
		return fmt.Errorf("hf: %w", err)
	}
	return nil
}
