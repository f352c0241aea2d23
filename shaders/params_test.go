package shaders

import (
	"math"
	"slices"
	"strings"
	"testing"
)

func TestParams(t *testing.T) {
	type gemm struct {
		M, K  uint32
		Scale float32
		Off   int32
		Shape [3]uint32
	}
	decl, err := ParamsDecl(gemm{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"struct Params {", "    M: u32,", "    Scale: f32,", "    Off: i32,", "    Shape: array<u32, 3>,", "var<storage, read> p: Params;"} {
		if !strings.Contains(decl, want) {
			t.Errorf("ParamsDecl lacks %q:\n%s", want, decl)
		}
	}
	w := Words(gemm{M: 2, K: 3, Scale: 0.5, Off: -1, Shape: [3]uint32{4, 5, 6}})
	want := []uint32{2, 3, math.Float32bits(0.5), math.MaxUint32, 4, 5, 6}
	if !slices.Equal(w, want) {
		t.Errorf("Words = %v; want %v", w, want)
	}
}

func TestParamsErrors(t *testing.T) {
	for name, v := range map[string]any{
		"not a struct": 3,
		"a float64":    struct{ X float64 }{},
		"unexported":   struct{ x uint32 }{},
		"a slice not last": struct {
			A []uint32
			B uint32
		}{},
	} {
		if _, err := ParamsDecl(v); err == nil {
			t.Errorf("ParamsDecl(%s): no error", name)
		}
	}
}
