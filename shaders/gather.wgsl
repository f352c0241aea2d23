// The gather family, along the last axis of an n×c matrix with int32
// indices idx (one per row); p[0] = n, p[1] = c, p[2] = scale (f32 bits),
// p[3] = site id. An index outside [0, c) gives NaN{{if .Grad}} for its whole row{{end}}, and
// is reported in the flags.
{{- if .Grad}}
// gather_grad: dx[i, j] = scale·g[i] where j == idx[i], else 0; one
// invocation per element of dx.
@group(0) @binding(1) var<storage, read> idx: array<i32>;
@group(0) @binding(2) var<storage, read> g: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
{{template "index_check" 4}}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let e = linear_index(wid, nwg, lid, 256u);
    let c = p[1];
    if (e >= p[0] * c) {
        return;
    }
    let i = e / c;
    let k = idx[i];
    var v = select(0.0, pf(2u) * g[i], i32(e % c) == k);
    // Report once per row, from its first element.
    if ((e % c == 0u && !check_index(k, c, p[3])) || k < 0 || u32(k) >= c) {
        v = nan();
    }
    out[e] = v;
}
{{- else}}
// gather: out[i] = scale·x[i·c + idx[i]]; one invocation per row.
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> idx: array<i32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
{{template "index_check" 4}}

{{template "main_1d"}}
    let c = p[1];
    let k = idx[i];
    if (!check_index(k, c, p[3])) {
        out[i] = nan();
        return;
    }
    out[i] = pf(2u) * x[i * c + u32(k)];
}
{{- end}}
