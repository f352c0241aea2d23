// The attention family: softmax(scale·q·kᵀ + mask)·v without the scores in
// memory, and its gradient from the saved log-sum-exps. q [B, Lq, D],
// k [B, Lk, D], v [B, Lk, DV] and out [B, Lq, DV], each placed by its
// layout (row_at), D = {{mul .D4 4}}, DV = {{mul .DV4 4}}; dq, dk and dv
// as q, k and v, dO and o as out. p: device/webgpu's attnParams.
{{- if .Split}}
// Split (GPUs, float32, one row an invocation): the keys (the queries, for
// dk and dv) are split into chunks of p.Chunk, invocation t taking chunk
// t / p.ChunkInvocations of its row's (B·Lq, or B·Lk, invocations a chunk);
// each chunk's partial result goes to a scratch buffer, chunk-major, for
// stage combine (the forward) or a sum (the gradients) to finish.
{{- end}}
// stats [B·Lq, 3]: each row's largest score m and ln Σ e^(s − m) (kept
// apart: the probabilities are recomputed as e^((s − m) − ln Σ), which
// their sum m + ln Σ would round away for scores near ±3.4e38), then
// Σ dO·O (the gradient's). A key a query may not see adds nothing, not
// even 0·∞: its terms are selected out; but a row that sees no key at
// all (m = −Inf) is NaN, its gradients too, through every key it could
// see but for the mask (seen), as PyTorch's.
{{- define "attn_live"}}
{{- /* live{{.N}}: may query .I see key .J? s{{.N}}: its score, masked. */}}
        var live{{.N}} = {{.J}} < kend && (!causal || {{.J}} <= {{.I}});
        let seen{{.N}} = live{{.N}};
{{- if eq .Mask 1}}
        s{{.N}} += f32(mask[mbase + min({{.I}}, lq - 1u) * p.MaskStride[2] + min({{.J}}, lk - 1u) * p.MaskStride[3]]);
        live{{.N}} = live{{.N}} && !(is_inf(s{{.N}}) && sign_bit(s{{.N}}));
{{- else if eq .Mask 2}}
        let mv{{.N}} = f32(mask[mbase + min({{.I}}, lq - 1u) * p.MaskStride[2] + min({{.J}}, lk - 1u) * p.MaskStride[3]]);
        live{{.N}} = live{{.N}} && (mv{{.N}} != 0.0 || is_nan(mv{{.N}}));
{{- end}}
{{- end}}
{{- define "attn_begin"}}
{{- /* The entry point: invocation t takes p.Rows query rows (or keys) from .From of batch b; kend bounds the keys its rows see (with .Keys, the causal ones: causal, from p.Causal); with .Split, jbeg starts its chunk of keys (.Keys, kend then bounding the chunk) or queries. */}}
{{template "entry_64" "t"}}
    if (t >= p.Invocations) {
        return;
    }
{{- if .Split}}
    let chunk = t / p.ChunkInvocations;
    let u = t % p.ChunkInvocations;
{{- else}}
    let u = t;
{{- end}}
    let b = u / p.Blocks;
    let {{.From}} = (u % p.Blocks) * p.Rows;
    let lq = p.Lq;
    let lk = p.Lk;
    let causal = p.Causal != 0u;
{{- if .Keys}}
    var kend = select(lk, min(lk, {{.From}} + p.Rows), causal);
{{- else}}
    var kend = lk;
{{- end}}
{{- if .Split}}
    let jbeg = chunk * p.Chunk;
{{- if .Keys}}
    kend = min(kend, jbeg + p.Chunk);
{{- end}}
{{- else}}
    let jbeg = 0u;
{{- end}}
    let scale = p.Scale;
    let mbase = (b / p.Heads) * p.MaskStride[0] + (b % p.Heads) * p.MaskStride[1];
{{- end}}
{{- define "attn_kept"}}
{{- /* kept{{.N}}: dropout's factor of row .Row's probability of key .J. */}}
{{- if .Drop}}
        let kept{{.N}} = select(p.DropScale, 0.0, dropped({{.Row}}, {{.J}}));
{{- else}}
        let kept{{.N}} = 1.0;
{{- end}}
{{- end}}
@group(0) @binding(1) var<storage, read> q: array<E4>;
@group(0) @binding(2) var<storage, read> k: array<E4>;
@group(0) @binding(3) var<storage, read> v: array<E4>;
@group(0) @binding(4) var<storage, read> mask: array<E>;
{{- if eq .Stage "fwd"}}
@group(0) @binding(5) var<storage, read_write> out: array<E4>;
@group(0) @binding(6) var<storage, read_write> stats: array<f32>;
{{- else if eq .Stage "dq"}}
@group(0) @binding(5) var<storage, read> go: array<E4>;
@group(0) @binding(6) var<storage, read> stats: array<f32>;
{{- if .DS}}
@group(0) @binding(7) var<storage, read_write> ds: array<E>; // [B, Lq, Lk]
{{- else}}
@group(0) @binding(7) var<storage, read_write> dq: array<E4>;
{{- end}}
{{- else if eq .Stage "dkv"}}
@group(0) @binding(5) var<storage, read> go: array<E4>;
@group(0) @binding(6) var<storage, read> stats: array<f32>;
// [B·Lk, D + DV]: dk, dv; where p.Placed is 1, one buffer holding dk and
// dv at the layouts of k and v (a packed projection's gradient).
@group(0) @binding(7) var<storage, read_write> dkv: array<E4>;
{{- end}}

