// out = {{.Expr}}: the output-shaped gradient of a broadcasting binary op
// with respect to one operand, from the upstream gradient g and operands x, y.
// Parameters as in binary.wgsl.
@group(0) @binding(1) var<storage, read> gr: array<f32>;
@group(0) @binding(2) var<storage, read> a: array<f32>;
@group(0) @binding(3) var<storage, read> b: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;
{{template "broadcast_offsets"}}

{{template "main_1d"}}
    let off = broadcast_offsets(i);
    let g = gr[i];
    let x = a[off.x];
    let y = b[off.y];
    out[i] = {{.Expr}};
}
