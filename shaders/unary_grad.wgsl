// dx = {{.Expr}} from x (v) and upstream gradient dy (g); p[0] = element count.
@group(0) @binding(1) var<storage, read> x: array<{{.T}}>;
@group(0) @binding(2) var<storage, read> dy: array<{{.T}}>;
@group(0) @binding(3) var<storage, read_write> dx: array<{{.T}}>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = linear_index(wid, nwg, lid, 256u);
    if (i >= p[0]) {
        return;
    }
    let v = x[i];
    let g = dy[i];
    dx[i] = {{.Expr}};
}
