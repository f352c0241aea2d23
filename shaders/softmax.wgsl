{{- if eq .Stage "row"}}
// The softmax family: {{if .Log}}log_softmax{{else}}softmax{{end}}{{if .Grad}}'s gradient{{end}} along the last axis in one pass: a
// workgroup of {{.W}} invocations a row of p.Quads vec4s (more than {{sub .V 1}}·{{.W}}), each invocation
// holding {{.V}} of them (row entries lid, lid + {{.W}}, …) in registers while the
// workgroup reduces the row's {{if .Grad}}sum{{else}}maximum and sum{{end}} through workgroup memory: every
// input is read once and every exponential taken once. p: device/webgpu's rowsParams.
{{- if .Grad}}
// From the forward output y and the upstream gradient dy: {{if .Log}}dy − exp(y)·Σ dy{{else}}y·(dy − Σ dy·y){{end}}.
@group(0) @binding(1) var<storage, read> y: array<E4>;
@group(0) @binding(2) var<storage, read> dy: array<E4>;
@group(0) @binding(3) var<storage, read_write> out: array<E4>;
{{template "softmax_at" dict "Names" (list "y" "dy") "T" "vec4<f32>"}}
{{- else}}
// Stable: m is the row's maximum, s = Σ exp(x − m); {{if .Log}}x − (m + ln s){{else}}exp(x − m)·(1/s){{end}} is the
// result. A row whose maximum is NaN or infinite (a NaN, a +Inf, or only
// −Inf in it) is NaN throughout, as x − m is NaN somewhere in it: tested
// on the bits, since a compiler may assume floats finite.
@group(0) @binding(1) var<storage, read> x: array<E4>;
@group(0) @binding(2) var<storage, read_write> out: array<E4>;
{{template "softmax_at" dict "Names" (list "x") "T" "vec4<f32>"}}
{{- end}}

{{- $sub := eq .Group "subgroup"}}
var<workgroup> part: array<f32, {{.W}}>;
{{template "row_reduce" dict "Name" "sum" "Doc" "sum" "Combine" "r + part[j]" "W" .W "Sub" $sub "Op" "subgroupAdd"}}
{{- if not .Grad}}
{{template "row_reduce" dict "Name" "max" "Doc" "maximum" "Combine" "max_nan(r, part[j])" "W" .W "Sub" $sub "Op" "subgroupMax"}}
{{- end}}
{{- /* The first .V - 1 vec4s of each invocation lie in the row; "in<v>" tells of the last. */}}
{{- $full := sub .V 1}}

