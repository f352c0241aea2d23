// The unary family: elementwise functions of one operand x with scalar
// parameters a and b (p.A and p.B: device/webgpu's unaryParams). op_NAME(x, a, b) is the function named
// NAME in package device; op_NAME_grad(x, g, a, b) is g times its
// derivative at x. The kernel at the end applies op_{{.Fn}}{{if .Grad}}_grad{{end}} to every
// element, mapping NaN to NaN.

{{- define "unary_ops"}}
fn op_neg(x: f32, a: f32, b: f32) -> f32 {
    return -x;
}
fn op_neg_grad(x: f32, g: f32, a: f32, b: f32) -> f32 {
    return -g;
}

fn op_exp(x: f32, a: f32, b: f32) -> f32 {
    return exp(x);
}
fn op_exp_grad(x: f32, g: f32, a: f32, b: f32) -> f32 {
    return g * exp(x);
}

// log_edge is a logarithm's value at 0, below 0 and at +∞.
fn log_edge(x: f32) -> f32 {
    if (x == 0.0) {
        return -inf();
    }
    return select(x, nan(), x < 0.0);
}
fn log_defined(x: f32) -> bool {
    return x > 0.0 && !is_inf(x);
}
// The gradients of the logarithms: g/(x·ln(base)), ±Inf or NaN at 0.
fn log_grad(x: f32, g: f32, ln_base: f32) -> f32 {
    return g / (x * ln_base);
}

fn op_log(x: f32, a: f32, b: f32) -> f32 {
    return select(log_edge(x), log(x), log_defined(x));
}
fn op_log_grad(x: f32, g: f32, a: f32, b: f32) -> f32 {
    return log_grad(x, g, 1.0);
}

fn op_log2(x: f32, a: f32, b: f32) -> f32 {
    return select(log_edge(x), log2(x), log_defined(x));
}
fn op_log2_grad(x: f32, g: f32, a: f32, b: f32) -> f32 {
    return log_grad(x, g, 0.6931471805599453);
}

fn op_log10(x: f32, a: f32, b: f32) -> f32 {
    return select(log_edge(x), log2(x) * 0.30102999566398120, log_defined(x));
}
fn op_log10_grad(x: f32, g: f32, a: f32, b: f32) -> f32 {
    return log_grad(x, g, 2.302585092994046);
}

fn op_sqrt(x: f32, a: f32, b: f32) -> f32 {
    return select(sqrt(x), nan(), x < 0.0);
}
// g/(2√x): ±Inf or NaN at 0.
fn op_sqrt_grad(x: f32, g: f32, a: f32, b: f32) -> f32 {
    return g / (2.0 * op_sqrt(x, a, b));
}

fn op_abs(x: f32, a: f32, b: f32) -> f32 {
    return abs(x);
}
// g·sign(x), and 0 at 0.
fn op_abs_grad(x: f32, g: f32, a: f32, b: f32) -> f32 {
    return select(select(-g, g, x > 0.0), 0.0, x == 0.0);
}

fn op_sign(x: f32, a: f32, b: f32) -> f32 {
    return select(select(-1.0, 1.0, x > 0.0), 0.0, x == 0.0);
}
fn op_sign_grad(x: f32, g: f32, a: f32, b: f32) -> f32 {
    return 0.0;
}

// sin_cos returns sin x, or cos x where c, to about float32's precision
// for |x| ≤ 8192 (beyond, WGSL's own): x less the nearest even multiple j
// of π/4, π/4 in three parts whose products with j are exact (Cody and
// Waite; Cephes' sinf constants), then the polynomial of sin or cos on
// [-π/4, π/4] that the quadrant calls for, negated in quadrants 2 and 3
// (and sin for x < 0). WGSL bounds its sin and cos only absolutely, by
// 2^-11 on [-π, π]: Chromium's SwiftShader was 1.9e-4 off, and the H100's
// sin through Vulkan returned 0 for |x| < 1e-6.
fn sin_cos(x: f32, c: bool) -> f32 {
    let ax = abs(x);
    var j = u32(ax * 1.2732395447351628);
    j += j & 1u;
    let y = f32(j);
    let r = ((ax - y * 0.78515625) - y * 2.4187564849853515625e-4) - y * 3.77489497744594108e-8;
    let q = ((j >> 1u) + select(0u, 1u, c)) & 3u;
    let z = r * r;
    let s = ((-1.9515295891e-4 * z + 8.3321608736e-3) * z - 1.6666654611e-1) * z * r + r;
    let k = ((2.443315711809948e-5 * z - 1.388731625493765e-3) * z + 4.166664568298827e-2) * z * z - 0.5 * z + 1.0;
    let flip = select(0u, 0x80000000u, q >= 2u) ^ select(bitcast<u32>(x) & 0x80000000u, 0u, c);
    let v = bitcast<f32>(bitcast<u32>(select(s, k, (q & 1u) == 1u)) ^ flip);
    let builtin = select(sin(x), cos(x), c);
    return select(select(v, builtin, ax > 8192.0), nan(), is_inf(x));
}

