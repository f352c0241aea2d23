// The draw family: {{.Op}}. It paints into a canvas of p.W×p.H packed
// RGBA pixels (int32, red in the low byte), one invocation per pixel of
// the rectangle at (p.X, p.Y) of p.RW×p.RH pixels, clipped to the canvas.
// p: device/webgpu's drawParams, device.Paint's fields.
@group(0) @binding(1) var<storage, read> src: array<{{if eq .Op "images"}}f32{{else if eq .Op "curve"}}f32{{else}}i32{{end}}>;
@group(0) @binding(2) var<storage, read> aux: array<i32>;
@group(0) @binding(3) var<storage, read_write> canvas: array<i32>;

{{- if eq .Op "images"}}

// grey maps v in [lo, hi] to a grey pixel, NaN to red.
fn grey(v: f32) -> u32 {
    if (is_nan(v)) {
        return 0xff0000ffu;
    }
    let g = u32(clamp((v - p.Lo) / (p.Hi - p.Lo), 0.0, 1.0) * 255.0 + 0.5);
    return g | (g << 8u) | (g << 16u) | 0xff000000u;
}
{{- end}}

{{- if eq .Op "curve"}}

// The curve's value at fractional index f, interpolated.
fn value_at(f: f32) -> f32 {
    let n = p.N;
    let i = min(u32(f), n - 1u);
    let j = min(i + 1u, n - 1u);
    return src[i] + (src[j] - src[i]) * (f - f32(i));
}

// The row where value u lies: lo at the bottom, hi at the top.
fn row_of(u: f32) -> i32 {
    let t = clamp((u - p.Lo) / (p.Hi - p.Lo), 0.0, 1.0);
    return i32((1.0 - t) * f32(p.RH - 1u) + 0.5);
}
{{- end}}

{{template "main_1d_count" "p.RW * p.RH"}}
    let rx = e % p.RW;
    let ry = e / p.RW;
    let x = p.X + rx;
    let y = p.Y + ry;
    if (x >= p.W || y >= p.H) {
        return;
    }
    let at = y * p.W + x;
{{- if eq .Op "rect"}}
    canvas[at] = bitcast<i32>(p.Color);
{{- else if eq .Op "images"}}
    let zoom = p.Zoom;
    let border = p.Border;
    let cw = p.IW * zoom + 2u * border;
    let ch = p.IH * zoom + 2u * border;
    let k = (ry / ch) * p.Cols + rx / cw;
    if (rx / cw >= p.Cols || k >= p.N) {
        return;
    }
    let cx = rx % cw;
    let cy = ry % ch;
    if (cx < border || cy < border || cx >= cw - border || cy >= ch - border) {
        if (aux[k] != 0) {
            canvas[at] = aux[k];
        }
        return;
    }
    let i = (cy - border) / zoom;
    let j = (cx - border) / zoom;
    canvas[at] = bitcast<i32>(grey(src[(k * p.IH + i) * p.IW + j]));
{{- else if eq .Op "curve"}}
    let n = p.N;
    let scale = f32(n - 1u) / f32(max(p.RW - 1u, 1u));
    let f0 = f32(rx) * scale;
    let f1 = f32(min(rx + 1u, p.RW - 1u)) * scale;
    var lo = inf();
    var hi = -inf();
    var found = false;
    let a = value_at(f0);
    let b = value_at(f1);
    if (!is_nan(a)) {
        lo = min(lo, a);
        hi = max(hi, a);
        found = true;
    }
    if (!is_nan(b)) {
        lo = min(lo, b);
        hi = max(hi, b);
        found = true;
    }
    // The values between, at most 4096 of them.
    let last = min(n, u32(f0) + 4097u);
    for (var i = u32(f0) + 1u; f32(i) < f1 && i < last; i++) {
        let v = src[i];
        if (!is_nan(v)) {
            lo = min(lo, v);
            hi = max(hi, v);
            found = true;
        }
    }
    let half = (i32(p.Thick) - 1) / 2;
    let r = i32(ry);
    if (found && r >= row_of(hi) - half && r <= row_of(lo) + half) {
        canvas[at] = bitcast<i32>(p.Color);
    }
{{- else if eq .Op "text"}}
    let zoom = p.Zoom;
    let gw = p.GW;
    let gh = p.GH;
    let k = rx / (gw * zoom);
    let r = ry / zoom;
    if (k >= p.N || r >= gh) {
        return;
    }
    let code = src[k];
    if (code < 32 || code > 126) {
        return;
    }
    let c = (rx % (gw * zoom)) / zoom;
    if (((aux[u32(code - 32) * gh + r] >> c) & 1) != 0) {
        canvas[at] = bitcast<i32>(p.Color);
    }
{{- end}}
}
