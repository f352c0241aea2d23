package parity

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/device"
)

// This file compares the cases with values from outside: PyTorch's, for
// the cases that ReferenceCases selects, recorded by
// testdata/torch/reference.py into testdata/torch/reference.json (make
// torch-reference) and read by the parity tests, which need no torch.

// ReferenceLimit is the most elements an input, the output or the
// upstream gradient of a case compared with PyTorch may hold: the
// recorded values stay small enough to commit.
const ReferenceLimit = 4096

// Num is a float64 that JSON carries as a number, or as "nan", "inf" or
// "-inf".
type Num float64

// MarshalJSON writes n as a number, or a string for NaN and the
// infinities.
func (n Num) MarshalJSON() ([]byte, error) {
	f := float64(n)
	switch {
	case math.IsNaN(f):
		return []byte(`"nan"`), nil
	case math.IsInf(f, 1):
		return []byte(`"inf"`), nil
	case math.IsInf(f, -1):
		return []byte(`"-inf"`), nil
	case f == 0 && math.Signbit(f):
		return []byte(`-0.0`), nil
	}
	return strconv.AppendFloat(nil, f, 'g', -1, 64), nil
}

// UnmarshalJSON reads what MarshalJSON writes.
func (n *Num) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		switch s {
		case "nan":
			*n = Num(math.NaN())
		case "inf":
			*n = Num(math.Inf(1))
		case "-inf":
			*n = Num(math.Inf(-1))
		default:
			return fmt.Errorf("parity: number %q; want a number, \"nan\", \"inf\" or \"-inf\"", s)
		}
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*n = Num(f)
	return nil
}

// convert returns v's values as To, nil for nil (JSON's null).
func convert[To, From ~float64](v []From) []To {
	if v == nil {
		return nil
	}
	out := make([]To, len(v))
	for i, x := range v {
		out[i] = To(x)
	}
	return out
}

// ReferenceInput is one input of a case as the recording script reads it.
type ReferenceInput struct {
	Shape  []int `json:"shape"`
	Int    bool  `json:"int"`  // int64 indices in PyTorch
	Grad   bool  `json:"grad"` // the op differentiates it
	Values []Num `json:"values"`
}

// ReferenceCase is a case as the recording script reads it: the op, its
// attributes (the Go type's name and exported fields), its inputs and
// the upstream gradient, and a hash of all of them that the recorded
// values carry back.
type ReferenceCase struct {
	Op        string           `json:"op"`
	Case      string           `json:"case"`
	AttrsType string           `json:"attrs_type"`
	Attrs     map[string]any   `json:"attrs"`
	Inputs    []ReferenceInput `json:"inputs"`
	OutShape  []int            `json:"out_shape"`
	Upstream  []Num            `json:"upstream"`
	Hash      string           `json:"hash"`
}

// Reference is what PyTorch computes on a case: its output and the
// gradient of each input (nil for one without), or, for an op that
// PyTorch has no counterpart of on the case, Skip, which says why.
type Reference struct {
	Op       string  `json:"op"`
	Case     string  `json:"case"`
	Hash     string  `json:"hash"`
	OutShape []int   `json:"out_shape"`
	Out      []Num   `json:"out"`
	Grads    [][]Num `json:"grads"`
	Skip     string  `json:"skip,omitempty"`
}

// Key returns "op/case", the key of a case's reference.
func (r *Reference) Key() string { return r.Op + "/" + r.Case }

// ReferenceCases returns, for each op, its cases whose inputs, output and
// upstream gradient hold at most ReferenceLimit elements each (for an op
// without such a case, the one of the smallest inputs), each with the
// values the parity suite draws for it: the cases whose PyTorch values
// are recorded.
func ReferenceCases() ([]ReferenceCase, error) {
	var out []ReferenceCase
	specs := Specs()
	for i := 0; i < len(specs); {
		j := i
		for j < len(specs) && specs[j].Op == specs[i].Op {
			j++
		}
		var picked []ReferenceCase
		smallest := i
		for k := i; k < j; k++ {
			c := &specs[k]
			if c.inputSize() < specs[smallest].inputSize() {
				smallest = k
			}
			if c.inputSize() > ReferenceLimit {
				continue
			}
			rc, err := c.referenceCase()
			if err != nil {
				return nil, err
			}
			if rc.size() <= ReferenceLimit {
				picked = append(picked, rc)
			}
		}
		if len(picked) == 0 {
			rc, err := specs[smallest].referenceCase()
			if err != nil {
				return nil, err
			}
			picked = append(picked, rc)
		}
		out = append(out, picked...)
		i = j
	}
	return out, nil
}

// inputSize returns the most elements of c's inputs.
func (c *Case) inputSize() int {
	n := 0
	for _, in := range c.Inputs {
		n = max(n, device.Numel(in.Shape))
	}
	return n
}

// size returns the most elements of rc's inputs, output and upstream.
func (rc *ReferenceCase) size() int {
	n := device.Numel(rc.OutShape)
	for _, in := range rc.Inputs {
		n = max(n, len(in.Values))
	}
	return n
}

// referenceCase returns c as the recording script reads it.
func (c *Case) referenceCase() (ReferenceCase, error) {
	vals := c.inputs()
	_, shape, err := c.forward(cpu.New(), device.Float64, vals)
	if err != nil {
		return ReferenceCase{}, fmt.Errorf("%s: cpu float64: %v", c.Name(), err)
	}
	var g []float64
	if c.Op.Backward != nil {
		g = c.upstream(shape)
	}
	return c.recorded(vals, shape, g), nil
}

