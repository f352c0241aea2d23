{{- if eq .Stage "pack"}}
// conv_tex, stage pack: copies float32 NCHW images into an rgba32float
// texture, 4 channels a texel, with a border of zeros: texel
// (q·Wp + x, n·Hp + y) holds channels 4·q…4·q+3 (zeros past C) of image
// n at (y − PH, x − PW) (zeros outside the image). An invocation writes a
// row of Wp texels: lanes a texel each took twice as long on llvmpipe.
// p: device/webgpu's convPackParams.
{{template "texel_rows" "Wp"}}
    let hw = p.W * p.H;
    let t0 = q * p.Wp;
    let left = p.C - 4u * q; // channels from 4·q on
    let at = p.Src + (n * p.C + 4u * q) * hw + u32(max(y, 0)) * p.W - p.PW;
    for (var xp = 0u; xp < p.Wp; xp++) {
        var v = vec4<f32>(0.0);
        if (inside && xp >= p.PW && xp - p.PW < p.W) {
            let a = at + xp;
            v.x = src_at(a);
            if (left > 1u) {
                v.y = src_at(a + hw);
            }
            if (left > 2u) {
                v.z = src_at(a + 2u * hw);
            }
            if (left > 3u) {
                v.w = src_at(a + 3u * hw);
            }
        }
        textureStore(dst, vec2<i32>(i32(t0 + xp), i32(ty)), v);
    }
}
{{- else if eq .Stage "rows"}}
// conv_tex, stage rows: float32 NCHW images of C channels (fewer than
// 4, which stage pack would fill to 4 with zeros) as an rgba32float
// texture of their rows' window entries, 4 a texel: texel (q·OW + ox,
// n·Hp + y) holds entries 4·q…4·q+3 (zeros past C·KW) of output column
// ox in row y − PH of image n (zeros in the PH rows of padding above and
// below), entry c·KW + kx being x[n, c, y − PH, ox·SW − PW + kx·DW] (zero
// outside the image). Stage fwd then takes the texture as images of
// C·KW channels (filled to whole texels) under a window of KH taps by
// one, the filters of stage wpack's rows. An invocation writes a row of
// OW texels. p: device/webgpu's convRowsParams.
{{template "texel_rows" "OW"}}
    let t0 = q * p.OW;
    let at = p.Src + n * p.C * p.H * p.W + u32(max(y, 0)) * p.W;
{{- range $r := seq 4}}
    // Entry 4·q + {{$r}}: its plane, its column's offset, whether it is one.
    let en{{$r}} = 4u * q + {{$r}}u;
    let c{{$r}} = en{{$r}} / p.KW;
    let at{{$r}} = at + c{{$r}} * p.H * p.W;
    let live{{$r}} = inside && en{{$r}} < p.C * p.KW;
    let dx{{$r}} = i32((en{{$r}} - c{{$r}} * p.KW) * p.DW) - i32(p.PW);
{{- end}}
    for (var ox = 0u; ox < p.OW; ox++) {
        let left = i32(ox * p.SW);
        var v = vec4<f32>(0.0);
{{- range $r := seq 4}}
        let x{{$r}} = left + dx{{$r}};
        if (live{{$r}} && x{{$r}} >= 0 && x{{$r}} < i32(p.W)) {
            v[{{$r}}] = src_at(at{{$r}} + u32(x{{$r}}));
        }
{{- end}}
        textureStore(dst, vec2<i32>(i32(t0 + ox), i32(ty)), v);
    }
}
{{- else if eq .Stage "wpack"}}
// conv_tex, stage wpack: copies float32 filters [F, C, KH, KW] into an
// rgba32float texture, 4 channels a texel: texel (c4·KH·KW + t, f) holds
// channels 4·c4…4·c4+3 (zeros past C) of filter f at tap t = ky·KW + kx.
{{- if .Flip}}
// Here the filters are those of the transposed convolution (the input's
// gradient): filter f is input channel f of w [C, F, KH, KW], channel c its
// output channel c, the taps turned by 180°.
{{- else if .Rows}}
// Here the filters are stage rows' (images of fewer than 4 channels):
// texel (q·KH + ky, f) holds entries 4·q…4·q+3 (zeros past C·KW) of row
// ky of filter f, entry c·KW + kx being w[f, c, ky, kx] (p.KH = {{.Taps}}).
{{- end}}
// p: device/webgpu's convWPackParams.
@group(0) @binding(1) var<storage, read> w: array<E>;
@group(0) @binding(2) var dst: texture_storage_2d<rgba32float, write>;
{{template "at" dict "Name" "w" "Half" false}}

