package shaders

import (
	"bytes"
	"embed"
	"fmt"
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
	"mul": func(a, b int) int { return a * b },
	"add": func(a, b int) int { return a + b },
	"sub": func(a, b int) int { return a - b },
	"div": func(a, b int) int { return a / b },
	"mod": func(a, b int) int { return a % b },
	// dict makes a map of its key, value arguments (for {{template}}).
	"dict": func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
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

// set holds every kernel, parsed once; common.wgsl defines the blocks that
// several kernels include with {{template}}.
var set = template.Must(template.New("").Funcs(funcs).Option("missingkey=error").ParseFS(files, "*.wgsl"))

// Source returns the WGSL of kernel name (a file name without ".wgsl")
// specialised with data, after the common prelude.
func Source(name string, data any) (string, error) {
	if name == "prelude" || name == "common" || set.Lookup(name+".wgsl") == nil {
		return "", fmt.Errorf("shaders: no kernel %q", name)
	}
	prelude, err := files.ReadFile("prelude.wgsl")
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	b.Write(prelude)
	if err := set.ExecuteTemplate(&b, name+".wgsl", data); err != nil {
		return "", fmt.Errorf("shaders: %s: %w", name, err)
	}
	return b.String(), nil
}
