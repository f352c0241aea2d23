// The scan family: running sums along an axis, one invocation per line;
// p[0] = lines (the product of the other axes), p[1] = n (the axis's
// length), p[2] = inner (the stride of the axis){{if .Reverse}}; from the last element{{end}}.
@group(0) @binding(1) var<storage, read> x: array<E>;
@group(0) @binding(2) var<storage, read_write> out: array<E>;

{{template "main_1d"}}
    let n = p[1];
    let inner = p[2];
    let base = (i / inner) * n * inner + i % inner;
    var s = 0.0;
    for (var j = 0u; j < n; j++) {
        let k = base + {{if .Reverse}}(n - 1u - j){{else}}j{{end}} * inner;
        s += f32(x[k]);
        out[k] = to_e(s);
    }
}
