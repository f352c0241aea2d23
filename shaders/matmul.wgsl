// out (M×N) = op(a)·op(b); each invocation computes a {{.TM}}×{{.TN}} block with
// straight-line code (loops over local arrays are slow on llvmpipe).
// a is {{if .TransA}}stored K×M (transposed){{else}}M×K{{end}}{{if .VecA}}, read as vec4{{end}};
// b is {{if .TransB}}stored N×K (transposed){{else}}K×N{{end}}{{if .VecB}}, read as vec4{{end}}.{{if .DotK}}
// Both are read as vec4s along k (their rows of K consecutive, K a
// multiple of 4): 4 terms of k an iteration, added in the order of the
// scalar loop's, and the offsets, batch strides and p[14] count vec4s.{{end}}
// p[0] = M, p[1] = K, p[2] = N, p[3] = first row of this dispatch; the
// dispatch sums the terms k in [p[4], p[5]), adding to out unless p[4] = 0
// (lavapipe silently ends a loop after about 32768 iterations). Matrix
// z = p[6] + gid.z of a batch starts at p[10] + (z, or z mod p[9] if
// p[9] > 0)·p[7] in a, p[11] + z·p[8] in b (in the arrays' elements) and
// p[12] + z·M·N in out; p[13] ≠ 0 adds to out always; p[14] is the
// distance between b's stored rows{{if .VecB}} (in vec4s){{end}}.{{if .Flat}}
// Here the blocks of all the matrices are numbered in one sequence (p[15]
// column blocks a row of blocks, p[16] rows of blocks a matrix, p[17]
// blocks in all), spread over workgroups of 64: llvmpipe's SIMD lanes
// span a workgroup's x only, and products of few columns left most of
// them idle in the 8×8 workgroups of the two-dimensional grid.{{end}}{{if .Split}}
// Here k is split into p[18] parts of p[19] terms, the part the grid's z
// (with the batch: z = part + p[18]·matrix) picks: a part writes its sums
// of the dispatch's terms to out at p[20]·part further, not adding to it
// unless p[4] ≠ 0, and stage sum adds the parts up (a product of few
// blocks and long k otherwise runs on as few of the CPU's threads).{{end}}
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
    let M = p[0];
    let K = p[1];
    let N = p[2];
    if (t >= p[17]) {
        return;
    }
    let rest = t / p[15];
    let row0 = p[3] + (rest % p[16]) * {{.TM}}u;
    let col0 = (t % p[15]) * {{.TN}}u;
    let zz = rest / p[16];
{{- else}}
@compute @workgroup_size(8, 8, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let M = p[0];
    let K = p[1];
    let N = p[2];
    let row0 = p[3] + gid.y * {{.TM}}u;
    let col0 = gid.x * {{.TN}}u;
    if (row0 >= M || col0 >= N) {
        return;
    }
    let zz = gid.z;
{{- end}}
{{- if .Split}}
    let part = zz % p[18];
    let z = p[6] + zz / p[18];
    let kLo = p[4] + part * p[19];
    let kHi = min(p[5], kLo + p[19]);
{{- else}}
    let z = p[6] + zz;
    let kLo = p[4];
    let kHi = p[5];
{{- end}}
    let za = p[10] + select(z, z % max(p[9], 1u), p[9] > 0u) * p[7];
    let zb = p[11] + z * p[8];
    let zo = p[12] + z * M * N{{if .Split}} + part * p[20]{{end}};
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
    let cb{{$j}} = min((col0 + {{mul $j 4}}u) / 4u, p[14] - 1u);
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
        let b{{$c}} = b_v(zb + c{{$c}} * p[14] + k);
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
        let b{{$j}} = b_v(zb + k * p[14] + cb{{$j}});
{{- end}}
{{- else}}
{{- range $j := seq (div .TN 4)}}
        let b{{$j}} = vec4<f32>({{range $c := seq 4}}{{if $c}}, {{end}}b_at(zb + {{if $.TransB}}c{{add (mul $j 4) $c}} * p[14] + k{{else}}k * p[14] + c{{add (mul $j 4) $c}}{{end}}){{end}});
{{- end}}
{{- end}}
{{- range $i := seq .TM}}{{range $j := seq (div $.TN 4)}}
        acc{{$i}}_{{$j}} += b{{$j}} * a{{$i}};
{{- end}}{{end}}
    }
{{- end}}
    // Whether to add to out: a later dispatch of k's terms, or Accumulate
    // (which a split product leaves to stage sum).
    let add = p[4] != 0u{{if not .Split}} || p[13] != 0u{{end}};
{{template "matmul_store" .}}
}
