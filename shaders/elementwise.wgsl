// out[i] = {{.Expr}} over {{.T}} elements; p[0] = element count.
// Inputs{{range .In}} {{.}}{{end}} are read at i{{if .InPlace}}; out is updated in place{{end}}.
{{- range $i, $name := .In}}
@group(0) @binding({{add $i 1}}) var<storage, read> {{$name}}_in: array<{{$.T}}>;
{{- end}}
@group(0) @binding({{add (len .In) 1}}) var<storage, read_write> out: array<{{.T}}>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = linear_index(wid, nwg, lid, 256u);
    if (i >= p[0]) {
        return;
    }
{{- range .In}}
    let {{.}} = {{.}}_in[i];
{{- end}}
    out[i] = {{.Expr}};
}
