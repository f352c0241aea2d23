{{- define "mac"}}{
{{- /* One term of k: op(b)'s texels first, then op(a)'s a texel (4 rows)
       at a time, each followed by its rows' products, so that few loaded
       values are live at once (llvmpipe's texel fetch is a call, across
       which live values are spilled): 32×16 blocks so ordered ran at
       30–34 GFLOP/s at 1024³ where 16×16 blocks, all loads first, ran at
       27–29. */}}
{{- $T := .T}}{{$K := .K}}
{{- range $j := seq (div $T.TN 4)}}
            let b{{$j}} = textureLoad(tb, vec2<i32>(qb + {{$j}}, {{$K}}), 0);
{{- end}}
{{- range $q := seq (div $T.TM 4)}}
            let a{{$q}} = textureLoad(ta, vec2<i32>(qa + {{$q}}, {{$K}}), 0);
{{- range $r := seq 4}}{{$i := add (mul $q 4) $r}}{{range $j := seq (div $T.TN 4)}}
            acc{{$i}}_{{$j}} += b{{$j}} * a{{$q}}[{{$r}}];
{{- end}}{{end}}
{{- end}}
        }
{{- end}}
{{- if eq .Stage "pack"}}
// matmul_tex, stage pack: copies an operand of a matrix product into an
// rgba32float texture, 4 consecutive entries along its wide axis (the rows
// of op(a), or the columns of op(b)) a texel: texel (q, k) holds entries
// 4q…4q+3 at depth k, zeros past the wide count. p[0] = wide count W,
// p[1] = depth K, p[2] = offset, p[3] = stride along the wide axis,
// p[4] = stride along depth (in src's elements), p[5] = texels a row.
{{- if .Vec}}
// Here src's entries along the wide axis are consecutive and the offset
// and the depth stride multiples of 4: a texel is one vec4 of src (the
// last may reach into the padding of rows longer than W){{if .Half}}, of
// float16 a vec2<u32>{{end}}.
@group(0) @binding(1) var<storage, read> src: array<{{if .Half}}vec2<u32>{{else}}vec4<f32>{{end}}>;
{{template "vec4_at" dict "Name" "src" "Half" .Half}}
{{- else}}
// src holds {{if .Half}}float16, two to a word{{else}}float32{{end}}.
@group(0) @binding(1) var<storage, read> src: array<{{if .Half}}u32{{else}}f32{{end}}>;
{{template "at" dict "Name" "src" "Half" .Half}}

fn entry(w: u32, k: u32) -> f32 {
    if (w >= p[0]) {
        return 0.0;
    }
    return src_at(p[2] + w * p[3] + k * p[4]);
}
{{- end}}
@group(0) @binding(2) var dst: texture_storage_2d<rgba32float, write>;

{{template "main_1d_count" "p[5] * p[1]"}}
    let q = e % p[5];
    let k = e / p[5];
    let w = 4u * q;
{{- if .Vec}}
    var v = vec4<f32>(0.0);
    if (w < p[0]) {
        v = src_v((p[2] + w + k * p[4]) / 4u);
    }
    textureStore(dst, vec2<i32>(i32(q), i32(k)), v);
{{- else}}
    textureStore(dst, vec2<i32>(i32(q), i32(k)), vec4<f32>(entry(w, k), entry(w + 1u, k), entry(w + 2u, k), entry(w + 3u, k)));
{{- end}}
}
{{- else}}
// matmul_tex: out (M×N) = op(a)·op(b) from textures that stage pack
// wrote: ta holds op(a) as texels of 4 rows, tb op(b) as texels of 4
// columns, each at its depth k. Each invocation computes a {{.TM}}×{{.TN}}
// block in straight-line code: per k, {{div .TM 4}} + {{div .TN 4}} texel loads for {{mul .TM .TN}}
// products (texel loads are far cheaper than storage loads on llvmpipe,
// yet still most of the kernel's time).
// p[0] = M, p[1] = K, p[2] = N, p[3] = first row of this dispatch; the
// dispatch sums the terms k in [p[4], p[5]){{if .Add}} and adds them to out{{else}} into out{{end}};
// p[6] = the output's offset.
@group(0) @binding(1) var ta: texture_2d<f32>;
@group(0) @binding(2) var tb: texture_2d<f32>;
{{template "matmul_out" .}}

@compute @workgroup_size(8, 8, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let M = p[0];
    let N = p[2];
    let row0 = p[3] + gid.y * {{.TM}}u;
    let col0 = gid.x * {{.TN}}u;
    if (row0 >= M || col0 >= N) {
        return;
    }
    let qa = i32(row0 / 4u);
    let qb = i32(col0 / 4u);
{{- range $i := seq .TM}}{{range $j := seq (div $.TN 4)}}
    var acc{{$i}}_{{$j}} = vec4<f32>(0.0);
{{- end}}{{end}}
    // Four terms an iteration, then the rest: fewer loop iterations for
    // llvmpipe to manage.
    var k = p[4];
    for (; k + {{.KU}}u <= p[5]; k += {{.KU}}u) {
{{- range $u := seq .KU}}
        {{template "mac" dict "K" (printf "i32(k) + %d" $u) "T" $}}
{{- end}}
    }
    for (; k < p[5]; k++) {
        {{template "mac" dict "K" "i32(k)" "T" $}}
    }
    // The variant decides whether to add to out (the compiler drops
    // the reads of out where it does not).
    let zo = p[6];
    let add = {{.Add}};
{{template "matmul_store" .}}
}
{{- end}}
