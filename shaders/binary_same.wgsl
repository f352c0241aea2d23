// out = {{.Expr}} for operands of the same shape, over {{.T}}; p[0] = count.
@group(0) @binding(1) var<storage, read> a: array<{{.T}}>;
@group(0) @binding(2) var<storage, read> b: array<{{.T}}>;
@group(0) @binding(3) var<storage, read_write> out: array<{{.T}}>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = linear_index(wid, nwg, lid, 256u);
    if (i >= p[0]) {
        return;
    }
    let x = a[i];
    let y = b[i];
    out[i] = {{.Expr}};
}
