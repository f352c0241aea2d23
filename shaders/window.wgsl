// The window family: sliding windows over NCHW images (convolution's
// im2col and col2im, max and average pooling and their gradients). The
// kernel is {{.Op}}; value(i) is output element i, gathered from what it
// needs, so no two invocations write one element: one invocation per
// output element i < p.Items{{if .Half}}, or here, on float16 storage, one per
// output word (two elements, p.Elems of them in all){{end}}.
// p: device/webgpu's windowParams; p.N0 is the first image of x for
// im2col, of out for col2im.
// The geometry is specialised into constants, which turns its divisions
// into multiplications (llvmpipe has no vector integer division). The
// window (oi, oj)'s tap (a, b) reads the pixel
// (oi·SH − PH + a·DH, oj·SW − PW + b·DW), which may lie in the padding.
const C = {{.C}}u;
const H = {{.H}}u;
const W = {{.W}}u;
const KH = {{.KH}}u;
const KW = {{.KW}}u;
const SH = {{.SH}}u;
const SW = {{.SW}}u;
const PH = {{.PH}}u;
const PW = {{.PW}}u;
const DH = {{.DH}}u;
const DW = {{.DW}}u;
const OH = {{.OH}}u;
const OW = {{.OW}}u;
const KK = {{mul .KH .KW}}u;
// The length of a row of im2col's and col2im's columns (OH·OW, or padded
// with zeros to PITCH).
const PITCH = {{.Pitch}}u;
{{- $T := "E"}}{{if .Half}}{{$T = "u32"}}{{end}}
{{- $X := $T}}{{if .Pairs}}{{$X = "vec2<E>"}}{{end}}
{{- if eq .Op "max_pool_grad"}}
@group(0) @binding(1) var<storage, read> x: array<{{$X}}>;
@group(0) @binding(2) var<storage, read> g: array<{{$T}}>;
@group(0) @binding(3) var<storage, read_write> out: array<{{$T}}>;
{{- else if eq .Op "avg_pool_grad"}}
@group(0) @binding(1) var<storage, read> g: array<{{$T}}>;
@group(0) @binding(2) var<storage, read_write> out: array<{{$T}}>;
{{- else}}
@group(0) @binding(1) var<storage, read> x: array<{{$X}}>;
@group(0) @binding(2) var<storage, read_write> out: array<{{$T}}>;
{{- end}}

{{- if .Pairs}}

// x is read by pairs of pixels along a row (see arg_max).
fn x_at(i: u32) -> f32 {
    return f32(x[i >> 1u][i & 1u]);
}
{{- else if ne .Op "avg_pool_grad"}}
{{template "at" dict "Name" "x" "Half" .Half}}
{{- end}}
{{- if or (eq .Op "max_pool_grad") (eq .Op "avg_pool_grad")}}
{{template "at" dict "Name" "g" "Half" .Half}}
{{- end}}

// The pixel that tap (a, b) of window (oi, oj) reads, as (y, x).
fn tap(oi: u32, oj: u32, a: u32, b: u32) -> vec2<i32> {
    return vec2<i32>(i32(oi * SH + a * DH) - i32(PH), i32(oj * SW + b * DW) - i32(PW));
}

fn inside(q: vec2<i32>) -> bool {
    return q.x >= 0 && q.x < i32(H) && q.y >= 0 && q.y < i32(W);
}

// The window whose tap (a, b) reads pixel (y, x), as (oi, oj), and
// whether there is one.
fn window_of(y: u32, x: u32, a: u32, b: u32) -> vec3<i32> {
    let yy = i32(y + PH) - i32(a * DH);
    let xx = i32(x + PW) - i32(b * DW);
    if (yy < 0 || xx < 0 || yy % i32(SH) != 0 || xx % i32(SW) != 0) {
        return vec3<i32>(0, 0, 0);
    }
    let oi = yy / i32(SH);
    let oj = xx / i32(SW);
    return vec3<i32>(oi, oj, select(0, 1, oi < i32(OH) && oj < i32(OW)));
}
{{- if or (eq .Op "max_pool") (eq .Op "max_pool_grad")}}

