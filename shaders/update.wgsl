// Kernels that write a buffer in place, over p.N elements of {{.T}}; p:
// device/webgpu's fillParams, arangeParams, sgdParams, adamParams or
// axpyParams.
{{- if eq .Op "fill"}}
// fill: every element gets the bits p.Bits (f32 or i32).
@group(0) @binding(1) var<storage, read_write> out: array<{{.T}}>;

{{template "main_1d" "p.N"}}
    out[i] = {{.T}}(p.Bits);
}
{{- else if eq .Op "arange"}}
// arange: element i is start + i·step, p.Start and p.Step (f32 bits, or
// i32 bits for i32).
@group(0) @binding(1) var<storage, read_write> out: array<{{.T}}>;

{{template "main_1d" "p.N"}}
{{- if eq .T "i32"}}
    out[i] = bitcast<i32>(p.Start) + i32(i) * bitcast<i32>(p.Step);
{{- else}}
    out[i] = bitcast<f32>(p.Start) + f32(i) * bitcast<f32>(p.Step);
{{- end}}
}
{{- else if eq .Op "sgd"}}
// sgd: one step of PyTorch's SGD.
@group(0) @binding(1) var<storage, read> grad: array<{{.T}}>;
@group(0) @binding(2) var<storage, read_write> param: array<{{.T}}>;
{{- if .Momentum}}
@group(0) @binding(3) var<storage, read_write> buf: array<{{.T}}>;
{{- end}}

{{template "main_1d" "p.N"}}
    let w = param[i];
    var g = grad[i] + p.WeightDecay * w;
{{- if .Momentum}}
{{- if .First}}
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
@group(0) @binding(1) var<storage, read> grad: array<{{.T}}>;
@group(0) @binding(2) var<storage, read_write> param: array<{{.T}}>;
@group(0) @binding(3) var<storage, read_write> m: array<{{.T}}>;
@group(0) @binding(4) var<storage, read_write> v: array<{{.T}}>;
{{- if .AMSGrad}}
@group(0) @binding(5) var<storage, read_write> vmax: array<{{.T}}>;
{{- end}}

{{template "main_1d" "p.N"}}
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
    vi = max(vmax[i], vi);
    vmax[i] = vi;
{{- end}}
    param[i] = w - p.StepSize * mi / (sqrt(vi) / p.Bias2Root + p.Eps);
}
{{- else}}
// axpy: out += p.Alpha·x, computed in {{.W}}.
@group(0) @binding(1) var<storage, read> x: array<{{.T}}>;
@group(0) @binding(2) var<storage, read_write> out: array<{{.T}}>;

{{template "main_1d" "p.N"}}
    out[i] = to_e{{.V}}({{.W}}(out[i]) + p.Alpha * {{.W}}(x[i]));
}
{{- end}}
