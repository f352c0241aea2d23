package shaders

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
	"unsafe"
)

// A kernel's parameters are a Go struct mirrored by a WGSL struct Params,
// field for field and name for name, bound as p: a dispatch's shapes,
// strides and scalars, which the kernel reads as p.M, p.Scale. Fields are
// exported and of type uint32 (WGSL's u32), int32 (i32), float32 (f32) or
// an array of those ([4]uint32, array<u32, 4>); the last may be a []uint32
// (a runtime-sized array<u32>: a shape of any rank). Every field is 4-byte
// aligned in both, so Words encodes the struct as the kernel reads it.

// paramField is one field of a parameter struct: its index, WGSL type,
// and the words it takes (−1: a runtime-sized tail).
type paramField struct {
	index int
	name  string
	wgsl  string
	kind  reflect.Kind // of the element
	words int
}

var paramPlans sync.Map // reflect.Type → []paramField

// plan returns the fields of t, a parameter struct, or an error saying
// what is not.
func plan(t reflect.Type) ([]paramField, error) {
	if p, ok := paramPlans.Load(t); ok {
		return p.([]paramField), nil
	}
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("shaders: parameters of type %v; want a struct", t)
	}
	var fs []paramField
	for i := range t.NumField() {
		f := t.Field(i)
		pf := paramField{index: i, name: f.Name, words: 1}
		elem := f.Type
		switch f.Type.Kind() {
		case reflect.Array:
			elem, pf.words = f.Type.Elem(), f.Type.Len()
		case reflect.Slice:
			elem, pf.words = f.Type.Elem(), -1
			if i != t.NumField()-1 {
				return nil, fmt.Errorf("shaders: parameters %v: slice field %s is not the last", t, f.Name)
			}
		}
		var w string
		switch elem.Kind() {
		case reflect.Uint32:
			w = "u32"
		case reflect.Int32:
			w = "i32"
		case reflect.Float32:
			w = "f32"
		default:
			return nil, fmt.Errorf("shaders: parameters %v: field %s of type %v; want uint32, int32, float32 or an array of them", t, f.Name, f.Type)
		}
		if !f.IsExported() {
			return nil, fmt.Errorf("shaders: parameters %v: field %s is not exported", t, f.Name)
		}
		pf.kind = elem.Kind()
		switch {
		case pf.words < 0:
			pf.wgsl = "array<" + w + ">"
		case f.Type.Kind() == reflect.Array:
			pf.wgsl = fmt.Sprintf("array<%s, %d>", w, pf.words)
		default:
			pf.wgsl = w
		}
		fs = append(fs, pf)
	}
	paramPlans.Store(t, fs)
	return fs, nil
}

// ParamsDecl returns the WGSL declaration of binding 0 for params, a
// parameter struct (its zero value will do): struct Params and p.
func ParamsDecl(params any) (string, error) {
	fs, err := plan(reflect.TypeOf(params))
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "// Parameters of this dispatch (%v).\nstruct Params {\n", reflect.TypeOf(params))
	for _, f := range fs {
		fmt.Fprintf(&b, "    %s: %s,\n", f.name, f.wgsl)
	}
	b.WriteString("}\n@group(0) @binding(0) var<storage, read> p: Params;\n")
	return b.String(), nil
}

// Words returns params, a parameter struct, as the words its kernel reads.
// It panics if params is not one: a programmer's error.
func Words(params any) []uint32 {
	v := reflect.ValueOf(params)
	fs, err := plan(v.Type())
	if err != nil {
		panic(err)
	}
	if n := len(fs); n > 0 && fs[n-1].words >= 0 {
		// Fields of 4 bytes, no tail: the struct's memory is its words.
		w := make([]uint32, v.Type().Size()/4)
		if len(w) > 0 {
			reflect.NewAt(v.Type(), unsafe.Pointer(&w[0])).Elem().Set(v)
		}
		return w
	}
	w := make([]uint32, 0, len(fs)+8)
	for _, f := range fs {
		fv := v.Field(f.index)
		if f.words == 1 && fv.Kind() != reflect.Array {
			w = append(w, word(fv, f.kind))
			continue
		}
		for i := range fv.Len() {
			w = append(w, word(fv.Index(i), f.kind))
		}
	}
	return w
}

func word(v reflect.Value, k reflect.Kind) uint32 {
	switch k {
	case reflect.Uint32:
		return uint32(v.Uint())
	case reflect.Int32:
		return uint32(int32(v.Int()))
	}
	return math.Float32bits(float32(v.Float()))
}
