{{- if eq .Stage "pack"}}
// conv_tex, stage pack: copies float32 NCHW images into an rgba32float
// texture, 4 channels a texel, with a border of zeros: texel
// (c4·Wp + x, n·Hp + y) holds channels 4·c4…4·c4+3 (zeros past C) of image
// n at (y − PH, x − PW) (zeros outside the image). An invocation writes a
// row of Wp texels: lanes a texel each took twice as long on llvmpipe.
// p[0] = W, p[1] = H, p[2] = C, p[3] = Wp, p[4] = Hp, p[5] = PW,
// p[6] = PH, p[7] = C4 (channel quads), p[8] = rows (N·C4·Hp),
// p[9] = src's offset, p[10], p[11] = the magic numbers of p[7] and p[4]
// (see udiv).
@group(0) @binding(1) var<storage, read> src: array<E>;
@group(0) @binding(2) var dst: texture_storage_2d<rgba32float, write>;
{{template "at" dict "Name" "src" "Half" false}}
{{template "udiv"}}

{{template "main_1d_count" "p[8]"}}
    // e is row y of channel quad c4 of image n: the texture's row
    // n·Hp + y, from texel c4·Wp on.
    let ty = udiv(e, p[7], p[10]);
    let c4 = e - ty * p[7];
    let n = udiv(ty, p[4], p[11]);
    let y = i32(ty - n * p[4]) - i32(p[6]);
    let hw = p[0] * p[1];
    let inside = y >= 0 && y < i32(p[1]);
    let t0 = c4 * p[3];
    let left = p[2] - 4u * c4; // channels from 4·c4 on
    let at = p[9] + (n * p[2] + 4u * c4) * hw + u32(max(y, 0)) * p[0] - p[5];
    for (var xp = 0u; xp < p[3]; xp++) {
        var v = vec4<f32>(0.0);
        if (inside && xp >= p[5] && xp - p[5] < p[0]) {
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
{{- else if eq .Stage "wpack"}}
// conv_tex, stage wpack: copies float32 filters [F, C, KH, KW] into an
// rgba32float texture, 4 channels a texel: texel (c4·KH·KW + t, f) holds
// channels 4·c4…4·c4+3 (zeros past C) of filter f at tap t = ky·KW + kx.
{{- if .Flip}}
// Here the filters are those of the transposed convolution (the input's
// gradient): filter f is input channel f of w [C, F, KH, KW], channel c its
// output channel c, the taps turned by 180°.
{{- end}}
// p[0] = F, p[1] = C, p[2] = texels a row (C4·KH·KW).
@group(0) @binding(1) var<storage, read> w: array<E>;
@group(0) @binding(2) var dst: texture_storage_2d<rgba32float, write>;
{{template "at" dict "Name" "w" "Half" false}}

{{template "main_1d_count" "p[0] * p[2]"}}
    let k4 = e % p[2];
    let f = e / p[2];
    var v = vec4<f32>(0.0);
    let c4 = k4 / {{.Taps}}u;
    let t = k4 % {{.Taps}}u;
    for (var r = 0u; r < 4u; r++) {
        let c = 4u * c4 + r;
        if (c < p[1]) {
{{- if .Flip}}
            v[r] = w_at((c * p[0] + f) * {{.Taps}}u + {{.Taps}}u - 1u - t);
{{- else}}
            v[r] = w_at((f * p[1] + c) * {{.Taps}}u + t);
{{- end}}
        }
    }
    textureStore(dst, vec2<i32>(i32(k4), i32(f)), v);
}
{{- else if eq .Stage "fwd"}}
// conv_tex, stage fwd: out[n, f, oy, ox] = Σ over channels c and taps
// (ky, kx) of w[f, c, ky, kx]·x[n, c, oy·SH + ky·DH, ox·SW + kx·DW]{{if .Bias}}
// + b[f]{{end}}, from the textures of stages pack (x, its border the
// padding) and wpack (w): an implicit matrix product, with no im2col.
// Each invocation computes {{.TM}} filters × {{.TN}} output pixels (the
// pixels of every image in a row, flattened): per 4 channels and tap,
// {{.TN}} + {{.TM}} texel loads for {{mul .TM .TN}} dot products of vec4s.
// p[0] = F, p[1] = pixels P (N·OH·OW), p[2] = OW, p[3] = OH·OW,
// p[4] = SW, p[5] = SH, p[6] = DW, p[7] = DH, p[8] = Wp, p[9] = Hp,
// p[10] = texels of w a row (C4·KH·KW), p[11] = out's offset.
@group(0) @binding(1) var tx: texture_2d<f32>;
@group(0) @binding(2) var tw: texture_2d<f32>;
{{template "matmul_out" dict "VecO" false "Half" false}}
{{- if .Bias}}
@group(0) @binding(4) var<storage, read> bias: array<E>;
{{template "at" dict "Name" "bias" "Half" false}}
{{- end}}

@compute @workgroup_size({{.WX}}, {{.WY}}, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let F = p[0];
    let P = p[1];
    let f0 = gid.y * {{.TM}}u;
    let j0 = gid.x * {{.TN}}u;
    if (f0 >= F || j0 >= P) {
        return;
    }
    let ohw = p[3];
    let ow = p[2];
{{- range $j := seq .TN}}
    let q{{$j}} = min(j0 + {{$j}}u, P - 1u);
    let b{{$j}} = vec2<i32>(i32((q{{$j}} % ohw % ow) * p[4]), i32((q{{$j}} / ohw) * p[9] + (q{{$j}} % ohw / ow) * p[5]));
{{- end}}
{{- range $i := seq .TM}}
    let r{{$i}} = i32(min(f0 + {{$i}}u, F - 1u));
{{- range $j := seq $.TN}}
    var acc{{$i}}_{{$j}} = 0.0;
{{- end}}{{end}}
    let wp = p[8];
    let dw = p[6];
    let dh = p[7];
    for (var k4 = 0u; k4 < p[10]; k4++) {
        let c4 = k4 / {{.Taps}}u;
        let t = k4 % {{.Taps}}u;
        let o = vec2<i32>(i32(c4 * wp + t % {{.KW}}u * dw), i32(t / {{.KW}}u * dh));
        let k = i32(k4);
{{- range $j := seq .TN}}
        let x{{$j}} = textureLoad(tx, b{{$j}} + o, 0);
{{- end}}
{{- range $i := seq .TM}}
        let w{{$i}} = textureLoad(tw, vec2<i32>(k, r{{$i}}), 0);
{{- range $j := seq $.TN}}
        acc{{$i}}_{{$j}} += dot(w{{$i}}, x{{$j}});
{{- end}}{{end}}
    }
    let zo = p[11];
{{- range $j := seq .TN}}
    if (j0 + {{$j}}u < P) {
        let ob = zo + q{{$j}} / ohw * F * ohw + q{{$j}} % ohw;
{{- range $i := seq $.TM}}
        if (f0 + {{$i}}u < F) {
            set_out(ob + (f0 + {{$i}}u) * ohw, acc{{$i}}_{{$j}}{{if $.Bias}} + bias_at(f0 + {{$i}}u){{end}});
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
// p[0] = F, p[1] = C, p[2] = C4·KH·KW, p[3] = OW, p[4] = OH,
// p[5] = rows a split, p[6] = rows (images · OH), p[7] = SW, p[8] = SH,
// p[9] = DW, p[10] = DH, p[11] = x's Wp, p[12] = x's Hp, p[13] = gy's Wp,
// p[14] = gy's Hp, p[15] = gy's border columns, p[16] = its rows,
// p[17] = the first split of this dispatch.
@group(0) @binding(1) var tx: texture_2d<f32>;
@group(0) @binding(2) var ty: texture_2d<f32>;
@group(0) @binding(3) var<storage, read_write> part: array<f32>;

{{template "entry_64" "e"}}
    let F = p[0];
    let C = p[1];
    let K4 = p[2];
    let fb = (F + {{sub .TM 1}}u) / {{.TM}}u;
    let kb = (K4 + {{sub (div .TN 4) 1}}u) / {{div .TN 4}}u;
    let split = e / (fb * kb);
    let r0 = split * p[5];
    if (r0 >= p[6]) {
        return;
    }
    let r1 = min(r0 + p[5], p[6]);
    let f0 = (e % (fb * kb)) / kb * {{.TM}}u;
    let k0 = e % kb * {{div .TN 4}}u;
    let wq = i32(p[13]);
{{- range $q := seq (div .TN 4)}}
    let kq{{$q}} = min(k0 + {{$q}}u, K4 - 1u);
    let o{{$q}} = vec2<i32>(i32(kq{{$q}} / {{$.Taps}}u * p[11] + kq{{$q}} % {{$.Taps}}u % {{$.KW}}u * p[9]), i32(kq{{$q}} % {{$.Taps}}u / {{$.KW}}u * p[10]));
{{- end}}
{{- range $i := seq .TM}}{{range $q := seq (div $.TN 4)}}
    var acc{{$i}}_{{$q}} = vec4<f32>(0.0);
{{- end}}{{end}}
{{- range $g := seq (div .TM 4)}}
    var bs{{$g}} = vec4<f32>(0.0);
    let g{{$g}} = i32(min(f0 / 4u + {{$g}}u, (F + 3u) / 4u - 1u)) * wq;
{{- end}}
    for (var r = r0; r < r1; r++) {
        let n = r / p[4];
        let oy = r - n * p[4];
        let xr = i32(n * p[12] + oy * p[8]);
        let yr = i32(n * p[14] + oy + p[16]);
        for (var ox = 0u; ox < p[3]; ox++) {
            let xb = vec2<i32>(i32(ox * p[7]), xr);
            let yb = vec2<i32>(i32(ox + p[15]), yr);
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
    let row = C * {{.Taps}}u + 1u;
    let zo = (p[17] + split) * F * row;
{{- range $i := seq .TM}}
    if (f0 + {{$i}}u < F) {
        let ob = zo + (f0 + {{$i}}u) * row;
{{- range $q := seq (div $.TN 4)}}
        if (k0 + {{$q}}u < K4) {
            let c = kq{{$q}} / {{$.Taps}}u * 4u;
            let t = kq{{$q}} % {{$.Taps}}u;
            for (var r = 0u; r < 4u; r++) {
                if (c + r < C) {
                    part[ob + (c + r) * {{$.Taps}}u + t] = acc{{$i}}_{{$q}}[r];
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