// row_at returns the vec4 at which row i of matrix b starts in layout l
// (p.LQ, p.LK, p.LV or p.LO: offset, outer, head and row strides, in
// vec4s; b = outer·p.Heads + head).
fn row_at(l: array<u32, 4>, b: u32, i: u32) -> u32 {
    return l[0] + (b / p.Heads) * l[1] + (b % p.Heads) * l[2] + i * l[3];
}

fn neg_inf() -> f32 {
    var bits = 0xff800000u; // at run time: see inf in prelude.wgsl
    return bitcast<f32>(bits);
}

fn is_neg_inf(x: f32) -> bool {
    return bitcast<u32>(x) == 0xff800000u;
}

// pcg is the PCG RXS-M-XS hash of a word.
fn pcg(x: u32) -> u32 {
    let s = x * 747796405u + 2891336453u;
    let w = ((s >> ((s >> 28u) + 4u)) ^ s) * 277803737u;
    return (w >> 22u) ^ w;
}

// dropped reports whether dropout drops the probability of key j for
// query row r (of the whole batch).
fn dropped(r: u32, j: u32) -> bool {
    let h = pcg(p.Seed[0] ^ pcg(p.Seed[1]));
    return pcg(pcg(h + r) ^ j) < p.DropThreshold;
}
{{- $R := seq .R}}{{$D := seq .D4}}{{$DV := seq .DV4}}
{{- if eq .Stage "fwd"}}

