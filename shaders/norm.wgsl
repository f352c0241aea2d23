{{- if eq .Stage "row"}}
// The norm family in one pass: a workgroup of {{.W}} invocations a row of
// p.N/4 vec4s (more than {{sub .V 1}}·{{.W}}), each invocation holding {{.V}} of them (row entries lid,
// lid + {{.W}}, …) in registers while the workgroup reduces the row's sums
// through {{.Group}} operations: every input is read once. The row is
// normalised {{if .Center}}to zero mean and unit variance{{else}}to unit root mean square{{end}}, accumulating in
// f32{{if .Grad}}; this is the gradient, ρ·(g{{if .Center}} − mean(g){{end}} − x̂·mean(g·x̂)){{end}}. p: device/webgpu's normParams.
// The row is taken scaled by norm_scale of its largest magnitude{{if .Center}}, its
// mean summed shifted by its first element{{end}}, so that its sums neither
// overflow nor cancel. {{if .Center}}The mean is subtracted as one float32 (as
// PyTorch's): a second term would be folded into it by compilers that
// reassociate, as lavapipe's does.{{end}}
// With p.HasW (p.HasB), the rows are then multiplied by w (plus b), n
// values each{{if .Grad}}: g is the gradient of that output.{{if .Sums}} A workgroup takes
// p.RowsPer rows in turn, from its index·p.RowsPer on, and sums over them
// g·x̂ (what w's gradient sums) into its row of sumw where p.SumW, and g
// (b's) into its row of sumb where p.SumB: float32 partial sums, in the
// order of the rows, which a reduction adds up.{{else}} Where p.SumW, sumw is set
// to g·x̂ (float32: what w's gradient sums over the rows).{{end}}{{end}}
@group(0) @binding(1) var<storage, read> x: array<E4>;
{{- if .Grad}}
@group(0) @binding(2) var<storage, read> g: array<E4>;
@group(0) @binding(3) var<storage, read_write> out: array<E4>;
@group(0) @binding(4) var<storage, read> w: array<E4>;
@group(0) @binding(5) var<storage, read_write> sumw: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> sumb: array<vec4<f32>>;
{{- else}}
@group(0) @binding(2) var<storage, read_write> out: array<E4>;
@group(0) @binding(3) var<storage, read> w: array<E4>;
@group(0) @binding(4) var<storage, read> b: array<E4>;
{{- end}}
{{- $sub := eq .Group "subgroup"}}
{{- $quads := "(p.N / 4u)"}}
{{- $n := "f32(p.N)"}}
{{- $full := sub .V 1}}
var<workgroup> part: array<f32, {{.W}}>;
{{template "row_reduce" dict "Name" "sum" "Doc" "sum" "Combine" "r + part[j]" "W" .W "Sub" $sub "Op" "subgroupAdd"}}
{{template "row_reduce" dict "Name" "max" "Doc" "maximum" "Combine" "max_nan(r, part[j])" "W" .W "Sub" $sub "Op" "subgroupMax"}}
{{template "norm_scale"}}

