// The strided family: a strided copy, one invocation per element i < p.N
// of a shape of rank p.Rank (device/webgpu's broadcastParams): with c the
// coordinates of i, dst[p.BOff + Σ c[k]·p.BStrides[k]] = src[p.AOff +
// Σ c[k]·p.AStrides[k]], the offsets found as broadcasting finds its
// operands'. The elements are
// copied as bits: u32 words, so any 4-byte dtype goes{{if .F16}} (here f16
// values, two bytes){{end}}{{if and .Half .VecDst}}; here float16
// halves of words, an invocation per four halves of dst (a vec2<u32>, as
// the vec4s below){{else if .Half}}; here float16
// halves of words, a word of dst perhaps shared by two invocations, each
// writing its half with atomics{{else if .Vec}}; here vec4s of them (the
// innermost dimension contiguous in both, the shape, strides and offsets
// counted in vec4s){{else if .VecDst}}; here an invocation per vec4 of
// dst, whose rows (the innermost dimension, p.Row elements long,
// contiguous in both) start at multiples of 4 there though not in src:
// the shape's innermost dimension, dst's strides and offset count vec4s,
// src's innermost stride is 4, and a row's last vec4 keeps what dst held
// past the row's end{{end}}.
{{- $E := "u32"}}{{if .F16}}{{$E = "f16"}}{{end}}
{{- $T := $E}}{{if .Vec}}{{$T = printf "vec4<%s>" $E}}{{end}}
@group(0) @binding(1) var<storage, read> src: array<{{$T}}>;
{{- if and .Half .VecDst}}
@group(0) @binding(2) var<storage, read_write> dst: array<vec2<u32>>;
{{- else if .Half}}
@group(0) @binding(2) var<storage, read_write> dst: array<atomic<u32>>;
{{- else if .VecDst}}
@group(0) @binding(2) var<storage, read_write> dst: array<vec4<{{$E}}>>;
{{- else}}
@group(0) @binding(2) var<storage, read_write> dst: array<{{$T}}>;
{{- end}}
{{template "broadcast_offsets" .Rank}}
{{- if .Half}}

// The float16 bits of element s of src.
fn half_at(s: u32) -> u32 {
    return (src[s >> 1u] >> ((s & 1u) * 16u)) & 0xffffu;
}
{{- end}}

{{template "main_1d" "p.N"}}
    let off = broadcast_offsets(i);
{{- if .VecDst}}
{{- $l := add .Rank -1}}
    let s = p.AOff + off.x;
    let d = p.BOff + off.y;
    // The elements of this vec4 in the row: 4, or fewer at its end.
    let q = i - udiv(i, p.Shape[{{$l}}], p.Magic[{{$l}}]) * p.Shape[{{$l}}];
    let m = p.Row - 4u * q;
{{- if .Half}}
    // Four halves, or fewer at the row's end (dst's others kept).
    if (m >= 4u) {
        dst[d] = vec2<u32>(half_at(s) | (half_at(s + 1u) << 16u), half_at(s + 2u) | (half_at(s + 3u) << 16u));
    } else {
        let old = dst[d];
        var h = vec4<u32>(half_at(s), old.x >> 16u, old.y & 0xffffu, old.y >> 16u);
        if (m > 1u) {
            h.y = half_at(s + 1u);
        }
        if (m > 2u) {
            h.z = half_at(s + 2u);
        }
        dst[d] = vec2<u32>(h.x | (h.y << 16u), h.z | (h.w << 16u));
    }
{{- else}}
    if (m >= 4u) {
        dst[d] = vec4<{{$E}}>(src[s], src[s + 1u], src[s + 2u], src[s + 3u]);
    } else {
        var v = dst[d];
        v.x = src[s];
        if (m > 1u) {
            v.y = src[s + 1u];
        }
        if (m > 2u) {
            v.z = src[s + 2u];
        }
        dst[d] = v;
    }
{{- end}}
{{- else if .Half}}
    let s = p.AOff + off.x;
    let h = half_at(s);
    let d = p.BOff + off.y;
    let shift = (d & 1u) * 16u;
    atomicAnd(&dst[d >> 1u], ~(0xffffu << shift));
    atomicOr(&dst[d >> 1u], h << shift);
{{- else}}
    dst[p.BOff + off.y] = src[p.AOff + off.x];
{{- end}}
}