{{template "row_main" dict "Rows" "p.Rows" "W" .W "Quads" "p.Quads" "Sub" $sub}}
{{- range $v := seq .V}}{{$g := ""}}{{if ge $v $full}}{{$g = printf "in%d" $v}}{{end}}
{{- $at := printf "base + %du" (mul $v $.W)}}
{{- if $g}}
    let {{$g}} = lid + {{mul $v $.W}}u < p.Quads;
{{- end}}
{{- if $.Grad}}
{{- if $g}}
    var y{{$v}} = vec4<f32>(0.0);
    var dy{{$v}} = vec4<f32>(0.0);
    if ({{$g}}) {
        y{{$v}} = y_at({{$at}});
        dy{{$v}} = dy_at({{$at}});
    }
{{- else}}
    let y{{$v}} = y_at({{$at}});
    let dy{{$v}} = dy_at({{$at}});
{{- end}}
{{- else}}
{{- if $g}}
    var x{{$v}} = vec4<f32>(-inf());
    if ({{$g}}) {
        x{{$v}} = x_at({{$at}});
    }
{{- else}}
    let x{{$v}} = x_at({{$at}});
{{- end}}
{{- end}}
{{- end}}
{{- if .Grad}}
    var acc = {{if .Log}}dy0{{else}}dy0 * y0{{end}};
{{- range $v := seq .V}}{{if $v}}
    acc += {{if $.Log}}dy{{$v}}{{else}}dy{{$v}} * y{{$v}}{{end}};
{{- end}}{{end}}
    let s = row_sum(acc.x + acc.y + acc.z + acc.w, lid{{if $sub}}, sid, ssize{{end}});
{{- else}}
    var m4 = x0;
{{- range $v := seq .V}}{{if $v}}
    m4 = max_nan4(m4, x{{$v}});
{{- end}}{{end}}
    let m = row_max(max_nan(max_nan(m4.x, m4.y), max_nan(m4.z, m4.w)), lid{{if $sub}}, sid, ssize{{end}});
    let bad = is_nan(m) || is_inf(m);
{{- range $v := seq .V}}{{$g := ""}}{{if ge $v $full}}{{$g = printf "in%d" $v}}{{end}}
    let e{{$v}} = {{if $g}}select(vec4<f32>(0.0), exp(x{{$v}} - vec4<f32>(m)), {{$g}}){{else}}exp(x{{$v}} - vec4<f32>(m)){{end}};
{{- end}}
    var acc = e0;
{{- range $v := seq .V}}{{if $v}}
    acc += e{{$v}};
{{- end}}{{end}}
    let s = row_sum(acc.x + acc.y + acc.z + acc.w, lid{{if $sub}}, sid, ssize{{end}});
{{- if .Log}}
    let c = vec4<f32>(m + log(s));
{{- else}}
    let r = 1.0 / s;
{{- end}}
{{- end}}
    if (!live) {
        return;
    }
{{- range $v := seq .V}}{{$g := ""}}{{if ge $v $full}}{{$g = printf "in%d" $v}}{{end}}
{{- $at := printf "base + %du" (mul $v $.W)}}
{{- $val := ""}}
{{- if $.Grad}}{{if $.Log}}{{$val = printf "dy%d - exp(y%d) * s" $v $v}}{{else}}{{$val = printf "y%d * (dy%d - s)" $v $v}}{{end}}
{{- else}}{{if $.Log}}{{$val = printf "select(x%d - c, vec4<f32>(nan()), bad)" $v}}{{else}}{{$val = printf "select(e%d * r, vec4<f32>(nan()), bad)" $v}}{{end}}{{end}}
{{- if $g}}
    if ({{$g}}) {
        out[{{$at}}] = to_e4({{$val}});
    }
{{- else}}
    out[{{$at}}] = to_e4({{$val}});
{{- end}}
{{- end}}
}
{{- else}}
// The softmax family: {{if .Log}}log_softmax{{else}}softmax{{end}}{{if .Grad}}'s gradient{{end}} along one axis, in two passes:
// "stats" reduces each row to two numbers, one invocation per row, and
// "apply" writes every element from them, one invocation per element{{if .Vec}}
// (here vec4s){{end}}. A row is the axis's p.N elements at stride p.Inner;
// p.Count counts rows (stats) or elements{{if .Vec}}/4{{end}} (apply).
// This pass: {{.Stage}}{{if .Vec}}, over vec4s (inner = 1, n a multiple of 4){{end}}.
{{- $T := "f32"}}{{$S := "E"}}{{$V := ""}}{{if .Vec}}{{$T = "vec4<f32>"}}{{$S = "E4"}}{{$V = "4"}}{{end}}
{{- if .Grad}}
// From the forward output y and the upstream gradient dy: {{if .Log}}dy − exp(y)·Σ dy{{else}}y·(dy − Σ dy·y){{end}};
// the stats are s1 = Σ {{if .Log}}dy{{else}}dy·y{{end}}.
@group(0) @binding(1) var<storage, read> y: array<{{$S}}>;
@group(0) @binding(2) var<storage, read> dy: array<{{$S}}>;
{{template "softmax_at" dict "Names" (list "y" "dy") "T" $T}}
{{- else}}
// Stable: the stats are the row's maximum m and s = Σ exp(x − m), found
// in one sweep that rescales s whenever m grows; {{if .Log}}x − (m + ln s){{else}}exp(x − m)·(1/s){{end}} is the
// result, and the stats pass stores {{if .Log}}s1 = m + ln s{{else}}s1 = m, s2 = 1/s{{end}}. A row whose
// maximum is NaN or infinite is NaN throughout (s1 NaN).
@group(0) @binding(1) var<storage, read> x: array<{{$S}}>;
{{template "softmax_at" dict "Names" (list "x") "T" $T}}
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
@group(0) @binding({{add $b 1}}) var<storage, read_write> out: array<{{$S}}>;
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
{{template "main_1d" "p.Count"}}
    let n = p.N;
    let inner = p.Inner;
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
{{- if .Block}}
    for (var j = 0u; j < len; j += {{.Block}}u) { // len is a multiple of {{.Block}}
{{- range $u := seq .Block}}
        acc += {{if $.Log}}dy_at(base + j + {{$u}}u){{else}}dy_at(base + j + {{$u}}u) * y_at(base + j + {{$u}}u){{end}};
{{- end}}
    }
{{- else}}
    for (var j = 0u; j < len; j++) {
        let k = base + j * step;
        acc += {{if .Log}}dy_at(k){{else}}dy_at(k) * y_at(k){{end}};
    }
{{- end}}
{{- if .Vec}}
    s1[i] = acc.x + acc.y + acc.z + acc.w;
{{- else}}
    s1[i] = acc;
{{- end}}
{{- else}}
    var acc = vec2<f32>(-inf(), 0.0);
{{- if .Block}}
    // {{.Block}} vec4s a step (len is a multiple of {{.Block}}), folded in at once.
    for (var j = 0u; j < len; j += {{.Block}}u) {
{{- range $u := seq .Block}}
        let v{{$u}} = x_at(base + j + {{$u}}u);
{{- end}}
        var m4 = v0;
{{- range $u := seq .Block}}{{if $u}}
        m4 = max_nan4(m4, v{{$u}});
{{- end}}{{end}}
        let vm = max_nan(max_nan(m4.x, m4.y), max_nan(m4.z, m4.w));
        let e = {{range $u := seq .Block}}{{if $u}} + {{end}}exp(v{{$u}} - vec4<f32>(vm)){{end}};
        acc = fold(acc, vm, select(e.x + e.y + e.z + e.w, 0.0, vm == -inf()));
    }
{{- else}}
    for (var j = 0u; j < len; j++) {
        let v = x_at(base + j * step);
{{- if .Vec}}
        let vm = max_nan(max_nan(v.x, v.y), max_nan(v.z, v.w));
        let e = exp(v - vec4<f32>(vm));
        acc = fold(acc, vm, select(e.x + e.y + e.z + e.w, 0.0, vm == -inf()));
{{- else}}
        acc = fold(acc, v, select(1.0, 0.0, v == -inf()));
{{- end}}
    }
{{- end}}
    let bad = is_nan(acc.x) || is_inf(acc.x);
{{- if .Log}}
    s1[i] = select(acc.x + log(acc.y), nan(), bad);
{{- else}}
    s1[i] = select(acc.x, nan(), bad);
    s2[i] = 1.0 / acc.y;
{{- end}}
{{- end}}
}
{{- else}}

