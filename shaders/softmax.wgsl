// The softmax family: {{if .Log}}log_softmax{{else}}softmax{{end}}{{if .Grad}}'s gradient{{end}} along one axis, one invocation per row.
// A row is the axis's n elements at stride inner; p[0] = rows, p[1] = n,
// p[2] = inner.
{{- if .Grad}}
// From the forward output y and the upstream gradient dy: {{if .Log}}dy − exp(y)·Σ dy{{else}}y·(dy − Σ dy·y){{end}}.
@group(0) @binding(1) var<storage, read> y: array<f32>;
@group(0) @binding(2) var<storage, read> dy: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
{{- else}}
// Stable: exp(x − max) / Σ exp(x − max){{if .Log}}, its log x − max − ln Σ exp(x − max){{end}}.
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
{{- end}}

{{template "main_1d"}}
    let n = p[1];
    let inner = p[2];
    let base = (i / inner) * n * inner + i % inner;
{{- if .Grad}}
    var acc = 0.0;
    for (var j = 0u; j < n; j++) {
        let k = base + j * inner;
        acc += {{if .Log}}dy[k]{{else}}dy[k] * y[k]{{end}};
    }
    for (var j = 0u; j < n; j++) {
        let k = base + j * inner;
        out[k] = {{if .Log}}dy[k] - exp(y[k]) * acc{{else}}y[k] * (dy[k] - acc){{end}};
    }
{{- else}}
    var m = -inf();
    for (var j = 0u; j < n; j++) {
        m = max_nan(m, x[base + j * inner]);
    }
    var s = 0.0;
    for (var j = 0u; j < n; j++) {
        s += exp(x[base + j * inner] - m);
    }
{{- if .Log}}
    let shift = m + log(s);
    for (var j = 0u; j < n; j++) {
        let k = base + j * inner;
        out[k] = x[k] - shift;
    }
{{- else}}
    let inv = 1.0 / s;
    for (var j = 0u; j < n; j++) {
        let k = base + j * inner;
        out[k] = exp(x[k] - m) * inv;
    }
{{- end}}
{{- end}}
}
