// Kernels that write a buffer in place, over p.N elements of {{.T}}; p:
// device/webgpu's fillParams, arangeParams, sgdParams, adamParams,
// scaleParams or axpyParams. A scaled step (Scaled) reads a loss
// scaler's state, amp (device.ScaleFound, ScaleGood, ScaleSkipped), and
// the optimiser's count of steps skipped, skipped: it leaves everything
// as it is where amp[0] is not 0, and counts its step number p.T without
// the skipped[0] steps skipped.
{{- if eq .Op "fill"}}
// fill: every element gets the bits p.Bits (f32 or i32).
@group(0) @binding(1) var<storage, read_write> out: array<{{.T}}>;

{{template "main_1d" "p.N"}}
    out[i] = {{.T}}(p.Bits);
}
{{- else if eq .Op "arange"}}
// arange: element p.First + i (out binds the tensor from element p.First
// on, a chunk of one too large to bind whole) is start + (p.First + i)·step,
// p.Start and p.Step (f32 bits, or i32 bits for i32).
@group(0) @binding(1) var<storage, read_write> out: array<{{.T}}>;

{{template "main_1d" "p.N"}}
    let e = p.First + i;
{{- if eq .T "i32"}}
    out[i] = bitcast<i32>(p.Start) + i32(e) * bitcast<i32>(p.Step);
{{- else}}
    out[i] = bitcast<f32>(p.Start) + f32(e) * bitcast<f32>(p.Step);
{{- end}}
}
{{- else if eq .Op "sgd"}}
// sgd: one step of PyTorch's SGD.
@group(0) @binding(1) var<storage, read> grad: array<{{.T}}>;
@group(0) @binding(2) var<storage, read_write> param: array<{{.T}}>;
{{- if .Momentum}}
@group(0) @binding(3) var<storage, read_write> buf: array<{{.T}}>;
{{- end}}
{{- if .Scaled}}
@group(0) @binding({{if .Momentum}}4{{else}}3{{end}}) var<storage, read> amp: array<f32>;
@group(0) @binding({{if .Momentum}}5{{else}}4{{end}}) var<storage, read> skipped: array<f32>;
{{- end}}

{{template "main_1d" "p.N"}}
{{- if .Scaled}}
    if (amp[0] != 0.0) {
        return;
    }
{{- end}}
    let w = param[i];
    var g = grad[i] + p.WeightDecay * w;
{{- if .Momentum}}
{{- if .Scaled}}
    let b = select(p.Momentum * buf[i] + (1.0 - p.Dampening) * g, g, f32(p.T) - skipped[0] == 1.0);
{{- else if .First}}
    let b = g;
{{- else}}
    let b = p.Momentum * buf[i] + (1.0 - p.Dampening) * g;
{{- end}}
    buf[i] = b;
{{- if .Nesterov}}
    g = g + p.Momentum * b;
{{- else}}
    g = b;
{{- end}}
{{- end}}
    param[i] = w - p.LR * g;
}
{{- else if eq .Op "adam"}}
// adam: one step of PyTorch's Adam{{if .Decoupled}}W{{end}}{{if .AMSGrad}} with AMSGrad{{end}}.
{{- if .Scaled}}

// one_minus_exp returns 1 − eˣ for x ≤ 0 without the cancellation of
// 1 − exp(x) near 0: −expm1(x) by its series where |x| < 1/2.
fn one_minus_exp(x: f32) -> f32 {
    if (x > -0.5) {
        return -x * (1.0 + x * (1.0 / 2.0 + x * (1.0 / 6.0 + x * (1.0 / 24.0 + x * (1.0 / 120.0 +
            x * (1.0 / 720.0 + x * (1.0 / 5040.0 + x * (1.0 / 40320.0))))))));
    }
    return 1.0 - exp(x);
}
{{- end}}
@group(0) @binding(1) var<storage, read> grad: array<{{.T}}>;
@group(0) @binding(2) var<storage, read_write> param: array<{{.T}}>;
@group(0) @binding(3) var<storage, read_write> m: array<{{.T}}>;
@group(0) @binding(4) var<storage, read_write> v: array<{{.T}}>;
{{- if .AMSGrad}}
@group(0) @binding(5) var<storage, read_write> vmax: array<{{.T}}>;
{{- end}}
{{- if .Scaled}}
@group(0) @binding({{if .AMSGrad}}6{{else}}5{{end}}) var<storage, read> amp: array<f32>;
@group(0) @binding({{if .AMSGrad}}7{{else}}6{{end}}) var<storage, read> skipped: array<f32>;
{{- end}}

