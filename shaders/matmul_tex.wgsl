{{- define "mac"}}{
{{- /* Four terms of k from depth 4·kq ({{.K}}): op(b)'s 4×{{div .T.TN 4}} texels
       first, then op(a)'s texels (a row's four terms, or with ARows four
       rows' term) one at a time, each followed by its products, so that of
       op(a) one texel at a time is live across the fetches (llvmpipe's
       texel fetch is a call, across which live values are spilled). */}}
{{- $T := .T}}{{$K := .K}}
{{- range $k := seq 4}}{{range $j := seq (div $T.TN 4)}}
            let b{{$k}}_{{$j}} = textureLoad(tb, vec2<i32>(qb + {{$j}}, 4 * ({{$K}}) + {{$k}}), 0);
{{- end}}{{end}}
{{- if $T.ARows}}
{{- range $r := seq (div $T.TM 4)}}{{range $k := seq 4}}
            let a{{$r}}_{{$k}} = textureLoad(ta, vec2<i32>(qa + {{$r}}, 4 * ({{$K}}) + {{$k}}), 0);
            sum{{$r}} += a{{$r}}_{{$k}};
{{- range $t := seq 4}}{{range $j := seq (div $T.TN 4)}}
            acc{{add (mul $r 4) $t}}_{{$j}} += b{{$k}}_{{$j}} * a{{$r}}_{{$k}}[{{$t}}];
{{- end}}{{end}}
{{- end}}{{end}}
{{- else}}
{{- range $i := seq $T.TM}}
            let a{{$i}} = textureLoad(ta, vec2<i32>({{$K}}, ra + {{$i}}), 0);
{{- range $k := seq 4}}{{range $j := seq (div $T.TN 4)}}
            acc{{$i}}_{{$j}} += b{{$k}}_{{$j}} * a{{$i}}[{{$k}}];
{{- end}}{{end}}
{{- end}}
{{- end}}
        }
{{- end}}
{{- if eq .Stage "pack"}}
// matmul_tex, stage pack: copies an operand of a matrix product into an
// rgba32float texture, 4 consecutive entries along its wide axis (a row
// of op(a) along k, or op(b) along its columns) a texel: texel (q, d)
// holds entries 4q…4q+3 at depth d (op(a)'s row, op(b)'s term of k),
// zeros past the wide count and at depths from p.Rows (op(b)'s terms of k
// up to the next multiple of 4). p: device/webgpu's texPackParams (strides
// in src's elements).
{{- if .Vec}}
// Here src's entries along the wide axis are consecutive and the offset
// and the depth stride multiples of 4: a texel is one vec4 of src (the
// last may reach into the padding of rows longer than W).
@group(0) @binding(1) var<storage, read> src: array<E4>;
{{template "vec4_at" dict "Name" "src" "Half" false}}
{{- else}}
@group(0) @binding(1) var<storage, read> src: array<E>;
{{template "at" dict "Name" "src" "Half" false}}

fn entry(w: u32, k: u32) -> f32 {
    if (w >= p.Wide || k >= p.Rows) {
        return 0.0;
    }
    return src_at(p.Off + w * p.StrideWide + k * p.StrideDepth);
}
{{- end}}
@group(0) @binding(2) var dst: texture_storage_2d<rgba32float, write>;

