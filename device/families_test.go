package device_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// includes are the WGSL files every kernel includes rather than runs.
var includes = []string{"prelude", "common"}

// TestFamiliesNameEveryKernelFile checks families.go against shaders/:
// every WGSL file a family's documentation names exists, and every WGSL
// file but the includes belongs to a family.
func TestFamiliesNameEveryKernelFile(t *testing.T) {
	src, err := os.ReadFile("families.go")
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]bool{}
	for _, line := range regexp.MustCompile(`// WGSL: shaders/(.*)`).FindAllStringSubmatch(string(src), -1) {
		for _, f := range regexp.MustCompile(`(\w+)\.wgsl`).FindAllStringSubmatch(line[1], -1) {
			named[f[1]] = true
		}
	}
	files, err := filepath.Glob("../shaders/*.wgsl")
	if err != nil || len(files) == 0 {
		t.Fatalf("no WGSL files in ../shaders (%v)", err)
	}
	have := map[string]bool{}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".wgsl")
		have[name] = true
		if !named[name] && !slices.Contains(includes, name) {
			t.Errorf("shaders/%s.wgsl belongs to no kernel family of families.go", name)
		}
	}
	for name := range named {
		if !have[name] {
			t.Errorf("families.go names shaders/%s.wgsl, which does not exist", name)
		}
	}
}
