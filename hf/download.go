package hf

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gomlx/go-huggingface/hub"
)

// Download fetches the model repository name (ORG/NAME[@REVISION]) into
// the Hugging Face cache (CacheDir), in the layout Python's
// huggingface_hub writes, through go-huggingface's hub, and returns its
// snapshot directory, which Find then finds offline: config.json,
// generation_config.json, the tokenizer's files, and model.safetensors
// or its index and every shard. HF_TOKEN, if set, authenticates;
// HF_ENDPOINT names another server. progress shows a progress bar.
func Download(name string, progress bool) (string, error) {
	repo, rev, _ := strings.Cut(name, "@")
	if rev == "" {
		rev = "main"
	}
	parts := strings.Split(repo, "/")
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" || slices.ContainsFunc(parts, func(p string) bool { return p == "." || p == ".." || strings.ContainsAny(p, `\`) }) {
		return "", fmt.Errorf("hf: Download %q: not a repository id ORG/NAME[@REVISION]", name)
	}
	if !validRef(rev) {
		return "", fmt.Errorf("hf: Download %q: revision %q is not a branch, tag or commit name", name, rev)
	}
	r := hub.New(repo).WithRevision(rev).WithCacheDir(CacheDir()).WithAuth(os.Getenv("HF_TOKEN")).WithProgressBar(progress)
	if !progress {
		r.Verbosity = 0
	}
	var want []string
	for f, err := range r.IterFileNames() {
		if err != nil {
			return "", fmt.Errorf("hf: Download %s: %w", name, err)
		}
		switch base := path.Base(f); {
		case f != base: // files in subdirectories are not the model's
		case slices.Contains([]string{ConfigFile, GenerationFile, IndexFile, WeightsFile, "tokenizer.json", "tokenizer_config.json"}, base),
			strings.HasSuffix(base, ".safetensors"):
			want = append(want, f)
		}
	}
	if !slices.Contains(want, ConfigFile) {
		return "", fmt.Errorf("hf: Download %s: the repository has no %s", name, ConfigFile)
	}
	paths, err := r.DownloadFiles(want...)
	if err != nil {
		return "", fmt.Errorf("hf: Download %s: %w", name, err)
	}
	snap := filepath.Dir(paths[slices.Index(want, ConfigFile)])
	// Python's layout: refs/REVISION holds the snapshot's commit.
	refs := filepath.Join(CacheDir(), "models--"+parts[0]+"--"+parts[1], "refs", filepath.FromSlash(rev))
	if commit := filepath.Base(snap); commit != rev {
		if err := os.MkdirAll(filepath.Dir(refs), 0o755); err != nil {
			return "", fmt.Errorf("hf: Download %s: %w", name, err)
		}
		if err := os.WriteFile(refs, []byte(commit), 0o644); err != nil {
			return "", fmt.Errorf("hf: Download %s: %w", name, err)
		}
	}
	return snap, nil
}
