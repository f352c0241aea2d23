// The reduce family. For each reduction NAME of package device, NAME_init()
// is its identity and NAME_combine(acc, v) folds v into acc; the arg
// reductions instead keep the first index whose value NAME_better(v, best)
// says beats the best so far. Max and min propagate NaN; a NaN beats every
// number for argmax and argmin.
//
// p: device/webgpu's reduceParams (strides in x; x holds float16, two to
// a word, where Half is set, or WGSL's f16 where XF16 is; out holds f16
// where OF16 is){{if .Vec}}; here x is rows of contiguous vec4s, p.R =
// vec4s per row and the chunk length p.ChunkLen = {{.Unroll}}·{{.L}} vec4s{{end}}.
// No loop runs more than 16384 times: lavapipe (llvmpipe) silently ends a
// loop after about 32768 iterations, counting those of loops nested in it.
{{- if .Group}}
// The chunked kernels here, workgroups of {{.L}} (lanes), combine a
// workgroup's {{.L}} partial results
// {{if eq .Group "subgroup"}}with subgroup operations, then across subgroups through workgroup
// memory{{else}}through workgroup memory, by halves{{end}}, and write one result a workgroup,
// times the scale p.Scale (1 for a partial result).
{{- end}}

// Each reduction NAME folds values into an accumulator of type NAME_t:
// NAME_init() is the empty one, NAME_add(acc, v) folds value v into acc,
// NAME_combine(a, b) merges two, and NAME_value(acc, s) is the result
// times s; NAME_none() is the value that changes no accumulator. A sum's
// accumulator holds two sums, of the values (x) and of the values times
// 2⁻³² (y), which does not overflow where x does: its result is x where x
// is finite, else y·2³² (there the same Inf or NaN where values are not
// finite, the exact sum, or Inf where that overflows, where only x's
// partial sums overflowed), as the CPU's float64 sum rounded gives (y
// leaves out values below 2⁻⁹⁴: see over_2_32).
alias sum_t = vec2<f32>;
fn sum_none() -> f32 {
    return 0.0;
}
fn sum_init() -> sum_t {
    return sum_t(0.0);
}
fn sum_add(acc: sum_t, v: f32) -> sum_t {
    return acc + sum_t(v, over_2_32(v));
}
// over_2_32 returns v·2⁻³² on the bits, ±0 where |v| < 2⁻⁹⁴ (which no
// sum whose partial sums overflow can tell from 0): a compiler may
// factor the products out of a sum of them (Σ v·2⁻³² into 2⁻³²·Σ v, which
// overflows; llvmpipe does).
fn over_2_32(v: f32) -> f32 {
    let b = bitcast<u32>(v);
    let e = (b >> 23u) & 0xffu;
    let r = select(select(b & 0x80000000u, b - 0x10000000u, e > 32u), b, e == 255u);
    return bitcast<f32>(r);
}
fn sum_combine(a: sum_t, b: sum_t) -> sum_t {
    return a + b;
}
fn sum_value(acc: sum_t, s: f32) -> f32 {
    let finite = (bitcast<u32>(acc.x) & 0x7fffffffu) < 0x7f800000u;
    return select(times_2_32(acc.y * s), acc.x * s, finite);
}
// times_2_32 returns v·2³², on the bits where v is normal: a compiler may
// reorder the product y·s·2³² into y·2³²·s, which overflows (llvmpipe
// does, and lowers ldexp to such a product).
fn times_2_32(v: f32) -> f32 {
    let b = bitcast<u32>(v);
    let e = (b >> 23u) & 0xffu;
    var r = select(b + 0x10000000u, (b & 0x80000000u) | 0x7f800000u, e >= 223u);
    r = select(r, b, e == 255u);
    return select(bitcast<f32>(r), v * 4294967296.0, e == 0u);
}
alias max_t = f32;
fn max_none() -> f32 {
    return -inf();
}
fn max_init() -> max_t {
    return -inf();
}
fn max_add(acc: max_t, v: f32) -> max_t {
    return max_nan(acc, v);
}
fn max_combine(a: max_t, b: max_t) -> max_t {
    return max_nan(a, b);
}

alias min_t = f32;
fn min_none() -> f32 {
    return inf();
}
fn min_init() -> min_t {
    return inf();
}
fn min_add(acc: min_t, v: f32) -> min_t {
    return min_nan(acc, v);
}
fn min_combine(a: min_t, b: min_t) -> min_t {
    return min_nan(a, b);
}
{{- if ne .Op "sum"}}
fn {{.Op}}_value(acc: f32, s: f32) -> f32 {
    return acc * s;
}
{{- end}}

fn argmax_better(v: f32, best: f32) -> bool {
    return !is_nan(best) && (is_nan(v) || v > best);
}

fn argmin_better(v: f32, best: f32) -> bool {
    return !is_nan(best) && (is_nan(v) || v < best);
}
{{- $t := printf "%s_t" .Op}}
{{- if eq .Group "subgroup"}}

