// out = {{.Expr}}: the output-shaped gradient of a broadcasting binary op
// with respect to one operand, from the upstream gradient g and operands x, y.
// Parameters as in binary.wgsl.
@group(0) @binding(1) var<storage, read> gr: array<f32>;
@group(0) @binding(2) var<storage, read> a: array<f32>;
@group(0) @binding(3) var<storage, read> b: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;
{{template "broadcast_offsets"}}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = linear_index(wid, nwg, lid, 256u);
    if (i >= p[0]) {
        return;
    }
    let off = broadcast_offsets(i);
    let g = gr[i];
    let x = a[off.x];
    let y = b[off.y];
    out[i] = {{.Expr}};
}
