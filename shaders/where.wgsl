// The where family: out[i] = a[i] where cond[i] ≠ 0 (NaN counts as
// true), else b[i], over p.N elements of one dtype.
@group(0) @binding(1) var<storage, read> cond: array<E>;
@group(0) @binding(2) var<storage, read> a: array<E>;
@group(0) @binding(3) var<storage, read> b: array<E>;
@group(0) @binding(4) var<storage, read_write> out: array<E>;

{{template "main_1d" "p.N"}}
    let c = f32(cond[i]);
    out[i] = select(b[i], a[i], c != 0.0 || is_nan(c));
}