// The subgroups' results, by subgroup (subgroups of at least 4).
var<workgroup> part: array<{{$t}}, {{.L}}>;

{{template "subgroup_reduce" dict "Name" "group_reduce" "Doc" "combined accumulator" "Op" .SubgroupOp "Combine" (printf "%s_combine(r, part[j])" .Op) "W" .L "T" $t "Keep" (printf "%s_keep_nan" .Op)}}

// {{.Op}}_keep_nan returns s, the subgroup's combined accumulator, NaN
// where an invocation's v is (in each of a sum's two sums).
{{- if eq .Op "sum"}}
fn sum_keep_nan(s: sum_t, v: sum_t) -> sum_t {
    return select(s, sum_t(nan()), vec2<bool>(subgroupAny(is_nan(v.x)), subgroupAny(is_nan(v.y))));
}
{{- else}}
fn {{.Op}}_keep_nan(s: f32, v: f32) -> f32 {
    return select(s, nan(), subgroupAny(is_nan(v)));
}
{{- end}}
{{- else if eq .Group "workgroup"}}

var<workgroup> part: array<{{$t}}, {{.L}}>;

// group_reduce returns the workgroup's combined accumulator v to every
// invocation, by halves through part.
fn group_reduce(v: {{$t}}, lid: u32) -> {{$t}} {
    part[lid] = v;
    workgroupBarrier();
    for (var s = {{div .L 2}}u; s > 0u; s >>= 1u) {
        if (lid < s) {
            part[lid] = {{.Op}}_combine(part[lid], part[lid + s]);
        }
        workgroupBarrier();
    }
    return part[0];
}
{{- end}}
{{- if eq .Stage 2}}
// Stage 2 of an arg reduction: x holds stage 1's best values, idxs their indices.
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> idxs: array<i32>;
@group(0) @binding(3) var<storage, read_write> out: array<i32>;
{{- else}}
{{- $x := "f32"}}{{if .XF16}}{{$x = "f16"}}{{end}}
@group(0) @binding(1) var<storage, read> x: array<{{if .Acc}}{{$t}}{{else if .Vec}}vec4<{{$x}}>{{else if .Half}}u32{{else}}{{$x}}{{end}}>;
@group(0) @binding(2) var<storage, read_write> out: array<{{if .Arg}}i32{{else if .Partial}}{{$t}}{{else if .OF16}}f16{{else}}f32{{end}}>;
{{- if eq .Stage 1}}
@group(0) @binding(3) var<storage, read_write> vals_out: array<f32>;
{{- end}}
{{- end}}

{{- if not .Vec}}

{{template "reduce_offsets" .}}

{{- if .Acc}}

// fold folds into acc the r-th reduced accumulator of output o's slice,
// starting at base (x holds a previous pass's accumulators).
fn fold(acc: {{$t}}, base: u32, r: u32) -> {{$t}} {
    return {{.Op}}_combine(acc, x[offset(base, r)]);
}
{{- else}}

{{template "at" dict "Name" "x" "Half" .Half}}

// at returns the r-th reduced element of output o's slice, starting at base.
fn at(base: u32, r: u32) -> f32 {
    return x_at(offset(base, r));
}
{{- if not .Arg}}

// fold folds into acc the r-th reduced element of output o's slice,
// starting at base.
fn fold(acc: {{$t}}, base: u32, r: u32) -> {{$t}} {
    return {{.Op}}_add(acc, at(base, r));
}
{{- end}}
{{- end}}
{{- end}}
{{if .Vec}}
{{- $n := .Unroll}}{{$step := 1}}{{if .Coalesce}}{{$step = .L}}{{end}}
// One workgroup per (output o, chunk c), invocation t of it folding {{$n}}
// of the chunk's vec4s (those inside the row), in straight-line code
// (loops are slow on CPU adapters), p.N = outputs·chunks·{{.L}}; the
// workgroup combines them into out[o·chunks + c]. Another pass reduces
// the partials.
{{- if .Coalesce}}
// Here (GPUs) they are vec4s t, t + {{.L}}, …: neighbouring invocations
// read neighbouring vec4s together.
{{- else}}
// Here (CPU adapters) they are the run {{$n}}t, {{$n}}t + 1, …: a run of
// consecutive vec4s an invocation is faster on llvmpipe than vec4s 256
// apart (docs/kernel-choices.md, reductions).
{{- end}}
// A vec4's accumulators, a lane each.
struct acc4 {
    x: {{$t}},
    y: {{$t}},
    z: {{$t}},
    w: {{$t}},
}

fn add4(a: acc4, v: vec4<f32>) -> acc4 {
    return acc4({{.Op}}_add(a.x, v.x), {{.Op}}_add(a.y, v.y), {{.Op}}_add(a.z, v.z), {{.Op}}_add(a.w, v.w));
}

