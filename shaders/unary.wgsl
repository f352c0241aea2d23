// y = {{.Expr}} elementwise over {{.T}}; p[0] = number of {{.T}} elements.
@group(0) @binding(1) var<storage, read> x: array<{{.T}}>;
@group(0) @binding(2) var<storage, read_write> y: array<{{.T}}>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = linear_index(wid, nwg, lid, 256u);
    if (i >= p[0]) {
        return;
    }
    let v = x[i];
    y[i] = {{.Expr}};
}
