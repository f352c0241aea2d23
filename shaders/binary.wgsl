// The binary family: elementwise functions of two operands x and y, with
// NumPy broadcasting. op_NAME(x, y) is the function named NAME in package
// device; op_NAME_grad0(x, y, g) and op_NAME_grad1(x, y, g) are g times its
// partial derivatives with respect to x and y. The kernel at the end applies
// op_{{.Fn}}{{if ge .Grad 0}}_grad{{.Grad}}{{end}}{{if eq .Scalar 1}} to x, one element, and y{{else if eq .Scalar 2}} to x and y, one element{{else if .Same}} to operands of one shape{{else}} with broadcasting{{end}}.

{{- define "binary_ops"}}
fn op_add(x: f32, y: f32) -> f32 {
    return x + y;
}
fn op_add_grad0(x: f32, y: f32, g: f32) -> f32 {
    return g;
}
fn op_add_grad1(x: f32, y: f32, g: f32) -> f32 {
    return g;
}

fn op_sub(x: f32, y: f32) -> f32 {
    return x - y;
}
fn op_sub_grad0(x: f32, y: f32, g: f32) -> f32 {
    return g;
}
fn op_sub_grad1(x: f32, y: f32, g: f32) -> f32 {
    return -g;
}

fn op_mul(x: f32, y: f32) -> f32 {
    return x * y;
}
fn op_mul_grad0(x: f32, y: f32, g: f32) -> f32 {
    return g * y;
}
fn op_mul_grad1(x: f32, y: f32, g: f32) -> f32 {
    return g * x;
}

// The gradients are PyTorch's, g/y and −g·(x/y)/y: ±Inf or NaN where y = 0.
fn op_div(x: f32, y: f32) -> f32 {
    return x / y;
}
fn op_div_grad0(x: f32, y: f32, g: f32) -> f32 {
    return g / y;
}
fn op_div_grad1(x: f32, y: f32, g: f32) -> f32 {
    return -g * ((x / y) / y);
}

// pow_real (common.wgsl): x^y with IEEE 754's special cases.
fn op_pow(x: f32, y: f32) -> f32 {
    return pow_real(x, y);
}
fn op_pow_grad0(x: f32, y: f32, g: f32) -> f32 {
    return g * y * pow_real(x, y - 1.0);
}
// g·x^y·ln x, and 0 where x ≤ 0.
fn op_pow_grad1(x: f32, y: f32, g: f32) -> f32 {
    return select(g * pow_real(x, y) * log(x), 0.0, x <= 0.0);
}

// ⌊x/y⌋ as PyTorch and Python take it (from x's remainder by y): NaN
// for an infinite x and a y ≠ 0, and −1 for a nonzero finite x whose
// sign differs from an infinite y's.
fn op_floor_divide(x: f32, y: f32) -> f32 {
    var q = floor(x / y);
    if (is_inf(x) && y != 0.0) {
        q = nan();
    }
    if (is_inf(y) && !is_inf(x) && !is_nan(x) && x != 0.0 && (x < 0.0) != (y < 0.0)) {
        q = -1.0;
    }
    return q;
}
fn op_floor_divide_grad0(x: f32, y: f32, g: f32) -> f32 {
    return 0.0;
}
fn op_floor_divide_grad1(x: f32, y: f32, g: f32) -> f32 {
    return 0.0;
}

// The remainder of floor division: the truncated remainder, moved by y
// where its sign differs from y's.
fn op_mod(x: f32, y: f32) -> f32 {
    var r = x - y * trunc(x / y);
    if (is_inf(y) && !is_inf(x)) {
        r = x;
    }
    if (r != 0.0 && (r < 0.0) != (y < 0.0)) {
        r += y;
    }
    return r;
}
fn op_mod_grad0(x: f32, y: f32, g: f32) -> f32 {
    return g;
}
fn op_mod_grad1(x: f32, y: f32, g: f32) -> f32 {
    return -g * floor(x / y);
}

// x where x > 0, else y·x.
fn op_prelu(x: f32, y: f32) -> f32 {
    return select(y * x, x, x > 0.0);
}
fn op_prelu_grad0(x: f32, y: f32, g: f32) -> f32 {
    return select(y * g, g, x > 0.0);
}
fn op_prelu_grad1(x: f32, y: f32, g: f32) -> f32 {
    return select(x * g, 0.0, x > 0.0);
}

