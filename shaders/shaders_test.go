package shaders

import (
	"strings"
	"testing"
)

// win is the specialisation of a window kernel with a 2×3 kernel, on
// float16 storage if half.
func win(op string, half bool) map[string]any {
	m := map[string]any{"Op": op, "KH": 2, "KW": 3, "Half": half, "Disjoint": false, "Cells": false, "Ones": false, "Pairs": false}
	for _, k := range []string{"C", "H", "W", "SH", "SW", "PH", "PW", "DH", "DW", "OH", "OW", "Pitch", "CH", "CW"} {
		m[k] = 1
	}
	return m
}

func with(m map[string]any, k string, v any) map[string]any {
	m[k] = v
	return m
}

func ones(m map[string]any) map[string]any {
	m["Ones"] = true
	return m
}

func pitch(m map[string]any, n int) map[string]any {
	m["Pitch"] = n
	return m
}

func disjoint(m map[string]any) map[string]any {
	m["Disjoint"] = true
	return m
}

func pairs(m map[string]any) map[string]any {
	m["Pairs"], m["KW"], m["SW"], m["W"] = true, 2, 2, 4
	return m
}

func cells(m map[string]any) map[string]any {
	m["Cells"] = true
	return disjoint(m)
}

func TestSource(t *testing.T) {
	for _, c := range []struct {
		name string
		data any
		want []string
	}{
		{"unary", map[string]any{"Fn": "gelu", "Grad": true, "Half": false, "Unroll": 4, "Coalesce": true},
			[]string{"let i0 = linear_index(wid, nwg, 0u, 256u) * 4u + lid;", "elem(i0 + 768u);", "fn erfc_approx", "op_gelu_grad(x, g, a, b)", "fn apply4", "var<storage, read> g_in: array<E4>", "fn pow_real"}},
		{"unary", map[string]any{"Fn": "exp", "Grad": false, "Half": false, "Unroll": 1, "Coalesce": false},
			[]string{"let i0 = linear_index(wid, nwg, lid, 256u) * 1u;", "op_exp(x, a, b)", "@binding(2) var<storage, read_write> out: array<E4>", "alias E = f32;"}},
		{"unary", map[string]any{"Fn": "relu", "Grad": true, "Half": true, "Unroll": 4, "Coalesce": false},
			[]string{"fn half4_to_f32", "var<storage, read> g_in: array<vec4<u32>>", "out[i] = f32_to_half4(lo) | (f32_to_half4(hi) << vec4<u32>(16u));"}},
		// WGSL's f16 storage (F16).
		{"unary", map[string]any{"Fn": "exp", "Grad": true, "Half": false, "F16": true, "Unroll": 4, "Coalesce": false},
			[]string{"enable f16;", "alias E4 = vec4<f16>;", "var<storage, read> g_in: array<E4>", "out[i] = to_e4(apply4(vec4<f32>(x_in[i]), vec4<f32>(g_in[i]), p.A, p.B));"}},
		{"binary", map[string]any{"Fn": "add", "Grad": 0, "Same": false, "Scalar": 0, "Half": false, "F16": true, "Unroll": 1, "Coalesce": false, "Rank": 2, "RowVec": false, "VecA": false, "VecB": false},
			[]string{"enable f16;", "let x = f32(x_in[off.x]);", "out[i] = to_e(apply(x, y, f32(g_in[i])));"}},
		{"reduce", map[string]any{"Acc": false, "Partial": false, "Op": "sum", "Arg": false, "Chunks": false, "Vec": false, "Stage": 0, "Half": false, "XF16": true, "OF16": true, "F16": true, "Kept": 1, "Red": 1, "Group": ""},
			[]string{"enable f16;", "var<storage, read> x: array<f16>;", "var<storage, read_write> out: array<f16>;", "return f32(x[i]);", "out[o] = to_e(sum_value(acc, p.Scale));"}},
		{"reduce", map[string]any{"Acc": false, "Partial": false, "Op": "max", "Arg": false, "Chunks": true, "Vec": true, "Stage": 0, "Half": false, "XF16": true, "OF16": false, "F16": true, "Kept": 1, "Red": 1, "Unroll": 2, "Coalesce": false, "Group": "workgroup", "L": 8},
			[]string{"var<storage, read> x: array<vec4<f16>>;", "var<storage, read_write> out: array<f32>;", "acc = add4(acc, vec4<f32>(x[row + first + 1u]));", "out[w] = max_value(t, p.Scale);"}},
		{"reduce", map[string]any{"Acc": false, "Partial": false, "Op": "sum", "Arg": false, "Chunks": false, "Vec": false, "Stage": 0, "Half": false, "XF16": false, "OF16": true, "F16": true, "Kept": 1, "Red": 1, "Group": ""},
			[]string{"var<storage, read> x: array<f32>;", "var<storage, read_write> out: array<f16>;"}},
		{"softmax", map[string]any{"Log": false, "Grad": false, "Stage": "row", "W": 8, "V": 2, "Group": "workgroup", "F16": true},
			[]string{"enable f16;", "var<storage, read> x: array<E4>;", "return vec4<f32>(x[i]);", "out[base + 8u] = to_e4(select(e1 * r, vec4<f32>(nan()), bad));"}},
		{"gather", map[string]any{"Grad": false, "Table": true, "Rows": false, "F16": true}, []string{"enable f16;", "out[e] = to_e(p.Scale * f32(x[(u32(k) - p.I0) * d + j]));"}},
		{"norm", map[string]any{"Grad": true, "Center": true, "Stage": "", "Sums": false, "F16": true}, []string{"enable f16;", "mu = c + t / f32(n);", "let s = norm_scale(m);", "out[base + j] = to_e(st.z * st.x * (gj * w_at(j) - sg * inv - xh * sgx * inv));", "sumw[base + j] = gj * xh;"}},
		{"where", map[string]any{"F16": true}, []string{"enable f16;", "return select(b, a, c != 0.0 || is_nan(c));", "out[i] = to_e(op_where(f32(cond[i]), f32(a[i]), f32(b[i])));"}},
		// A fused chain: the families' functions, the rendered body, udiv for its broadcasts.
		{"fused", map[string]any{"Ops": "add,gelu", "Body": "fn elem(i: u32) {\n}\n", "F16": false, "Bits": false, "Bcast": true, "Unroll": 2, "Coalesce": false},
			[]string{"fn op_gelu(x: f32, a: f32, b: f32) -> f32", "fn op_add(x: f32, y: f32) -> f32", "fn op_where(c: f32, a: f32, b: f32) -> f32", "fn udiv(", "fn elem(i: u32) {\n}", "elem(i0 + 1u);", "add,gelu"}},
		{"norm", map[string]any{"Grad": true, "Center": true, "Stage": "row", "W": 8, "V": 3, "Sums": true, "Group": "workgroup", "F16": true},
			[]string{"enable f16;", "let mu = c + row_sum(acc.x + acc.y + acc.z + acc.w, lid) / f32(p.N);", "let in2 = lid + 16u < (p.N / 4u);", "let base = min(r0 + k, p.Rows - 1u) * (p.N / 4u) + lid;", "let c = f32(x[base - lid].x) * s;", "ws[v] = select(vec4<f32>(1.0), vec4<f32>(w[select(0u, j, p.HasW != 0u)]), p.HasW != 0u);", "let g2 = gr2 * ws[2];", "let o2 = rho * s * (g2 - vec4<f32>(mg) - d2 * rho * mgx);", "if (in2) { out[base + 16u] = to_e4(o2); }", "sw[2] += gr2 * (d2 * rho);", "if (lid + 16u < (p.N / 4u)) {", "sumb[pb + 16u] = sb[2];"}},
		{"norm", map[string]any{"Grad": true, "Center": false, "Stage": "row", "W": 8, "V": 10, "Sums": false, "Group": "subgroup", "F16": false},
			[]string{"let base = min(row, p.Rows - 1u) * (p.N / 4u) + lid;", "let mg = 0.0;", "if (in9) { out[base + 72u] = to_e4(o9); }", "if (in9) { sumw[base + 72u] = gr9 * (d9 * rho); }"}},
		{"norm", map[string]any{"Grad": false, "Center": false, "Stage": "row", "W": 64, "V": 1, "Sums": false, "Group": "subgroup"},
			[]string{"let mu = 0.0;", "let d0 = select(vec4<f32>(0.0), x0 * s - vec4<f32>(mu), in0);", "fn row_sum(v: f32, lid: u32, sid: u32, ssize: u32) -> f32", "fn row_max(v: f32, lid: u32, sid: u32, ssize: u32) -> f32", "bs[v] = select(vec4<f32>(-0.0), vec4<f32>(b[select(0u, j, p.HasB != 0u)]), p.HasB != 0u);", "let o0 = d0 * rho * ws[0] + bs[0];", "out[base + 0u] = to_e4(o0);"}},
		{"scan", map[string]any{"Reverse": true, "F16": false}, []string{"let k = base + (n - 1u - j) * inner;", "out[k] = to_e(s);"}},
		{"norm", map[string]any{"Grad": false, "Center": false, "Stage": "", "Sums": false}, []string{"alias E = f32;", "fn norm_scale(m: f32) -> f32", "var y = (f32(x[base + j]) * st.x - st.y) * st.z * w_at(j);", "out[base + j] = to_e(y);"}},
		{"softmax_xent_grad", map[string]any{"F16": true}, []string{"enable f16;", "dlogits[row + j] = to_e(q * scale);", "var m = f32(logits[row]);"}},
		{"cast", map[string]any{"ToHalf": true, "Vec": false}, []string{"fn to_half", "dst[i] = lo | (hi << 16u);"}},
		{"cast", map[string]any{"ToHalf": false, "Vec": false}, []string{"fn from_half", "countLeadingZeros(m)"}},
		{"cast", map[string]any{"ToHalf": true, "Vec": true}, []string{"fn f32_to_half4", "var<storage, read> src: array<vec4<f32>>", "dst[i] = f32_to_half4(vec4<f32>(a.x, a.z, b.x, b.z))"}},
		{"cast", map[string]any{"ToHalf": false, "Vec": true}, []string{"fn half4_to_f32", "dst[2u * i + 1u] = vec4<f32>(lo.z, hi.z, lo.w, hi.w);"}},
		{"draw", map[string]any{"Op": "curve"}, []string{"fn value_at", "fn row_of"}},
		{"matmul_tex", map[string]any{"Stage": "mul", "TM": 32, "TN": 16, "ARows": false},
			[]string{"let a31 = textureLoad(ta, vec2<i32>(i32(kq), ra + 31), 0);", "var acc31_3", "acc31_3 += b3_3 * a31[3];", "let kEnd = (p.K1 + 3u) / 4u;", "let add = p.Add != 0u;", "let q = o31 / 4u + 3u;"}},
		{"matmul_tex", map[string]any{"Stage": "mul", "TM": 32, "TN": 16, "ARows": true},
			[]string{"let qa = i32(row0 / 4u);", "let a7_3 = textureLoad(ta, vec2<i32>(qa + 7, 4 * (i32(kq)) + 3), 0);", "acc31_3 += b3_3 * a7_3[3];", "acc28_0 += b0_0 * a7_0[0];",
				"sum7 += a7_3;", "@binding(5) var<storage, read_write> sums: array<E>;", "v += bias3;", "let bias3 = vec4<f32>(bias_at(col0 + 12u), bias_at(col0 + 13u), bias_at(col0 + 14u), bias_at(col0 + 15u));", "if (p.Sums != 0u && col0 == 0u) {", "v += f32(sums[row0 + 31u]);"}},
		{"matmul_tex", map[string]any{"Stage": "mul", "TM": 16, "TN": 16, "ARows": false},
			[]string{"var<storage, read_write> out: array<E4>;", "let add = p.Add != 0u;", "v += out_v(q);"}},
		{"matmul_tex", map[string]any{"Stage": "pack", "Vec": false}, []string{"fn src_at", "var<storage, read> src: array<E>;", "if (w >= p.Wide || k >= p.Rows) {"}},
		{"matmul_tex", map[string]any{"Stage": "pack", "Vec": true},
			[]string{"var<storage, read> src: array<E4>", "v = src_v((p.Off + w + k * p.StrideDepth) / 4u);"}},
		{"binary", map[string]any{"Fn": "pow", "Grad": -1, "Same": false, "Scalar": 0, "Vec": false, "Half": false, "Unroll": 1, "Coalesce": false, "Rank": 3, "RowVec": false, "VecA": false, "VecB": false},
			[]string{"fn broadcast_offsets", "return op_pow(x, y);", "let off = broadcast_offsets(i);", "let q2 = udiv(rem, p.Shape[2], p.Magic[2]);", "ia += rem * p.AStrides[0];"}},
		{"binary", map[string]any{"Fn": "sub", "Grad": 1, "Same": false, "Scalar": 0, "Vec": false, "Half": false, "Unroll": 1, "Coalesce": false, "Rank": 2, "RowVec": true, "VecA": true, "VecB": false},
			[]string{"var<storage, read> x_in: array<E4>;", "var<storage, read> y_in: array<E>;", "let off = broadcast_offsets(4u * i);", "let y = vec4<f32>(f32(y_in[off.y]));", "out[i] = to_e4(apply4(x, y, vec4<f32>(g_in[i])));"}},
		{"binary", map[string]any{"Fn": "mod", "Grad": 1, "Same": true, "Scalar": 0, "Vec": true, "Half": false, "Unroll": 4, "Coalesce": false, "Rank": 0, "RowVec": false, "VecA": false, "VecB": false},
			[]string{"op_mod_grad1(x, y, g)", "var<storage, read> g_in: array<E4>", "fn apply4"}},
		// One operand one element, splat, bound last.
		{"binary", map[string]any{"Fn": "mul", "Grad": 0, "Same": true, "Scalar": 1, "Half": false, "F16": true, "Unroll": 2, "Coalesce": false, "Rank": 0, "RowVec": false, "VecA": false, "VecB": false},
			[]string{"@group(0) @binding(1) var<storage, read> y_in: array<E4>;", "@group(0) @binding(2) var<storage, read> g_in: array<E4>;",
				"@group(0) @binding(3) var<storage, read_write> out: array<E4>;", "@group(0) @binding(4) var<storage, read> x_in: array<E4>;",
				"let x = vec4<f32>(f32(x_in[0].x));", "let y = vec4<f32>(y_in[i]);"}},
		{"binary", map[string]any{"Fn": "div", "Grad": -1, "Same": true, "Scalar": 2, "Half": false, "F16": false, "Unroll": 2, "Coalesce": false, "Rank": 0, "RowVec": false, "VecA": false, "VecB": false},
			[]string{"@group(0) @binding(1) var<storage, read> x_in: array<E4>;", "@group(0) @binding(2) var<storage, read_write> out: array<E4>;",
				"@group(0) @binding(3) var<storage, read> y_in: array<E4>;", "let y = vec4<f32>(f32(y_in[0].x));"}},
		{"update", map[string]any{"Op": "fill", "T": "vec4<u32>"}, []string{"out[i] = vec4<u32>(p.Bits);"}},
		// A step of three parameters: their bindings in turn, the loads and
		// stores a switch on the parameter.
		{"update", map[string]any{"Op": "sgd", "T": "vec4<f32>", "Momentum": true, "First": false, "Nesterov": false, "Scaled": false, "Group": 3},
			[]string{"@group(0) @binding(4) var<storage, read> grad1: array<vec4<f32>>;", "@group(0) @binding(9) var<storage, read_write> buf2: array<vec4<f32>>;",
				"let s = 0u + u32(i >= p.Starts[1]) + u32(i >= p.Starts[2]);", "let j = i - p.Starts[s];",
				"case 1u: { w = param1[j]; gr = grad1[j]; bi = buf1[j]; }", "default: { param2[j] = w; buf2[j] = b; }"}},
		{"update", map[string]any{"Op": "adam", "T": "vec4<f32>", "AMSGrad": true, "Decoupled": false, "Scaled": true, "Group": 0},
			[]string{"@group(0) @binding(5) var<storage, read_write> vmax0: array<vec4<f32>>;", "@group(0) @binding(6) var<storage, read> amp: array<f32>;",
				"let j = i;", "    w = param0[j]; g = grad0[j]; mi = m0[j]; vi = v0[j]; vm = vmax0[j];"}},
		{"update", map[string]any{"Op": "unscale", "T": "vec4<f32>", "U": "vec4<u32>", "Group": 2},
			[]string{"@group(0) @binding(2) var<storage, read_write> grad1: array<vec4<f32>>;", "@group(0) @binding(3) var<storage, read> scale: array<f32>;",
				"let live = vec4<u32>(4u * j) + vec4<u32>(0u, 1u, 2u, 3u) < vec4<u32>(p.Lens[s]);", "default: { grad1[j] = g; }"}},
		{"update", map[string]any{"Op": "scale", "T": "vec4<f32>", "U": "vec4<u32>", "Group": 0},
			[]string{"@group(0) @binding(1) var<storage, read_write> grad0: array<vec4<f32>>;", "g = g * scale[0];", "    grad0[j] = g;"}},
		{"update", map[string]any{"Op": "sumsq", "T": "vec4<f32>", "Group": 3},
			[]string{"@group(0) @binding(3) var<storage, read> x2: array<vec4<f32>>;", "@group(0) @binding(4) var<storage, read_write> sums: array<f32>;",
				"let i = 16u * e;", "case 1u: { for (var t = 0u; t < 16u; t++) {", "let w = select(vec4<f32>(0.0), x1[j + t], live); acc += dot(w, w); }", "sums[p.Base + p.First / 16u + e] = acc;"}},
		{"update", map[string]any{"Op": "axpy", "T": "E", "W": "f32", "V": ""}, []string{"out[i] = to_e(f32(out[i]) + p.Alpha * f32(x[i]));"}},
		{"update", map[string]any{"Op": "axpy", "T": "E4", "W": "vec4<f32>", "V": "4", "F16": true}, []string{"enable f16;", "alias E4 = vec4<f16>;", "out[i] = to_e4(vec4<f32>(out[i]) + p.Alpha * vec4<f32>(x[i]));"}},
		{"reduce", map[string]any{"Acc": false, "Partial": false, "Op": "sum", "Arg": false, "Chunks": false, "Vec": false, "Stage": 0, "Half": false, "XF16": false, "OF16": false, "Kept": 2, "Red": 2, "Group": ""}, []string{"fn base_offset", "fn offset", "return sum_add(acc, at(base, r));", "let q1 = udiv(rem, p.RedShape[1], p.RedMagic[1]);", "base += rem * p.KeptStrides[0];"}},
		{"reduce", map[string]any{"Acc": false, "Partial": false, "Op": "sum", "Arg": false, "Chunks": false, "Vec": false, "Stage": 0, "Half": true, "XF16": false, "OF16": false, "Kept": 2, "Red": 2, "Group": ""}, []string{"var<storage, read> x: array<u32>", "unpack2x16float(x[i >> 1u])"}},
		{"reduce", map[string]any{"Acc": false, "Partial": false, "Op": "max", "Arg": false, "Chunks": true, "Vec": false, "Stage": 0, "Half": false, "XF16": false, "OF16": false, "Kept": 2, "Red": 2, "Group": "workgroup", "L": 256},
			[]string{"let chunks = p.Chunks;", "acc = fold(acc, base, r);", "return max_add(acc, at(base, r));", "let t = group_reduce(acc, lid);", "out[w] = max_value(t, p.Scale);", "var<workgroup> part: array<max_t, 256>;", "part[lid] = max_combine(part[lid], part[lid + s]);"}},
		{"reduce", map[string]any{"Acc": false, "Partial": false, "Op": "max", "Arg": false, "Chunks": true, "Vec": false, "Stage": 0, "Half": false, "XF16": false, "OF16": false, "Kept": 2, "Red": 2, "Group": "subgroup", "SubgroupOp": "subgroupMax", "L": 8},
			[]string{"let t = group_reduce(acc, lid, sid, ssize);", "let s = max_keep_nan(subgroupMax(v), v);", "return select(s, nan(), subgroupAny(is_nan(v)));", "@builtin(subgroup_size) ssize: u32", "if (w >= p.N / 8u) {", "@workgroup_size(8)"}},
		{"reduce", map[string]any{"Acc": false, "Partial": false, "Op": "sum", "Arg": false, "Chunks": true, "Vec": true, "Stage": 0, "Half": false, "XF16": false, "OF16": false, "Kept": 2, "Red": 2, "Unroll": 2, "Coalesce": false, "Group": "workgroup", "L": 256},
			[]string{"var<storage, read> x: array<vec4<f32>>", "fn add4(a: acc4, v: vec4<f32>) -> acc4", "first + 1u <= last", "+ lid * 2u;", "x[row + first + 1u]"}},
		{"reduce", map[string]any{"Acc": false, "Partial": false, "Op": "sum", "Arg": false, "Chunks": true, "Vec": true, "Stage": 0, "Half": false, "XF16": false, "OF16": false, "Kept": 2, "Red": 2, "Unroll": 2, "Coalesce": true, "Group": "subgroup", "SubgroupOp": "subgroupAdd", "L": 256},
			[]string{"+ lid;", "first + 256u <= last", "x[row + first + 256u]", "vec4<f32>(x[row + min(first + 256u, last)]), first + 256u <= last"}},
		{"reduce", map[string]any{"Acc": true, "Partial": true, "Op": "sum", "Arg": false, "Chunks": true, "Vec": false, "Stage": 0, "Half": false, "XF16": false, "OF16": false, "Kept": 2, "Red": 2, "Group": "subgroup", "SubgroupOp": "subgroupAdd", "L": 8},
			[]string{"var<storage, read> x: array<sum_t>;", "var<storage, read_write> out: array<sum_t>;", "return sum_combine(acc, x[offset(base, r)]);", "out[w] = t;", "let s = sum_keep_nan(subgroupAdd(v), v);", "var<workgroup> part: array<sum_t, 8>;"}},
		{"reduce", map[string]any{"Acc": false, "Partial": false, "Op": "argmin", "Arg": true, "Chunks": false, "Vec": false, "Stage": 1, "Half": false, "XF16": false, "OF16": false, "Kept": 2, "Red": 2, "Group": ""}, []string{"vals_out[o] = best;", "argmin_better(v, best)"}},
		{"reduce", map[string]any{"Acc": false, "Partial": false, "Op": "argmax", "Arg": true, "Chunks": false, "Vec": false, "Stage": 2, "Half": false, "XF16": false, "OF16": false, "Kept": 2, "Red": 2, "Group": ""}, []string{"out[o] = idxs[o * count + idx];"}},
		{"softmax", map[string]any{"Log": true, "Grad": true, "Vec": false, "Stage": "apply", "Unroll": 1, "Coalesce": false, "Whole": false}, []string{"return dy_at(i) - exp(y_at(i)) * a;", "out[i] = to_e(value(i, s1[row], 0.0));", "@binding(3) var<storage, read> s1: array<f32>;", "@binding(4) var<storage, read_write> out"}},
		{"softmax", map[string]any{"Log": false, "Grad": false, "Vec": true, "Stage": "stats", "Block": 0},
			[]string{"var<storage, read> x: array<E4>", "fn fold", "s2[i] = 1.0 / acc.y;", "@binding(3) var<storage, read_write> s2: array<f32>;"}},
		{"softmax", map[string]any{"Log": false, "Grad": false, "Vec": true, "Stage": "apply", "Quads": 256, "Unroll": 4, "Coalesce": false, "Whole": false}, []string{"let row = i / 256u;"}},
		{"softmax", map[string]any{"Log": false, "Grad": true, "Vec": false, "Stage": "stats", "Block": 0}, []string{"acc += dy_at(k) * y_at(k);"}},
		{"softmax", map[string]any{"Log": false, "Grad": false, "Vec": true, "Stage": "stats", "Block": 4},
			[]string{"let v3 = x_at(base + j + 3u);", "m4 = max_nan4(m4, v3);", "acc = fold(acc, vm, "}},
		{"softmax", map[string]any{"Log": true, "Grad": true, "Vec": true, "Stage": "stats", "Block": 4}, []string{"acc += dy_at(base + j + 3u);"}},
		{"softmax", map[string]any{"Log": false, "Grad": false, "Vec": true, "Stage": "apply", "Quads": 256, "Unroll": 8, "Coalesce": false, "Whole": true},
			[]string{"let row = i0 / 256u;", "let b = s2[row];", "out[i0 + 7u] = to_e4(value(i0 + 7u, a, b));"}},
		{"softmax", map[string]any{"Log": false, "Grad": false, "Stage": "row", "W": 8, "V": 32, "Group": "workgroup"},
			[]string{"@workgroup_size(8)", "var<workgroup> part: array<f32, 8>;", "let x30 = x_at(base + 240u);", "let base = min(row, p.Rows - 1u) * p.Quads + lid;", "let in31 = lid + 248u < p.Quads;", "out[base + 248u] = to_e4(select(e31 * r, vec4<f32>(nan()), bad));", "m4 = max_nan4(m4, x31);"}},
		{"softmax", map[string]any{"Log": true, "Grad": true, "Stage": "row", "W": 64, "V": 4, "Group": "subgroup"},
			[]string{"acc += dy3;", "out[base + 192u] = to_e4(dy3 - exp(y3) * s);", "@binding(3) var<storage, read_write> out: array<E4>;"}},
		{"softmax", map[string]any{"Log": true, "Grad": false, "Stage": "row", "W": 8, "V": 2, "Group": "subgroup"},
			[]string{"let c = vec4<f32>(m + log(s));", "out[base + 8u] = to_e4(select(x1 - c, vec4<f32>(nan()), bad));", "select(vec4<f32>(0.0), exp(x1 - vec4<f32>(m)), in1)"}},
		{"softmax", map[string]any{"Log": false, "Grad": true, "Stage": "row", "W": 8, "V": 1, "Group": "workgroup"},
			[]string{"var acc = dy0 * y0;", "out[base + 0u] = to_e4(y0 * (dy0 - s));"}},
		{"gather", map[string]any{"Grad": true, "Table": false, "Rows": false}, []string{"p.Scale * f32(g[i])"}},
		{"gather", map[string]any{"Grad": true, "Table": true, "Rows": false}, []string{"if (e >= ((p.Width + 3u) / 4u) * ((p.C + tableRows - 1u) / tableRows))", "v.w = f32(g[at + 3u]);", "s[t] += v;"}},
		{"gather", map[string]any{"Grad": false, "Table": true, "Rows": false}, []string{"if (e >= p.N * p.Width)", "x[(u32(k) - p.I0) * d + j]"}},
		{"gather", map[string]any{"Grad": false, "Table": false, "Rows": true}, []string{"if (e >= p.N * p.Width)", "out[e] = to_e(p.Scale * f32(x[e / p.Width * c + u32(q)]));"}},
		{"gather", map[string]any{"Grad": true, "Table": false, "Rows": true}, []string{"if (e >= p.N * p.C)", "s += f32(g[i * k + m]);"}},
		{"softmax_xent", nil, []string{"fn row_stats"}},
		{"softmax_xent_grad", nil, []string{"fn row_stats", "dlogits[row + j]"}},
		{"strided", map[string]any{"Half": false, "F16": true, "Rank": 2, "Vec": false, "VecDst": true}, []string{"enable f16;", "var<storage, read_write> dst: array<vec4<f16>>;", "dst[d] = vec4<f16>(src[s], src[s + 1u], src[s + 2u], src[s + 3u]);"}},
		{"strided", map[string]any{"Half": false, "F16": true, "Rank": 2, "Vec": true, "VecDst": false}, []string{"var<storage, read> src: array<vec4<f16>>;", "dst[p.BOff + off.y] = src[p.AOff + off.x];"}},
		{"strided", map[string]any{"Half": false, "F16": false, "Rank": 3, "Vec": false, "VecDst": false}, []string{"dst[p.BOff + off.y] = src[p.AOff + off.x];", "var<storage, read> src: array<u32>"}},
		{"strided", map[string]any{"Half": false, "F16": false, "Rank": 4, "Vec": true, "VecDst": false}, []string{"dst[p.BOff + off.y] = src[p.AOff + off.x];", "var<storage, read_write> dst: array<vec4<u32>>"}},
		{"strided", map[string]any{"Half": false, "F16": false, "Rank": 2, "Vec": false, "VecDst": true}, []string{"let q = i - udiv(i, p.Shape[1], p.Magic[1]) * p.Shape[1];", "dst[d] = vec4<u32>(src[s], src[s + 1u], src[s + 2u], src[s + 3u]);"}},
		{"strided", map[string]any{"Half": true, "F16": false, "Rank": 2, "Vec": false, "VecDst": true},
			[]string{"var<storage, read_write> dst: array<vec2<u32>>;", "fn half_at", "h.z = half_at(s + 2u);", "let q = i - udiv(i, p.Shape[1], p.Magic[1]) * p.Shape[1];"}},
		{"strided", map[string]any{"Half": true, "F16": false, "Rank": 1, "Vec": false, "VecDst": false}, []string{"atomicAnd(&dst[d >> 1u]", "(src[s >> 1u] >> ((s & 1u) * 16u)) & 0xffffu", "let h = half_at(s);"}},
		{"matmul", map[string]any{"TM": 8, "TN": 16, "TransA": false, "TransB": true, "VecA": false, "VecB": false, "Flat": false, "VecO": false, "DotK": false},
			[]string{"var acc7_3 = vec4<f32>(0.0);", "b_at(zb + c15 * p.RowB + k)", "a_at(za + r7 * K + k)", "z = p.Batch0 + zz / p.Parts;", "let zz = gid.z;", "out[i] = to_e(v);", "let add = p.K0 != 0u || p.Accumulate != 0u;"}},
		{"matmul", map[string]any{"TM": 8, "TN": 16, "TransA": true, "TransB": false, "VecA": false, "VecB": true, "Flat": true, "VecO": false, "DotK": false},
			[]string{"let b3 = b_v(zb + k * p.RowB + cb3);", "let zz = rest / p.RowBlocks;"}},
		{"matmul", map[string]any{"TM": 8, "TN": 16, "TransA": false, "TransB": false, "VecA": false, "VecB": true, "Flat": false, "VecO": true, "DotK": false},
			[]string{"var<storage, read_write> out: array<E4>;", "let q = o7 / 4u + 3u;", "out[i] = to_e4(v);"}},
		{"matmul", map[string]any{"TM": 8, "TN": 16, "TransA": false, "TransB": true, "VecA": false, "VecB": false, "Flat": true, "VecO": false, "DotK": true},
			[]string{"var<storage, read> a: array<E4>;", "let b15 = b_v(zb + c15 * p.RowB + k);", "let b3_2 = vec4<f32>(b12[2], b13[2], b14[2], b15[2]);", "acc7_3 += b3_3 * a7[3];"}},
		{"matmul", map[string]any{"TM": 16, "TN": 16, "TransA": true, "TransB": false, "VecA": true, "VecB": true, "Flat": false, "VecO": true, "DotK": false},
			[]string{"var<storage, read> a: array<E4>;", "var<storage, read_write> out: array<E4>;", "let av3 = a_v(za + k * (M / 4u) + ra3);", "v += out_v(q);"}},
		{"matmul", map[string]any{"TM": 8, "TN": 16, "TransA": false, "TransB": true, "VecA": false, "VecB": false, "Flat": false, "VecO": false, "DotK": true},
			[]string{"var<storage, read> b: array<E4>;", "let a7 = a_v(za + r7 * (K / 4u) + k);"}},
		// k in parts: flat and DotK, and a 2-D grid writing vec4s.
		{"matmul", map[string]any{"TM": 8, "TN": 16, "TransA": false, "TransB": true, "VecA": false, "VecB": false, "Flat": true, "VecO": false, "DotK": true},
			[]string{"part = zz % p.Parts;", "z = p.Batch0 + zz / p.Parts;", "for (var k = kLo / 4u; k < kHi / 4u; k++) {", "let zo = p.OffOut + z * M * p.LdOut + part * p.PartStride;", "let add = p.K0 != 0u || p.Accumulate != 0u;"}},
		{"matmul", map[string]any{"TM": 16, "TN": 16, "TransA": false, "TransB": false, "VecA": false, "VecB": true, "Flat": false, "VecO": true, "DotK": false},
			[]string{"let zz = gid.z;", "let kHi = min(p.K1, kLo + p.PartTerms);", "for (var k = kLo; k < kHi; k++) {", "set_out_v(q, v);"}},
		{"matmul_sum", nil, []string{"v += part[s * p.N + i];", "out[p.Off + i] = v;"}},
		{"matmul_tiled", map[string]any{"BM": 32, "BN": 32, "BK": 8, "TM": 4, "TN": 4, "Spread": false, "TransA": false, "TransB": true, "HalfA": true, "HalfB": false, "Half": true, "VecO": false, "VecA": false, "VecB": false, "Pre": false},
			[]string{"ra0 = a_at(za + r * K + k);", "return f32(b[i]);", "atomicAnd(&out[i >> 1u]", "let add = p.K0 != 0u || p.Accumulate != 0u;", "let c0 = col0 + lid.x * 4u + 0u;"}},
		// Packed float16 read by vec4s and written by vec4s.
		{"matmul_tiled", map[string]any{"BM": 64, "BN": 64, "BK": 8, "TM": 4, "TN": 4, "Spread": false, "TransA": false, "TransB": false, "HalfA": true, "HalfB": true, "Half": true, "VecO": true, "VecA": true, "VecB": true, "Pre": false},
			[]string{"var<storage, read_write> out: array<vec2<u32>>;", "out[i] = vec2<u32>(pack_half2(v.xy), pack_half2(v.zw));", "return vec4<f32>(unpack2x16float(w.x), unpack2x16float(w.y));"}},
		{"matmul_tiled", map[string]any{"BM": 128, "BN": 128, "BK": 16, "TM": 8, "TN": 8, "Spread": true, "TransA": false, "TransB": false, "HalfA": false, "HalfB": false, "Half": false, "VecO": false, "VecA": false, "VecB": false, "Pre": false},
			[]string{"let b1 = tile_b[15u][16u + lid.x];", "let c1 = col0 + (16u + lid.x) * 4u;", "set_out(o7 + c1 + 3u, select(0.0, out_at(o7 + c1 + 3u), add) + acc7_1[3]);"}},
		{"matmul_tiled", map[string]any{"BM": 128, "BN": 128, "BK": 16, "TM": 8, "TN": 8, "Spread": true, "TransA": false, "TransB": false, "HalfA": false, "HalfB": false, "Half": false, "VecO": false, "VecA": true, "VecB": true, "Pre": true},
			[]string{"var<storage, read> a4: array<E4>;", "ra1 = vec4<f32>(a4[(za + r * K + k) >> 2u]);", "tile_a[kk + 3u][x / 4u][x % 4u] = ra1[3];", "tile_b[kk][x / 4u] = rb1;", "var rb1: vec4<f32>;", "var<workgroup> tile_a: array<array<vec4<f32>, 33>, 16>;"}},
		{"matmul_tiled", map[string]any{"BM": 128, "BN": 128, "BK": 8, "TM": 8, "TN": 8, "Spread": true, "TransA": false, "TransB": true, "HalfA": false, "HalfB": false, "Half": false, "VecO": false, "VecA": true, "VecB": true, "Pre": true},
			[]string{"var<workgroup> tile_b: array<array<vec4<f32>, 33>, 8>;", "tile_b[kk + 2u][x / 4u][x % 4u] = rb0[2];", "let av1 = tile_a[7u][lid.y * 2u + 1u];", "tile_a[kk + 3u][x / 4u][x % 4u] = ra0[3];", "let bx = wid.x;"}},
		{"matmul_tiled", map[string]any{"BM": 64, "BN": 64, "BK": 8, "TM": 4, "TN": 4, "Spread": false, "TransA": false, "TransB": false, "HalfA": false, "HalfB": false, "Half": false, "F16": true, "VecO": false, "VecA": true, "VecB": false, "Pre": true},
			[]string{"enable f16;", "var<storage, read> a4: array<E4>;", "var<storage, read> b: array<E>;", "var<storage, read_write> out: array<E>;", "out[i] = to_e(v);"}},
		// Split over k (GPUs): the part from the grid's z, its terms and its place in out.
		{"matmul_tiled", map[string]any{"BM": 64, "BN": 64, "BK": 8, "TM": 4, "TN": 4, "Spread": false, "TransA": true, "TransB": false, "HalfA": false, "HalfB": false, "Half": false, "VecO": false, "VecA": false, "VecB": false, "Pre": false},
			[]string{"part = wid.z % p.Parts;", "let k1 = min(p.K1, p.K0 + (part + 1u) * p.PartTerms);", "zz = wid.z / p.Parts;", "let zo = p.OffOut + z * M * N + part * p.PartStride;", "var k0 = p.K0 + part * p.PartTerms;", "let add = p.K0 != 0u || p.Accumulate != 0u; // Accumulate 0 where split"}},
		{"matmul_tex", map[string]any{"Stage": "mul", "TM": 16, "TN": 16, "Half": false, "F16": true, "Add": true, "ARows": false}, []string{"enable f16;", "var<storage, read_write> out: array<E4>;", "out[i] = to_e4(v);", "return vec4<f32>(out[i]);"}},
		{"window", with(win("im2col", false), "F16", true), []string{"enable f16;", "var<storage, read> x: array<E>;", "out[o + j] = to_e(v);"}},
		{"window", win("im2col", false), []string{"fn tap", "out[o + j] = to_e(v);"}},
		{"window", ones(win("im2col", false)), []string{"let per = (C * KK + 1u) * OH;", "out[o + j] = to_e(1.0);"}},
		{"window", pitch(win("im2col", false), 4), []string{"const PITCH = 4u;", "out[o - rw.z * OW + j] = to_e(0.0);"}},
		{"window", win("im2col", true), []string{"fn value", "out[first() / 2u + i] = pack_half2(vec2<f32>(value(e), hi));", "unpack2x16float(x[i >> 1u])"}},
		{"window", win("max_pool_grad", false), []string{"fn arg_max", "@binding(3) var<storage, read_write> out", "if (arg_max(base, u32(w.x), u32(w.y)) == i)"}},
		{"window", cells(win("max_pool_grad", false)), []string{"best = arg_max(base, ci, cj);", "out[k] = to_e(select(0.0, gv, k == best));"}},
		{"window", cells(win("max_pool_grad", true)), []string{"best = arg_max(base, ci, cj);", "for (var b = 0u; b < SW; b += 2u) {",
			"out[k / 2u] = pack_half2(vec2<f32>(select(0.0, gv, k == best), select(0.0, gv, k + 1u == best)));"}},
		{"window", disjoint(win("max_pool_grad", true)), []string{"let oi = (y + PH) / SH;", "return select(0.0, g_at(win), arg_max(nc * H * W, oi, oj) == i);"}},
		{"window", win("col2im", false), []string{"return p.N0 * C * H * W;", "out[first() + i] = to_e(value(i));", "const KK = 6u;"}},
		{"window", win("avg_pool", true), []string{"return s / f32(KK);", "fn x_at"}},
		{"window", pairs(win("max_pool", false)), []string{"var<storage, read> x: array<vec2<E>>;", "let v = vec2<f32>(x[k >> 1u]);", "best = k + 1u;", "return f32(x[i >> 1u][i & 1u]);"}},
		{"window", pairs(cells(win("max_pool_grad", false))), []string{"var<storage, read> x: array<vec2<E>>;", "best = arg_max(base, ci, cj);"}},
		{"conv_tex", map[string]any{"Stage": "pack"}, []string{"texture_storage_2d<rgba32float, write>", "let ty = udiv(e, p.Q, p.MagicQ);", "let at = p.Src + (n * p.C + 4u * q) * hw + u32(max(y, 0)) * p.W - p.PW;", "v.w = src_at(a + 3u * hw);", "return f32(src[i]);"}},
		{"conv_tex", map[string]any{"Stage": "wpack", "Taps": 9, "Flip": true, "Rows": false}, []string{"v[r] = w_at((c * p.F + f) * 9u + 9u - 1u - t);"}},
		{"conv_tex", map[string]any{"Stage": "wpack", "Taps": 9, "Flip": false, "Rows": false}, []string{"v[r] = w_at((f * p.C + c) * 9u + t);", "var<storage, read> w: array<E>;"}},
		{"conv_tex", map[string]any{"Stage": "wpack", "Taps": 3, "Flip": false, "Rows": true}, []string{"v[r] = w_at(((f * p.C + c) * 3u + t) * p.KW + en - c * p.KW);"}},
		{"conv_tex", map[string]any{"Stage": "rows"}, []string{"let ty = udiv(e, p.Q, p.MagicQ);", "let live3 = inside && en3 < p.C * p.KW;", "v[3] = src_at(at3 + u32(x3));"}},
		{"conv_tex", map[string]any{"Stage": "fwd", "TM": 32, "TN": 16},
			[]string{"@workgroup_size(64, 1, 1)", "let rowEnd = p.KW * dw;", "cx = select(cx, cx + wp, next);", "acc31_15 += dot(w31, x15);", "let x15 = textureLoad(tx, b15 + o, 0);", "bias31 = bias_at(u32(r31));", "select(acc31_15, acc31_15 + bias31, hasBias));", "var<storage, read_write> out: array<E>;", "out[i] = to_e(v);"}},
		{"conv_tex", map[string]any{"Stage": "dw", "TM": 32, "TN": 16},
			[]string{"acc31_3 += x3 * y7[3];", "bs7 += y7;", "part[ob + (c + r) * taps + t] = acc31_3[r];", "part[ob + row - 1u] = bs7[3];"}},
	} {
		src, err := Source(c.name, c.data, nil)
		if err != nil {
			t.Errorf("Source(%q): %v", c.name, err)
			continue
		}
		if !strings.Contains(src, "fn linear_index") || !strings.Contains(src, "@compute") {
			t.Errorf("Source(%q) lacks the prelude or an entry point", c.name)
		}
		for _, w := range c.want {
			if !strings.Contains(src, w) {
				t.Errorf("Source(%q) lacks %q", c.name, w)
			}
		}
		if strings.Contains(src, "{{") || strings.Contains(src, "<no value>") {
			t.Errorf("Source(%q) has unexpanded template text", c.name)
		}
	}
}

func TestSourceErrors(t *testing.T) {
	for _, name := range []string{"nosuch", "prelude", "common"} {
		if _, err := Source(name, nil, nil); err == nil {
			t.Errorf("Source(%q): no error", name)
		}
	}
	if _, err := Source("unary", map[string]any{}, nil); err == nil {
		t.Errorf("Source with a missing template key: no error")
	}
}
