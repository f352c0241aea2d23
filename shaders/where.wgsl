// The where family: out[i] = a[i] where cond[i] ≠ 0 (NaN counts as
// true), else b[i], over p.N elements of one dtype.
{{- define "where_ops"}}
fn op_where(c: f32, a: f32, b: f32) -> f32 {
    return select(b, a, c != 0.0 || is_nan(c));
}
{{- end}}
{{template "where_ops"}}
@group(0) @binding(1) var<storage, read> cond: array<E>;
@group(0) @binding(2) var<storage, read> a: array<E>;
@group(0) @binding(3) var<storage, read> b: array<E>;
@group(0) @binding(4) var<storage, read_write> out: array<E>;

{{template "main_1d" "p.N"}}
    out[i] = to_e(op_where(f32(cond[i]), f32(a[i]), f32(b[i])));
}