// The larger (maximum) or smaller (minimum) of x and y, NaN if either is;
// the gradient g goes to the one chosen, halved between ties, and whole to
// both at NaN, as PyTorch's.
fn op_maximum(x: f32, y: f32) -> f32 {
    return max_nan(x, y);
}
fn op_maximum_grad0(x: f32, y: f32, g: f32) -> f32 {
    return select(select(g, 0.5 * g, x == y), 0.0, x < y);
}
fn op_maximum_grad1(x: f32, y: f32, g: f32) -> f32 {
    return select(select(g, 0.5 * g, x == y), 0.0, x > y);
}

fn op_minimum(x: f32, y: f32) -> f32 {
    return min_nan(x, y);
}
fn op_minimum_grad0(x: f32, y: f32, g: f32) -> f32 {
    return select(select(g, 0.5 * g, x == y), 0.0, x > y);
}
fn op_minimum_grad1(x: f32, y: f32, g: f32) -> f32 {
    return select(select(g, 0.5 * g, x == y), 0.0, x < y);
}

fn op_equal(x: f32, y: f32) -> f32 {
    return select(0.0, 1.0, x == y);
}
fn op_equal_grad0(x: f32, y: f32, g: f32) -> f32 {
    return 0.0;
}
fn op_equal_grad1(x: f32, y: f32, g: f32) -> f32 {
    return 0.0;
}

fn op_squared_difference(x: f32, y: f32) -> f32 {
    let d = x - y;
    return d * d;
}
fn op_squared_difference_grad0(x: f32, y: f32, g: f32) -> f32 {
    return 2.0 * (x - y) * g;
}
fn op_squared_difference_grad1(x: f32, y: f32, g: f32) -> f32 {
    return -2.0 * (x - y) * g;
}

// Binary cross-entropy of probability x against target y, with x clamped to
// [ε, 1 − ε], ε = 2⁻²⁴ = device.BCEClamp (exact in float32); NaN stays NaN.
fn bce_clamp(x: f32) -> f32 {
    return select(clamp(x, 5.9604644775390625e-8, 0.99999994039535522), x, is_nan(x));
}
fn op_bce(x: f32, y: f32) -> f32 {
    let q = bce_clamp(x);
    return -(y * log(q) + (1.0 - y) * log(1.0 - q));
}
fn op_bce_grad0(x: f32, y: f32, g: f32) -> f32 {
    let q = bce_clamp(x);
    return g * (q - y) / (q * (1.0 - q));
}
fn op_bce_grad1(x: f32, y: f32, g: f32) -> f32 {
    let q = bce_clamp(x);
    return g * (log(1.0 - q) - log(q));
}

// Binary cross-entropy of sigmoid(x) against y: (1 − y)·x + softplus(−x)
// (common.wgsl): no overflow, and at x = +∞ the limit +∞ for y < 1 (NaN
// for y = 1, 0·∞), as PyTorch computes it.
fn op_bce_logits(x: f32, y: f32) -> f32 {
    return (1.0 - y) * x + softplus(-x);
}
fn op_bce_logits_grad0(x: f32, y: f32, g: f32) -> f32 {
    return g * (sigmoid_pair(x).x - y);
}
fn op_bce_logits_grad1(x: f32, y: f32, g: f32) -> f32 {
    return -g * x;
}

{{- end}}
{{template "binary_ops"}}
{{template "math"}}

// The kernel over p.N items; p: device/webgpu's {{if .Same}}countParams{{else}}broadcastParams{{end}}.
fn apply(x: f32, y: f32, g: f32) -> f32 {
    return op_{{.Fn}}{{if ge .Grad 0}}_grad{{.Grad}}(x, y, g){{else}}(x, y){{end}};
}
{{- $T := "f32"}}{{$S := "E"}}{{if .Same}}{{$T = "vec4<f32>"}}{{$S = "E4"}}{{end}}
{{- if .Half}}{{$S = "vec4<u32>"}}{{end}}
{{- if .RowVec}}{{$S = "E4"}}{{$T = "vec4<f32>"}}{{end}}
{{- /* Bindings: x, y, g (a gradient's), out; a scalar operand last. */}}
{{- $bx := 1}}{{$by := 2}}{{$bg := 3}}{{$bo := 3}}{{if ge .Grad 0}}{{$bo = 4}}{{end}}
{{- if eq .Scalar 1}}{{$by = 1}}{{$bg = 2}}{{$bo = add $bo -1}}{{$bx = add $bo 1}}{{end}}
{{- if eq .Scalar 2}}{{$bg = 2}}{{$bo = add $bo -1}}{{$by = add $bo 1}}{{end}}
@group(0) @binding({{$bx}}) var<storage, read> x_in: array<{{if .RowVec}}{{if .VecA}}E4{{else}}E{{end}}{{else}}{{$S}}{{end}}>;
@group(0) @binding({{$by}}) var<storage, read> y_in: array<{{if .RowVec}}{{if .VecB}}E4{{else}}E{{end}}{{else}}{{$S}}{{end}}>;
{{- if ge .Grad 0}}
@group(0) @binding({{$bg}}) var<storage, read> g_in: array<{{$S}}>;
{{- end}}
@group(0) @binding({{$bo}}) var<storage, read_write> out: array<{{$S}}>;
{{- if .Half}}

