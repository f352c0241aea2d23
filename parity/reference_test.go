package parity_test

import (
	_ "embed"
	"encoding/json"
	"flag"
	"os"
	"testing"

	"github.com/extensor/extensor/parity"
)

var torchCases = flag.String("torch-cases", "", "write the cases whose PyTorch values are recorded to `file` (make torch-reference) and check nothing")

// torchJSON is PyTorch's values on the cases that parity.ReferenceCases
// selects, recorded by testdata/torch/reference.py (make torch-reference).
//
//go:embed testdata/torch/reference.json
var torchJSON []byte

// torchReferences returns the recorded values, failing t if they cannot
// be read.
func torchReferences(t *testing.T) parity.References {
	refs, err := parity.ParseReferences(torchJSON)
	if err != nil {
		t.Fatal(err)
	}
	return refs
}

// TestTorchReference writes the recording script's cases with
// -torch-cases; otherwise it checks that the recorded values are those
// of the cases ReferenceCases selects, one each, and that every op of
// the table has at least one case PyTorch computes (TestParity compares
// them).
func TestTorchReference(t *testing.T) {
	cases, err := parity.ReferenceCases()
	if err != nil {
		t.Fatal(err)
	}
	if *torchCases != "" {
		data, err := json.Marshal(cases)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(*torchCases, data, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%d cases written to %s", len(cases), *torchCases)
		return
	}
	refs := torchReferences(t)
	compared := map[string]int{}
	seen := map[string]bool{}
	for _, c := range cases {
		key := c.Op + "/" + c.Case
		seen[key] = true
		r := refs[key]
		switch {
		case r == nil:
			t.Errorf("%s: no PyTorch values recorded: run 'make torch-reference'", key)
		case r.Hash != c.Hash:
			t.Errorf("%s: the PyTorch values recorded are of other inputs (hash %s; the case's is %s): run 'make torch-reference'", key, r.Hash, c.Hash)
		case r.Skip == "":
			compared[c.Op]++
		}
	}
	for key := range refs {
		if !seen[key] {
			t.Errorf("%s: PyTorch values recorded for a case that is not selected: run 'make torch-reference'", key)
		}
	}
	for _, op := range parity.Specs() {
		if compared[op.Op.Name] == 0 {
			t.Errorf("%s: no case is compared with PyTorch", op.Op.Name)
		}
	}
}