{{template "main_1d" "p.N"}}
{{- if .Scaled}}
    if (amp[0] != 0.0) {
        return;
    }
    let t = f32(p.T) - skipped[0];
    let step_size = p.LR / one_minus_exp(t * p.LnBeta1);
    let bias2_root = sqrt(one_minus_exp(t * p.LnBeta2));
{{- else}}
    let step_size = p.StepSize;
    let bias2_root = p.Bias2Root;
{{- end}}
    var w = param[i];
{{- if .Decoupled}}
    w = w * (1.0 - p.LR * p.WeightDecay);
    let g = grad[i];
{{- else}}
    let g = grad[i] + p.WeightDecay * w;
{{- end}}
    let mi = p.Beta1 * m[i] + (1.0 - p.Beta1) * g;
    var vi = p.Beta2 * v[i] + (1.0 - p.Beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
{{- if .AMSGrad}}
    // NaN where either is: WGSL's max may drop a NaN, PyTorch's maximum keeps it.
    vi = max_nan4(vmax[i], vi);
    vmax[i] = vi;
{{- end}}
    param[i] = w - step_size * mi / (sqrt(vi) / bias2_root + p.Eps);
}
{{- else if eq .Op "unscale"}}
// unscale: grad ← grad · (1/scale[0]), flagging an Inf or NaN result in
// amp[0] (every invocation that finds one stores the same 1).
@group(0) @binding(1) var<storage, read_write> grad: array<{{.T}}>;
@group(0) @binding(2) var<storage, read> scale: array<f32>;
@group(0) @binding(3) var<storage, read_write> amp: array<f32>;

{{template "main_1d" "p.N"}}
    let g = grad[i] * (1.0 / scale[0]);
    grad[i] = g;
    let exponent = {{.U}}(0x7f800000u);
    if (any((bitcast<{{.U}}>(g) & exponent) == exponent)) {
        amp[0] = 1.0;
    }
}
{{- else if eq .Op "scale_update"}}
// scale_update: the end of a step of dynamic loss scaling (one
// invocation): back off after a step with amp[0] set, else count the
// good step in amp[1] and grow the scale (where the product is finite)
// after p.Interval of them.
@group(0) @binding(1) var<storage, read_write> scale: array<f32>;
@group(0) @binding(2) var<storage, read_write> amp: array<f32>;
{{- range $k := seq .Counts}}
@group(0) @binding({{add $k 3}}) var<storage, read_write> skipped{{$k}}: array<f32>;
{{- end}}

{{template "main_1d" "p.N"}}
    let s = scale[0];
    if (amp[0] != 0.0) {
        scale[0] = s * p.Backoff;
        amp[1] = 0.0;
        amp[2] = amp[2] + 1.0;
{{- range $k := seq .Counts}}
        skipped{{$k}}[0] = skipped{{$k}}[0] + 1.0;
{{- end}}
    } else if (amp[1] + 1.0 >= f32(p.Interval)) {
        let grown = s * p.Growth;
        if ((bitcast<u32>(grown) & 0x7f800000u) != 0x7f800000u) {
            scale[0] = grown;
        }
        amp[1] = 0.0;
    } else {
        amp[1] = amp[1] + 1.0;
    }
    amp[0] = 0.0;
}
{{- else}}
// axpy: out += p.Alpha·x, computed in {{.W}}.
@group(0) @binding(1) var<storage, read> x: array<{{.T}}>;
@group(0) @binding(2) var<storage, read_write> out: array<{{.T}}>;

{{template "main_1d" "p.N"}}
    out[i] = to_e{{.V}}({{.W}}(out[i]) + p.Alpha * {{.W}}(x[i]));
}
{{- end}}
