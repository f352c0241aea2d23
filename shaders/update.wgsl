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
// sgd: one step of PyTorch's SGD{{template "step_group" .}}
{{- $n := or .Group 1}}
{{- $per := 2}}
{{- if .Momentum}}{{$per = 3}}{{end}}
{{- range $k := seq $n}}
@group(0) @binding({{add 1 (mul $k $per)}}) var<storage, read> grad{{$k}}: array<{{$.T}}>;
@group(0) @binding({{add 2 (mul $k $per)}}) var<storage, read_write> param{{$k}}: array<{{$.T}}>;
{{- if $.Momentum}}
@group(0) @binding({{add 3 (mul $k $per)}}) var<storage, read_write> buf{{$k}}: array<{{$.T}}>;
{{- end}}
{{- end}}
{{- if .Scaled}}
@group(0) @binding({{add 1 (mul $n $per)}}) var<storage, read> amp: array<f32>;
@group(0) @binding({{add 2 (mul $n $per)}}) var<storage, read> skipped: array<f32>;
{{- end}}

{{template "main_1d" "p.N"}}
{{- if .Scaled}}
    if (amp[0] != 0.0) {
        return;
    }
{{- end}}
{{- template "step_slot" .}}
    var w: {{.T}};
    var gr: {{.T}};
{{- if .Momentum}}
    var bi: {{.T}};
{{ slots $n "w = param#[j];" "gr = grad#[j];" "bi = buf#[j];"}}
{{- else}}
{{ slots $n "w = param#[j];" "gr = grad#[j];"}}
{{- end}}
    var g = gr + p.WeightDecay * w;
{{- if .Momentum}}
{{- if .Scaled}}
    let b = select(p.Momentum * bi + (1.0 - p.Dampening) * g, g, f32(p.T) - skipped[0] == 1.0);
{{- else if .First}}
    let b = g;
{{- else}}
    let b = p.Momentum * bi + (1.0 - p.Dampening) * g;
{{- end}}
{{- if .Nesterov}}
    g = g + p.Momentum * b;
{{- else}}
    g = b;
{{- end}}
    w = w - p.LR * g;
{{ slots $n "param#[j] = w;" "buf#[j] = b;"}}
{{- else}}
    w = w - p.LR * g;
{{ slots $n "param#[j] = w;"}}
{{- end}}
}
{{- else if eq .Op "adam"}}
// adam: one step of PyTorch's Adam{{if .Decoupled}}W{{end}}{{if .AMSGrad}} with AMSGrad{{end}}{{template "step_group" .}}
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
{{- $n := or .Group 1}}
{{- $per := 4}}
{{- if .AMSGrad}}{{$per = 5}}{{end}}
{{- range $k := seq $n}}
@group(0) @binding({{add 1 (mul $k $per)}}) var<storage, read> grad{{$k}}: array<{{$.T}}>;
@group(0) @binding({{add 2 (mul $k $per)}}) var<storage, read_write> param{{$k}}: array<{{$.T}}>;
@group(0) @binding({{add 3 (mul $k $per)}}) var<storage, read_write> m{{$k}}: array<{{$.T}}>;
@group(0) @binding({{add 4 (mul $k $per)}}) var<storage, read_write> v{{$k}}: array<{{$.T}}>;
{{- if $.AMSGrad}}
@group(0) @binding({{add 5 (mul $k $per)}}) var<storage, read_write> vmax{{$k}}: array<{{$.T}}>;
{{- end}}
{{- end}}
{{- if .Scaled}}
@group(0) @binding({{add 1 (mul $n $per)}}) var<storage, read> amp: array<f32>;
@group(0) @binding({{add 2 (mul $n $per)}}) var<storage, read> skipped: array<f32>;
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
{{- template "step_slot" .}}
    var w: {{.T}};
    var g: {{.T}};
    var mi: {{.T}};
    var vi: {{.T}};
{{- if .AMSGrad}}
    var vm: {{.T}};
{{ slots $n "w = param#[j];" "g = grad#[j];" "mi = m#[j];" "vi = v#[j];" "vm = vmax#[j];"}}
{{- else}}
{{ slots $n "w = param#[j];" "g = grad#[j];" "mi = m#[j];" "vi = v#[j];"}}
{{- end}}
{{- if .Decoupled}}
    w = w * (1.0 - p.LR * p.WeightDecay);
{{- else}}
    g = g + p.WeightDecay * w;
{{- end}}
    mi = p.Beta1 * mi + (1.0 - p.Beta1) * g;
    vi = p.Beta2 * vi + (1.0 - p.Beta2) * g * g;
    let vs = vi;
{{- if .AMSGrad}}
    // NaN where either is: WGSL's max may drop a NaN, PyTorch's maximum keeps it.
    vm = max_nan4(vm, vi);
    vi = vm;
{{- end}}
    w = w - step_size * mi / (sqrt(vi) / bias2_root + p.Eps);
{{- if .AMSGrad}}
{{ slots $n "m#[j] = mi;" "v#[j] = vs;" "vmax#[j] = vm;" "param#[j] = w;"}}
{{- else}}
{{ slots $n "m#[j] = mi;" "v#[j] = vs;" "param#[j] = w;"}}
{{- end}}
}
{{- else if or (eq .Op "unscale") (eq .Op "scale")}}
{{- if eq .Op "unscale"}}
// unscale: grad ← grad · (1/scale[0]), flagging an Inf or NaN result in
// amp[0] (every invocation that finds one stores the same 1){{template "step_group" .}}
{{- else}}
// scale: grad ← grad · scale[0]{{template "step_group" .}}
{{- end}}
{{- $n := or .Group 1}}
{{- range $k := seq $n}}
@group(0) @binding({{add 1 $k}}) var<storage, read_write> grad{{$k}}: array<{{$.T}}>;
{{- end}}
@group(0) @binding({{add 1 $n}}) var<storage, read> scale: array<f32>;
{{- if eq .Op "unscale"}}
@group(0) @binding({{add 2 $n}}) var<storage, read_write> amp: array<f32>;
{{- end}}

