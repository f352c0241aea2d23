{{/* Blocks shared by several kernels; this file is no kernel itself. */}}
{{- define "udiv"}}
// The high word of the 64-bit product a·b.
fn mulhi(a: u32, b: u32) -> u32 {
    let a0 = a & 0xffffu;
    let a1 = a >> 16u;
    let b0 = b & 0xffffu;
    let b1 = b >> 16u;
    let p01 = a0 * b1;
    let p10 = a1 * b0;
    let mid = ((a0 * b0) >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
    return a1 * b1 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u);
}

// udiv returns ⌊n / d⌋ for any n, given d > 0 and its magic number m
// (computed by the host: ⌊2³²·(2^l − d) / d⌋ + 1, l = ⌈log₂ d⌉), by
// multiplications and shifts: llvmpipe has no vector integer division and
// divides lane by lane, which made index arithmetic the cost of strided
// kernels (Granlund and Montgomery, "Division by invariant integers using
// multiplication", 1994).
fn udiv(n: u32, d: u32, m: u32) -> u32 {
    let t = mulhi(n, m);
    let l = 32u - countLeadingZeros(d - 1u);
    return (t + ((n - t) >> min(l, 1u))) >> (max(l, 1u) - 1u);
}
{{- end}}

{{- define "broadcast_offsets"}}
{{template "udiv"}}

// Offsets into a and b of output element i, from the broadcast parameters
// (device/webgpu's broadcastParams): the output shape p.Shape of rank {{.}}
// (unrolled: loops and indexing by a variable are slow on llvmpipe), the
// strides p.AStrides and p.BStrides, the shape's magic numbers p.Magic
// (udiv).
fn broadcast_offsets(i: u32) -> vec2<u32> {
    var rem = i;
    var ia = 0u;
    var ib = 0u;
{{- range $k := rseq .}}
{{- if $k}}
    let q{{$k}} = udiv(rem, p.Shape[{{$k}}], p.Magic[{{$k}}]);
    let c{{$k}} = rem - q{{$k}} * p.Shape[{{$k}}];
    rem = q{{$k}};
    ia += c{{$k}} * p.AStrides[{{$k}}];
    ib += c{{$k}} * p.BStrides[{{$k}}];
{{- else}}
    ia += rem * p.AStrides[0];
    ib += rem * p.BStrides[0];
{{- end}}
{{- end}}
    return vec2<u32>(ia, ib);
}
{{- end}}

{{- define "unravel"}}
{{- /* Adds to var the offset of rem's coordinates in a shape of rank
.Rank, the parameters' field .Shape, with strides .Strides and magic
numbers .Magic, unrolled. */}}
{{- $d := .}}
{{- range $k := rseq .Rank}}
{{- if $k}}
    let q{{$k}} = udiv(rem, p.{{$d.Shape}}[{{$k}}], p.{{$d.Magic}}[{{$k}}]);
    {{$d.Var}} += (rem - q{{$k}} * p.{{$d.Shape}}[{{$k}}]) * p.{{$d.Strides}}[{{$k}}];
    rem = q{{$k}};
{{- else}}
    {{$d.Var}} += rem * p.{{$d.Strides}}[0];
{{- end}}
{{- end}}
{{- end}}

{{- define "reduce_offsets"}}
{{template "udiv"}}

// Offset in x of reduced element r, from the reduced shape p.RedShape (of
// rank {{.Red}}, unrolled), strides p.RedStrides and magic numbers
// p.RedMagic (udiv).
fn offset(base: u32, r: u32) -> u32 {
    var rem = r;
    var off = base;
{{- template "unravel" dict "Rank" .Red "Shape" "RedShape" "Strides" "RedStrides" "Magic" "RedMagic" "Var" "off"}}
    return off;
}

