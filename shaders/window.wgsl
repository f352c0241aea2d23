// The window family: sliding windows over NCHW images (convolution's
// im2col and col2im, max and average pooling and their gradients). One
// invocation per output element i < p[0], each gathering what it needs,
// so no two invocations write one element. The kernel is {{.Op}}.
// p[1] = N, p[2] = N0 (first image of x for im2col, of out for col2im),
// p[3] = C, p[4] = H, p[5] = W, p[6] = KH, p[7] = KW, p[8] = SH,
// p[9] = SW, p[10] = PH, p[11] = PW, p[12] = DH, p[13] = DW, p[14] = OH,
// p[15] = OW. The window (oi, oj)'s tap (a, b) reads the pixel
// (oi·SH − PH + a·DH, oj·SW − PW + b·DW), which may lie in the padding.
{{- if eq .Op "max_pool_grad"}}
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> g: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
{{- else if eq .Op "avg_pool_grad"}}
@group(0) @binding(1) var<storage, read> g: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
{{- else}}
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
{{- end}}

// The pixel that tap (a, b) of window (oi, oj) reads, as (y, x).
fn tap(oi: u32, oj: u32, a: u32, b: u32) -> vec2<i32> {
    return vec2<i32>(i32(oi * p[8] + a * p[12]) - i32(p[10]), i32(oj * p[9] + b * p[13]) - i32(p[11]));
}

fn inside(q: vec2<i32>) -> bool {
    return q.x >= 0 && q.x < i32(p[4]) && q.y >= 0 && q.y < i32(p[5]);
}

// The window whose tap (a, b) reads pixel (y, x), as (oi, oj), and
// whether there is one.
fn window_of(y: u32, x: u32, a: u32, b: u32) -> vec3<i32> {
    let yy = i32(y + p[10]) - i32(a * p[12]);
    let xx = i32(x + p[11]) - i32(b * p[13]);
    if (yy < 0 || xx < 0 || yy % i32(p[8]) != 0 || xx % i32(p[9]) != 0) {
        return vec3<i32>(0, 0, 0);
    }
    let oi = yy / i32(p[8]);
    let oj = xx / i32(p[9]);
    return vec3<i32>(oi, oj, select(0, 1, oi < i32(p[14]) && oj < i32(p[15])));
}
{{- if or (eq .Op "max_pool") (eq .Op "max_pool_grad")}}

// The index in x of the first maximum of window (oi, oj) of plane base
// (NaN above every number; the padding never chosen).
fn arg_max(base: u32, oi: u32, oj: u32) -> u32 {
    var best = 0xffffffffu;
    var m = 0.0;
    for (var t = 0u; t < p[6] * p[7]; t++) {
        let q = tap(oi, oj, t / p[7], t % p[7]);
        if (!inside(q)) {
            continue;
        }
        let k = base + u32(q.x) * p[5] + u32(q.y);
        let v = x[k];
        if (best == 0xffffffffu || (!is_nan(m) && (is_nan(v) || v > m))) {
            best = k;
            m = v;
        }
    }
    return best;
}
{{- end}}

{{template "main_1d"}}
    let OH = p[14];
    let OW = p[15];
    let KK = p[6] * p[7];
{{- if eq .Op "im2col"}}
    // out (N, C·KH·KW, OH·OW)
    let j = i % OW;
    let oi = (i / OW) % OH;
    let t = (i / (OW * OH)) % KK;
    let nc = i / (OW * OH * KK);
    let q = tap(oi, j, t / p[7], t % p[7]);
    var v = 0.0;
    if (inside(q)) {
        v = x[((p[2] * p[3] + nc) * p[4] + u32(q.x)) * p[5] + u32(q.y)];
    }
    out[i] = v;
{{- else if or (eq .Op "max_pool") (eq .Op "avg_pool")}}
    // out (N, C, OH, OW)
    let oj = i % OW;
    let oi = (i / OW) % OH;
    let base = (i / (OW * OH)) * p[4] * p[5];
{{- if eq .Op "max_pool"}}
    out[i] = x[arg_max(base, oi, oj)];
{{- else}}
    var s = 0.0;
    for (var t = 0u; t < KK; t++) {
        let q = tap(oi, oj, t / p[7], t % p[7]);
        if (inside(q)) {
            s += x[base + u32(q.x) * p[5] + u32(q.y)];
        }
    }
    out[i] = s / f32(KK);
{{- end}}
{{- else}}
    // out (N, C, H, W){{if eq .Op "col2im"}}, from image N0{{end}}: a sum over the windows holding the pixel
    let xx = i % p[5];
    let y = (i / p[5]) % p[4];
    let nc = i / (p[5] * p[4]);
    var s = 0.0;
    for (var t = 0u; t < KK; t++) {
        let a = t / p[7];
        let b = t % p[7];
        let w = window_of(y, xx, a, b);
        if (w.z == 0) {
            continue;
        }
        let win = (nc * OH + u32(w.x)) * OW + u32(w.y);
{{- if eq .Op "col2im"}}
        s += x[(nc * KK + t) * OH * OW + u32(w.x) * OW + u32(w.y)];
{{- else if eq .Op "avg_pool_grad"}}
        s += g[win] / f32(KK);
{{- else}}
        let base = nc * p[4] * p[5];
        if (arg_max(base, u32(w.x), u32(w.y)) == i) {
            s += g[win];
        }
{{- end}}
    }
{{- if eq .Op "col2im"}}
    out[p[2] * p[3] * p[4] * p[5] + i] = s;
{{- else}}
    out[i] = s;
{{- end}}
{{- end}}
}
