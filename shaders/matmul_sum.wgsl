// matmul_sum: adds up the parts of a product split over k (see
// matmul.wgsl): out[p.Off + i] = Σ_s part[s·p.N + i] for i < p.N, s <
// p.Parts, added to out[p.Off + i] if p.Add ≠ 0; all float32.
@group(0) @binding(1) var<storage, read> part: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

{{template "main_1d" "p.N"}}
    var v = 0.0;
    for (var s = 0u; s < p.Parts; s++) {
        v += part[s * p.N + i];
    }
    if (p.Add != 0u) {
        v += out[p.Off + i];
    }
    out[p.Off + i] = v;
}
