// out[i] = {{.Expr}} over {{.T}} elements; p[0] = element count.
// Inputs{{range .In}} {{.}}{{end}} are read at i{{if .InPlace}}; out is updated in place{{end}}.
{{- range $i, $name := .In}}
@group(0) @binding({{add $i 1}}) var<storage, read> {{$name}}_in: array<{{$.T}}>;
{{- end}}
@group(0) @binding({{add (len .In) 1}}) var<storage, read_write> out: array<{{.T}}>;

{{template "main_1d"}}
{{- range .In}}
    let {{.}} = {{.}}_in[i];
{{- end}}
    out[i] = {{.Expr}};
}