{{template "main_1d" "p.N"}}
{{- template "step_slot" .}}
    var g: {{.T}};
{{ slots $n "g = grad#[j];"}}
{{- if eq .Op "scale"}}
    g = g * scale[0];
{{ slots $n "grad#[j] = g;"}}
{{- else}}
    g = g * (1.0 / scale[0]);
{{ slots $n "grad#[j] = g;"}}
    let exponent = {{.U}}(0x7f800000u);
{{- if .Group}}
    // The lanes of a last vec4 past the gradient's p.Lens[s] elements
    // are padding, not looked at.
    let live = vec4<u32>(4u * j) + vec4<u32>(0u, 1u, 2u, 3u) < vec4<u32>(p.Lens[s]);
    if (any(live & ((bitcast<{{.U}}>(g) & exponent) == exponent))) {
{{- else}}
    if (any((bitcast<{{.U}}>(g) & exponent) == exponent)) {
{{- end}}
        amp[0] = 1.0;
    }
{{- end}}
}
{{- else if eq .Op "sumsq"}}
// sumsq: sums[p.Base + p.First / 16 + e] is the sum of the squares of
// items 16e to 16e + 15 (vec4s, of one tensor: in a group each tensor's
// items start at a multiple of 16), the lanes past a tensor's p.Lens[s]
// elements (its last vec4's padding, the items after it) left out{{template "step_group" .}}
{{- $n := or .Group 1}}
{{- range $k := seq $n}}
@group(0) @binding({{add 1 $k}}) var<storage, read> x{{$k}}: array<{{$.T}}>;
{{- end}}
@group(0) @binding({{add 1 $n}}) var<storage, read_write> sums: array<f32>;

{{template "main_1d_count" "(p.N + 15u) / 16u"}}
    let i = 16u * e;
{{- template "step_slot" .}}
    var acc = 0.0;
{{ slots $n "for (var t = 0u; t < 16u; t++) { let live = vec4<u32>(4u * (p.First + j + t)) + vec4<u32>(0u, 1u, 2u, 3u) < vec4<u32>(p.Lens[s]); let w = select(vec4<f32>(0.0), x#[j + t], live); acc += dot(w, w); }"}}
    sums[p.Base + p.First / 16u + e] = acc;
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
{{- define "step_group"}}
{{- if .Group}}, of {{.Group}} tensors at once: tensor k's
// buffers are the bindings after tensor k − 1's, and its vec4s the items
// from p.Starts[k] to the next tensor's start (p.N after the last){{end}}.
{{- end}}
{{- define "step_slot"}}
{{- if .Group}}
    // The tensor s whose vec4 j is item i: the number of the tensors
    // after the first that start at or before i (a loop over them took
    // llvmpipe longer).
    let s = 0u{{range $k := seq (sub .Group 1)}} + u32(i >= p.Starts[{{add $k 1}}])
        {{- end}};
    let j = i - p.Starts[s];
{{- else}}
    let s = 0u;
    let j = i;
{{- end}}
{{- end}}
