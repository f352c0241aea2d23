// out (M×N) = op(a)·op(b) with shared-memory tiles, the kernel for GPUs:
// a workgroup of {{div .BN .TN}}×{{div .BM .TM}} threads computes a {{.BM}}×{{.BN}} block of out,
// stepping over k {{.BK}} terms at a time; the threads first copy the
// block's {{.BM}}×{{.BK}} slice of op(a) and {{.BK}}×{{.BN}} slice of op(b) into workgroup
// memory (zeros beyond the matrices' edges, so that any shape runs at the
// tiles' speed), then each multiplies its {{.TM}}×{{.TN}} register block from them{{if .Spread}}:
// its columns {{div .TN 4}} groups of 4, {{div .BN .TN}} groups apart, so that neighbouring
// threads read neighbouring vec4s of tile_b (no bank conflicts) and write
// neighbouring columns{{end}}.
// a is {{if .TransA}}stored K×M (transposed){{else}}M×K{{end}}; b is {{if .TransB}}stored N×K (transposed){{else}}K×N{{end}}.
// The parameters are the matmul kernel's: p[0] = M, p[1] = K, p[2] = N,
// p[3] = first row of this dispatch; the dispatch sums the terms k in
// [p[4], p[5]), adding to out unless p[4] = 0. Matrix z = p[6] + wid.z of
// a batch starts at p[10] + (z, or z mod p[9] if p[9] > 0)·p[7] in a,
// p[11] + z·p[8] in b and p[12] + z·M·N in out; p[13] ≠ 0 adds to out
// always; p[14] is the distance between b's stored rows.
{{- $nt := mul (div .BM .TM) (div .BN .TN)}}
// a, b and out hold float32{{if or .HalfA .HalfB .Half}} or (a: {{.HalfA}}, b: {{.HalfB}}, out: {{.Half}})
// float16, two to a word{{end}}.
@group(0) @binding(1) var<storage, read> a: array<{{if .HalfA}}u32{{else}}f32{{end}}>;
@group(0) @binding(2) var<storage, read> b: array<{{if .HalfB}}u32{{else}}f32{{end}}>;
{{template "matmul_out" .}}
{{template "at" dict "Name" "a" "Half" .HalfA}}
{{template "at" dict "Name" "b" "Half" .HalfB}}

// The tiles, k-major: tile_a[k][m] and tile_b[k][n], as vec4s along m and n.
var<workgroup> tile_a: array<vec4<f32>, {{div (mul .BK .BM) 4}}>;
var<workgroup> tile_b: array<vec4<f32>, {{div (mul .BK .BN) 4}}>;

@compute @workgroup_size({{div .BN .TN}}, {{div .BM .TM}}, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
    let M = p[0];
    let K = p[1];
    let N = p[2];
    let k1 = p[5];
    let row0 = p[3] + wid.y * {{.BM}}u;
    let col0 = wid.x * {{.BN}}u;
    let z = p[6] + wid.z;
    let za = p[10] + select(z, z % max(p[9], 1u), p[9] > 0u) * p[7];
    let zb = p[11] + z * p[8];
    let zo = p[12] + z * M * N;
{{- range $i := seq .TM}}{{range $j := seq (div $.TN 4)}}
    var acc{{$i}}_{{$j}} = vec4<f32>(0.0);
{{- end}}{{end}}
    // Threads beyond the matrices load zeros and store nothing; none
    // returns early, as all meet at the barriers.
    for (var k0 = p[4]; k0 < k1; k0 += {{.BK}}u) {
{{- $lda := "K"}}{{if .TransA}}{{$lda = "M"}}{{end}}
{{- template "load" dict "Tile" "tile_a" "Src" "a" "Z" "za" "W" .BM "BK" .BK "NT" $nt "X0" "row0" "Len" "M" "Ld" $lda "KMajor" .TransA}}
{{- template "load" dict "Tile" "tile_b" "Src" "b" "Z" "zb" "W" .BN "BK" .BK "NT" $nt "X0" "col0" "Len" "N" "Ld" "p[14]" "KMajor" (not .TransB)}}
        workgroupBarrier();
{{- range $kk := seq .BK}}
        {
{{- range $q := seq (div $.TM 4)}}
            let av{{$q}} = tile_a[{{mul $kk (div $.BM 4)}}u + lid.y * {{div $.TM 4}}u + {{$q}}u];
{{- end}}
{{- range $j := seq (div $.TN 4)}}
            let b{{$j}} = tile_b[{{mul $kk (div $.BN 4)}}u + {{if $.Spread}}{{mul $j (div $.BN $.TN)}}u + lid.x{{else}}lid.x * {{div $.TN 4}}u + {{$j}}u{{end}}];
{{- end}}
{{- range $i := seq $.TM}}{{range $j := seq (div $.TN 4)}}
            acc{{$i}}_{{$j}} += b{{$j}} * av{{div $i 4}}[{{mod $i 4}}];
{{- end}}{{end}}
        }
{{- end}}
        workgroupBarrier();
    }
    let r0 = row0 + lid.y * {{.TM}}u;
{{- range $j := seq (div .TN 4)}}
    let c{{$j}} = col0 + {{if $.Spread}}({{mul $j (div $.BN $.TN)}}u + lid.x) * 4u{{else}}lid.x * {{$.TN}}u + {{mul $j 4}}u{{end}};
{{- end}}
    let add = p[4] != 0u || p[13] != 0u;
{{- range $i := seq .TM}}
    if (r0 + {{$i}}u < M) {
        let o{{$i}} = zo + (r0 + {{$i}}u) * N;
{{- range $j := seq (div $.TN 4)}}{{range $c := seq 4}}
        if (c{{$j}} + {{$c}}u < N) {
            set_out(o{{$i}} + c{{$j}} + {{$c}}u, select(0.0, out_at(o{{$i}} + c{{$j}} + {{$c}}u), add) + acc{{$i}}_{{$j}}[{{$c}}]);
        }
{{- end}}{{end}}
    }
{{- end}}
}

{{- define "load"}}
{{- /* The threads copy a BK×W slice of an operand, the rows x0… of a
       Len×K matrix, into .Tile: stored k-major (K×Len) with KMajor, else
       Len×K, its stored rows Ld apart; neighbouring threads read
       neighbouring elements. */}}
{{- range $l := seq (div (mul .W .BK) .NT)}}
        {
            let e = li + {{mul $l $.NT}}u;
{{- if $.KMajor}}
            let x = e % {{$.W}}u;
            let kk = e / {{$.W}}u;
{{- else}}
            let kk = e % {{$.BK}}u;
            let x = e / {{$.BK}}u;
{{- end}}
            let r = {{$.X0}} + x;
            let k = k0 + kk;
            var v = 0.0;
            if (r < {{$.Len}} && k < k1) {
                v = {{$.Src}}_at({{$.Z}} + {{if $.KMajor}}k * {{$.Ld}} + r{{else}}r * {{$.Ld}} + k{{end}});
            }
            {{$.Tile}}[kk * {{div $.W 4}}u + x / 4u][x % 4u] = v;
        }
{{- end}}
{{- end}}
