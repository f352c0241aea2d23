// One invocation per row: dlogits = (softmax(logits) - onehot(label)) * g[i].
// A label outside [0, c) gives a row of NaN and is reported in the flags.
// p: device/webgpu's xentParams: p.N rows of p.C classes, reported at p.Site.
@group(0) @binding(1) var<storage, read> logits: array<E>;
@group(0) @binding(2) var<storage, read> labels: array<i32>;
@group(0) @binding(3) var<storage, read> g: array<E>;
@group(0) @binding(4) var<storage, read_write> dlogits: array<E>;
{{template "index_check" 5}}
{{template "softmax_row"}}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = linear_index(wid, nwg, lid, 64u);
    let c = p.C;
    if (i >= p.N) {
        return;
    }
    let row = i * c;
    let stats = row_stats(row, c);
    let m = stats.x;
    let s = stats.y;
    let scale = f32(g[i]);
    let y = labels[i];
    let bad = !check_index(y, c, p.Site);
    for (var j = 0u; j < c; j++) {
        var q = exp(f32(logits[row + j]) - m) / s;
        if (i32(j) == y) {
            q -= 1.0;
        }
        if (bad) {
            q = nan();
        }
        dlogits[row + j] = to_e(q * scale);
    }
}