// recorded returns c, of inputs vals, output shape and upstream g, as
// the recording script reads it.
func (c *Case) recorded(vals [][]float64, shape []int, g []float64) ReferenceCase {
	rc := ReferenceCase{Op: c.Op.Name, Case: c.Case.Name, OutShape: shape}
	if c.Attrs != nil {
		rc.AttrsType = reflect.TypeOf(c.Attrs).Name()
		rc.Attrs = attrsMap(reflect.ValueOf(c.Attrs))
	}
	for i, in := range c.Inputs {
		rc.Inputs = append(rc.Inputs, ReferenceInput{Shape: in.Shape, Int: in.Int, Grad: !in.Int && !in.NoGrad && c.Op.Backward != nil, Values: convert[Num](vals[i])})
	}
	rc.Upstream = convert[Num](g)
	rc.Hash = c.hash(vals, rc)
	return rc
}

// hash digests what the recorded values depend on: the case's inputs,
// attributes and upstream gradient.
func (c *Case) hash(vals [][]float64, rc ReferenceCase) string {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s|%s|%v|%v|", c.Name(), rc.AttrsType, rc.Attrs, rc.OutShape)
	for i, v := range vals {
		fmt.Fprintf(h, "%v|%v|", c.Inputs[i].Shape, c.Inputs[i].Int)
		for _, x := range v {
			fmt.Fprintf(h, "%x,", math.Float64bits(x))
		}
	}
	for _, x := range rc.Upstream {
		fmt.Fprintf(h, "%x,", math.Float64bits(float64(x)))
	}
	return fmt.Sprintf("%016x", h.Sum64())
}

// attrsMap returns a struct's exported fields by name: numbers, bools,
// slices and arrays of them, names (of a type with a String method) and
// embedded structs' fields, flattened.
func attrsMap(v reflect.Value) map[string]any {
	m := map[string]any{}
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		fv := v.Field(i)
		if f.Anonymous && fv.Kind() == reflect.Struct {
			for k, x := range attrsMap(fv) {
				m[k] = x
			}
			continue
		}
		m[f.Name] = attrValue(fv)
	}
	return m
}

func attrValue(v reflect.Value) any {
	if s, ok := v.Interface().(fmt.Stringer); ok && v.Kind() != reflect.Struct {
		return s.String()
	}
	switch v.Kind() {
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			return nil
		}
		out := make([]any, v.Len())
		for i := range out {
			out[i] = attrValue(v.Index(i))
		}
		return out
	case reflect.Struct:
		return attrsMap(v)
	case reflect.Float32, reflect.Float64:
		return Num(v.Float())
	case reflect.Interface, reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		return fmt.Sprint(v.Interface())
	}
	return v.Interface()
}

// References indexes recorded references by Key.
type References map[string]*Reference

// ParseReferences reads the recording script's output.
func ParseReferences(data []byte) (References, error) {
	var list []*Reference
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, fmt.Errorf("parity: references: %v", err)
	}
	refs := References{}
	for _, r := range list {
		if refs[r.Key()] != nil {
			return nil, fmt.Errorf("parity: references: %s twice", r.Key())
		}
		refs[r.Key()] = r
	}
	return refs, nil
}

// checkReference compares the runs of a case with PyTorch's values, each
// with the case's tolerances: the CPU float64 run and the float32 runs
// (named by where).
func (c *Case) checkReference(t testing.TB, ref *Reference, vals [][]float64, g []float64, runs map[string]*run) Status {
	t.Helper()
	if rc := c.recorded(vals, runs["cpu float64"].outShape, g); rc.Hash != ref.Hash {
		t.Errorf("%s: pytorch: the recorded values are of other inputs, attributes or upstream (hash %s; the case's is %s): run 'make torch-reference'", c.Name(), ref.Hash, rc.Hash)
		return Fail
	}
	if ref.Skip != "" {
		return NotApplicable
	}
	rtol, atol := c.RTol, c.ATol
	if rtol == 0 {
		rtol = RTol
	}
	if atol == 0 {
		atol = ATol
	}
	want := &run{out: convert[float64](ref.Out), outShape: ref.OutShape}
	for _, g := range ref.Grads {
		want.grads = append(want.grads, convert[float64](g))
	}
	want.round32()
	status := Pass
	for _, where := range slices.Sorted(maps.Keys(runs)) {
		got := runs[where]
		if got == nil {
			continue // its evaluation failed, and is reported
		}
		name := fmt.Sprintf("%s %s: %s against pytorch", c.Op.Name, c.Case.Name, where)
		if !slices.Equal(got.outShape, want.outShape) {
			t.Errorf("%s: output shape %v; pytorch gives %v", name, got.outShape, want.outShape)
			status = Fail
			continue
		}
		if !Close(t, name+" forward", got.out, want.out32, rtol, atol) {
			status = Fail
		}
		if c.Op.Backward == nil {
			continue
		}
		for i, in := range c.Inputs {
			if in.Int || in.NoGrad {
				continue
			}
			if i >= len(want.grads) || want.grads[i] == nil {
				t.Errorf("%s: pytorch recorded no gradient %d", name, i)
				status = Fail
				continue
			}
			if !Close(t, fmt.Sprintf("%s gradient %d", name, i), got.grads[i], want.grads32[i], rtol, atol) {
				status = Fail
			}
		}
	}
	return status
}