// The output at i from its row's stats a = s1[row]{{if $two}} and b = s2[row]{{end}}.
fn value(i: u32, a: f32, b: f32) -> {{$T}} {
{{- if .Grad}}
    return {{if .Log}}dy_at(i) - exp(y_at(i)) * a{{else}}y_at(i) * (dy_at(i) - a){{end}};
{{- else}}
    return select({{if .Log}}x_at(i) - a{{else}}exp(x_at(i) - a) * b{{end}}, {{$T}}(nan()), is_nan(a));
{{- end}}
}
{{- $b := "0.0"}}{{if $two}}{{$b = "s2[row]"}}{{end}}
{{- if .Whole}}

// An invocation's {{.Unroll}} vec4s lie in one row ({{.Quads}} vec4s, a multiple of
// {{.Unroll}}), whose stats it loads once.
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i0 = linear_index(wid, nwg, lid, 256u) * {{.Unroll}}u;
    if (i0 >= p.Count) {
        return;
    }
    let row = i0 / {{.Quads}}u;
    let a = s1[row];
    let b = {{$b}};
{{- range $u := seq .Unroll}}
    out[i0 + {{$u}}u] = to_e{{$V}}(value(i0 + {{$u}}u, a, b));
{{- end}}
}
{{- else}}

fn elem(i: u32) {
{{- if .Vec}}
    let row = i / {{.Quads}}u; // a constant: llvmpipe has no vector division
{{- else}}
    let row = (i / (p.N * p.Inner)) * p.Inner + i % p.Inner;
{{- end}}
    out[i] = to_e{{$V}}(value(i, s1[row], {{$b}}));
}
{{template "main_unrolled" dict "Count" "p.Count" "N" .Unroll "Coalesce" .Coalesce}}
{{- end}}
{{- end}}
{{- end}}

{{- define "softmax_at"}}
{{- $t := .T}}
{{- range .Names}}

fn {{.}}_at(i: u32) -> {{$t}} {
    return {{$t}}({{.}}[i]);
}
{{- end}}
{{- end}}

{{- define "row_reduce"}}
{{- if .Sub}}
{{template "subgroup_reduce" dict "Name" (printf "row_%s" .Name) "Doc" .Doc "Op" .Op "Combine" .Combine "W" .W "T" "f32" "Keep" ""}}
{{- else}}
// The {{.Doc}} of the workgroup's v.
fn row_{{.Name}}(v: f32, lid: u32) -> f32 {
    part[lid] = v;
    workgroupBarrier();
    var r = part[0];
    for (var j = 1u; j < {{.W}}u; j++) {
        r = {{.Combine}};
    }
    workgroupBarrier(); // part is free for the next reduction
    return r;
}
{{- end}}
{{- end}}
