// The fused family: a chain of elementwise ops of the unary, binary and
// where families (their op_ functions, included whole) and casts between
// f32 and f16 run as one kernel, rendered by device/webgpu (fuse.go):
// {{.Ops}}. elem(i) reads each input once, computes the chain's nodes in
// order in f32 (rounding each to its storage type, as the unfused
// kernels store it: casts on the bits, as the cast kernel), and writes
// the values read after the chain. p: device/webgpu's fusedParams, N items
// then words W: the shape, its magic numbers (udiv) and the broadcast
// inputs' strides, then the unary nodes' scalars as f32 bits.
{{template "unary_ops"}}
{{template "binary_ops"}}
{{template "where_ops"}}
{{template "math"}}
{{- if .Bcast}}
{{template "udiv"}}
{{- end}}
{{- if .Bits}}
{{template "half4"}}

// Four float16 values' bits, from the two words that hold them (the
// high halves left for half4_to_f32, which reads the low ones).
fn halves(w: vec2<u32>) -> vec4<u32> {
    return vec4<u32>(w.x, w.x >> 16u, w.y, w.y >> 16u);
}

// Four float16 values' bits (the low halves of h) as two words.
fn words(h: vec4<u32>) -> vec2<u32> {
    return vec2<u32>(h.x | (h.y << 16u), h.z | (h.w << 16u));
}
{{- end}}

// opaque(v, k) is v, as p.Zero is 0 at run time; but not to the compiler,
// which, where WGSL lets it take floats as finite, would fold x − x to 0
// (x = ∞: NaN), x/x to 1, … where two operands are one value: the unfused
// kernels read each operand from a binding of its own, so the fused one
// makes each operand of each node a value of its own, by its key k.
fn opaque(v: f32, k: u32) -> f32 {
    return bitcast<f32>(bitcast<u32>(v) ^ (p.Zero * k));
}

fn opaque4(v: vec4<f32>, k: u32) -> vec4<f32> {
    return bitcast<vec4<f32>>(bitcast<vec4<u32>>(v) ^ vec4<u32>(p.Zero * k));
}
{{.Body}}
{{template "main_unrolled" dict "Count" "p.N" "N" .Unroll "Coalesce" .Coalesce}}
