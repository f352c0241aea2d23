// One invocation per row: loss[i] = logsumexp(logits[i]) - logits[i][label[i]],
// NaN for a label outside [0, c), which is reported in the flags.
// p: device/webgpu's xentParams: p.N rows of p.C classes, reported at p.Site.
@group(0) @binding(1) var<storage, read> logits: array<E>;
@group(0) @binding(2) var<storage, read> labels: array<i32>;
@group(0) @binding(3) var<storage, read_write> loss: array<E>;
{{template "index_check" 4}}
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
    let y = labels[i];
    if (!check_index(y, c, p.Site)) {
        loss[i] = to_e(nan());
        return;
    }
    loss[i] = to_e(m + log(s) - f32(logits[row + u32(y)]));
}
