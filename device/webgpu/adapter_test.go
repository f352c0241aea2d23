//go:build cgo || js

package webgpu

import (
	"strings"
	"testing"
)

// TestPickAdapter checks which adapter each local rank of a distributed
// job opens: by default the GPUs in turn, and EXTENSOR_ADAPTER's entries
// (indices or names, one for all or a list) as given.
func TestPickAdapter(t *testing.T) {
	gpus := []choice{{"llvmpipe", 3}, {"NVIDIA H200 a", 0}, {"Intel UHD", 1}, {"NVIDIA H200 b", 0}}
	cpu := []choice{{"llvmpipe (LLVM 15)", 3}}
	for _, c := range []struct {
		name  string
		list  []choice
		want  string
		local int
		pick  int
		err   string
	}{
		{"first GPU", gpus, "", 0, 1, ""},
		{"second GPU", gpus, "", 1, 3, ""},
		{"round", gpus, "", 2, 1, ""},
		{"one CPU adapter for all", cpu, "", 5, 0, ""},
		{"index for all", gpus, "2", 1, 2, ""},
		{"name for all", gpus, "intel", 3, 2, ""},
		{"list", gpus, "3, 1", 0, 3, ""},
		{"list second", gpus, "3, 1", 1, 1, ""},
		{"list round", gpus, "3,1", 2, 3, ""},
		{"list of names", gpus, "h200 b,llvm", 1, 0, ""},
		{"no such index", gpus, "7", 0, -1, `EXTENSOR_ADAPTER="7" matches no adapter`},
		{"bad entry", gpus, "1,nvidia,amd", 2, -1, `(entry "amd", for local rank 2)`},
		{"empty entry", gpus, "1,", 1, -1, `(entry "", for local rank 1)`},
		{"none", nil, "", 0, -1, "no adapter found"},
	} {
		t.Run(c.name, func(t *testing.T) {
			pick, err := pickAdapter(c.list, c.want, c.local)
			switch {
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Fatalf("pickAdapter(%q, local %d) = %d, %v; want an error with %q", c.want, c.local, pick, err, c.err)
			case c.err == "" && (err != nil || pick != c.pick):
				t.Fatalf("pickAdapter(%q, local %d) = %d, %v; want %d", c.want, c.local, pick, err, c.pick)
			}
		})
	}
}

func TestLocalRank(t *testing.T) {
	for _, c := range []struct {
		v    string
		want int
		ok   bool
	}{{"", 0, true}, {"3", 3, true}, {" 1 ", 1, true}, {"-1", 0, false}, {"one", 0, false}} {
		t.Setenv(EnvLocalRank, c.v)
		got, err := localRank()
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("%s=%q: %d, %v; want %d (ok %v)", EnvLocalRank, c.v, got, err, c.want, c.ok)
		}
	}
}
