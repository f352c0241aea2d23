// The scan family: running sums along an axis, one invocation per line;
// p: device/webgpu's lineParams, p.Count lines (the product of the
// other axes) of p.N elements p.Inner apart{{if .Reverse}}; from the last element{{end}}.
@group(0) @binding(1) var<storage, read> x: array<E>;
@group(0) @binding(2) var<storage, read_write> out: array<E>;

{{template "main_1d" "p.Count"}}
    let n = p.N;
    let inner = p.Inner;
    let base = (i / inner) * n * inner + i % inner;
    var s = 0.0;
    for (var j = 0u; j < n; j++) {
        let k = base + {{if .Reverse}}(n - 1u - j){{else}}j{{end}} * inner;
        s += f32(x[k]);
        out[k] = to_e(s);
    }
}