// The index in x of the first maximum of window (oi, oj) of plane base
// (NaN above every number; the padding never chosen).
fn arg_max(base: u32, oi: u32, oj: u32) -> u32 {
    var best = 0xffffffffu;
    var m = 0.0;
{{- if .Pairs}}
    // Windows 2 wide, undilated, at even columns of even rows: a row's two
    // taps are one aligned vec2 (both in the image or both in the
    // padding), one load where two took twice as long on llvmpipe.
    for (var a = 0u; a < KH; a++) {
        let q = tap(oi, oj, a, 0u);
        if (!inside(q)) {
            continue;
        }
        let k = base + u32(q.x) * W + u32(q.y);
        let v = vec2<f32>(x[k >> 1u]);
        if (best == 0xffffffffu || (!is_nan(m) && (is_nan(v.x) || v.x > m))) {
            best = k;
            m = v.x;
        }
        if (!is_nan(m) && (is_nan(v.y) || v.y > m)) {
            best = k + 1u;
            m = v.y;
        }
    }
    return best;
{{- else}}
    for (var t = 0u; t < KH * KW; t++) {
        let q = tap(oi, oj, t / KW, t % KW);
        if (!inside(q)) {
            continue;
        }
        let k = base + u32(q.x) * W + u32(q.y);
        let v = x_at(k);
        if (best == 0xffffffffu || (!is_nan(m) && (is_nan(v) || v > m))) {
            best = k;
            m = v;
        }
    }
    return best;
{{- end}}
}
{{- end}}

{{- if eq .Op "im2col"}}

// Row r of OW outputs of im2col's out (N, C·KH·KW{{if .Ones}} + 1{{end}}, OH·OW), as
// (nc, t, oi, ones): window row oi's tap t of image-channel nc{{if .Ones}}, or with
// ones = 1 a row of an image's row of ones{{end}}.
fn col_row(r: u32) -> vec4<u32> {
{{- if .Ones}}
    let per = (C * KK + 1u) * OH;
    let q = r % per;
    return vec4<u32>((r / per) * C + q / (OH * KK), (q / OH) % KK, q % OH, select(0u, 1u, q >= C * KK * OH));
{{- else}}
    return vec4<u32>(r / (OH * KK), (r / OH) % KK, r % OH, 0u);
{{- end}}
}
{{- end}}

// Output element i (of image N0 onwards for col2im).
fn value(i: u32) -> f32 {
{{- if eq .Op "im2col"}}
    let c = i % PITCH;
    if (c >= OH * OW) {
        return 0.0;
    }
    let rw = col_row((i / PITCH) * OH + c / OW);
    if (rw.w == 1u) {
        return 1.0;
    }
    let q = tap(rw.z, c % OW, rw.y / KW, rw.y % KW);
    if (!inside(q)) {
        return 0.0;
    }
    return x_at(((p.N0 * C + rw.x) * H + u32(q.x)) * W + u32(q.y));
{{- else if or (eq .Op "max_pool") (eq .Op "avg_pool")}}
    // out (N, C, OH, OW)
    let oj = i % OW;
    let oi = (i / OW) % OH;
    let base = (i / (OW * OH)) * H * W;
{{- if eq .Op "max_pool"}}
    // A window wholly in the padding (dilated) holds −Inf, PyTorch's start.
    let a = arg_max(base, oi, oj);
    if (a == 0xffffffffu) {
        return -inf();
    }
    return x_at(a);
{{- else}}
    var s = 0.0;
    for (var t = 0u; t < KK; t++) {
        let q = tap(oi, oj, t / KW, t % KW);
        if (inside(q)) {
            s += x_at(base + u32(q.x) * W + u32(q.y));
        }
    }
    return s / f32(KK);
{{- end}}
{{- else}}
    // out (N, C, H, W): a sum over the windows holding the pixel
    let xx = i % W;
    let y = (i / W) % H;
    let nc = i / (W * H);
{{- if .Disjoint}}
    // The windows do not overlap (each stride spans the dilated kernel):
    // the pixel lies in one window at most, (oi, oj), at its tap (a, b).
    let oi = (y + PH) / SH;
    let oj = (xx + PW) / SW;
    let a = (y + PH) % SH;
    let b = (xx + PW) % SW;
    if (oi >= OH || oj >= OW || a % DH != 0u || b % DW != 0u || a / DH >= KH || b / DW >= KW) {
        return 0.0;
    }
    let win = (nc * OH + oi) * OW + oj;
{{- if eq .Op "avg_pool_grad"}}
    return g_at(win) / f32(KK);
{{- else}}
    return select(0.0, g_at(win), arg_max(nc * H * W, oi, oj) == i);
{{- end}}
{{- else}}
    var s = 0.0;
    for (var t = 0u; t < KK; t++) {
        let a = t / KW;
        let b = t % KW;
        let w = window_of(y, xx, a, b);
        if (w.z == 0) {
            continue;
        }
        let win = (nc * OH + u32(w.x)) * OW + u32(w.y);
{{- if eq .Op "col2im"}}
        s += x_at((nc * KK + t) * PITCH + u32(w.x) * OW + u32(w.y));
{{- else if eq .Op "avg_pool_grad"}}
        s += g_at(win) / f32(KK);
{{- else}}
        let base = nc * H * W;
        if (arg_max(base, u32(w.x), u32(w.y)) == i) {
            s += g_at(win);
        }
{{- end}}
    }
    return s;
{{- end}}
{{- end}}
}

