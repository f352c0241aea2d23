package shaders

import (
	"bytes"
	"embed"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"text/template"
)

//go:embed *.wgsl
var files embed.FS

var funcs = template.FuncMap{
	// seq returns 0, 1, …, n−1.
	"seq": func(n int) []int {
		s := make([]int, n)
		for i := range s {
			s[i] = i
		}
		return s
	},
	// rseq returns n−1, …, 1, 0.
	"rseq": func(n int) []int {
		s := make([]int, n)
		for i := range s {
			s[i] = n - 1 - i
		}
		return s
	},
	// list returns its arguments as a slice.
	"list": func(v ...string) []string { return v },
	"mul":  func(a, b int) int { return a * b },
	"add":  func(a, b int) int { return a + b },
	"sub":  func(a, b int) int { return a - b },
	"div":  func(a, b int) int { return a / b },
	"mod":  func(a, b int) int { return a % b },
	// dict makes a map of its key, value arguments (for {{template}}).
	"dict": func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	},
	// slots renders the statements stmts for slot s of a kernel over n
	// slots (sets of buffers named by their slot's number, which each
	// statement's # stands for): slot 0's where n is 1, else a switch on
	// s, its last slot the default.
	"slots": func(n int, stmts ...string) string {
		body := func(k int) string {
			var b strings.Builder
			for _, st := range stmts {
				if st != "" {
					b.WriteString(" " + strings.ReplaceAll(st, "#", strconv.Itoa(k)))
				}
			}
			return b.String()
		}
		if n <= 1 {
			return "   " + body(0)
		}
		var b strings.Builder
		b.WriteString("    switch s {")
		for k := range n - 1 {
			fmt.Fprintf(&b, "\n        case %du: {%s }", k, body(k))
		}
		fmt.Fprintf(&b, "\n        default: {%s }\n    }", body(n-1))
		return b.String()
	},
	// set returns a copy of dict m with its key, value arguments set.
	"set": func(m map[string]any, kv ...any) map[string]any {
		c := make(map[string]any, len(m)+len(kv)/2)
		for k, v := range m {
			c[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			c[kv[i].(string)] = kv[i+1]
		}
		return c
	},
}

// The storage types of floating-point tensors (see Source).
const (
	storageF32 = `// Floating-point tensors are stored as float32.
alias E = f32;
alias E4 = vec4<f32>;

fn to_e(v: f32) -> f32 {
    return v;
}

fn to_e4(v: vec4<f32>) -> vec4<f32> {
    return v;
}

`
	storageF16 = `enable f16;

// Floating-point tensors are stored as float16: values are computed in
// float32 and rounded by the device, to ±Inf from 65520 on (WGSL leaves
// the conversion of values past f16's range to the implementation).
alias E = f16;
alias E4 = vec4<f16>;

fn to_e(v: f32) -> f16 {
    return f16(select(v, v * 65536.0, abs(v) >= 65520.0));
}

fn to_e4(v: vec4<f32>) -> vec4<f16> {
    return vec4<f16>(select(v, v * 65536.0, abs(v) >= vec4<f32>(65520.0)));
}

`
)

// set holds every kernel, parsed once; common.wgsl defines the blocks that
// several kernels include with {{template}}.
var set = template.Must(template.New("").Funcs(funcs).Option("missingkey=error").ParseFS(files, "*.wgsl"))

// Source returns the WGSL of kernel name (a file name without ".wgsl")
// specialised with data, after the common prelude and the declaration of
// binding 0, p: the kernel's parameter struct params (ParamsDecl; nil
// declares none).
//
// Every kernel sees the storage type of floating-point tensors as E (and
// E4, four of them), and stores a float32 result v in it as to_e(v) (and
// to_e4): f32 and the identity, or, where data is a struct (or a map)
// whose F16 is true, WGSL's f16 (the shader-f16 feature, enabled by the first line)
// and a rounding conversion.
func Source(name string, data any, params any) (string, error) {
	if name == "prelude" || name == "common" || set.Lookup(name+".wgsl") == nil {
		return "", fmt.Errorf("shaders: no kernel %q", name)
	}
	prelude, err := files.ReadFile("prelude.wgsl")
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	if f16(data) {
		b.WriteString(storageF16)
	} else {
		b.WriteString(storageF32)
	}
	if params != nil {
		decl, err := ParamsDecl(params)
		if err != nil {
			return "", err
		}
		b.WriteString(decl)
	}
	b.Write(prelude)
	if err := set.ExecuteTemplate(&b, name+".wgsl", data); err != nil {
		return "", fmt.Errorf("shaders: %s: %w", name, err)
	}
	return b.String(), nil
}

// f16 reports whether data, a struct or a map, has an F16 that is true.
func f16(data any) bool {
	if m, ok := data.(map[string]any); ok {
		return m["F16"] == true
	}
	v := reflect.ValueOf(data)
	if v.Kind() != reflect.Struct {
		return false
	}
	f := v.FieldByName("F16")
	return f.IsValid() && f.Kind() == reflect.Bool && f.Bool()
}
