package parity_test

import (
	"fmt"
	"testing"

	"github.com/extensor/extensor/internal/fuzzin"
	"github.com/extensor/extensor/ops"
)

// TestHostileSweep runs, for the first case of every op, each single
// change FuzzAPI can make to one input (every kind, with the small
// choices of each) and each single hostile attribute, through FuzzAPI's
// own code: the fuzzer's one-change neighbourhood of the table, checked
// every run rather than found by chance, on the CPU backend and, compared
// with it, on WebGPU.
//
// It runs beside TestParity, on a WebGPU device of its
// own, its inputs one at a time: a device reports a runtime failure (an
// index out of range) to the next readback, whichever goroutine's.
func TestHostileSweep(t *testing.T) {
	t.Parallel()
	gpu, host := fuzzDevices(t)
	if gpu != nil {
		t.Cleanup(func() { gpu.Close() })
	}
	table := ops.Table()
	if len(table) > 256 {
		t.Fatalf("%d ops: a fuzz input picks an op with one byte", len(table))
	}
	for o, op := range table {
		t.Run(op.Name, func(t *testing.T) {
			for _, data := range inputChanges(o, op.Cases[0].Inputs) {
				t.Run(fmt.Sprint(data), func(t *testing.T) { fuzzAPI(t, host, gpu, data) })
			}
			for _, data := range attrChanges(o) {
				t.Run(fmt.Sprint(data), func(t *testing.T) { fuzzAPI(t, host, gpu, data) })
			}
		})
	}
}

// inputChanges returns FuzzAPI's inputs that pick op o's first case,
// keep its attributes and change one of its inputs.
func inputChanges(o int, in []ops.Input) [][]byte {
	n := len(in)
	var out [][]byte
	for i := range n {
		head := append([]byte{byte(o), 0, 0}, make([]byte, i)...) // op, case 0, no attribute change; inputs before i kept
		var kinds [][]byte
		for ax := range len(in[i].Shape) {
			for _, d := range []byte{0, 1, 5} {
				kinds = append(kinds, []byte{1, byte(ax), d}) // one dimension changed
			}
		}
		kinds = append(kinds, []byte{2, 0}, []byte{2, 2}, []byte{3}, // an axis added or dropped
			[]byte{4, 0}, []byte{4, 1}, // float16, int32
			[]byte{5}, []byte{6}, []byte{7}) // nil, another device's, huge and empty
		for _, k := range kinds {
			out = append(out, append(append(append([]byte{}, head...), k...), make([]byte, n-i-1)...))
		}
	}
	return out
}

// attrChanges returns FuzzAPI's inputs that pick op o's first case, keep
// its inputs and change one attribute to each hostile value.
func attrChanges(o int) [][]byte {
	var out [][]byte
	for kind := range attrKinds {
		// How many further choices (another int or float, a dtype, a
		// reduction, an axis and a field) the kind makes: the bytes
		// hostileAttrs takes past one change's count, int, float and kind.
		probe := fuzzin.Bytes(append([]byte{1, 0, 0, byte(kind)}, make([]byte, 16)...))
		n := len(probe)
		hostileAttrs(&probe, nil)
		further := n - len(probe) - 4
		for h := range len(hostileInts) {
			// op, case 0, one change: an int, a float, the kind, its
			// further choices; the inputs kept (no bytes left).
			data := []byte{byte(o), 0, 1, byte(h), byte(h % len(hostileFloats)), byte(kind)}
			for range further {
				data = append(data, byte(h))
			}
			out = append(out, data)
		}
	}
	return out
}