// An invocation takes {{.R}} query rows of one batch, streaming the keys
// {{.C}} at a time with the online softmax: running max m, sum l and
// output acc, rescaled when the max grows.
{{template "attn_begin" dict "From" "i0" "Split" .Split "Keys" true}}
{{- range $r := $R}}
    let qb{{$r}} = row_at(p.LQ, b, min(i0 + {{$r}}u, lq - 1u));
{{- range $c := $D}}
    let q{{$r}}_{{$c}} = vec4<f32>(q[qb{{$r}} + {{$c}}u]);
{{- end}}
    var m{{$r}} = neg_inf();
    var l{{$r}} = 0.0;
{{- range $c := $DV}}
    var a{{$r}}_{{$c}} = vec4<f32>(0.0);
{{- end}}
{{- end}}
    for (var j0 = jbeg; j0 < kend; j0 += {{.C}}u) {
{{- range $c := seq .C}}
        let kb{{$c}} = row_at(p.LK, b, min(j0 + {{$c}}u, lk - 1u));
{{- range $r := $R}}
        var s{{$r}}_{{$c}} = 0.0;
{{- end}}
{{- range $d := $D}}
        {
            let kk = vec4<f32>(k[kb{{$c}} + {{$d}}u]);
{{- range $r := $R}}
            s{{$r}}_{{$c}} += dot(q{{$r}}_{{$d}}, kk);
{{- end}}
        }
{{- end}}
{{- end}}
{{- range $r := $R}}
        var mx{{$r}} = m{{$r}};
{{- range $c := seq $.C}}
        s{{$r}}_{{$c}} *= scale;
{{- template "attn_live" dict "N" (printf "%d_%d" $r $c) "I" (printf "(i0 + %du)" $r) "J" (printf "(j0 + %du)" $c) "Mask" $.Mask}}
        if (live{{$r}}_{{$c}}) {
            mx{{$r}} = max_nan(mx{{$r}}, s{{$r}}_{{$c}});
        }
{{- end}}
        // Before any key, m = mx = −Inf: shift by 0 instead (l, acc are 0).
        let sh{{$r}} = select(mx{{$r}}, 0.0, is_neg_inf(mx{{$r}}));
        let corr{{$r}} = exp(m{{$r}} - sh{{$r}});
        m{{$r}} = mx{{$r}};
        l{{$r}} *= corr{{$r}};
{{- range $c := $DV}}
        a{{$r}}_{{$c}} *= corr{{$r}};
{{- end}}
{{- range $c := seq $.C}}
        let p{{$r}}_{{$c}} = select(0.0, exp(s{{$r}}_{{$c}} - sh{{$r}}), live{{$r}}_{{$c}});
        l{{$r}} += p{{$r}}_{{$c}};
{{- template "attn_kept" dict "N" (printf "%d_%d" $r $c) "Row" (printf "b * lq + i0 + %du" $r) "J" (printf "j0 + %du" $c) "Drop" $.Drop}}
        let pd{{$r}}_{{$c}} = p{{$r}}_{{$c}} * kept{{$r}}_{{$c}};
{{- end}}
{{- end}}
{{- range $c := seq .C}}
        let vb{{$c}} = row_at(p.LV, b, min(j0 + {{$c}}u, lk - 1u));
{{- range $d := $DV}}
        {
            let vv = vec4<f32>(v[vb{{$c}} + {{$d}}u]);
{{- range $r := $R}}
            a{{$r}}_{{$d}} += select(vec4<f32>(0.0), pd{{$r}}_{{$c}} * vv, live{{$r}}_{{$c}});
{{- end}}
        }
{{- end}}
{{- end}}
    }
{{- if .Split}}
    // The chunk's running max, sum and unnormalised output, for combine.
    if (i0 < lq) {
        let at = (chunk * p.ChunkInvocations + b * lq + i0) * {{add .DV4 1}}u;
{{- range $c := $DV}}
        out[at + {{$c}}u] = a0_{{$c}};
{{- end}}
        out[at + {{.DV4}}u] = vec4<f32>(m0, l0, 0.0, 0.0);
    }
}
{{- else}}
{{- range $r := $R}}
    if (i0 + {{$r}}u < lq) {
        let row = b * lq + i0 + {{$r}}u;
        let dead = is_neg_inf(m{{$r}});
        let inv = select(1.0 / l{{$r}}, nan(), dead);
        let ob = row_at(p.LO, b, i0 + {{$r}}u);
{{- range $c := $DV}}
        out[ob + {{$c}}u] = to_e4(a{{$r}}_{{$c}} * inv);
{{- end}}
        stats[3u * row] = select(m{{$r}}, neg_inf(), dead);
        stats[3u * row + 1u] = log(l{{$r}});
    }
{{- end}}
}
{{- end}}
{{- else if eq .Stage "dq"}}

