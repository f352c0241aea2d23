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
	"mul": func(a, b int) int { return a * b },
	"add": func(a, b int) int { return a + b },
	"div": func(a, b int) int { return a / b },
	"mod": func(a, b int) int { return a % b },
}

// Source returns the WGSL of kernel name (a file name without ".wgsl")
// specialised with data, after the common prelude.
func Source(name string, data any) (string, error) {
	prelude, err := files.ReadFile("prelude.wgsl")
	if err != nil {
		return "", err
	}
	text, err := files.ReadFile(name + ".wgsl")
	if err != nil {
		return "", fmt.Errorf("shaders: no kernel %q: %w", name, err)
	}
	t, err := template.New(name).Funcs(funcs).Option("missingkey=error").Parse(string(text))
	if err != nil {
		return "", fmt.Errorf("shaders: %s: %w", name, err)
	}
	var b bytes.Buffer
	b.Write(prelude)
	if err := t.Execute(&b, data); err != nil {
		return "", fmt.Errorf("shaders: %s: %w", name, err)
	}
	return b.String(), nil
}
