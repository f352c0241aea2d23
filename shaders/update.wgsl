// Kernels that write a buffer in place, over {{.T}} elements; p[0] = count.
{{- if eq .Op "fill"}}
// fill: every element gets the bits p[1] (f32 or i32).
@group(0) @binding(1) var<storage, read_write> out: array<{{.T}}>;

{{template "main_1d"}}
    out[i] = {{.T}}(p[1]);
}
{{- else if eq .Op "arange"}}
// arange: element i is start + i·step; p[1], p[2] hold start and step
// (f32 bits, or i32 bits for i32).
@group(0) @binding(1) var<storage, read_write> out: array<{{.T}}>;

{{template "main_1d"}}
{{- if eq .T "i32"}}
    out[i] = bitcast<i32>(p[1]) + i32(i) * bitcast<i32>(p[2]);
{{- else}}
    out[i] = pf(1u) + f32(i) * pf(2u);
{{- end}}
}
{{- else if eq .Op "sgd"}}
// sgd: one step of PyTorch's SGD; p[1] = lr, p[2] = weight decay,
// p[3] = momentum, p[4] = dampening (f32 bits).
@group(0) @binding(1) var<storage, read> grad: array<{{.T}}>;
@group(0) @binding(2) var<storage, read_write> param: array<{{.T}}>;
{{- if .Momentum}}
@group(0) @binding(3) var<storage, read_write> buf: array<{{.T}}>;
{{- end}}

{{template "main_1d"}}
    let w = param[i];
    var g = grad[i] + pf(2u) * w;
{{- if .Momentum}}
{{- if .First}}
    let b = g;
{{- else}}
    let b = pf(3u) * buf[i] + (1.0 - pf(4u)) * g;
{{- end}}
    buf[i] = b;
{{- if .Nesterov}}
    g = g + pf(3u) * b;
{{- else}}
    g = b;
{{- end}}
{{- end}}
    param[i] = w - pf(1u) * g;
}
{{- else if eq .Op "adam"}}
// adam: one step of PyTorch's Adam{{if .Decoupled}}W{{end}}{{if .AMSGrad}} with AMSGrad{{end}}; p[1] = lr,
// p[2] = weight decay, p[3] = β1, p[4] = β2, p[5] = ε, p[6] = lr/(1 − β1ᵗ),
// p[7] = √(1 − β2ᵗ) (f32 bits).
@group(0) @binding(1) var<storage, read> grad: array<{{.T}}>;
@group(0) @binding(2) var<storage, read_write> param: array<{{.T}}>;
@group(0) @binding(3) var<storage, read_write> m: array<{{.T}}>;
@group(0) @binding(4) var<storage, read_write> v: array<{{.T}}>;
{{- if .AMSGrad}}
@group(0) @binding(5) var<storage, read_write> vmax: array<{{.T}}>;
{{- end}}

{{template "main_1d"}}
    var w = param[i];
{{- if .Decoupled}}
    w = w * (1.0 - pf(1u) * pf(2u));
    let g = grad[i];
{{- else}}
    let g = grad[i] + pf(2u) * w;
{{- end}}
    let mi = pf(3u) * m[i] + (1.0 - pf(3u)) * g;
    var vi = pf(4u) * v[i] + (1.0 - pf(4u)) * g * g;
    m[i] = mi;
    v[i] = vi;
{{- if .AMSGrad}}
    vi = max(vmax[i], vi);
    vmax[i] = vi;
{{- end}}
    param[i] = w - pf(6u) * mi / (sqrt(vi) / pf(7u) + pf(5u));
}
{{- else}}
// axpy: out += alpha·x, alpha = p[1] (f32 bits), computed in {{.W}}.
@group(0) @binding(1) var<storage, read> x: array<{{.T}}>;
@group(0) @binding(2) var<storage, read_write> out: array<{{.T}}>;

{{template "main_1d"}}
    out[i] = to_e{{.V}}({{.W}}(out[i]) + pf(1u) * {{.W}}(x[i]));
}
{{- end}}
