// Kernels that write a buffer in place, over {{.T}} elements; p[0] = count.
{{- if eq .Op "fill"}}
// fill: every element gets the bits p[1] (f32 or i32).
@group(0) @binding(1) var<storage, read_write> out: array<{{.T}}>;

{{template "main_1d"}}
    out[i] = {{.T}}(p[1]);
}
{{- else}}
// axpy: out += alpha·x, alpha = p[1] (f32 bits).
@group(0) @binding(1) var<storage, read> x: array<{{.T}}>;
@group(0) @binding(2) var<storage, read_write> out: array<{{.T}}>;

{{template "main_1d"}}
    out[i] = out[i] + pf(1u) * x[i];
}
{{- end}}
