// matmul_sum: adds up the parts of a product split over k (see
// matmul.wgsl): out[p[2] + i] = Σ_s part[s·p[0] + i] for i < p[0], s < p[1],
// added to out[p[2] + i] if p[3] ≠ 0; all float32.
@group(0) @binding(1) var<storage, read> part: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

{{template "main_1d"}}
    var v = 0.0;
    for (var s = 0u; s < p[1]; s++) {
        v += part[s * p[0] + i];
    }
    if (p[3] != 0u) {
        v += out[p[2] + i];
    }
    out[p[2] + i] = v;
}