{{- if .DS}}
// An invocation takes {{.R}} query rows of one batch and writes the
// gradient of their masked scores: ds = p·(dp − Δ), 0 where masked.
{{- else}}
// An invocation takes {{.R}} query rows of one batch and sums their
// gradient over the keys: dq = scale·Σ p·(dp − Δ)·k.
{{- end}}
{{template "attn_begin" dict "From" "i0" "Split" .Split "Keys" true}}
{{- range $r := $R}}
    let row{{$r}} = b * lq + min(i0 + {{$r}}u, lq - 1u);
    let qb{{$r}} = row_at(p.LQ, b, min(i0 + {{$r}}u, lq - 1u));
    let ob{{$r}} = row_at(p.LO, b, min(i0 + {{$r}}u, lq - 1u));
{{- range $c := $D}}
    let q{{$r}}_{{$c}} = vec4<f32>(q[qb{{$r}} + {{$c}}u]);
{{- if not $.DS}}
    var g{{$r}}_{{$c}} = vec4<f32>(0.0);
{{- end}}
{{- end}}
{{- range $c := $DV}}
    let o{{$r}}_{{$c}} = vec4<f32>(go[ob{{$r}} + {{$c}}u]);
{{- end}}
    let m{{$r}} = stats[3u * row{{$r}}];
    let ll{{$r}} = stats[3u * row{{$r}} + 1u];
    let del{{$r}} = stats[3u * row{{$r}} + 2u];
    let dead{{$r}} = is_neg_inf(m{{$r}});
{{- end}}
    for (var j = jbeg; j < kend; j++) {
        let kb = row_at(p.LK, b, j);
        let vb = row_at(p.LV, b, j);
{{- range $c := $D}}
        let k{{$c}} = vec4<f32>(k[kb + {{$c}}u]);
{{- end}}
{{- range $c := $DV}}
        let v{{$c}} = vec4<f32>(v[vb + {{$c}}u]);
{{- end}}
{{- range $r := $R}}
        var s{{$r}} = 0.0;
        var dp{{$r}} = 0.0;
{{- range $c := $D}}
        s{{$r}} += dot(q{{$r}}_{{$c}}, k{{$c}});
{{- end}}
{{- range $c := $DV}}
        dp{{$r}} += dot(o{{$r}}_{{$c}}, v{{$c}});
{{- end}}
        s{{$r}} *= scale;
{{- template "attn_live" dict "N" $r "I" (printf "(i0 + %du)" $r) "J" "j" "Mask" $.Mask}}
{{- template "attn_kept" dict "N" $r "Row" (printf "row%d" $r) "J" "j" "Drop" $.Drop}}
        let use{{$r}} = live{{$r}} || (dead{{$r}} && seen{{$r}});
        let pr{{$r}} = select(exp((s{{$r}} - m{{$r}}) - ll{{$r}}), nan(), dead{{$r}});
        let ds{{$r}} = select(0.0, pr{{$r}} * (dp{{$r}} * kept{{$r}} - del{{$r}}), use{{$r}});
{{- if $.DS}}
        if (i0 + {{$r}}u < lq) {
            ds[row{{$r}} * lk + j] = E(ds{{$r}});
        }
{{- else}}
{{- range $c := $D}}
        g{{$r}}_{{$c}} += select(vec4<f32>(0.0), (scale * ds{{$r}}) * k{{$c}}, use{{$r}});
{{- end}}
{{- end}}
{{- end}}
    }
{{- range $r := $R}}{{if not $.DS}}
    if (i0 + {{$r}}u < lq) {
{{- range $c := $D}}
        dq[{{if $.Split}}(chunk * p.ChunkInvocations + row{{$r}}) * {{$.D4}}u{{else}}qb{{$r}}{{end}} + {{$c}}u] = to_e4(g{{$r}}_{{$c}});
{{- end}}
    }
{{- end}}{{end}}
}
{{- else if eq .Stage "dkv"}}