// Where this dispatch's output starts in out, in elements.
fn first() -> u32 {
    return {{if eq .Op "col2im"}}p.N0 * C * H * W{{else}}0u{{end}};
}

{{template "main_1d" "p.Items"}}
{{- if and .Half (not .Cells)}}
    // Output word i: elements 2i and 2i + 1 (the second, past the end,
    // is the word's padding); first() is even.
    let e = 2u * i;
    var hi = 0.0;
    if (e + 1u < p.Elems) {
        hi = value(e + 1u);
    }
    out[first() / 2u + i] = pack_half2(vec2<f32>(value(e), hi));
{{- else if .Cells}}
    // An invocation per cell, the SH×SW pixels whose window is (ci, cj)
    // ({{.CH}}×{{.CW}} cells a plane, those past the windows' covering pixels that
    // no window holds): the window's maximum found once, its gradient
    // stored there and zeros at the rest, rather than every pixel finding
    // its window's maximum again.{{if .Half}} On float16, SW, PW and W are even: a
    // cell's row is whole words, two pixels a store.{{end}}
    let cj = i % {{.CW}}u;
    let ci = (i / {{.CW}}u) % {{.CH}}u;
    let base = (i / {{mul .CW .CH}}u) * H * W;
    var best = 0xffffffffu;
    var gv = 0.0;
    if (ci < OH && cj < OW) {
        best = arg_max(base, ci, cj);
        gv = g_at((i / {{mul .CW .CH}}u * OH + ci) * OW + cj);
    }
    for (var a = 0u; a < SH; a++) {
        let y = i32(ci * SH + a) - i32(PH);
        if (y < 0 || y >= i32(H)) {
            continue;
        }
{{- if .Half}}
        for (var b = 0u; b < SW; b += 2u) {
            let xx = i32(cj * SW + b) - i32(PW);
            if (xx >= 0 && xx < i32(W)) {
                let k = base + u32(y) * W + u32(xx);
                out[k / 2u] = pack_half2(vec2<f32>(select(0.0, gv, k == best), select(0.0, gv, k + 1u == best)));
            }
        }
{{- else}}
        for (var b = 0u; b < SW; b++) {
            let xx = i32(cj * SW + b) - i32(PW);
            if (xx >= 0 && xx < i32(W)) {
                let k = base + u32(y) * W + u32(xx);
                out[k] = to_e(select(0.0, gv, k == best));
            }
        }
{{- end}}
    }
{{- else if eq .Op "im2col"}}
    // A row of OW outputs an invocation, stepping through x by SW.
    let rw = col_row(i);
    let nc = rw.x;
    let q = tap(rw.z, 0u, rw.y / KW, rw.y % KW);
    let o = (i / OH) * PITCH + rw.z * OW;
{{- if ne .Pitch (mul .OH .OW)}}
    if (rw.z == OH - 1u) {
        // The last window row also writes its row's padding.
        for (var j = OH * OW; j < PITCH; j++) {
            out[o - rw.z * OW + j] = to_e(0.0);
        }
    }
{{- end}}
    if (rw.w == 1u) {
        for (var j = 0u; j < OW; j++) {
            out[o + j] = to_e(1.0);
        }
        return;
    }
    if (q.x < 0 || q.x >= i32(H)) {
        for (var j = 0u; j < OW; j++) {
            out[o + j] = to_e(0.0);
        }
        return;
    }
    let row = ((p.N0 * C + nc) * H + u32(q.x)) * W;
    for (var j = 0u; j < OW; j++) {
        let xx = q.y + i32(j * SW);
        var v = 0.0;
        if (xx >= 0 && xx < i32(W)) {
            v = f32(x[row + u32(xx)]);
        }
        out[o + j] = to_e(v);
    }
{{- else}}
    out[first() + i] = to_e(value(i));
{{- end}}
}
