// present: draws a canvas texture over the viewport (the render pass sets
// it to the canvas's aspect inside the window), sampled linearly so that
// it scales to any window size. A render pipeline, not a compute kernel;
// it ignores the prelude's parameters.
struct Vertex {
    @builtin(position) pos: vec4<f32>,
    @location(0) uv: vec2<f32>,
}

// One triangle covers the viewport: vertices (−1, 1), (3, 1), (−1, −3).
@vertex
fn vs(@builtin(vertex_index) i: u32) -> Vertex {
    let x = f32((i << 1u) & 2u);
    let y = f32(i & 2u);
    var v: Vertex;
    v.pos = vec4<f32>(x * 2.0 - 1.0, 1.0 - y * 2.0, 0.0, 1.0);
    v.uv = vec2<f32>(x, y);
    return v;
}

@group(0) @binding(1) var canvas: texture_2d<f32>;
@group(0) @binding(2) var smp: sampler;

@fragment
fn fs(v: Vertex) -> @location(0) vec4<f32> {
    return textureSample(canvas, smp, v.uv);
}