{{- if .Sums}}
@compute @workgroup_size({{.W}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32{{if $sub}}, @builtin(subgroup_invocation_id) sid: u32, @builtin(subgroup_size) ssize: u32{{end}}) {
    // The workgroup's rows, r0 onwards (the grid may hold a few workgroups
    // past the last row: they compute it again and store nothing, as
    // every invocation must reach the barriers).
    let grp = wid.y * nwg.x + wid.x;
    let r0 = grp * p.RowsPer;
{{- else}}
{{template "row_main" dict "Rows" "p.Rows" "W" .W "Quads" $quads "Sub" $sub}}
{{- end}}
    // w's (and b's) vec4s of the invocation's entries, 1 (−0) where absent
    // (element 0 of the buffer bound in their place read: select evaluates
    // both sides): a loop over an array, which llvmpipe compiles in a
    // fraction of the time the entries' unrolled loads take.
    var ws: array<vec4<f32>, {{.V}}>;
{{- if not .Grad}}
    var bs: array<vec4<f32>, {{.V}}>;
{{- end}}
    for (var v = 0u; v < {{.V}}u; v++) {
        let j = min(lid + v * {{.W}}u, {{$quads}} - 1u);
        ws[v] = select(vec4<f32>(1.0), vec4<f32>(w[select(0u, j, p.HasW != 0u)]), p.HasW != 0u);
{{- if not .Grad}}
        bs[v] = select(vec4<f32>(-0.0), vec4<f32>(b[select(0u, j, p.HasB != 0u)]), p.HasB != 0u);
{{- end}}
    }
{{- if .Sums}}
    var sw: array<vec4<f32>, {{.V}}>;
    var sb: array<vec4<f32>, {{.V}}>;
    for (var k = 0u; k < p.RowsPer; k++) {
    let live = r0 + k < p.Rows;
    let base = min(r0 + k, p.Rows - 1u) * {{$quads}} + lid;
{{- end}}
{{- range $v := seq .V}}{{$g := ""}}{{if ge $v $full}}{{$g = printf "in%d" $v}}{{end}}
{{- $at := printf "base + %du" (mul $v $.W)}}
{{- if $g}}
    let {{$g}} = lid + {{mul $v $.W}}u < {{$quads}};
    var x{{$v}} = vec4<f32>(0.0);
{{- if $.Grad}}
    var gr{{$v}} = vec4<f32>(0.0);
{{- end}}
    if ({{$g}}) {
        x{{$v}} = vec4<f32>(x[{{$at}}]);
{{- if $.Grad}}
        gr{{$v}} = vec4<f32>(g[{{$at}}]);
{{- end}}
    }
{{- else}}
    let x{{$v}} = vec4<f32>(x[{{$at}}]);
{{- if $.Grad}}
    let gr{{$v}} = vec4<f32>(g[{{$at}}]);
{{- end}}
{{- end}}
{{- if $.Grad}}
    let g{{$v}} = gr{{$v}} * ws[{{$v}}];
{{- end}}
{{- end}}
    var am = abs(x0);
{{- range $v := seq .V}}{{if $v}}
    am = max(am, abs(x{{$v}}));
{{- end}}{{end}}
    let s = norm_scale(row_max(max(max(am.x, am.y), max(am.z, am.w)), lid{{if $sub}}, sid, ssize{{end}}));
{{- if .Center}}
    let c = f32(x[base - lid].x) * s;
{{- range $v := seq .V}}{{$g := ""}}{{if ge $v $full}}{{$g = printf "in%d" $v}}{{end}}
    let t{{$v}} = {{if $g}}select(vec4<f32>(0.0), x{{$v}} * s - vec4<f32>(c), {{$g}}){{else}}x{{$v}} * s - vec4<f32>(c){{end}};
{{- end}}
    var acc = t0;
{{- range $v := seq .V}}{{if $v}}
    acc += t{{$v}};
{{- end}}{{end}}
    let mu = c + row_sum(acc.x + acc.y + acc.z + acc.w, lid{{if $sub}}, sid, ssize{{end}}) / {{$n}};
{{- else}}
    let mu = 0.0;
{{- end}}
{{- range $v := seq .V}}{{$g := ""}}{{if ge $v $full}}{{$g = printf "in%d" $v}}{{end}}
    let d{{$v}} = {{if $g}}select(vec4<f32>(0.0), x{{$v}} * s - vec4<f32>(mu), {{$g}}){{else}}x{{$v}} * s - vec4<f32>(mu){{end}};
{{- end}}
    var q = dot(d0, d0);
{{- range $v := seq .V}}{{if $v}}
    q += dot(d{{$v}}, d{{$v}});
{{- end}}{{end}}
    let rho = 1.0 / sqrt(row_sum(q, lid{{if $sub}}, sid, ssize{{end}}) / {{$n}} + p.Eps * s * s);
{{- if .Grad}}
{{- if .Center}}
    var ga = g0;
{{- range $v := seq .V}}{{if $v}}
    ga += g{{$v}};
{{- end}}{{end}}
    let mg = row_sum(ga.x + ga.y + ga.z + ga.w, lid{{if $sub}}, sid, ssize{{end}}) / {{$n}};
{{- else}}
    let mg = 0.0;
{{- end}}
    var gx = dot(g0, d0);
{{- range $v := seq .V}}{{if $v}}
    gx += dot(g{{$v}}, d{{$v}});
{{- end}}{{end}}
    // mean(g·x̂) = ρ·mean(g·d).
    let mgx = rho * row_sum(gx, lid{{if $sub}}, sid, ssize{{end}}) / {{$n}};
{{- if not .Sums}}
    if (!live) {
        return;
    }
{{- range $v := seq .V}}{{$g := ""}}{{if ge $v $full}}{{$g = printf "in%d" $v}}{{end}}
    let o{{$v}} = rho * s * (g{{$v}} - vec4<f32>(mg) - d{{$v}} * rho * mgx);
    {{if $g}}if ({{$g}}) {{end}}{ out[base + {{mul $v $.W}}u] = to_e4(o{{$v}}); }
{{- end}}
    if (p.SumW != 0u) {
{{- range $v := seq .V}}{{$g := ""}}{{if ge $v $full}}{{$g = printf "in%d" $v}}{{end}}
        {{if $g}}if ({{$g}}) {{end}}{ sumw[base + {{mul $v $.W}}u] = gr{{$v}} * (d{{$v}} * rho); }
{{- end}}
    }
{{- else}}
    if (live) {
{{- range $v := seq .V}}{{$g := ""}}{{if ge $v $full}}{{$g = printf "in%d" $v}}{{end}}
        let o{{$v}} = rho * s * (g{{$v}} - vec4<f32>(mg) - d{{$v}} * rho * mgx);
        {{if $g}}if ({{$g}}) {{end}}{ out[base + {{mul $v $.W}}u] = to_e4(o{{$v}}); }
{{- end}}
        // Past the row's end gr and d are 0: so are the terms added.
{{- range $v := seq .V}}
        sw[{{$v}}] += gr{{$v}} * (d{{$v}} * rho);
        sb[{{$v}}] += gr{{$v}};
{{- end}}
    }
    }
    if (r0 >= p.Rows) {
        return;
    }
    let pb = grp * {{$quads}} + lid;
{{- range $v := seq .V}}{{$g := ""}}{{if ge $v $full}}{{$g = printf "lid + %du < %s" (mul $v $.W) $quads}}{{end}}
    {{if $g}}if ({{$g}}) {{end}}{
        if (p.SumW != 0u) {
            sumw[pb + {{mul $v $.W}}u] = sw[{{$v}}];
        }
        if (p.SumB != 0u) {
            sumb[pb + {{mul $v $.W}}u] = sb[{{$v}}];
        }
    }
{{- end}}
{{- end}}
{{- else}}
    if (!live) {
        return;
    }
{{- range $v := seq .V}}{{$g := ""}}{{if ge $v $full}}{{$g = printf "in%d" $v}}{{end}}
    let o{{$v}} = d{{$v}} * rho * ws[{{$v}}] + bs[{{$v}}];
    {{if $g}}if ({{$g}}) {{end}}{ out[base + {{mul $v $.W}}u] = to_e4(o{{$v}}); }
{{- end}}
{{- end}}
}
{{- else}}
// The norm family (layer_norm, rms_norm): one invocation per row of n
// contiguous elements; p: device/webgpu's normParams.
// Each row is normalised {{if .Center}}to zero mean and {{end}}to unit {{if .Center}}variance{{else}}root mean square{{end}}, accumulating in f32{{if .Grad}};
// this is the gradient, ρ·(g{{if .Center}} − mean(g){{end}} − x̂·mean(g·x̂)){{end}}.
// With p.HasW (p.HasB), the rows are then multiplied by w (plus b), n
// values each{{if .Grad}}: g is the gradient of that output, and where p.SumW,
// sumw is set to g·x̂ (float32: what w's gradient sums over the rows){{end}}.
@group(0) @binding(1) var<storage, read> x: array<E>;
{{- if .Grad}}
@group(0) @binding(2) var<storage, read> g: array<E>;
@group(0) @binding(3) var<storage, read_write> out: array<E>;
@group(0) @binding(4) var<storage, read> w: array<E>;
@group(0) @binding(5) var<storage, read_write> sumw: array<f32>;
{{- else}}
@group(0) @binding(2) var<storage, read_write> out: array<E>;
@group(0) @binding(3) var<storage, read> w: array<E>;
@group(0) @binding(4) var<storage, read> b: array<E>;
{{- end}}

// w_at returns w's element j, or 1 without p.HasW (reading element 0 of
// the buffer bound in w's place: select evaluates both sides).
fn w_at(j: u32) -> f32 {
    return select(1.0, f32(w[select(0u, j, p.HasW != 0u)]), p.HasW != 0u);
}

{{template "norm_scale"}}

// stats returns, for the row at base taken as y = s·x (s = norm_scale of
// its largest magnitude), s, the mean μ of y{{if .Center}} (summed as y − c, c its
// first element's y){{else}} (0){{end}} and ρ = 1/√(mean((y − μ)²) + eps·s²): sums that
// neither overflow nor cancel.
fn stats(base: u32, n: u32) -> vec3<f32> {
    var m = 0.0;
    for (var j = 0u; j < n; j++) {
        m = max(m, abs(f32(x[base + j])));
    }
    let s = norm_scale(m);
    var mu = 0.0;
{{- if .Center}}
    let c = f32(x[base]) * s;
    var t = 0.0;
    for (var j = 0u; j < n; j++) {
        t += f32(x[base + j]) * s - c;
    }
    mu = c + t / f32(n);
{{- end}}
    var v = 0.0;
    for (var j = 0u; j < n; j++) {
        let d = f32(x[base + j]) * s - mu;
        v += d * d;
    }
    return vec3<f32>(s, mu, 1.0 / sqrt(v / f32(n) + p.Eps * s * s));
}

{{template "entry_64" "r"}}
    if (r >= p.Rows) {
        return;
    }
    let n = p.N;
    let base = r * n;
    let st = stats(base, n);
{{- if .Grad}}
    var sg = 0.0;
    var sgx = 0.0;
    for (var j = 0u; j < n; j++) {
        let gj = f32(g[base + j]) * w_at(j);
        sg += gj;
        sgx += gj * (f32(x[base + j]) * st.x - st.y) * st.z;
    }
{{- if not .Center}}
    sg = 0.0;
{{- end}}
    let inv = 1.0 / f32(n);
    for (var j = 0u; j < n; j++) {
        let xh = (f32(x[base + j]) * st.x - st.y) * st.z;
        let gj = f32(g[base + j]);
        out[base + j] = to_e(st.z * st.x * (gj * w_at(j) - sg * inv - xh * sgx * inv));
        if (p.SumW != 0u) {
            sumw[base + j] = gj * xh;
        }
    }
{{- else}}
    for (var j = 0u; j < n; j++) {
        var y = (f32(x[base + j]) * st.x - st.y) * st.z * w_at(j);
        if (p.HasB != 0u) {
            y += f32(b[j]);
        }
        out[base + j] = to_e(y);
    }
{{- end}}
}

{{- end}}
