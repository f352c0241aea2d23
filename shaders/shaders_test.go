package shaders

import (
	"strings"
	"testing"
)

func TestSource(t *testing.T) {
	for _, c := range []struct {
		name string
		data any
		want []string
	}{
		{"elementwise", map[string]any{"T": "vec4<f32>", "Expr": "x + y", "In": []string{"x", "y"}, "InPlace": false},
			[]string{"var<storage, read> x_in: array<vec4<f32>>", "@binding(3) var<storage, read_write> out", "out[i] = x + y;"}},
		{"binary", map[string]any{"Expr": "x / y"}, []string{"fn broadcast_offsets", "out[i] = x / y;"}},
		{"binary_grad", map[string]any{"Expr": "-g * x / (y * y)"}, []string{"let g = gr[i];"}},
		{"reduce", nil, []string{"fn base_offset", "fn offset"}},
		{"reduce_chunks", nil, []string{"var<workgroup> partial", "workgroupBarrier();"}},
		{"softmax_xent", nil, []string{"fn row_stats"}},
		{"softmax_xent_grad", nil, []string{"fn row_stats", "dlogits[row + j]"}},
		{"transpose", nil, []string{"out[c * rows + r]"}},
		{"matmul", map[string]any{"TM": 8, "TN": 16, "TransA": false, "TransB": true, "VecA": false, "VecB": false},
			[]string{"var acc7_3 = vec4<f32>(0.0);", "b[c15 * K + k]", "a[r7 * K + k]"}},
	} {
		src, err := Source(c.name, c.data)
		if err != nil {
			t.Errorf("Source(%q): %v", c.name, err)
			continue
		}
		if !strings.HasPrefix(src, "// Parameters of this dispatch") || !strings.Contains(src, "@compute") {
			t.Errorf("Source(%q) lacks the prelude or an entry point", c.name)
		}
		for _, w := range c.want {
			if !strings.Contains(src, w) {
				t.Errorf("Source(%q) lacks %q", c.name, w)
			}
		}
		if strings.Contains(src, "{{") || strings.Contains(src, "<no value>") {
			t.Errorf("Source(%q) has unexpanded template text", c.name)
		}
	}
}

func TestSourceErrors(t *testing.T) {
	for _, name := range []string{"nosuch", "prelude", "common"} {
		if _, err := Source(name, nil); err == nil {
			t.Errorf("Source(%q): no error", name)
		}
	}
	if _, err := Source("binary", map[string]any{}); err == nil {
		t.Errorf("Source with a missing template key: no error")
	}
}
