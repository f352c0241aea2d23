// One invocation per row: loss[i] = logsumexp(logits[i]) - logits[i][label[i]],
// NaN for a label outside [0, c). p[0] = n rows, p[1] = c classes.
@group(0) @binding(1) var<storage, read> logits: array<f32>;
@group(0) @binding(2) var<storage, read> labels: array<i32>;
@group(0) @binding(3) var<storage, read_write> loss: array<f32>;
{{template "softmax_row"}}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = linear_index(wid, nwg, lid, 64u);
    let c = p[1];
    if (i >= p[0]) {
        return;
    }
    let row = i * c;
    let stats = row_stats(row, c);
    let m = stats.x;
    let s = stats.y;
    let y = labels[i];
    if (y < 0 || u32(y) >= c) {
        loss[i] = bitcast<f32>(0x7fc00000u);
        return;
    }
    loss[i] = m + log(s) - logits[row + u32(y)];
}
