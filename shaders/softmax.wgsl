// The softmax family: {{if .Log}}log_softmax{{else}}softmax{{end}}{{if .Grad}}'s gradient{{end}} along one axis, in two passes:
// "stats" reduces each row to two numbers, one invocation per row, and
// "apply" writes every element from them, one invocation per element{{if .Vec}}
// (here vec4s){{end}}. A row is the axis's n elements at stride inner; p[0] =
// rows (stats) or elements{{if .Vec}}/4{{end}} (apply), p[1] = n, p[2] = inner.
// This pass: {{.Stage}}{{if .Vec}}, over vec4s (inner = 1, n a multiple of 4){{end}}.
{{- $T := "f32"}}{{if .Vec}}{{$T = "vec4<f32>"}}{{end}}
{{- if .Grad}}
// From the forward output y and the upstream gradient dy: {{if .Log}}dy − exp(y)·Σ dy{{else}}y·(dy − Σ dy·y){{end}};
// the stats are s1 = Σ {{if .Log}}dy{{else}}dy·y{{end}}.
@group(0) @binding(1) var<storage, read> y: array<{{$T}}>;
@group(0) @binding(2) var<storage, read> dy: array<{{$T}}>;
{{- else}}
// Stable: the stats are the row's maximum m and s = Σ exp(x − m), found
// in one sweep that rescales s whenever m grows; {{if .Log}}x − (m + ln s){{else}}exp(x − m)·(1/s){{end}} is the
// result, and the stats pass stores {{if .Log}}s1 = m + ln s{{else}}s1 = m, s2 = 1/s{{end}}.
@group(0) @binding(1) var<storage, read> x: array<{{$T}}>;
{{- end}}
{{- /* The stats: s1, and s2 for softmax's 1/s. */}}
{{- $two := and (not .Log) (not .Grad)}}
{{- $b := 2}}{{if .Grad}}{{$b = 3}}{{end}}
{{- $rw := "read"}}{{if eq .Stage "stats"}}{{$rw = "read_write"}}{{end}}
@group(0) @binding({{$b}}) var<storage, {{$rw}}> s1: array<f32>;
{{- if $two}}{{$b = add $b 1}}
@group(0) @binding({{$b}}) var<storage, {{$rw}}> s2: array<f32>;
{{- end}}
{{- if eq .Stage "apply"}}
@group(0) @binding({{add $b 1}}) var<storage, read_write> out: array<{{$T}}>;
{{- end}}

{{- if and (eq .Stage "stats") (not .Grad)}}

// The running (m, s) after folding in values of maximum vm whose sum of
// exp(v − vm) is e_at (0 for values that are all −∞).
fn fold(acc: vec2<f32>, vm: f32, e_at: f32) -> vec2<f32> {
    let m = max_nan(acc.x, vm);
    // exp(acc.x − m) is 1 when the maximum did not move (also for −∞).
    let keep = select(exp(acc.x - m), 1.0, acc.x == m);
    return vec2<f32>(m, acc.y * keep + e_at * select(exp(vm - m), 1.0, vm == m));
}
{{- end}}

{{- if eq .Stage "stats"}}
{{template "main_1d"}}
    let n = p[1];
    let inner = p[2];
{{- if .Vec}}
    let base = i * (n / 4u);
    let step = 1u;
    let len = n / 4u;
{{- else}}
    let base = (i / inner) * n * inner + i % inner;
    let step = inner;
    let len = n;
{{- end}}
{{- if .Grad}}
    var acc = {{$T}}(0.0);
    for (var j = 0u; j < len; j++) {
        let k = base + j * step;
        acc += {{if .Log}}dy[k]{{else}}dy[k] * y[k]{{end}};
    }
{{- if .Vec}}
    s1[i] = acc.x + acc.y + acc.z + acc.w;
{{- else}}
    s1[i] = acc;
{{- end}}
{{- else}}
    var acc = vec2<f32>(-inf(), 0.0);
    for (var j = 0u; j < len; j++) {
        let v = x[base + j * step];
{{- if .Vec}}
        let vm = max_nan(max_nan(v.x, v.y), max_nan(v.z, v.w));
        let e = exp(v - vec4<f32>(vm));
        acc = fold(acc, vm, select(e.x + e.y + e.z + e.w, 0.0, vm == -inf()));
{{- else}}
        acc = fold(acc, v, select(1.0, 0.0, v == -inf()));
{{- end}}
    }
{{- if .Log}}
    s1[i] = acc.x + log(acc.y);
{{- else}}
    s1[i] = acc.x;
    s2[i] = 1.0 / acc.y;
{{- end}}
{{- end}}
}
{{- else}}

fn elem(i: u32) {
{{- if .Vec}}
    let row = i / {{.Quads}}u; // a constant: llvmpipe has no vector division
{{- else}}
    let row = (i / (p[1] * p[2])) * p[2] + i % p[2];
{{- end}}
{{- if .Grad}}
    out[i] = {{if .Log}}dy[i] - exp(y[i]) * s1[row]{{else}}y[i] * (dy[i] - s1[row]){{end}};
{{- else}}
    out[i] = {{if .Log}}x[i] - s1[row]{{else}}exp(x[i] - s1[row]) * s2[row]{{end}};
{{- end}}
}
{{template "main_unrolled" .Unroll}}
{{- end}}
