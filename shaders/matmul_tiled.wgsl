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
// p: device/webgpu's gemmParams, as the register kernel's (matmul.wgsl):
// k is split into p.Parts parts (1, or more for a product of few
// blocks), the part the grid's z (with the batch: z = part +
// p.Parts·matrix) picks, a part writing its sums to out p.PartStride·part
// further.
{{- $nt := mul (div .BM .TM) (div .BN .TN)}}
// a, b and out hold float32{{if or .HalfA .HalfB .Half}} or (a: {{.HalfA}}, b: {{.HalfB}}, out: {{.Half}})
// float16, two to a word{{end}}.
{{template "operand" dict "Name" "a" "Half" .HalfA "Vec" .VecA "Binding" 1}}
{{template "operand" dict "Name" "b" "Half" .HalfB "Vec" .VecB "Binding" 2}}
{{template "matmul_out" .}}

// The tiles, k-major: tile_a[k][m] and tile_b[k][n], as vec4s along m and n,
// their rows SA and SB vec4s long (a vec4 more than the block where a
// thread stores a vec4 along k as four values down a column, so that the
// threads' stores fall in different banks). Rows of rows: the products index rows by
// constants and within a row by the thread's (naga clamps each index that
// is not a constant; these clamps are the same at every step).
{{- $sa := div .BM 4}}{{if and .VecA (not .TransA)}}{{$sa = add $sa 1}}{{end}}
{{- $sb := div .BN 4}}{{if and .VecB .TransB}}{{$sb = add $sb 1}}{{end}}
var<workgroup> tile_a: array<array<vec4<f32>, {{$sa}}>, {{.BK}}>;
var<workgroup> tile_b: array<array<vec4<f32>, {{$sb}}>, {{.BK}}>;

