// out (M×N) = op(a)·op(b); each invocation computes a {{.TM}}×{{.TN}} block with
// straight-line code (loops over local arrays are slow on llvmpipe).
// a is {{if .TransA}}stored K×M (transposed){{else}}M×K{{end}}{{if .VecA}}, read as vec4{{end}};
// b is {{if .TransB}}stored N×K (transposed){{else}}K×N{{end}}{{if .VecB}}, read as vec4{{end}}.{{if .DotK}}
// Both are read as vec4s along k (their rows of K consecutive, K a
// multiple of 4): 4 terms of k an iteration, added in the order of the
// scalar loop's, and the offsets, batch strides and p.RowB count vec4s.{{end}}
// p: device/webgpu's gemmParams{{if .VecB}} (b's in vec4s){{end}}. A
// dispatch sums the terms k in [p.K0, p.K1) (lavapipe silently ends a
// loop after about 32768 iterations).{{if .Flat}}
// Here the blocks of all the matrices are numbered in one sequence,
// spread over workgroups of 64: llvmpipe's SIMD lanes span a workgroup's
// x only, and products of few columns left most of them idle in the 8×8
// workgroups of the two-dimensional grid.{{end}}
// k is split into p.Parts parts (1, or more for a product of few blocks
// and long k, which otherwise runs on as few of the CPU's threads), the
// part the grid's z (with the batch: z = part + p.Parts·matrix) picks: a
// part writes its sums of the dispatch's terms to out p.PartStride·part
// further, and stage sum adds the parts up.
// a, b and out hold E (f32).
@group(0) @binding(1) var<storage, read> a: array<{{if or .VecA .DotK}}E4{{else}}E{{end}}>;
@group(0) @binding(2) var<storage, read> b: array<{{if or .VecB .DotK}}E4{{else}}E{{end}}>;
{{template "matmul_out" dict "VecO" .VecO "Half" false}}
{{- if or .VecA .DotK}}
{{template "vec4_at" dict "Name" "a" "Half" false}}
{{- else}}
{{template "at" dict "Name" "a" "Half" false}}
{{- end}}
{{- if or .VecB .DotK}}
{{template "vec4_at" dict "Name" "b" "Half" false}}
{{- else}}
{{template "at" dict "Name" "b" "Half" false}}
{{- end}}

{{- if .Flat}}
{{template "entry_64" "t"}}
    let M = p.M;
    let K = p.K;
    let N = p.N;
    if (t >= p.Blocks) {
        return;
    }
    let rest = t / p.ColBlocks;
    let row0 = p.Row0 + (rest % p.RowBlocks) * {{.TM}}u;
    let col0 = (t % p.ColBlocks) * {{.TN}}u;
    let zz = rest / p.RowBlocks;
{{- else}}
@compute @workgroup_size(8, 8, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let M = p.M;
    let K = p.K;
    let N = p.N;
    let row0 = p.Row0 + gid.y * {{.TM}}u;
    let col0 = gid.x * {{.TN}}u;
    if (row0 >= M || col0 >= N) {
        return;
    }
    let zz = gid.z;
{{- end}}
    // (No division where k is whole: llvmpipe divides lane by lane.)
    var part = 0u;
    var z = p.Batch0 + zz;
    if (p.Parts > 1u) {
        part = zz % p.Parts;
        z = p.Batch0 + zz / p.Parts;
    }
    let kLo = p.K0 + part * p.PartTerms;
    let kHi = min(p.K1, kLo + p.PartTerms);
    let za = p.OffA + select(z, z % max(p.CycleA, 1u), p.CycleA > 0u) * p.StrideA;
    let zb = p.OffB + z * p.StrideB;
    let zo = p.OffOut + z * M * p.LdOut + part * p.PartStride;
{{- if .VecA}}
{{- range $q := seq (div .TM 4)}}
    let ra{{$q}} = min(row0 + {{mul $q 4}}u, M - 4u) / 4u;
{{- end}}
{{- else}}
{{- range $i := seq .TM}}
    let r{{$i}} = min(row0 + {{$i}}u, M - 1u);
{{- end}}
{{- end}}
{{- if .VecB}}
{{- range $j := seq (div .TN 4)}}
    let cb{{$j}} = min((col0 + {{mul $j 4}}u) / 4u, p.RowB - 1u);
{{- end}}
{{- else}}
{{- range $c := seq .TN}}
    let c{{$c}} = min(col0 + {{$c}}u, N - 1u);
{{- end}}
{{- end}}
{{- range $i := seq .TM}}{{range $j := seq (div $.TN 4)}}
    var acc{{$i}}_{{$j}} = vec4<f32>(0.0);
{{- end}}{{end}}
{{- if .DotK}}
    for (var k = kLo / 4u; k < kHi / 4u; k++) {
{{- range $i := seq .TM}}
        let a{{$i}} = a_v(za + r{{$i}} * (K / 4u) + k);
{{- end}}
{{- range $c := seq .TN}}
        let b{{$c}} = b_v(zb + c{{$c}} * p.RowB + k);
{{- end}}
{{- range $t := seq 4}}
{{- range $j := seq (div $.TN 4)}}
        let b{{$j}}_{{$t}} = vec4<f32>({{range $c := seq 4}}{{if $c}}, {{end}}b{{add (mul $j 4) $c}}[{{$t}}]{{end}});
{{- end}}
{{- range $i := seq $.TM}}{{range $j := seq (div $.TN 4)}}
        acc{{$i}}_{{$j}} += b{{$j}}_{{$t}} * a{{$i}}[{{$t}}];
{{- end}}{{end}}
{{- end}}
    }
{{- else}}
    for (var k = kLo; k < kHi; k++) {
{{- if .VecA}}
{{- range $q := seq (div .TM 4)}}
        let av{{$q}} = a_v(za + k * (M / 4u) + ra{{$q}});
{{- end}}
{{- range $i := seq .TM}}
        let a{{$i}} = av{{div $i 4}}[{{mod $i 4}}];
{{- end}}
{{- else}}
{{- range $i := seq .TM}}
        let a{{$i}} = a_at(za + {{if $.TransA}}k * M + r{{$i}}{{else}}r{{$i}} * K + k{{end}});
{{- end}}
{{- end}}
{{- if .VecB}}
{{- range $j := seq (div .TN 4)}}
        let b{{$j}} = b_v(zb + k * p.RowB + cb{{$j}});
{{- end}}
{{- else}}
{{- range $j := seq (div .TN 4)}}
        let b{{$j}} = vec4<f32>({{range $c := seq 4}}{{if $c}}, {{end}}b_at(zb + {{if $.TransB}}c{{add (mul $j 4) $c}} * p.RowB + k{{else}}k * p.RowB + c{{add (mul $j 4) $c}}{{end}}){{end}});
{{- end}}
{{- end}}
{{- range $i := seq .TM}}{{range $j := seq (div $.TN 4)}}
        acc{{$i}}_{{$j}} += b{{$j}} * a{{$i}};
{{- end}}{{end}}
    }
{{- end}}
    // Whether to add to out: a later dispatch of k's terms, or Accumulate
    // (0 where the product is split: stage sum adds to out).
    let add = p.K0 != 0u || p.Accumulate != 0u;
{{template "matmul_store" dict "TM" .TM "TN" .TN "VecO" .VecO "Ld" "p.LdOut" "Bias" false}}
}