{{template "main_group" .}}
    let o = w / p.Chunks;
    let first = (w % p.Chunks) * p.ChunkLen + lid{{if not .Coalesce}} * {{$n}}u{{end}};
    let row = o * p.R;
    let last = p.R - 1u;
    let none = vec4<f32>({{.Op}}_none());
    var acc = acc4({{.Op}}_init(), {{.Op}}_init(), {{.Op}}_init(), {{.Op}}_init());
    if (first + {{mul (sub $n 1) $step}}u <= last) {
        // All of them lie inside the row: no bounds to check.
{{- range seq .Unroll}}
        acc = add4(acc, vec4<f32>(x[row + first + {{mul . $step}}u]));
{{- end}}
    } else {
{{- range seq .Unroll}}
        acc = add4(acc, select(none, vec4<f32>(x[row + min(first + {{mul . $step}}u, last)]), first + {{mul . $step}}u <= last));
{{- end}}
    }
    {{template "group_store" dict "Group" .Group "V" (printf "%s_combine(%s_combine(acc.x, acc.y), %s_combine(acc.z, acc.w))" .Op .Op .Op) "OF16" .OF16 "Op" .Op "Partial" .Partial}}
}
{{- else if .Chunks}}
// One workgroup per (output o, chunk c), p.N = outputs·chunks·{{.L}}:
// invocation t reduces the chunk's elements t, t + {{.L}}, t + {{mul .L 2}}, …, so
// that neighbouring invocations read neighbouring elements, and the
// workgroup combines them into out[o·chunks + c]. The partial results
// are reduced by another pass.
{{template "main_group" .}}
    let chunks = p.Chunks;
    let o = w / chunks;
    let c = w % chunks;
    let base = base_offset(o);
    let end = min(p.R, (c + 1u) * p.ChunkLen);
    var acc = {{.Op}}_init();
    for (var r = c * p.ChunkLen + lid; r < end; r += {{.L}}u) {
        acc = fold(acc, base, r);
    }
    {{template "group_store" dict "Group" .Group "V" "acc" "OF16" .OF16 "Op" .Op "Partial" .Partial}}
}
{{- else}}
// One invocation per output o.
{{template "main_1d" "p.N"}}
    let o = i;
    let base = base_offset(o);
    let count = p.R;
{{- if .Arg}}
    // Arg reductions run in one or two stages: stage 1 writes each chunk's
    // best value and its index (p.Chunks chunks of p.ChunkLen),
    // stage 2 picks among the chunks.
{{- if eq .Stage 2}}
    var best = x[o * count];
    var idx = 0u;
    for (var r = 1u; r < count; r++) {
        let v = x[o * count + r];
        if ({{.Op}}_better(v, best)) {
            best = v;
            idx = r;
        }
    }
    out[o] = idxs[o * count + idx];
{{- else}}
{{- if eq .Stage 1}}
    let chunks = p.Chunks;
    let start = (o % chunks) * p.ChunkLen;
    let end = min(count, start + p.ChunkLen);
    let b = base_offset(o / chunks);
{{- else}}
    let start = 0u;
    let end = count;
    let b = base;
{{- end}}
    var best = at(b, start);
    var idx = start;
    for (var r = start + 1u; r < end; r++) {
        let v = at(b, r);
        if ({{.Op}}_better(v, best)) {
            best = v;
            idx = r;
        }
    }
{{- if eq .Stage 1}}
    vals_out[o] = best;
{{- end}}
    out[o] = i32(idx);
{{- end}}
{{- else}}
    var acc = {{.Op}}_init();
    for (var r = 0u; r < count; r++) {
        acc = fold(acc, base, r);
    }
    {{- template "store" dict "At" "o" "V" "acc" "OF16" .OF16 "Op" .Op "Partial" false}}
{{- end}}
}
{{- end}}

{{- define "main_group"}}
// Entry point of a chunked kernel: workgroup w < p.N/{{.L}} of {{.L}}
// invocations, lid of it the lane (workgroups spread over x and y;
// the ones past the end return together, so that the rest may meet at
// barriers).
@compute @workgroup_size({{.L}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32{{if eq .Group "subgroup"}},
        @builtin(subgroup_invocation_id) sid: u32, @builtin(subgroup_size) ssize: u32{{end}}) {
    let w = wid.y * nwg.x + wid.x;
    if (w >= p.N / {{.L}}u) {
        return;
    }
{{- end}}

{{- define "group_store"}}
{{- if eq .Group "subgroup"}}
    let t = group_reduce({{.V}}, lid, sid, ssize);
{{- else}}
    let t = group_reduce({{.V}}, lid);
{{- end}}
    if (lid == 0u) {
        {{- template "store" dict "At" "w" "V" "t" "OF16" .OF16 "Op" .Op "Partial" .Partial}}
    }
{{- end}}

{{- define "store"}}
{{- if .Partial}}
    out[{{.At}}] = {{.V}};
{{- else}}
    out[{{.At}}] = {{if .OF16}}to_e({{.Op}}_value({{.V}}, p.Scale)){{else}}{{.Op}}_value({{.V}}, p.Scale){{end}};
{{- end}}
{{- end}}
