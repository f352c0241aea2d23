// Parameters of this dispatch: shapes, strides and scalars as u32 words.
@group(0) @binding(0) var<storage, read> p: array<u32>;

fn pf(i: u32) -> f32 {
    return bitcast<f32>(p[i]);
}

// Linear index of an invocation in a dispatch spread over x and y.
fn linear_index(wid: vec3<u32>, nwg: vec3<u32>, lid: u32, wg: u32) -> u32 {
    return (wid.y * nwg.x + wid.x) * wg + lid;
}