fn op_sin(x: f32, a: f32, b: f32) -> f32 {
    return sin_cos(x, false);
}
fn op_sin_grad(x: f32, g: f32, a: f32, b: f32) -> f32 {
    return g * sin_cos(x, true);
}

fn op_cos(x: f32, a: f32, b: f32) -> f32 {
    return sin_cos(x, true);
}
fn op_cos_grad(x: f32, g: f32, a: f32, b: f32) -> f32 {
    return -g * sin_cos(x, false);
}

fn op_ceil(x: f32, a: f32, b: f32) -> f32 {
    return ceil(x);
}
fn op_ceil_grad(x: f32, g: f32, a: f32, b: f32) -> f32 {
    return 0.0;
}

fn op_floor(x: f32, a: f32, b: f32) -> f32 {
    return floor(x);
}
fn op_floor_grad(x: f32, g: f32, a: f32, b: f32) -> f32 {
    return 0.0;
}

// WGSL's round takes halves to even.
fn op_round(x: f32, a: f32, b: f32) -> f32 {
    return round(x);
}
fn op_round_grad(x: f32, g: f32, a: f32, b: f32) -> f32 {
    return 0.0;
}

fn op_trunc(x: f32, a: f32, b: f32) -> f32 {
    return trunc(x);
}
fn op_trunc_grad(x: f32, g: f32, a: f32, b: f32) -> f32 {
    return 0.0;
}

fn op_relu(x: f32, a: f32, b: f32) -> f32 {
    return select(0.0, x, x > 0.0);
}
fn op_relu_grad(x: f32, g: f32, a: f32, b: f32) -> f32 {
    return select(0.0, g, x > 0.0);
}

// Slope a for x ≤ 0.
fn op_leaky_relu(x: f32, a: f32, b: f32) -> f32 {
    return select(a * x, x, x > 0.0);
}
fn op_leaky_relu_grad(x: f32, g: f32, a: f32, b: f32) -> f32 {
    return select(a * g, g, x > 0.0);
}

fn op_sigmoid(x: f32, a: f32, b: f32) -> f32 {
    return sigmoid_pair(x).x;
}
fn op_sigmoid_grad(x: f32, g: f32, a: f32, b: f32) -> f32 {
    let s = sigmoid_pair(x);
    return g * s.x * s.y;
}

// tanh: for |x| < 0.625 x + x³·P(x²), Cephes' tanhf polynomial (relative
// error near 1e-7 down to the smallest x, where 1 − t below cancels);
// beyond, from t = e^−2|x|: (1 − t)/(1 + t) with x's sign.
// 1 − tanh² = 4t/(1 + t)².
fn op_tanh(x: f32, a: f32, b: f32) -> f32 {
    let z = x * x;
    let small = fma(fma(fma(fma(fma(-5.70498872745e-3, z, 2.06390887954e-2), z, -5.37397155531e-2), z, 1.33314422036e-1), z, -3.33332819422e-1), z * x, x);
    let t = exp(-2.0 * abs(x));
    let r = (1.0 - t) / (1.0 + t);
    return select(select(r, -r, x < 0.0), small, abs(x) < 0.625);
}
fn op_tanh_grad(x: f32, g: f32, a: f32, b: f32) -> f32 {
    let t = exp(-2.0 * abs(x));
    return g * 4.0 * t / ((1.0 + t) * (1.0 + t));
}