@compute @workgroup_size({{div .BN .TN}}, {{div .BM .TM}}, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
    let M = p.M;
    let K = p.K;
    let N = p.N;
    var part = 0u;
    var zz = wid.z;
    if (p.Parts > 1u) {
        part = wid.z % p.Parts;
        zz = wid.z / p.Parts;
    }
    let k1 = min(p.K1, p.K0 + (part + 1u) * p.PartTerms);
    let by = wid.y;
    let bx = wid.x;
    let row0 = p.Row0 + by * {{.BM}}u;
    let col0 = bx * {{.BN}}u;
    let z = p.Batch0 + zz;
    let za = p.OffA + select(z, z % max(p.CycleA, 1u), p.CycleA > 0u) * p.StrideA;
    let zb = p.OffB + z * p.StrideB;
    let zo = p.OffOut + z * M * N + part * p.PartStride;
{{- range $i := seq .TM}}{{range $j := seq (div $.TN 4)}}
    var acc{{$i}}_{{$j}} = vec4<f32>(0.0);
{{- end}}{{end}}
{{- $lda := "K"}}{{if .TransA}}{{$lda = "M"}}{{end}}
{{- $fa := dict "Tile" "tile_a" "Src" "a" "Reg" "ra" "V" .VecA "Z" "za" "W" .BM "BK" .BK "NT" $nt "X0" "row0" "Len" "M" "Ld" $lda "KMajor" .TransA}}
{{- $fb := dict "Tile" "tile_b" "Src" "b" "Reg" "rb" "V" .VecB "Z" "zb" "W" .BN "BK" .BK "NT" $nt "X0" "col0" "Len" "N" "Ld" "p.RowB" "KMajor" (not .TransB)}}
    // Each thread fetches its share of the next step's slices into
    // registers ({{if .Pre}}before the products of this step, so that the loads overlap
    // them{{else}}after this step's products{{end}}), and stores them into the tiles at the step's
    // start. Threads beyond the matrices load zeros and store nothing; none
    // returns early, as all meet at the barriers.
{{- template "regs" $fa}}
{{- template "regs" $fb}}
    var k0 = p.K0 + part * p.PartTerms;
{{- template "fetch" $fa}}
{{- template "fetch" $fb}}
    for (; k0 < k1; k0 += {{.BK}}u) {
{{- template "stash" $fa}}
{{- template "stash" $fb}}
        workgroupBarrier();
        let next = k0 + {{.BK}}u;
{{- if .Pre}}
{{- template "fetch_next" dict "A" $fa "B" $fb}}
{{- end}}
{{- template "products" .}}
        workgroupBarrier();
{{- if not .Pre}}
{{- template "fetch_next" dict "A" $fa "B" $fb}}
{{- end}}
    }
    let r0 = row0 + lid.y * {{.TM}}u;
{{- range $j := seq (div .TN 4)}}
    let c{{$j}} = col0 + {{if $.Spread}}({{mul $j (div $.BN $.TN)}}u + lid.x) * 4u{{else}}lid.x * {{$.TN}}u + {{mul $j 4}}u{{end}};
{{- end}}
    let add = p.K0 != 0u || p.Accumulate != 0u; // Accumulate 0 where split
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

{{- /* The products of one step: each thread's TM×TN block from the tiles. */}}
{{- define "products"}}
{{- $t := .}}
{{- range $kk := seq $t.BK}}
        {
{{- range $q := seq (div $t.TM 4)}}
            let av{{$q}} = tile_a[{{$kk}}u][lid.y * {{div $t.TM 4}}u + {{$q}}u];
{{- end}}
{{- range $j := seq (div $t.TN 4)}}
            let b{{$j}} = tile_b[{{$kk}}u][{{if $t.Spread}}{{mul $j (div $t.BN $t.TN)}}u + lid.x{{else}}lid.x * {{div $t.TN 4}}u + {{$j}}u{{end}}];
{{- end}}
{{- range $i := seq $t.TM}}{{range $j := seq (div $t.TN 4)}}
            acc{{$i}}_{{$j}} += b{{$j}} * av{{div $i 4}}[{{mod $i 4}}];
{{- end}}{{end}}
        }
{{- end}}
{{- end}}

{{- define "operand"}}
{{- if .Vec}}
@group(0) @binding({{.Binding}}) var<storage, read> {{.Name}}4: array<E4>;
{{- else}}
@group(0) @binding({{.Binding}}) var<storage, read> {{.Name}}: array<{{if .Half}}u32{{else}}E{{end}}>;
{{template "at" .}}
{{- end}}
{{- end}}

{{- /* A thread's share of a BK×W slice of an operand, the rows X0… of a
       Len×K matrix stored k-major (K×Len) with KMajor, else Len×K, its
       stored rows Ld apart: one value a thread and register, neighbouring
       threads on neighbouring elements; or with V, vec4s along the stored
       rows (Ld, the offset and the row at k0 multiples of 4). */}}

{{- define "regs"}}
{{- $d := .}}{{$n := div (mul .W .BK) .NT}}{{if .V}}{{$n = div $n 4}}{{end}}
{{- range $l := seq $n}}
    var {{$d.Reg}}{{$l}}: {{if $d.V}}vec4<f32>{{else}}f32{{end}};
{{- end}}
{{- end}}

{{- /* fetch_next fetches operands A and B at step next, if there is one. */}}
{{- define "fetch_next"}}
        if (next < k1) {
            let k0 = next;
{{- template "fetch" .A}}
{{- template "fetch" .B}}
        }
{{- end}}

{{- /* fetch loads the thread's share of the slice at k0 into its registers. */}}
{{- define "fetch"}}
{{- $d := .}}{{$n := div (mul .W .BK) .NT}}{{if .V}}{{$n = div $n 4}}{{end}}
{{- range $l := seq $n}}
        {
{{- template "coords" dict "D" $d "L" $l}}
            let r = {{$d.X0}} + x;
            let k = k0 + kk;
            {{$d.Reg}}{{$l}} = {{if $d.V}}vec4<f32>(0.0){{else}}0.0{{end}};
            if (r < {{$d.Len}} && k < k1) {
{{- if $d.V}}
                {{$d.Reg}}{{$l}} = vec4<f32>({{$d.Src}}4[({{$d.Z}} + {{if $d.KMajor}}k * {{$d.Ld}} + r{{else}}r * {{$d.Ld}} + k{{end}}) >> 2u]);
{{- else}}
                {{$d.Reg}}{{$l}} = {{$d.Src}}_at({{$d.Z}} + {{if $d.KMajor}}k * {{$d.Ld}} + r{{else}}r * {{$d.Ld}} + k{{end}});
{{- end}}
            }
        }
{{- end}}
{{- end}}

{{- /* stash stores the thread's registers into the tile (k-major, vec4s
       along x). */}}
{{- define "stash"}}
{{- $d := .}}{{$n := div (mul .W .BK) .NT}}{{if .V}}{{$n = div $n 4}}{{end}}
{{- range $l := seq $n}}
        {
{{- template "coords" dict "D" $d "L" $l}}
{{- if not $d.V}}
            {{$d.Tile}}[kk][x / 4u][x % 4u] = {{$d.Reg}}{{$l}};
{{- else if $d.KMajor}}
            {{$d.Tile}}[kk][x / 4u] = {{$d.Reg}}{{$l}};
{{- else}}
{{- range $c := seq 4}}
            {{$d.Tile}}[kk + {{$c}}u][x / 4u][x % 4u] = {{$d.Reg}}{{$l}}[{{$c}}];
{{- end}}
{{- end}}
        }
{{- end}}
{{- end}}

{{- /* coords: the slice coordinates x (along the rows' length) and kk of
       register L's value or first value. */}}
{{- define "coords"}}
{{- $d := .D}}
            let e = li + {{mul .L $d.NT}}u;
{{- if and $d.V $d.KMajor}}
            let x = e % {{div $d.W 4}}u * 4u;
            let kk = e / {{div $d.W 4}}u;
{{- else if $d.V}}
            let kk = e % {{div $d.BK 4}}u * 4u;
            let x = e / {{div $d.BK 4}}u;
{{- else if $d.KMajor}}
            let x = e % {{$d.W}}u;
            let kk = e / {{$d.W}}u;
{{- else}}
            let kk = e % {{$d.BK}}u;
            let x = e / {{$d.BK}}u;
{{- end}}
{{- end}}