// Offset in x of the first element reduced into output o, from the kept
// shape p.KeptShape (of rank {{.Kept}}, unrolled), strides p.KeptStrides
// and magic numbers p.KeptMagic.
fn base_offset(o: u32) -> u32 {
    var rem = o;
    var base = 0u;
{{- template "unravel" dict "Rank" .Kept "Shape" "KeptShape" "Strides" "KeptStrides" "Magic" "KeptMagic" "Var" "base"}}
    return base;
}
{{- end}}

{{- define "index_check"}}
// The device's index flags, at binding {{.}}: [0] counts indices outside
// [0, classes), [1] holds the first one reported (i32 bits), [2] the
// class count and [3] the site (the op) that passed them; the host reads
// and clears them at the next readback or Sync.
@group(0) @binding({{.}}) var<storage, read_write> flags: array<atomic<u32>, 4>;

// check_index reports k if it is outside [0, c), and returns whether it
// is inside. site is the dispatch's site id.
fn check_index(k: i32, c: u32, site: u32) -> bool {
    if (k >= 0 && u32(k) < c) {
        return true;
    }
    if (atomicAdd(&flags[0], 1u) == 0u) {
        atomicStore(&flags[1], bitcast<u32>(k));
        atomicStore(&flags[2], c);
        atomicStore(&flags[3], site);
    }
    return false;
}
{{- end}}

{{- define "softmax_row"}}
// The maximum and the sum of exp(x - max) of a row of c logits.
fn row_stats(row: u32, c: u32) -> vec2<f32> {
    var m = f32(logits[row]);
    for (var j = 1u; j < c; j++) {
        m = max(m, f32(logits[row + j]));
    }
    var s = 0.0;
    for (var j = 0u; j < c; j++) {
        s += exp(f32(logits[row + j]) - m);
    }
    return vec2<f32>(m, s);
}
{{- end}}


{{- define "math"}}
// sigmoid(x) and sigmoid(−x) from e^−|x|, which cannot overflow.
fn sigmoid_pair(x: f32) -> vec2<f32> {
    let e = exp(-abs(x));
    let big = 1.0 / (1.0 + e);
    let small = e / (1.0 + e);
    return select(vec2<f32>(small, big), vec2<f32>(big, small), x >= 0.0);
}

// ln(1 + u) for 0 ≤ u ≤ 1, to float32's relative precision near 0 (WGSL
// bounds log's error only absolutely near 1): below 1/16 the series to
// u⁶, within u⁷/7 ≤ 9e-9 relative.
fn log1p_unit(u: f32) -> f32 {
    let series = u * (1.0 - u * (0.5 - u * (0.33333334 - u * (0.25 - u * (0.2 - u * 0.16666667)))));
    return select(log(1.0 + u), series, u < 0.0625);
}

// softplus(z) = ln(1 + e^z) = max(z, 0) + ln(1 + e^−|z|): no overflow,
// and e^z's small values kept far below 0.
fn softplus(z: f32) -> f32 {
    return max(z, 0.0) + log1p_unit(exp(-abs(z)));
}

// eˣ − 1 for x ≤ 0, to float32's relative precision near 0: above −1/4
// the series to x⁶, within x⁷/5040 ≤ 6e-8 relative.
fn expm1_neg(x: f32) -> f32 {
    let series = x * (1.0 + x * (0.5 + x * (0.16666667 + x * (0.041666668 + x * (0.008333334 + x * 0.0013888889)))));
    return select(exp(x) - 1.0, series, x > -0.25);
}

// x^y for real x and y with the special cases of IEEE 754's pow (as Go's
// math.Pow): a negative base with an integer exponent is defined, with any
// other exponent NaN.
fn pow_real(x: f32, y: f32) -> f32 {
    if (y == 0.0 || x == 1.0) {
        return 1.0;
    }
    if (is_nan(x) || is_nan(y)) {
        return nan();
    }
    let ax = abs(x);
    if (is_inf(y)) {
        if (ax == 1.0) {
            return 1.0;
        }
        return select(0.0, inf(), (ax > 1.0) == (y > 0.0));
    }
    let integer = floor(y) == y;
    let odd = integer && abs(y) < 16777216.0 && fract(y * 0.5) != 0.0;
    var r: f32;
    if (ax == 0.0 || is_inf(x)) {
        r = select(0.0, inf(), (ax == 0.0) == (y < 0.0));
    } else {
        if (x < 0.0 && !integer) {
            return nan();
        }
        r = exp2(y * log2(ax));
    }
    return select(r, -r, odd && sign_bit(x));
}
{{- end}}

