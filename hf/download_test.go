package hf_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/extensor/extensor/hf"
)

// TestDownload fetches a model from a server that answers as the Hub
// does (the repository's info, then each file with its ETag) into an
// empty cache, where Find then finds it offline and Open reads it.
func TestDownload(t *testing.T) {
	src := "../models/gpt2/testdata/tiny"
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	const commit = "0123456789abcdef0123456789abcdef01234567"
	var siblings []map[string]any
	for _, e := range entries {
		siblings = append(siblings, map[string]any{"rfilename": e.Name()})
	}
	siblings = append(siblings, map[string]any{"rfilename": "onnx/model.onnx"}, map[string]any{"rfilename": "README.md"})
	served := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/api/models/org/tiny/revision/main":
			json.NewEncoder(w).Encode(map[string]any{"id": "org/tiny", "sha": commit, "siblings": siblings})
		case strings.HasPrefix(r.URL.Path, "/org/tiny/resolve/"+commit+"/"):
			name := strings.TrimPrefix(r.URL.Path, "/org/tiny/resolve/"+commit+"/")
			b, err := os.ReadFile(filepath.Join(src, filepath.Base(name)))
			if err != nil || name != filepath.Base(name) {
				http.NotFound(w, r)
				return
			}
			sum := sha256.Sum256(b)
			w.Header().Set("ETag", `"`+hex.EncodeToString(sum[:])+`"`)
			w.Header().Set("X-Repo-Commit", commit)
			if r.Method == http.MethodGet {
				served[name]++
			}
			http.ServeContent(w, r, name, time.Time{}, strings.NewReader(string(b)))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	cache := t.TempDir()
	t.Setenv("HF_HUB_CACHE", cache)
	t.Setenv("HF_ENDPOINT", srv.URL)
	t.Setenv("HF_TOKEN", "")
	dir, err := hf.Download("org/tiny", false)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(cache, "models--org--tiny", "snapshots", commit); dir != want {
		t.Errorf("Download: %s; want %s", dir, want)
	}
	if len(served) != len(entries) || served["README.md"] != 0 {
		t.Errorf("served %v; want the %d model files", served, len(entries))
	}
	srv.Close() // offline from here
	found, err := hf.Find("org/tiny")
	if err != nil || found != dir {
		t.Fatalf("Find after Download: %s, %v", found, err)
	}
	if m, err := hf.Open(found); err != nil || m.Config.ModelType != "gpt2" {
		t.Errorf("Open: %v", err)
	}
	for _, bad := range []string{"tiny", "org/tiny@..", "a/b/c"} {
		if _, err := hf.Download(bad, false); err == nil {
			t.Errorf("Download(%q) gave no error", bad)
		}
	}
}
