// Package gosrc reads a text corpus that is present wherever extensor
// builds: the Go standard library's own source. Its bytes are the tokens
// of a byte-level language model (a vocabulary of 256); whole files are
// held out for validation.
package gosrc

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// Packages are the directories under GOROOT/src that the corpus reads,
// with every package below them: ordinary hand-written Go. Generated
// tables (unicode, time/tzdata) and the runtime's assembly-minded code are
// left out.
var Packages = []string{
	"archive", "bufio", "bytes", "cmp", "compress", "container", "context",
	"crypto", "database", "encoding", "errors", "flag", "fmt", "go", "hash",
	"html", "image", "io", "iter", "log", "maps", "math", "mime", "net",
	"os", "path", "reflect", "regexp", "slices", "sort", "strconv",
	"strings", "sync", "testing", "text",
}

// ValEvery holds out every ValEvery-th file, in path order, for
// validation.
const ValEvery = 10

// Corpus is the text, split by file.
type Corpus struct {
	Root       string // GOROOT/src
	Train, Val []byte // the files' bytes, concatenated in path order
	Files      int    // files read
	ValFiles   int    // of which held out
}

// Root returns the Go installation's root: `go env GOROOT`, or the one
// this program was built with when the go command does not answer.
func Root() string {
	if out, err := exec.Command("go", "env", "GOROOT").Output(); err == nil {
		if r := strings.TrimSpace(string(out)); r != "" {
			return r
		}
	}
	return runtime.GOROOT() //lint:ignore SA1019 the fallback when no go command answers
}

// Load reads the non-test .go files of Packages under goroot/src, but
// testdata and vendored code, and holds out every ValEvery-th file.
func Load(goroot string) (*Corpus, error) {
	src := filepath.Join(goroot, "src")
	var paths []string
	for _, p := range Packages {
		dir := filepath.Join(src, filepath.FromSlash(p))
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			name := d.Name()
			if d.IsDir() {
				if name == "testdata" || name == "vendor" {
					return filepath.SkipDir
				}
				return nil
			}
			if strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") {
				paths = append(paths, path)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("gosrc: reading %s: %w", dir, err)
		}
	}
	slices.Sort(paths)
	c := &Corpus{Root: src}
	var train, val bytes.Buffer
	for i, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("gosrc: %w", err)
		}
		if i%ValEvery == ValEvery-1 {
			val.Write(b)
			c.ValFiles++
		} else {
			train.Write(b)
		}
		c.Files++
	}
	c.Train, c.Val = train.Bytes(), val.Bytes()
	if len(c.Train) == 0 || len(c.Val) == 0 {
		return nil, fmt.Errorf("gosrc: %s holds no Go source of the packages %v", src, Packages)
	}
	return c, nil
}

// Tokens returns b as tokens, one a byte.
func Tokens(b []byte) []int32 {
	t := make([]int32, len(b))
	for i, c := range b {
		t[i] = int32(c)
	}
	return t
}