{{- define "main_unrolled"}}
// Entry point of an elementwise kernel: {{.N}} elements an invocation (fewer
// invocations for llvmpipe to schedule, 8 to a SIMD batch, for the same
// loads), below {{.Count}}.
{{- if .Coalesce}} Workgroup w calls elem(i) for
// i = {{.N}}·256w + l, + l + 256, …, invocation l's: neighbouring invocations
// read neighbouring items, as GPUs coalesce loads (slower on llvmpipe;
// docs/kernel-choices.md, elementwise).
{{- else}} Invocation k calls elem(i) for i = {{.N}}k…:
// llvmpipe's fastest order.
{{- end}}
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
{{- if .Coalesce}}
    let i0 = linear_index(wid, nwg, 0u, 256u) * {{.N}}u + lid;
{{- range $u := seq .N}}
    if (i0 + {{mul $u 256}}u < {{$.Count}}) {
        elem(i0 + {{mul $u 256}}u);
    }
{{- end}}
{{- else}}
    let i0 = linear_index(wid, nwg, lid, 256u) * {{.N}}u;
{{- range $u := seq .N}}
    if (i0 + {{$u}}u < {{$.Count}}) {
        elem(i0 + {{$u}}u);
    }
{{- end}}
{{- end}}
}
{{- end}}

{{- define "main_1d_count"}}
{{- /* . is the count: an expression of the parameters. */}}
// Entry point of a kernel with one invocation per element e < {{.}}, over
// workgroups of 256 spread over x and y.
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let e = linear_index(wid, nwg, lid, 256u);
    if (e >= {{.}}) {
        return;
    }
{{- end}}

