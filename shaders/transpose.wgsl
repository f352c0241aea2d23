// out (cols×rows) = transpose of x (rows×cols); p[0] = rows, p[1] = cols.
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = linear_index(wid, nwg, lid, 256u);
    let rows = p[0];
    let cols = p[1];
    if (i >= rows * cols) {
        return;
    }
    let r = i / cols;
    let c = i % cols;
    out[c * rows + r] = x[i];
}