// An invocation takes {{.R}} keys of one batch and sums their gradients
// over the queries: dv = Σ p·kept·dO, dk = scale·Σ p·(dp − Δ)·q.
{{template "attn_begin" dict "From" "j0" "Split" .Split "Keys" false}}
{{- range $r := $R}}
    let key{{$r}} = b * lk + min(j0 + {{$r}}u, lk - 1u);
    let kb{{$r}} = row_at(p.LK, b, min(j0 + {{$r}}u, lk - 1u));
    let vb{{$r}} = row_at(p.LV, b, min(j0 + {{$r}}u, lk - 1u));
{{- range $c := $D}}
    let k{{$r}}_{{$c}} = vec4<f32>(k[kb{{$r}} + {{$c}}u]);
    var gk{{$r}}_{{$c}} = vec4<f32>(0.0);
{{- end}}
{{- range $c := $DV}}
    let v{{$r}}_{{$c}} = vec4<f32>(v[vb{{$r}} + {{$c}}u]);
    var gv{{$r}}_{{$c}} = vec4<f32>(0.0);
{{- end}}
{{- end}}
    // Causal, from the first query that sees the first key{{if .Align}} of the
    // workgroup (64 keys aligned): neighbouring invocations then read the
    // same query rows together, each ignoring (live) those before its own
    // key{{end}}.
{{- if .Align}}
    let ibegin = select(jbeg, max(j0 & ~63u, jbeg), causal);
{{- else}}
    let ibegin = select(jbeg, max(j0, jbeg), causal);
{{- end}}
{{- if .Split}}
    let iend = min(lq, jbeg + p.Chunk);
{{- else}}
    let iend = lq;
{{- end}}
    for (var i = ibegin; i < iend; i++) {
        let row = b * lq + i;
        let qb = row_at(p.LQ, b, i);
        let ob = row_at(p.LO, b, i);
{{- range $c := $D}}
        let q{{$c}} = vec4<f32>(q[qb + {{$c}}u]);
{{- end}}
{{- range $c := $DV}}
        let o{{$c}} = vec4<f32>(go[ob + {{$c}}u]);
{{- end}}
        let m = stats[3u * row];
        let ll = stats[3u * row + 1u];
        let del = stats[3u * row + 2u];
        let dead = is_neg_inf(m);
{{- range $r := $R}}
        var s{{$r}} = 0.0;
        var dp{{$r}} = 0.0;
{{- range $c := $D}}
        s{{$r}} += dot(q{{$c}}, k{{$r}}_{{$c}});
{{- end}}
{{- range $c := $DV}}
        dp{{$r}} += dot(o{{$c}}, v{{$r}}_{{$c}});
{{- end}}
        s{{$r}} *= scale;
{{- template "attn_live" dict "N" $r "I" "i" "J" (printf "(j0 + %du)" $r) "Mask" $.Mask}}
{{- template "attn_kept" dict "N" $r "Row" "row" "J" (printf "j0 + %du" $r) "Drop" $.Drop}}
        let use{{$r}} = live{{$r}} || (dead && seen{{$r}});
        let pr{{$r}} = select(0.0, select(exp((s{{$r}} - m) - ll), nan(), dead), use{{$r}});
        let ds{{$r}} = select(0.0, scale * pr{{$r}} * (dp{{$r}} * kept{{$r}} - del), use{{$r}});
        let pk{{$r}} = pr{{$r}} * kept{{$r}};
{{- range $c := $D}}
        gk{{$r}}_{{$c}} += select(vec4<f32>(0.0), ds{{$r}} * q{{$c}}, use{{$r}});
{{- end}}
{{- range $c := $DV}}
        gv{{$r}}_{{$c}} += select(vec4<f32>(0.0), pk{{$r}} * o{{$c}}, use{{$r}});
{{- end}}
{{- end}}
    }
{{- range $r := $R}}
    if (j0 + {{$r}}u < lk) {
        let at{{$r}} = {{if $.Split}}(chunk * p.ChunkInvocations + key{{$r}}){{else}}key{{$r}}{{end}} * {{add $.D4 $.DV4}}u;
{{- if $.Split}}
        let ak{{$r}} = at{{$r}};
        let av{{$r}} = at{{$r}} + {{$.D4}}u;
{{- else}}
        let ak{{$r}} = select(at{{$r}}, kb{{$r}}, p.Placed != 0u);
        let av{{$r}} = select(at{{$r}} + {{$.D4}}u, vb{{$r}}, p.Placed != 0u);
{{- end}}
{{- range $c := $D}}
        dkv[ak{{$r}} + {{$c}}u] = to_e4(gk{{$r}}_{{$c}});
{{- end}}
{{- range $c := $DV}}
        dkv[av{{$r}} + {{$c}}u] = to_e4(gv{{$r}}_{{$c}});
{{- end}}
    }
{{- end}}
}
{{- else if eq .Stage "delta"}}

