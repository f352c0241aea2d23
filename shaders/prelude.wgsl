// Linear index of an invocation in a dispatch spread over x and y.
fn linear_index(wid: vec3<u32>, nwg: vec3<u32>, lid: u32, wg: u32) -> u32 {
    return (wid.y * nwg.x + wid.x) * wg + lid;
}

// Special values, tested on the bits: WGSL lets a compiler assume that
// floats are finite, so x != x and comparisons with infinity may fold away.
fn is_nan(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u;
}

fn is_inf(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7fffffffu) == 0x7f800000u;
}

fn sign_bit(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x80000000u) != 0u;
}

// nan and inf are computed at run time: WGSL makes a constant expression
// that evaluates to NaN or an infinity a shader-creation error (Tint, in
// browsers, enforces it; naga does not).
fn nan() -> f32 {
    var bits = 0x7fc00000u;
    return bitcast<f32>(bits);
}

fn inf() -> f32 {
    var bits = 0x7f800000u;
    return bitcast<f32>(bits);
}

// pack_half2 packs two float32 values as float16 bits, x in the low
// half: pack2x16float where it is defined, for the finite values of
// float16's range; past 65504 ±65504 up to 65520 and ±Inf from it (round
// to nearest even), and NaN quiet with its payload's top bits, where WGSL
// leaves pack2x16float indeterminate (SwiftShader gives NaN for ±Inf).
fn pack_half2(v: vec2<f32>) -> u32 {
    let u = bitcast<vec2<u32>>(v);
    let a = u & vec2<u32>(0x7fffffffu);
    let sign = (u >> vec2<u32>(16u)) & vec2<u32>(0x8000u);
    let quiet = vec2<u32>(0x7e00u) | ((a >> vec2<u32>(13u)) & vec2<u32>(0x3ffu));
    let big = a >= vec2<u32>(0x477ff000u); // 65520 and up, NaN too
    let top = a > vec2<u32>(0x477fe000u); // past 65504
    let p = pack2x16float(select(v, vec2<f32>(0.0), top));
    var h = vec2<u32>(p & 0xffffu, p >> 16u);
    h = select(h, sign | vec2<u32>(0x7bffu), top);
    h = select(h, sign | select(vec2<u32>(0x7c00u), quiet, a > vec2<u32>(0x7f800000u)), big);
    return h.x | (h.y << 16u);
}

// max and min that return NaN when either operand is NaN.
fn max_nan(a: f32, b: f32) -> f32 {
    return select(select(max(a, b), b, is_nan(b)), a, is_nan(a));
}

fn min_nan(a: f32, b: f32) -> f32 {
    return select(select(min(a, b), b, is_nan(b)), a, is_nan(a));
}

// max_nan of each lane.
fn max_nan4(a: vec4<f32>, b: vec4<f32>) -> vec4<f32> {
    let na = (bitcast<vec4<u32>>(a) & vec4<u32>(0x7fffffffu)) > vec4<u32>(0x7f800000u);
    let nb = (bitcast<vec4<u32>>(b) & vec4<u32>(0x7fffffffu)) > vec4<u32>(0x7f800000u);
    return select(select(max(a, b), b, nb), a, na);
}
