package shaders

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"unsafe"
)

// A kernel's parameters are a Go struct mirrored by a WGSL struct Params,
// field for field and name for name, bound as p: a dispatch's shapes,
// strides and scalars, which the kernel reads as p.M, p.Scale. Fields are
// exported and of type uint32 (WGSL's u32), int32 (i32), float32 (f32) or
// an array of those ([4]uint32, array<u32, 4>). Every field is 4-byte
// aligned in both, with no padding, so the struct's memory is the words
// the kernel reads (Words).

// paramField is one field of a parameter struct: its name and WGSL type.
type paramField struct {
	name, wgsl string
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
		pf := paramField{name: f.Name}
		elem, n := f.Type, 0
		if f.Type.Kind() == reflect.Array {
			elem, n = f.Type.Elem(), f.Type.Len()
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
		pf.wgsl = w
		if f.Type.Kind() == reflect.Array {
			pf.wgsl = fmt.Sprintf("array<%s, %d>", w, n)
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

// Words returns params, a parameter struct, as the words its kernel
// reads: its memory. It panics if params is not one: a programmer's error.
func Words(params any) []uint32 {
	v := reflect.ValueOf(params)
	if _, err := plan(v.Type()); err != nil {
		panic(err)
	}
	w := make([]uint32, v.Type().Size()/4)
	if len(w) > 0 {
		reflect.NewAt(v.Type(), unsafe.Pointer(&w[0])).Elem().Set(v)
	}
	return w
}
