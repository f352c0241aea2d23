{{/* Blocks shared by several kernels; this file is no kernel itself. */}}
{{- define "broadcast_offsets"}}
// Offsets into a and b of output element i, from the broadcast parameters
// p[1] = rank, p[2..10) = output shape, p[10..18) and p[18..26) = strides.
fn broadcast_offsets(i: u32) -> vec2<u32> {
    var rem = i;
    var ia = 0u;
    var ib = 0u;
    for (var d = i32(p[1]) - 1; d >= 0; d--) {
        let s = p[2 + d];
        let c = rem % s;
        rem = rem / s;
        ia += c * p[10 + d];
        ib += c * p[18 + d];
    }
    return vec2<u32>(ia, ib);
}
{{- end}}

{{- define "reduce_offsets"}}
// Offset in x of reduced element r, from the reduced shape p[21..29) and
// strides p[29..37).
fn offset(base: u32, r: u32) -> u32 {
    var rem = r;
    var off = base;
    for (var d = i32(p[3]) - 1; d >= 0; d--) {
        let s = p[21 + d];
        off += (rem % s) * p[29 + d];
        rem = rem / s;
    }
    return off;
}

// Offset in x of the first element reduced into output o, from the kept
// shape p[5..13) and strides p[13..21).
fn base_offset(o: u32) -> u32 {
    var rem = o;
    var base = 0u;
    for (var d = i32(p[2]) - 1; d >= 0; d--) {
        let s = p[5 + d];
        base += (rem % s) * p[13 + d];
        rem = rem / s;
    }
    return base;
}
{{- end}}

{{- define "softmax_row"}}
// The maximum and the sum of exp(x - max) of a row of c logits.
fn row_stats(row: u32, c: u32) -> vec2<f32> {
    var m = logits[row];
    for (var j = 1u; j < c; j++) {
        m = max(m, logits[row + j]);
    }
    var s = 0.0;
    for (var j = 0u; j < c; j++) {
        s += exp(logits[row + j] - m);
    }
    return vec2<f32>(m, s);
}
{{- end}}


{{- define "main_1d"}}
// Entry point of a kernel with one invocation per element i < p[0], over
// workgroups of 256 spread over x and y.
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = linear_index(wid, nwg, lid, 256u);
    if (i >= p[0]) {
        return;
    }
{{- end}}
