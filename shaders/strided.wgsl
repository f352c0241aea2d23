// The strided family: a strided copy, one invocation per element i < p[0]
// of a shape of rank p[1] (p[2..10)): with c the coordinates of i,
// dst[p[27] + Σ c[k]·p[18 + k]] = src[p[26] + Σ c[k]·p[10 + k]], the
// offsets found as broadcasting finds its operands'. The elements are
// copied as u32 words, so any 4-byte dtype goes.
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;
{{template "broadcast_offsets"}}

{{template "main_1d"}}
    let off = broadcast_offsets(i);
    dst[p[27] + off.y] = src[p[26] + off.x];
}
