// One workgroup per (output o, chunk c): out[o*chunks + c] = scale * sum of
// the chunk's reduced elements, by a tree in workgroup memory.
// Parameters as in reduce.wgsl, plus p[37] = chunks, p[38] = chunk length.
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

var<workgroup> partial: array<f32, 256>;

{{template "reduce_offsets"}}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let w = wid.y * nwg.x + wid.x;
    let chunks = p[37];
    if (w >= p[0] * chunks) {
        return;
    }
    let o = w / chunks;
    let c = w % chunks;
    let base = base_offset(o);
    let start = c * p[38];
    let end = min(p[1], start + p[38]);
    var acc = 0.0;
    if (p[3] == 1u) {
        let stride = p[29];
        for (var r = start + lid; r < end; r += 256u) {
            acc += x[base + r * stride];
        }
    } else {
        for (var r = start + lid; r < end; r += 256u) {
            acc += x[offset(base, r)];
        }
    }
    partial[lid] = acc;
    workgroupBarrier();
    for (var s = 128u; s > 0u; s = s >> 1u) {
        if (lid < s) {
            partial[lid] += partial[lid + s];
        }
        workgroupBarrier();
    }
    if (lid == 0u) {
        out[w] = partial[0] * pf(4u);
    }
}
