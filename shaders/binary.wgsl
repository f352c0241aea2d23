// out = {{.Expr}} with NumPy broadcasting.
// p[0] = n, p[1] = rank, p[2..10) = output shape,
// p[10..18) = strides of a, p[18..26) = strides of b (0 where broadcast).
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
{{template "broadcast_offsets"}}

{{template "main_1d"}}
    let off = broadcast_offsets(i);
    let x = a[off.x];
    let y = b[off.y];
    out[i] = {{.Expr}};
}