// erfc by the Chebyshev fit of Numerical Recipes (erfcc), with a relative
// error below 1.2e-7 everywhere: WGSL has no erf.
fn erfc_approx(z: f32) -> f32 {
    let w = abs(z);
    let t = 1.0 / (1.0 + 0.5 * w);
    // The polynomial by Estrin's scheme: a chain of 4 dependent steps, not 9.
    let t2 = t * t;
    let t4 = t2 * t2;
    let t8 = t4 * t4;
    let p01 = fma(t, 1.00002368, -1.26551223);
    let p23 = fma(t, 0.09678418, 0.37409196);
    let p45 = fma(t, 0.27886807, -0.18628806);
    let p67 = fma(t, 1.48851587, -1.13520398);
    let p89 = fma(t, 0.17087277, -0.82215223);
    let p03 = fma(t2, p23, p01);
    let p47 = fma(t2, p67, p45);
    let p07 = fma(t4, p47, p03);
    let poly = fma(t8, p89, p07);
    let r = t * exp(-w * w + poly);
    return select(2.0 - r, r, z >= 0.0);
}
// x·Φ(x), Φ the standard normal CDF = erfc(−x/√2)/2; 0 where Φ underflows.
fn op_gelu(x: f32, a: f32, b: f32) -> f32 {
    let cdf = 0.5 * erfc_approx(-x * 0.7071067811865476);
    return select(x * cdf, 0.0, cdf == 0.0);
}
// Φ(x) + x·φ(x), the second term 0 where φ underflows.
fn op_gelu_grad(x: f32, g: f32, a: f32, b: f32) -> f32 {
    let cdf = 0.5 * erfc_approx(-x * 0.7071067811865476);
    let pdf = exp(-0.5 * x * x) * 0.3989422804014327;
    return g * (cdf + select(x * pdf, 0.0, pdf == 0.0));
}

// Φ(x) = erfc(−x/√2)/2; its gradient φ(x) = e^(−x²/2)/√(2π).
fn op_ndtr(x: f32, a: f32, b: f32) -> f32 {
    return 0.5 * erfc_approx(-x * 0.7071067811865476);
}
fn op_ndtr_grad(x: f32, g: f32, a: f32, b: f32) -> f32 {
    return g * exp(-0.5 * x * x) * 0.3989422804014327;
}

// x/2·(1 + tanh(√(2/π)(x + 0.044715x³))).
fn op_gelu_tanh(x: f32, a: f32, b: f32) -> f32 {
    let u = 0.7978845608028654 * (x + 0.044715 * x * x * x);
    let one_plus = 1.0 + op_tanh(u, a, b);
    return select(0.5 * x * one_plus, 0.0, one_plus == 0.0);
}
fn op_gelu_tanh_grad(x: f32, g: f32, a: f32, b: f32) -> f32 {
    let u = 0.7978845608028654 * (x + 0.044715 * x * x * x);
    let th = op_tanh(u, a, b);
    let t = exp(-2.0 * abs(u));
    let sech2 = 4.0 * t / ((1.0 + t) * (1.0 + t));
    let du = 0.7978845608028654 * (1.0 + 0.134145 * x * x);
    return g * (0.5 * (1.0 + th) + select(0.5 * x * sech2 * du, 0.0, sech2 == 0.0));
}

// x·σ(x).
fn op_silu(x: f32, a: f32, b: f32) -> f32 {
    return x * sigmoid_pair(x).x;
}
// σ(x)·(1 + x·σ(−x)).
fn op_silu_grad(x: f32, g: f32, a: f32, b: f32) -> f32 {
    let s = sigmoid_pair(x);
    return g * s.x * (1.0 + x * s.y);
}

// ln(1 + e^(a·x))/a, x where a·x > b.
fn op_softplus(x: f32, a: f32, b: f32) -> f32 {
    let z = a * x;
    return select(softplus(z) / a, x, z > b);
}
fn op_softplus_grad(x: f32, g: f32, a: f32, b: f32) -> f32 {
    let z = a * x;
    return select(g * sigmoid_pair(z).x, g, z > b);
}

// x for x > 0, a·(eˣ − 1) otherwise.
fn op_elu(x: f32, a: f32, b: f32) -> f32 {
    return select(a * expm1_neg(x), x, x > 0.0);
}
fn op_elu_grad(x: f32, g: f32, a: f32, b: f32) -> f32 {
    return select(g * a * exp(x), g, x > 0.0);
}

// x for x > 0, a·(e^(x/a) − 1) otherwise: e^z − 1 by expm1_neg where
// z = x/a ≤ 0 (a > 0), and as −e^z·(e^−z − 1) where z > 0 (a < 0).
fn op_celu(x: f32, a: f32, b: f32) -> f32 {
    let z = x / a;
    return select(a * select(-exp(z) * expm1_neg(-z), expm1_neg(z), z <= 0.0), x, x > 0.0);
}
fn op_celu_grad(x: f32, g: f32, a: f32, b: f32) -> f32 {
    return select(g * exp(x / a), g, x > 0.0);
}