// An invocation a row: Δ = Σ dO·O into stats' third column.
@group(0) @binding(5) var<storage, read> go: array<E4>;
@group(0) @binding(6) var<storage, read> o: array<E4>;
@group(0) @binding(7) var<storage, read_write> stats: array<f32>;

{{template "entry_64" "r"}}
    if (r >= p.Invocations) {
        return;
    }
    var acc = 0.0;
    let ob = row_at(p.LO, r / p.Lq, r % p.Lq);
{{- range $c := $DV}}
    acc += dot(vec4<f32>(go[ob + {{$c}}u]), vec4<f32>(o[ob + {{$c}}u]));
{{- end}}
    stats[3u * r + 2u] = acc;
}
{{- else if eq .Stage "combine"}}

// An invocation a row: the forward's p.Chunks chunks combined. Each
// chunk c left its running max m_c, sum l_c and unnormalised
// output a_c; with M the largest m_c, out = Σ a_c·e^(m_c − M) / Σ l_c·e^(m_c − M)
// and the row's statistics are M and ln Σ l_c·e^(m_c − M). A chunk that saw
// no key (m_c = −Inf) adds nothing; a row that saw none is NaN, its
// M −Inf, as the forward leaves them.
@group(0) @binding(5) var<storage, read> part: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> out: array<E4>;
@group(0) @binding(7) var<storage, read_write> stats: array<f32>;

{{template "entry_64" "r"}}
    let rows = p.Invocations;
    if (r >= rows) {
        return;
    }
    var mx = neg_inf();
    for (var c = 0u; c < p.Chunks; c++) {
        mx = max_nan(mx, part[(c * rows + r) * {{add .DV4 1}}u + {{.DV4}}u].x);
    }
    let dead = is_neg_inf(mx);
    var l = 0.0;
{{- range $c := $DV}}
    var a{{$c}} = vec4<f32>(0.0);
{{- end}}
    for (var c = 0u; c < p.Chunks; c++) {
        let at = (c * rows + r) * {{add .DV4 1}}u;
        let ml = part[at + {{.DV4}}u];
        let f = select(exp(ml.x - mx), 0.0, is_neg_inf(ml.x));
        l += f * ml.y;
{{- range $c := $DV}}
        a{{$c}} += f * part[at + {{$c}}u];
{{- end}}
    }
    let inv = select(1.0 / l, nan(), dead);
    let ob = row_at(p.LO, r / p.Lq, r % p.Lq);
{{- range $c := $DV}}
    out[ob + {{$c}}u] = to_e4(a{{$c}} * inv);
{{- end}}
    stats[3u * r] = select(mx, neg_inf(), dead);
    stats[3u * r + 1u] = log(l);
}
{{- end}}