{{template "main_1d_count" "p.F * p.Texels"}}
    let k4 = e % p.Texels;
    let f = e / p.Texels;
    var v = vec4<f32>(0.0);
    let c4 = k4 / {{.Taps}}u;
    let t = k4 % {{.Taps}}u;
{{- if .Rows}}
    for (var r = 0u; r < 4u; r++) {
        let en = 4u * c4 + r;
        if (en < p.C * p.KW) {
            let c = en / p.KW;
            v[r] = w_at(((f * p.C + c) * {{.Taps}}u + t) * p.KW + en - c * p.KW);
        }
    }
{{- else}}
    for (var r = 0u; r < 4u; r++) {
        let c = 4u * c4 + r;
        if (c < p.C) {
{{- if .Flip}}
            v[r] = w_at((c * p.F + f) * {{.Taps}}u + {{.Taps}}u - 1u - t);
{{- else}}
            v[r] = w_at((f * p.C + c) * {{.Taps}}u + t);
{{- end}}
        }
    }
{{- end}}
    textureStore(dst, vec2<i32>(i32(k4), i32(f)), v);
}
{{- else if eq .Stage "fwd"}}
// conv_tex, stage fwd: out[n, f, oy, ox] = Σ over channels c and taps
// (ky, kx) of w[f, c, ky, kx]·x[n, c, oy·SH + ky·DH, ox·SW + kx·DW]
// + b[f] (where p.Bias is set), from the textures of stages pack (x, its
// border the padding) and wpack (w): an implicit matrix product, with no
// im2col. Each invocation computes {{.TM}} filters × {{.TN}} output pixels (the
// pixels of every image in a row, flattened): per 4 channels and tap,
// {{.TN}} + {{.TM}} texel loads for {{mul .TM .TN}} dot products of vec4s. A
// workgroup's 64 invocations cover 2^p.WXLog blocks of pixels by 64 / 2^p.WXLog
// of filters, consecutive invocations along the pixels.
// p: device/webgpu's convFwdParams.
@group(0) @binding(1) var tx: texture_2d<f32>;
@group(0) @binding(2) var tw: texture_2d<f32>;
{{template "matmul_out" dict "VecO" false "Half" false}}
@group(0) @binding(4) var<storage, read> bias: array<E>;
{{template "at" dict "Name" "bias" "Half" false}}

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) l: u32) {
    let F = p.F;
    let P = p.P;
    let wx = 1u << p.WXLog;
    let f0 = (wg.y * (64u >> p.WXLog) + (l >> p.WXLog)) * {{.TM}}u;
    let j0 = (wg.x * wx + (l & (wx - 1u))) * {{.TN}}u;
    if (f0 >= F || j0 >= P) {
        return;
    }
    let ohw = p.OHW;
    let ow = p.OW;
{{- range $j := seq .TN}}
    let q{{$j}} = min(j0 + {{$j}}u, P - 1u);
    let b{{$j}} = vec2<i32>(i32((q{{$j}} % ohw % ow) * p.SW), i32((q{{$j}} / ohw) * p.Hp + (q{{$j}} % ohw / ow) * p.SH));
{{- end}}
{{- range $i := seq .TM}}
    let r{{$i}} = i32(min(f0 + {{$i}}u, F - 1u));
{{- range $j := seq $.TN}}
    var acc{{$i}}_{{$j}} = 0.0;
{{- end}}{{end}}
    // Texel column k4 of the filters is channel quad c4 at tap (ky, kx),
    // k4 = (c4·KH + ky)·KW + kx: the tap's offset into the images'
    // texture is (c4·Wp + kx·DW, ky·DH), kept as (cx + tapx, tapy), stepped
    // along with k4 (no division: the filters' size is the dispatch's).
    let wp = p.Wp;
    let dw = p.DW;
    let dh = p.DH;
    let rowEnd = p.KW * dw;
    let quadEnd = p.KH * dh;
    var cx = 0u;
    var tapx = 0u;
    var tapy = 0u;
    for (var k4 = 0u; k4 < p.Texels; k4++) {
        let o = vec2<i32>(i32(cx + tapx), i32(tapy));
        let k = i32(k4);
{{- range $j := seq .TN}}
        let x{{$j}} = textureLoad(tx, b{{$j}} + o, 0);
{{- end}}
{{- range $i := seq .TM}}
        let w{{$i}} = textureLoad(tw, vec2<i32>(k, r{{$i}}), 0);
{{- range $j := seq $.TN}}
        acc{{$i}}_{{$j}} += dot(w{{$i}}, x{{$j}});
{{- end}}{{end}}
        tapx += dw;
        let wrap = tapx == rowEnd;
        tapx = select(tapx, 0u, wrap);
        tapy = select(tapy, tapy + dh, wrap);
        let next = tapy == quadEnd;
        tapy = select(tapy, 0u, next);
        cx = select(cx, cx + wp, next);
    }
    let zo = p.Out;
    // Each filter's bias, loaded once (r clamps to the last filter).
{{- range $i := seq .TM}}
    var bias{{$i}} = 0.0;
{{- end}}
    let hasBias = p.Bias != 0u;
    if (hasBias) {
{{- range $i := seq .TM}}
        bias{{$i}} = bias_at(u32(r{{$i}}));
{{- end}}
    }
{{- range $j := seq .TN}}
    if (j0 + {{$j}}u < P) {
        let ob = zo + q{{$j}} / ohw * F * ohw + q{{$j}} % ohw;
{{- range $i := seq $.TM}}
        if (f0 + {{$i}}u < F) {
            set_out(ob + (f0 + {{$i}}u) * ohw, select(acc{{$i}}_{{$j}}, acc{{$i}}_{{$j}} + bias{{$i}}, hasBias));
        }
{{- end}}
    }
{{- end}}
}
{{- else if eq .Stage "dw"}}
// conv_tex, stage dw: the filters' gradient, gw[f, c, ky, kx] = Σ over
// images n and output pixels (oy, ox) of gy[n, f, oy, ox]·x[n, c, oy·SH +
// ky·DH, ox·SW + kx·DW], and the bias's, Σ gy[n, f, oy, ox], from the
// textures of stage pack (x, its border the padding; gy, at an offset
// past its border). Each invocation sums the output rows (n, oy) of its
// split for {{.TM}} filters × {{div .TN 4}} texels of 4 channels at a tap: per
// pixel, {{div .TM 4}} + {{div .TN 4}} texel loads for {{mul .TM .TN}} products. It writes
// part[split, f, c·KH·KW + t], the bias's at column C·KH·KW, which a
// reduction sums over the splits.
// p: device/webgpu's convDWParams.
@group(0) @binding(1) var tx: texture_2d<f32>;
@group(0) @binding(2) var ty: texture_2d<f32>;
@group(0) @binding(3) var<storage, read_write> part: array<f32>;

