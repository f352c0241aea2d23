// The gather family, with int32 indices idx, one for each of n rows;
// p: device/webgpu's gatherParams, n = p.N, c = p.C, d (Table) or k
// (Rows) = p.Width; unless Rows, an index equal to p.IgnoreIndex when
// p.Ignoring ≠ 0 is ignored: it takes 0, adds nowhere, is not reported.
{{- if .Table}} Table form: row i takes row idx[i] of a c×d table.{{else if .Rows}} Rows form: row i takes elements idx[i, 0…k) of its own row of an n×c matrix.{{else}} Row i takes element idx[i] of its own row of an n×c matrix.{{end}}
// An index outside [0, c) gives NaN{{if and .Grad (not .Table)}} for its whole row{{end}}{{if and .Grad .Table}} in the forward and adds nowhere here{{end}}, and is
// reported in the flags.
{{- if .Grad}}
@group(0) @binding(1) var<storage, read> idx: array<i32>;
@group(0) @binding(2) var<storage, read> g: array<E>;
@group(0) @binding(3) var<storage, read_write> out: array<E>;
{{template "index_check" 4}}

// ignored reports whether k is the ignored index.
fn ignored(k: i32) -> bool {
    return p.Ignoring != 0u && k == p.IgnoreIndex;
}
{{- if .Rows}}

// gather_grad, rows: out[i, j] = scale·Σ g[i, m] over the m < k with
// idx[i, m] = j (an index outside [0, c) adds nowhere; the first element
// of each row reports it); one invocation per element of out.
{{template "main_1d_count" "p.N * p.C"}}
    let c = p.C;
    let k = p.Width;
    let i = e / c;
    let j = i32(e % c);
    var s = 0.0;
    for (var m = 0u; m < k; m++) {
        let q = idx[i * k + m];
        if (e % c == 0u) {
            check_index(q, c, p.Site);
        }
        if (q == j) {
            s += f32(g[i * k + m]);
        }
    }
    out[e] = to_e(p.Scale * s);
}
{{- else if .Table}}

// gather_grad, table: out[r, j] = scale·Σ g[i, j] over the i in
// [p.I0, p.I1) with idx[i] = r, in order of i, added to what earlier
// chunks wrote unless p.I0 = 0. One invocation per 4 features j0…j0+3
// and block of tableRows rows: each pass over the indices (a load of
// each) serves the block's rows and the 4 features.
const tableRows = 64u;
{{template "main_1d_count" "((p.Width + 3u) / 4u) * ((p.C + tableRows - 1u) / tableRows)"}}
    let d = p.Width;
    let c = p.C;
    let d4 = (d + 3u) / 4u;
    let j0 = (e % d4) * 4u;
    let r0 = (e / d4) * tableRows;
    let n = min(d - j0, 4u); // the features of the invocation
    var s: array<vec4<f32>, tableRows>;
    for (var i = p.I0; i < p.I1; i++) {
        let k = idx[i];
        if (ignored(k)) {
            continue;
        }
        if (e == 0u) {
            check_index(k, c, p.Site);
        }
        let t = u32(k) - r0; // wraps past tableRows below r0
        if (k >= 0 && t < tableRows) {
            let at = i * d + j0;
            var v = vec4<f32>(f32(g[at]), 0.0, 0.0, 0.0);
            if (n > 1u) {
                v.y = f32(g[at + 1u]);
            }
            if (n > 2u) {
                v.z = f32(g[at + 2u]);
            }
            if (n > 3u) {
                v.w = f32(g[at + 3u]);
            }
            s[t] += v;
        }
    }
    for (var t = 0u; t < tableRows && r0 + t < c; t++) {
        let o = (r0 + t) * d + j0;
        for (var q = 0u; q < n; q++) {
            out[o + q] = to_e(select(0.0, f32(out[o + q]), p.I0 != 0u) + p.Scale * s[t][q]);
        }
    }
}
{{- else}}

// gather_grad: dx[i, j] = scale·g[i] where j == idx[i], else 0; one
// invocation per element of dx.
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let e = linear_index(wid, nwg, lid, 256u);
    let c = p.C;
    if (e >= p.N * c) {
        return;
    }
    let i = e / c;
    let k = idx[i];
    if (ignored(k)) {
        out[e] = to_e(0.0);
        return;
    }
    var v = select(0.0, p.Scale * f32(g[i]), i32(e % c) == k);
    // Report once per row, from its first element.
    if ((e % c == 0u && !check_index(k, c, p.Site)) || k < 0 || u32(k) >= c) {
        v = nan();
    }
    out[e] = to_e(v);
}
{{- end}}
{{- else}}
@group(0) @binding(1) var<storage, read> x: array<E>;
@group(0) @binding(2) var<storage, read> idx: array<i32>;
@group(0) @binding(3) var<storage, read_write> out: array<E>;
{{template "index_check" 4}}

// ignored reports whether k is the ignored index.
fn ignored(k: i32) -> bool {
    return p.Ignoring != 0u && k == p.IgnoreIndex;
}
{{- if .Rows}}

// gather, rows: out[i, m] = scale·x[i, idx[i, m]]; one invocation per
// element of out.
{{template "main_1d_count" "p.N * p.Width"}}
    let q = idx[e];
    let c = p.C;
    if (!check_index(q, c, p.Site)) {
        out[e] = to_e(nan());
        return;
    }
    out[e] = to_e(p.Scale * f32(x[e / p.Width * c + u32(q)]));
}
{{- else if .Table}}

// gather, table: out[i, j] = scale·x[idx[i], j]; one invocation per
// element of out, the first of each row reporting a bad index. x holds
// the table's rows [p.I0, p.I1) (the whole table unless it is bound a
// chunk at a time): an index in another chunk writes nothing, and the
// first chunk (p.I0 = 0) writes the ignored and the bad indices' rows.
{{template "main_1d_count" "p.N * p.Width"}}
    let d = p.Width;
    let i = e / d;
    let j = e % d;
    let k = idx[i];
    let c = p.C;
    if (ignored(k)) {
        if (p.I0 == 0u) {
            out[e] = to_e(0.0);
        }
        return;
    }
    if (p.I0 == 0u && ((j == 0u && !check_index(k, c, p.Site)) || k < 0 || u32(k) >= c)) {
        out[e] = to_e(nan());
        return;
    }
    if (k < 0 || u32(k) < p.I0 || u32(k) >= p.I1) {
        return;
    }
    out[e] = to_e(p.Scale * f32(x[(u32(k) - p.I0) * d + j]));
}
{{- else}}

// gather: out[i] = scale·x[i·c + idx[i]]; one invocation per row.
{{template "main_1d" "p.N"}}
    let c = p.C;
    let k = idx[i];
    if (ignored(k)) {
        out[i] = to_e(0.0);
        return;
    }
    if (!check_index(k, c, p.Site)) {
        out[i] = to_e(nan());
        return;
    }
    out[i] = to_e(p.Scale * f32(x[i * c + u32(k)]));
}
{{- end}}
{{- end}}