{{template "main_1d_count" "p.Texels * p.Depth"}}
    let q = e % p.Texels;
    let k = e / p.Texels;
    let w = 4u * q;
{{- if .Vec}}
    var v = vec4<f32>(0.0);
    if (w < p.Wide && k < p.Rows) {
        v = src_v((p.Off + w + k * p.StrideDepth) / 4u);
    }
    textureStore(dst, vec2<i32>(i32(q), i32(k)), v);
{{- else}}
    textureStore(dst, vec2<i32>(i32(q), i32(k)), vec4<f32>(entry(w, k), entry(w + 1u, k), entry(w + 2u, k), entry(w + 3u, k)));
{{- end}}
}
{{- else}}
// matmul_tex: out (M×N) = op(a)·op(b) from textures that stage pack
// wrote (or that op(a) and op(b) were copied into, where they are laid out
// so): ta holds op(a)
{{- if .ARows}} as texels of 4 rows, texel (q, k) its rows 4q…4q+3 at
// depth k (a transposed a's rows, copied or packed by vec4s),
{{- else}} along k, texel (q, r) its row r's terms 4q…4q+3,
{{- end}} and tb op(b) as texels of 4 columns, texel (q, k) its columns
// 4q…4q+3 at depth k. Each invocation computes a {{.TM}}×{{.TN}} block in straight-line
// code: per 4 terms of k, {{.TM}} + {{.TN}} texel loads for {{mul (mul .TM .TN) 4}} products (texel
// loads are far cheaper than storage loads on llvmpipe, yet still most of
// the kernel's time).
// p: device/webgpu's texMulParams. The dispatch sums the terms k in
// [p.K0, p.K1) (p.K0 a multiple of 4) of rows from p.Row0 into out; the
// textures hold zeros for the terms from p.K up to a multiple of 4.
@group(0) @binding(1) var ta: texture_2d<f32>;
@group(0) @binding(2) var tb: texture_2d<f32>;
{{template "matmul_out" dict "VecO" true "Half" false}}
// The bias added to each row, where p.Bias ≠ 0 (its length).
@group(0) @binding(4) var<storage, read_write> bias: array<E>;
{{- if .ARows}}
// op(a)'s row sums along k, where p.Sums ≠ 0: a linear layer's bias
// gradient beside its weight gradient.
@group(0) @binding(5) var<storage, read_write> sums: array<E>;
{{- end}}

// Column c's bias, or −0, which adds nothing to any value (+0 would turn
// −0 into +0).
fn bias_at(c: u32) -> f32 {
    return select(-0.0, f32(bias[min(c, p.Bias - 1u)]), c < p.Bias);
}

@compute @workgroup_size(8, 8, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let M = p.M;
    let N = p.N;
    let row0 = p.Row0 + gid.y * {{.TM}}u;
    let col0 = gid.x * {{.TN}}u;
    if (row0 >= M || col0 >= N) {
        return;
    }
{{- if .ARows}}
    let qa = i32(row0 / 4u);
{{- else}}
    let ra = i32(row0);
{{- end}}
    let qb = i32(col0 / 4u);
{{- range $i := seq .TM}}{{range $j := seq (div $.TN 4)}}
    var acc{{$i}}_{{$j}} = vec4<f32>(0.0);
{{- end}}{{end}}
{{- if .ARows}}
{{- range $r := seq (div .TM 4)}}
    var sum{{$r}} = vec4<f32>(0.0);
{{- end}}
{{- end}}
    // Four terms an iteration (eight ran no faster, and took llvmpipe
    // longer to compile), the last texel's past p.K1 zeros in both
    // textures: no loop of its own for them, which took llvmpipe a fifth
    // of the kernel's compile.
    let kEnd = (p.K1 + 3u) / 4u;
    for (var kq = p.K0 / 4u; kq < kEnd; kq++) {
        {{template "mac" dict "K" "i32(kq)" "T" $}}
    }
    // Adding to out a choice of the dispatch, not of the kernel: one
    // kernel to compile where two were (docs/kernel-choices.md).
    let zo = p.Out;
    let add = p.Add != 0u;
{{- range $j := seq (div .TN 4)}}
    let bias{{$j}} = vec4<f32>(bias_at(col0 + {{mul $j 4}}u), bias_at(col0 + {{add (mul $j 4) 1}}u), bias_at(col0 + {{add (mul $j 4) 2}}u), bias_at(col0 + {{add (mul $j 4) 3}}u));
{{- end}}
{{template "matmul_store" dict "TM" .TM "TN" .TN "VecO" true "Ld" "N" "Bias" true}}
{{- if .ARows}}
    // Every invocation sums its rows (a vec4 add a texel of op(a), beside
    // {{.TN}} vec4 products); those of the first columns store them.
    if (p.Sums != 0u && col0 == 0u) {
{{- range $r := seq (div .TM 4)}}{{range $t := seq 4}}
        if (row0 + {{add (mul $r 4) $t}}u < M) {
            var v = sum{{$r}}[{{$t}}];
            if (add) {
                v += f32(sums[row0 + {{add (mul $r 4) $t}}u]);
            }
            sums[row0 + {{add (mul $r 4) $t}}u] = to_e(v);
        }
{{- end}}{{end}}
    }
{{- end}}
}
{{- end}}