{{template "entry_64" "e"}}
    let F = p.F;
    let C = p.C;
    let K4 = p.K4;
    let taps = p.Taps;
    let kw = p.KW;
    let fb = (F + {{sub .TM 1}}u) / {{.TM}}u;
    let kb = (K4 + {{sub (div .TN 4) 1}}u) / {{div .TN 4}}u;
    let split = e / (fb * kb);
    let r0 = split * p.RowsPerSplit;
    if (r0 >= p.Rows) {
        return;
    }
    let r1 = min(r0 + p.RowsPerSplit, p.Rows);
    let f0 = (e % (fb * kb)) / kb * {{.TM}}u;
    let k0 = e % kb * {{div .TN 4}}u;
    let wq = i32(p.GyWp);
{{- range $q := seq (div .TN 4)}}
    let kq{{$q}} = min(k0 + {{$q}}u, K4 - 1u);
    let o{{$q}} = vec2<i32>(i32(kq{{$q}} / taps * p.Wp + kq{{$q}} % taps % kw * p.DW), i32(kq{{$q}} % taps / kw * p.DH));
{{- end}}
{{- range $i := seq .TM}}{{range $q := seq (div $.TN 4)}}
    var acc{{$i}}_{{$q}} = vec4<f32>(0.0);
{{- end}}{{end}}
{{- range $g := seq (div .TM 4)}}
    var bs{{$g}} = vec4<f32>(0.0);
    let g{{$g}} = i32(min(f0 / 4u + {{$g}}u, (F + 3u) / 4u - 1u)) * wq;
{{- end}}
    for (var r = r0; r < r1; r++) {
        let n = r / p.OH;
        let oy = r - n * p.OH;
        let xr = i32(n * p.Hp + oy * p.SH);
        let yr = i32(n * p.GyHp + oy + p.GyPH);
        for (var ox = 0u; ox < p.OW; ox++) {
            let xb = vec2<i32>(i32(ox * p.SW), xr);
            let yb = vec2<i32>(i32(ox + p.GyPW), yr);
{{- range $q := seq (div .TN 4)}}
            let x{{$q}} = textureLoad(tx, xb + o{{$q}}, 0);
{{- end}}
{{- range $g := seq (div .TM 4)}}
            let y{{$g}} = textureLoad(ty, yb + vec2<i32>(g{{$g}}, 0), 0);
            bs{{$g}} += y{{$g}};
{{- range $r := seq 4}}{{$i := add (mul $g 4) $r}}{{range $q := seq (div $.TN 4)}}
            acc{{$i}}_{{$q}} += x{{$q}} * y{{$g}}[{{$r}}];
{{- end}}{{end}}
{{- end}}
        }
    }
    let row = C * taps + 1u;
    let zo = (p.Split0 + split) * F * row;
{{- range $i := seq .TM}}
    if (f0 + {{$i}}u < F) {
        let ob = zo + (f0 + {{$i}}u) * row;
{{- range $q := seq (div $.TN 4)}}
        if (k0 + {{$q}}u < K4) {
            let c = kq{{$q}} / taps * 4u;
            let t = kq{{$q}} % taps;
            for (var r = 0u; r < 4u; r++) {
                if (c + r < C) {
                    part[ob + (c + r) * taps + t] = acc{{$i}}_{{$q}}[r];
                }
            }
        }
{{- end}}
        if (k0 == 0u) {
            part[ob + row - 1u] = bs{{div $i 4}}[{{mod $i 4}}];
        }
    }
{{- end}}
}
{{- end}}

{{- define "texel_rows"}}
{{- /* . names the parameter of the texels a quad's row spans. */}}
@group(0) @binding(1) var<storage, read> src: array<E>;
@group(0) @binding(2) var dst: texture_storage_2d<rgba32float, write>;
{{template "at" dict "Name" "src" "Half" false}}
{{template "udiv"}}

{{template "main_1d_count" "p.Rows"}}
    // e is row y of texel quad q of image n, y − PH of the image (inside
    // it or not): the texture's row n·Hp + y, from texel q·p.{{.}} on.
    let ty = udiv(e, p.Q, p.MagicQ);
    let q = e - ty * p.Q;
    let n = udiv(ty, p.Hp, p.MagicHp);
    let y = i32(ty - n * p.Hp) - i32(p.PH);
    let inside = y >= 0 && y < i32(p.H);
{{- end}}
