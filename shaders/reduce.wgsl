// One invocation per output: out[o] = scale * sum of x over the reduced axes.
// p[0] = outputs, p[1] = reduced count R, p[2] = kept rank, p[3] = reduced rank,
// p[4] = scale (f32 bits), p[5..13) kept shape, p[13..21) kept strides,
// p[21..29) reduced shape, p[29..37) reduced strides (strides in x).
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

{{template "reduce_offsets"}}

{{template "main_1d"}}
    let o = i;
    let base = base_offset(o);
    var acc = 0.0;
    let count = p[1];
    if (p[3] == 1u) {
        let stride = p[29];
        for (var r = 0u; r < count; r++) {
            acc += x[base + r * stride];
        }
    } else {
        for (var r = 0u; r < count; r++) {
            acc += x[offset(base, r)];
        }
    }
    out[o] = acc * pf(4u);
}