// float16 storage, operands of one shape: each u32 word holds two
// values, unpacked to f32, and the results packed back (p.N counts
// words in vec4s). By vec4s of words the conversions are half4_to_f32
// and f32_to_half4 (common.wgsl), plain vector arithmetic: on llvmpipe
// unpack2x16float and pack2x16float took a fifth of a float16 exp's time
// (0.74 → 0.93 Gelem/s; neg 0.91 → 1.09).
{{template "half4"}}

fn apply4(x: vec4<f32>, y: vec4<f32>, g: vec4<f32>) -> vec4<f32> {
    return vec4<f32>(apply(x.x, y.x, g.x), apply(x.y, y.y, g.y), apply(x.z, y.z, g.z), apply(x.w, y.w, g.w));
}

fn elem(i: u32) {
    let x = x_in[i];
    let y = y_in[i];
    let s = vec4<u32>(16u);
{{- if ge .Grad 0}}
    let g = g_in[i];
    let lo = apply4(half4_to_f32(x), half4_to_f32(y), half4_to_f32(g));
    let hi = apply4(half4_to_f32(x >> s), half4_to_f32(y >> s), half4_to_f32(g >> s));
{{- else}}
    let lo = apply4(half4_to_f32(x), half4_to_f32(y), vec4<f32>(0.0));
    let hi = apply4(half4_to_f32(x >> s), half4_to_f32(y >> s), vec4<f32>(0.0));
{{- end}}
    out[i] = f32_to_half4(lo) | (f32_to_half4(hi) << s);
}
{{- else}}
{{- if or .Same .RowVec}}

fn apply4(x: vec4<f32>, y: vec4<f32>, g: vec4<f32>) -> vec4<f32> {
    return vec4<f32>(apply(x.x, y.x, g.x), apply(x.y, y.y, g.y), apply(x.z, y.z, g.z), apply(x.w, y.w, g.w));
}
{{- end}}
{{- if not .Same}}
{{template "broadcast_offsets" .Rank}}
{{- end}}
{{- if .RowVec}}

// Broadcasting by vec4s along the output's last axis (a multiple of 4
// long): item i is outputs 4i…4i+3 of one row, whose offsets are
// computed once; an operand whole along that axis is read by a vec4,
// one broadcast along it by one element splat (p.N counts vec4s).
fn elem(i: u32) {
    let off = broadcast_offsets(4u * i);
    let x = {{if .VecA}}vec4<f32>(x_in[off.x / 4u]){{else}}vec4<f32>(f32(x_in[off.x])){{end}};
    let y = {{if .VecB}}vec4<f32>(y_in[off.y / 4u]){{else}}vec4<f32>(f32(y_in[off.y])){{end}};
    out[i] = to_e4(apply4(x, y, {{if ge .Grad 0}}vec4<f32>(g_in[i]){{else}}vec4<f32>(0.0){{end}}));
}
{{- else}}

fn elem(i: u32) {
{{- if .Same}}
    let x = {{$T}}({{if eq .Scalar 1}}f32(x_in[0].x){{else}}x_in[i]{{end}});
    let y = {{$T}}({{if eq .Scalar 2}}f32(y_in[0].x){{else}}y_in[i]{{end}});
{{- else}}
    let off = broadcast_offsets(i);
    let x = {{$T}}(x_in[off.x]);
    let y = {{$T}}(y_in[off.y]);
{{- end}}
    out[i] = to_e{{if .Same}}4{{end}}(apply{{if .Same}}4{{end}}(x, y, {{if ge .Grad 0}}{{$T}}(g_in[i]){{else}}{{$T}}(0.0){{end}}));
}
{{- end}}
{{- end}}
{{template "main_unrolled" dict "Count" "p.N" "N" .Unroll "Coalesce" .Coalesce}}
