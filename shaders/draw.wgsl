// The draw family: {{.Op}}. It paints into a canvas of p[0]×p[1] (W×H)
// packed RGBA pixels (int32, red in the low byte), one invocation per
// pixel of the rectangle at (p[2], p[3]) of p[4]×p[5] pixels, clipped to
// the canvas. Parameters: p[6] = colour, p[7] = N, p[8] = IH, p[9] = IW,
// p[10] = columns, p[11] = border, p[12] = zoom, p[13], p[14] = lo, hi
// (f32 bits), p[15] = thickness, p[16], p[17] = glyph width and height.
@group(0) @binding(1) var<storage, read> src: array<{{if eq .Op "images"}}f32{{else if eq .Op "curve"}}f32{{else}}i32{{end}}>;
@group(0) @binding(2) var<storage, read> aux: array<i32>;
@group(0) @binding(3) var<storage, read_write> canvas: array<i32>;

{{- if eq .Op "images"}}

// grey maps v in [lo, hi] to a grey pixel, NaN to red.
fn grey(v: f32) -> u32 {
    if (is_nan(v)) {
        return 0xff0000ffu;
    }
    let g = u32(clamp((v - pf(13u)) / (pf(14u) - pf(13u)), 0.0, 1.0) * 255.0 + 0.5);
    return g | (g << 8u) | (g << 16u) | 0xff000000u;
}
{{- end}}

{{- if eq .Op "curve"}}

// The curve's value at fractional index f, interpolated.
fn value_at(f: f32) -> f32 {
    let n = p[7];
    let i = min(u32(f), n - 1u);
    let j = min(i + 1u, n - 1u);
    return src[i] + (src[j] - src[i]) * (f - f32(i));
}

// The row where value u lies: lo at the bottom, hi at the top.
fn row_of(u: f32) -> i32 {
    let t = clamp((u - pf(13u)) / (pf(14u) - pf(13u)), 0.0, 1.0);
    return i32((1.0 - t) * f32(p[5] - 1u) + 0.5);
}
{{- end}}

{{template "main_1d_count" "p[4] * p[5]"}}
    let rx = e % p[4];
    let ry = e / p[4];
    let x = p[2] + rx;
    let y = p[3] + ry;
    if (x >= p[0] || y >= p[1]) {
        return;
    }
    let at = y * p[0] + x;
{{- if eq .Op "rect"}}
    canvas[at] = bitcast<i32>(p[6]);
{{- else if eq .Op "images"}}
    let zoom = p[12];
    let border = p[11];
    let cw = p[9] * zoom + 2u * border;
    let ch = p[8] * zoom + 2u * border;
    let k = (ry / ch) * p[10] + rx / cw;
    if (rx / cw >= p[10] || k >= p[7]) {
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
    canvas[at] = bitcast<i32>(grey(src[(k * p[8] + i) * p[9] + j]));
{{- else if eq .Op "curve"}}
    let n = p[7];
    let scale = f32(n - 1u) / f32(max(p[4] - 1u, 1u));
    let f0 = f32(rx) * scale;
    let f1 = f32(min(rx + 1u, p[4] - 1u)) * scale;
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
    let half = (i32(p[15]) - 1) / 2;
    let r = i32(ry);
    if (found && r >= row_of(hi) - half && r <= row_of(lo) + half) {
        canvas[at] = bitcast<i32>(p[6]);
    }
{{- else if eq .Op "text"}}
    let zoom = p[12];
    let gw = p[16];
    let gh = p[17];
    let k = rx / (gw * zoom);
    let r = ry / zoom;
    if (k >= p[7] || r >= gh) {
        return;
    }
    let code = src[k];
    if (code < 32 || code > 126) {
        return;
    }
    let c = (rx % (gw * zoom)) / zoom;
    if (((aux[u32(code - 32) * gh + r] >> c) & 1) != 0) {
        canvas[at] = bitcast<i32>(p[6]);
    }
{{- end}}
}
