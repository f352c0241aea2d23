// The cast family: {{if .ToHalf}}float32 to float16{{else}}float16 to float32{{end}}. Conversions
// work on the bits (no float arithmetic that a flush of subnormals could
// change): to float16 rounds to nearest even, overflows to ±Inf, keeps
// subnormals and keeps NaN (payload truncated, quiet bit set); from
// float16 is exact.
{{- if .Vec}}
// By vec4s, eight values an invocation (the value count a multiple of 8):
// p.Count vec4s of words, with common.wgsl's half4_to_f32 and f32_to_half4.
@group(0) @binding(1) var<storage, read> src: array<vec4<{{if .ToHalf}}f32{{else}}u32{{end}}>>;
@group(0) @binding(2) var<storage, read_write> dst: array<vec4<{{if .ToHalf}}u32{{else}}f32{{end}}>>;
{{template "half4"}}

{{template "main_1d" "p.Count"}}
{{- if .ToHalf}}
    let a = src[2u * i];
    let b = src[2u * i + 1u];
    dst[i] = f32_to_half4(vec4<f32>(a.x, a.z, b.x, b.z)) | (f32_to_half4(vec4<f32>(a.y, a.w, b.y, b.w)) << vec4<u32>(16u));
{{- else}}
    let w = src[i];
    let lo = half4_to_f32(w);
    let hi = half4_to_f32(w >> vec4<u32>(16u));
    dst[2u * i] = vec4<f32>(lo.x, hi.x, lo.y, hi.y);
    dst[2u * i + 1u] = vec4<f32>(lo.z, hi.z, lo.w, hi.w);
{{- end}}
}
{{- else}}
// {{if .ToHalf}}Each invocation packs two values into a word; p.Count words of
// p.Values values{{else}}Each invocation unpacks one value; p.Count values{{end}}.
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;
{{- if .ToHalf}}

fn to_half(u: u32) -> u32 {
    let sign = (u >> 16u) & 0x8000u;
    let e = (u >> 23u) & 0xffu;
    let m = u & 0x7fffffu;
    if (e == 0xffu) { // Inf or NaN
        return sign | 0x7c00u | select(0u, 0x200u | (m >> 13u), m != 0u);
    }
    let he = i32(e) - 127 + 15;
    if (he >= 0x1f) {
        return sign | 0x7c00u;
    }
    if (he <= 0) { // a subnormal half, or zero
        if (14 - he > 24) {
            return sign;
        }
        let mm = m | 0x800000u;
        let shift = u32(14 - he);
        var h = mm >> shift;
        let round = 1u << (shift - 1u);
        if ((mm & round) != 0u && (mm & (3u * round - 1u)) != 0u) {
            h += 1u;
        }
        return sign | h;
    }
    let h = sign | (u32(he) << 10u) | (m >> 13u);
    // Round half to even: up when above half, or at half with an odd result.
    if ((m & 0x1000u) != 0u && (m & 0x2fffu) != 0u) {
        return h + 1u;
    }
    return h;
}

{{template "main_1d" "p.Count"}}
    let lo = to_half(src[2u * i]);
    var hi = 0u;
    if (2u * i + 1u < p.Values) {
        hi = to_half(src[2u * i + 1u]);
    }
    dst[i] = lo | (hi << 16u);
}
{{- else}}

fn from_half(h: u32) -> u32 {
    let sign = (h & 0x8000u) << 16u;
    let e = (h >> 10u) & 0x1fu;
    let m = h & 0x3ffu;
    if (e == 0x1fu) {
        return sign | select(0x7f800000u, 0x7fc00000u | (m << 13u), m != 0u);
    }
    if (e == 0u) {
        if (m == 0u) {
            return sign;
        }
        // A subnormal: m·2⁻²⁴, normalised (m < 2¹⁰).
        let lead = 31u - countLeadingZeros(m); // the top bit's position, 0…9
        return sign | ((lead + 103u) << 23u) | ((m << (23u - lead)) & 0x7fffffu);
    }
    return sign | ((e + 112u) << 23u) | (m << 13u);
}

{{template "main_1d" "p.Count"}}
    dst[i] = from_half((src[i / 2u] >> (16u * (i % 2u))) & 0xffffu);
}
{{- end}}
{{- end}}