{{- define "entry_64"}}
// Entry point over workgroups of 64 spread over x and y; {{.}} is the
// invocation's linear index.
@compute @workgroup_size(64, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let {{.}} = linear_index(wid, nwg, lid, 64u);
{{- end}}

{{- define "row_main"}}
// Entry point of a kernel with one workgroup of {{.W}} a row of {{.Quads}}
// vec4s ({{.Rows}} rows; both expressions of the parameters), over x and
// y: row is the workgroup's row, live
// whether it is one (the grid may hold a few workgroups past the last
// row: they compute it again and store nothing, as every invocation must
// reach the barriers), base the invocation's first vec4.
@compute @workgroup_size({{.W}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32{{if .Sub}}, @builtin(subgroup_invocation_id) sid: u32, @builtin(subgroup_size) ssize: u32{{end}}) {
    let row = wid.y * nwg.x + wid.x;
    let live = row < {{.Rows}};
    let base = min(row, {{.Rows}} - 1u) * {{.Quads}} + lid;
{{- end}}

{{- define "main_1d"}}
{{- /* . is the count: an expression of the parameters. */}}
// Entry point of a kernel with one invocation per element i < {{.}}, over
// workgroups of 256 spread over x and y.
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = linear_index(wid, nwg, lid, 256u);
    if (i >= {{.}}) {
        return;
    }
{{- end}}

{{- define "matmul_out"}}
{{- if .VecO}}
// out is float{{if .Half}}16, written four at a time as vec2<u32>s{{else}}32, written as vec4s{{end}} (N and the
// output's offset are multiples of 4).
@group(0) @binding(3) var<storage, read_write> out: array<{{if .Half}}vec2<u32>{{else}}E4{{end}}>;
{{template "vec4_at" dict "Name" "out" "Half" .Half}}

fn set_out_v(i: u32, v: vec4<f32>) {
{{- if .Half}}
    out[i] = vec2<u32>(pack_half2(v.xy), pack_half2(v.zw));
{{- else}}
    out[i] = to_e4(v);
{{- end}}
}
{{- else if .Half}}
// out holds float16, two to a word, and a word may hold the elements of
// two invocations: each reads and writes its half with atomics.
@group(0) @binding(3) var<storage, read_write> out: array<atomic<u32>>;

fn out_at(i: u32) -> f32 {
    return unpack2x16float(atomicLoad(&out[i >> 1u]))[i & 1u];
}

fn set_out(i: u32, v: f32) {
    let shift = (i & 1u) * 16u;
    atomicAnd(&out[i >> 1u], ~(0xffffu << shift));
    atomicOr(&out[i >> 1u], (pack_half2(vec2<f32>(v, 0.0)) & 0xffffu) << shift);
}
{{- else}}
@group(0) @binding(3) var<storage, read_write> out: array<E>;

fn out_at(i: u32) -> f32 {
    return f32(out[i]);
}

fn set_out(i: u32, v: f32) {
    out[i] = to_e(v);
}
{{- end}}
{{- end}}

{{- define "matmul_store"}}
{{- /* The products' epilogue: stores the TM×TN block of accumulators
       acc{i}_{j} (vec4s of 4 columns) at rows row0…, columns col0… of the
       M×N matrix at zo in out, its rows Ld (an expression) apart, adding
       to it where add, and with Bias the vec4s bias{j} (VecO). */}}
{{- range $i := seq .TM}}
    if (row0 + {{$i}}u < M) {
        let o{{$i}} = zo + (row0 + {{$i}}u) * {{$.Ld}} + col0;
{{- if $.VecO}}
{{- range $j := seq (div $.TN 4)}}
        if (col0 + {{mul $j 4}}u < N) {
            let q = o{{$i}} / 4u + {{$j}}u;
            var v = acc{{$i}}_{{$j}};
{{- if $.Bias}}
            v += bias{{$j}};
{{- end}}
            if (add) {
                v += out_v(q);
            }
            set_out_v(q, v);
        }
{{- end}}
{{- else}}
{{- range $j := seq (div $.TN 4)}}{{range $c := seq 4}}
        if (col0 + {{add (mul $j 4) $c}}u < N) {
            var v = acc{{$i}}_{{$j}}[{{$c}}];
            if (add) {
                v += out_at(o{{$i}} + {{add (mul $j 4) $c}}u);
            }
            set_out(o{{$i}} + {{add (mul $j 4) $c}}u, v);
        }
{{- end}}{{end}}
{{- end}}
    }
{{- end}}
{{- end}}

{{- define "vec4_at"}}
// Elements 4i…4i+3 of {{.Name}}{{if .Half}}: float16, four to a vec2<u32>{{end}}.
fn {{.Name}}_v(i: u32) -> vec4<f32> {
{{- if .Half}}
    let w = {{.Name}}[i];
    return vec4<f32>(unpack2x16float(w.x), unpack2x16float(w.y));
{{- else}}
    return vec4<f32>({{.Name}}[i]);
{{- end}}
}
{{- end}}

{{- define "at"}}
// Element i of {{.Name}}{{if .Half}}: float16, two to a word{{end}}.
fn {{.Name}}_at(i: u32) -> f32 {
{{- if .Half}}
    return unpack2x16float({{.Name}}[i >> 1u])[i & 1u];
{{- else}}
    return f32({{.Name}}[i]);
{{- end}}
}
{{- end}}

{{- define "half4"}}
// Four float16 values (the low halves of h) as float32, exactly: on the
// bits for normal numbers, Inf and NaN (quiet, its payload kept), by an
// exact product for subnormals; no branches. The cast kernel's from_half,
// four at a time.
fn half4_to_f32(h: vec4<u32>) -> vec4<f32> {
    let em = h & vec4<u32>(0x7fffu);
    var f = bitcast<vec4<f32>>((em << vec4<u32>(13u)) + vec4<u32>(0x38000000u));
    f = select(f, vec4<f32>(em) * 5.9604644775390625e-8, em < vec4<u32>(0x400u));
    let quiet = select(vec4<u32>(0u), vec4<u32>(0x400000u), em > vec4<u32>(0x7c00u));
    f = select(f, bitcast<vec4<f32>>((em << vec4<u32>(13u)) | vec4<u32>(0x7f800000u) | quiet), em >= vec4<u32>(0x7c00u));
    return bitcast<vec4<f32>>(bitcast<vec4<u32>>(f) | ((h & vec4<u32>(0x8000u)) << vec4<u32>(16u)));
}

// Four float32 values as float16 bits (in the low halves), rounded to
// nearest even, past 65504 to ±Inf, NaN kept (quiet, the payload's top
// bits kept); no branches: the cast kernel's to_half, four at a time. A
// value below 2⁻¹⁴ rounds by the float addition of ½, whose rounding is
// the subnormal half's (a float32 subnormal flushed to 0 by the adapter
// rounds to 0 either way).
fn f32_to_half4(f: vec4<f32>) -> vec4<u32> {
    let bits = bitcast<vec4<u32>>(f);
    let sign = (bits >> vec4<u32>(16u)) & vec4<u32>(0x8000u);
    let u = bits & vec4<u32>(0x7fffffffu);
    let nan = vec4<u32>(0x7e00u) | ((u >> vec4<u32>(13u)) & vec4<u32>(0x3ffu));
    let big = select(vec4<u32>(0x7c00u), nan, u > vec4<u32>(0x7f800000u));
    let small = bitcast<vec4<u32>>(bitcast<vec4<f32>>(u) + 0.5) - vec4<u32>(0x3f000000u);
    let normal = (u + vec4<u32>(0xc8000fffu) + ((u >> vec4<u32>(13u)) & vec4<u32>(1u))) >> vec4<u32>(13u);
    let h = select(select(normal, small, u < vec4<u32>(0x38800000u)), big, u >= vec4<u32>(0x47800000u));
    return sign | h;
}
{{- end}}

{{- define "subgroup_reduce"}}
// {{.Name}} returns the {{.Doc}} of the workgroup's v to every invocation:
// a subgroup operation, a NaN kept by hand (a subgroup's max or min may
// skip it), then the subgroups' results through part, which it leaves
// free for another reduction. .Combine folds part[j] into r; v is of
// type .T, whose NaNs .Keep(s, v) keeps (if unset, the test for f32s).
{{- $t := .T}}
fn {{.Name}}(v: {{$t}}, lid: u32, sid: u32, ssize: u32) -> {{$t}} {
{{- if .Keep}}
    let s = {{.Keep}}({{.Op}}(v), v);
{{- else}}
    let s = select({{.Op}}(v), nan(), subgroupAny(is_nan(v)));
{{- end}}
    if (sid == 0u) {
        part[lid / ssize] = s;
    }
    workgroupBarrier();
    var r = part[0];
    for (var j = 1u; j < ({{.W}}u + ssize - 1u) / ssize; j++) {
        r = {{.Combine}};
    }
    workgroupBarrier();
    return r;
}
{{- end}}

{{- define "norm_scale"}}
// norm_scale returns the power of two 2⁻ᵉ that takes a row of largest
// magnitude m into [½, 1) (m = 0: 2⁴⁰; m not finite: 1), e within
// [−40, 126], so that the scale and eps·scale² stay normal: rows of the
// norm family are summed scaled by it, and their sums of squares neither
// overflow nor underflow.
fn norm_scale(m: f32) -> f32 {
    let eb = i32((bitcast<u32>(m) >> 23u) & 0xffu);
    let e = select(clamp(eb - 126, -40, 126), 0, eb == 255);
    return bitcast<f32>(u32(127 - e) << 23u);
}
{{- end}}