// x·min(max(x + 3, 0), 6)/6 (NaN at −Inf, as PyTorch's).
fn op_hardswish(x: f32, a: f32, b: f32) -> f32 {
    return x * min(max(x + 3.0, 0.0), 6.0) / 6.0;
}
fn op_hardswish_grad(x: f32, g: f32, a: f32, b: f32) -> f32 {
    return select(select(g * (x / 3.0 + 0.5), g, x > 3.0), 0.0, x < -3.0);
}

// x·tanh(softplus(x)); its gradient t + x·σ(x)·(1 − t²), 1 − t² as tanh's.
fn op_mish(x: f32, a: f32, b: f32) -> f32 {
    return x * op_tanh(softplus(x), a, b);
}
fn op_mish_grad(x: f32, g: f32, a: f32, b: f32) -> f32 {
    let sp = softplus(x);
    return g * (op_tanh(sp, a, b) + x * sigmoid_pair(x).x * op_tanh_grad(sp, 1.0, a, b));
}

// Clamped to [a, b]; the gradient passes where a ≤ x ≤ b.
fn op_clip(x: f32, a: f32, b: f32) -> f32 {
    return min(max(x, a), b);
}
fn op_clip_grad(x: f32, g: f32, a: f32, b: f32) -> f32 {
    return select(0.0, g, x >= a && x <= b);
}

fn op_pow_scalar(x: f32, a: f32, b: f32) -> f32 {
    return pow_real(x, a);
}
fn op_pow_scalar_grad(x: f32, g: f32, a: f32, b: f32) -> f32 {
    return g * a * pow_real(x, a - 1.0);
}

{{- end}}
{{template "unary_ops"}}
{{template "math"}}

// The kernel: out[i] = op(x[i]){{if .Grad}}, the gradient given g[i]{{end}}, over vec4s; p.N items.
fn apply(x: f32, g: f32, a: f32, b: f32) -> f32 {
    return select(op_{{.Fn}}{{if .Grad}}_grad(x, g, a, b){{else}}(x, a, b){{end}}, x, is_nan(x));
}

fn apply4(x: vec4<f32>, g: vec4<f32>, a: f32, b: f32) -> vec4<f32> {
    return vec4<f32>(apply(x.x, g.x, a, b), apply(x.y, g.y, a, b), apply(x.z, g.z, a, b), apply(x.w, g.w, a, b));
}
{{- $S := "E4"}}{{if .Half}}{{$S = "vec4<u32>"}}{{end}}
@group(0) @binding(1) var<storage, read> x_in: array<{{$S}}>;
{{- if .Grad}}
@group(0) @binding(2) var<storage, read> g_in: array<{{$S}}>;
@group(0) @binding(3) var<storage, read_write> out: array<{{$S}}>;
{{- else}}
@group(0) @binding(2) var<storage, read_write> out: array<{{$S}}>;
{{- end}}
{{- if .Half}}

// float16 storage: each u32 word holds two values, unpacked to f32, and
// the results packed back (p.N counts words in vec4s). By vec4s of words
// the conversions are half4_to_f32 and f32_to_half4 (common.wgsl), plain
// vector arithmetic: on llvmpipe unpack2x16float and pack2x16float took a
// fifth of a float16 exp's time (0.74 → 0.93 Gelem/s; neg 0.91 → 1.09).
{{template "half4"}}

fn elem(i: u32) {
    let x = x_in[i];
    let a = p.A;
    let b = p.B;
{{- if .Grad}}
    let g = g_in[i];
    let lo = apply4(half4_to_f32(x), half4_to_f32(g), a, b);
    let hi = apply4(half4_to_f32(x >> vec4<u32>(16u)), half4_to_f32(g >> vec4<u32>(16u)), a, b);
{{- else}}
    let lo = apply4(half4_to_f32(x), vec4<f32>(0.0), a, b);
    let hi = apply4(half4_to_f32(x >> vec4<u32>(16u)), vec4<f32>(0.0), a, b);
{{- end}}
    out[i] = f32_to_half4(lo) | (f32_to_half4(hi) << vec4<u32>(16u));
}
{{- else}}

fn elem(i: u32) {
    out[i] = to_e4(apply4(vec4<f32>(x_in[i]), {{if .Grad}}vec4<f32>(g_in[i]){{else}}vec4<f32>(0.0){{end}}, p.A, p.B));
}
{{- end}}
{{template "main_unrolled" dict "Count" "p.N" "N" .Unroll "Coalesce" .Coalesce}}
