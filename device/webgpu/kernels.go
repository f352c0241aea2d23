//go:build cgo

package webgpu

import (
	"fmt"
	"math"
	"strings"

	"github.com/extensor/extensor/device"
)

// The WGSL expressions of each op; T stands for the element type. They are
// the GPU's own: the CPU backend implements the ops independently.
var (
	unaryExpr = map[device.UnaryOp]string{
		device.Relu: "max(v, T(0.0))",
	}
	unaryGradExpr = map[device.UnaryOp]string{
		device.Relu: "select(T(0.0), g, v > T(0.0))",
	}
	binaryExpr = map[device.BinaryOp]string{
		device.Add: "x + y",
		device.Sub: "x - y",
		device.Mul: "x * y",
		device.Div: "x / y",
	}
	// binaryGradExpr[op][wrt] is the gradient with respect to operand wrt.
	binaryGradExpr = map[device.BinaryOp][2]string{
		device.Add: {"g", "g"},
		device.Sub: {"g", "-g"},
		device.Mul: {"g * y", "g * x"},
		device.Div: {"g / y", "-g * x / (y * y)"},
	}
)

// elem returns the WGSL element type for n elements: vec4<f32> when n is a
// multiple of 4 (faster loads), else f32, and the count of such elements.
func elem(n int) (typ string, count int) {
	if n%4 == 0 {
		return "vec4<f32>", n / 4
	}
	return "f32", n
}

// typed substitutes the element type for T in the constructors of expr.
func typed(expr, typ string) string { return strings.ReplaceAll(expr, "T(", typ+"(") }

func groupsOf(n, size int) int { return (n + size - 1) / size }

// elementwise records out[i] = expr over the elements of out, reading the
// inputs named in (bound in order before out) at i. Lengths that are
// multiples of 4 run on vec4s. extra are parameter words after the count.
func (d *Device) elementwise(op, expr string, out *buffer, in []string, bufs []*buffer, extra ...uint32) {
	typ, n := elem(out.n)
	if out.dt == device.Int32 || strings.HasPrefix(op, "fill") {
		typ, n = "u32", out.n
	}
	spec := map[string]any{"T": typ, "Expr": typed(expr, typ), "In": in, "InPlace": strings.Contains(expr, "out[i]")}
	writable := make([]bool, len(in)+1)
	writable[len(in)] = true
	k := d.kernel(op+"/"+typ, "elementwise", spec, writable...)
	d.run(k, groupsOf(n, 256), append([]uint32{uint32(n)}, extra...), append(bufs, out)...)
}

func f32bits(v float64) uint32 { return math.Float32bits(float32(v)) }

// Fill sets every element of dst to v.
func (d *Device) Fill(dst device.Buffer, v float64) {
	b := d.buf(dst)
	word := f32bits(v)
	if b.dt == device.Int32 {
		word = uint32(int32(v))
	}
	d.elementwise("fill", "p[1]", b, nil, nil, word)
}

// Copy copies src into dst.
func (d *Device) Copy(dst, src device.Buffer) {
	o, s := d.buf(dst), d.buf(src)
	if o.n == 0 || !d.ok() {
		return
	}
	enc := d.encoderFor()
	if enc == nil {
		return
	}
	if err := enc.CopyBufferToBuffer(s.b, 0, o.b, 0, o.bytes()); err != nil {
		d.fail(fmt.Errorf("webgpu: copy of %d bytes: %v", o.bytes(), err))
		return
	}
	d.dispatches++
	d.labels = append(d.labels, "copy")
}

// Unary sets dst = op(x).
func (d *Device) Unary(op device.UnaryOp, dst, x device.Buffer) {
	d.elementwise("unary/"+op.String(), unaryExpr[op], d.buf(dst), []string{"v"}, []*buffer{d.buf(x)})
}

// UnaryGrad sets dx = dy·op'(x).
func (d *Device) UnaryGrad(op device.UnaryOp, dx, x, dy device.Buffer) {
	d.elementwise("unary_grad/"+op.String(), unaryGradExpr[op], d.buf(dx), []string{"v", "g"}, []*buffer{d.buf(x), d.buf(dy)})
}

// contiguous reports whether strides are the row-major strides of shape.
func contiguous(shape, strides []int) bool {
	s := 1
	for ax := len(shape) - 1; ax >= 0; ax-- {
		if shape[ax] != 1 && strides[ax] != s {
			return false
		}
		s *= shape[ax]
	}
	return true
}

// broadcastParams packs n, rank, shape and both operands' strides.
func broadcastParams(l device.Broadcast) []uint32 {
	p := make([]uint32, 26)
	p[0], p[1] = uint32(l.Len()), uint32(len(l.Shape))
	for i := range l.Shape {
		p[2+i], p[10+i], p[18+i] = uint32(l.Shape[i]), uint32(l.AStrides[i]), uint32(l.BStrides[i])
	}
	return p
}

// Binary sets dst = op(a, b) with broadcasting.
func (d *Device) Binary(op device.BinaryOp, dst, a, b device.Buffer, l device.Broadcast) {
	o, x, y := d.buf(dst), d.buf(a), d.buf(b)
	if contiguous(l.Shape, l.AStrides) && contiguous(l.Shape, l.BStrides) {
		d.elementwise("binary_same/"+op.String(), binaryExpr[op], o, []string{"x", "y"}, []*buffer{x, y})
		return
	}
	k := d.kernel("binary/"+op.String(), "binary", map[string]string{"Expr": binaryExpr[op]}, false, false, true)
	d.run(k, groupsOf(o.n, 256), broadcastParams(l), x, y, o)
}

// BinaryGrad sets dst to the output-shaped gradient with respect to operand wrt.
func (d *Device) BinaryGrad(op device.BinaryOp, wrt int, dst, g, a, b device.Buffer, l device.Broadcast) {
	o, gb, x, y := d.buf(dst), d.buf(g), d.buf(a), d.buf(b)
	k := d.kernel(fmt.Sprintf("binary_grad/%v/%d", op, wrt), "binary_grad", map[string]string{"Expr": binaryGradExpr[op][wrt]}, false, false, false, true)
	d.run(k, groupsOf(o.n, 256), broadcastParams(l), gb, x, y, o)
}

// axis is a dimension of a coalesced reduction: its size and its stride in
// the input.
type axis struct{ size, stride int }

// coalesce drops unit dimensions of a contiguous input and merges
// neighbours that are both kept or both reduced.
func coalesce(shape, axes []int) (kept, red []axis) {
	reduced := make([]bool, len(shape))
	for _, a := range axes {
		reduced[a] = true
	}
	type run struct {
		size int
		red  bool
	}
	var runs []run
	for ax, n := range shape {
		if n == 1 {
			continue
		}
		if len(runs) > 0 && runs[len(runs)-1].red == reduced[ax] {
			runs[len(runs)-1].size *= n
			continue
		}
		runs = append(runs, run{n, reduced[ax]})
	}
	stride := 1
	for i := len(runs) - 1; i >= 0; i-- {
		a := axis{runs[i].size, stride}
		stride *= runs[i].size
		if runs[i].red {
			red = append([]axis{a}, red...)
		} else {
			kept = append([]axis{a}, kept...)
		}
	}
	return kept, red
}

const (
	chunkLen = 4096 // reduced elements per workgroup in reduce_chunks
)

// Reduce sums (or averages) x over axes into dst.
func (d *Device) Reduce(op device.ReduceOp, dst, x device.Buffer, shape, axes []int) {
	kept, red := coalesce(shape, axes)
	count := 1
	for _, a := range axes {
		count *= shape[a]
	}
	scale := 1.0
	if op == device.Mean {
		scale = 1 / float64(count)
	}
	d.reduce(d.buf(dst), d.buf(x), kept, red, scale)
}

func (d *Device) reduce(o, in *buffer, kept, red []axis, scale float64) {
	nOut, r := 1, 1
	for _, a := range kept {
		nOut *= a.size
	}
	for _, a := range red {
		r *= a.size
	}
	if nOut == 0 {
		return
	}
	p := make([]uint32, 39)
	p[0], p[1], p[2], p[3], p[4] = uint32(nOut), uint32(r), uint32(len(kept)), uint32(len(red)), f32bits(scale)
	for i, a := range kept {
		p[5+i], p[13+i] = uint32(a.size), uint32(a.stride)
	}
	for i, a := range red {
		p[21+i], p[29+i] = uint32(a.size), uint32(a.stride)
	}
	if r <= 1024 || nOut >= 8192 {
		d.run(d.kernel("reduce", "reduce", nil, false, true), groupsOf(nOut, 256), p[:37], in, o)
		return
	}
	chunks := groupsOf(r, chunkLen)
	p[37], p[38] = uint32(chunks), chunkLen
	k := d.kernel("reduce_chunks", "reduce_chunks", nil, false, true)
	if chunks == 1 {
		d.run(k, nOut, p, in, o)
		return
	}
	pb, err := d.Alloc(device.Float32, nOut*chunks)
	if err != nil {
		d.fail(fmt.Errorf("webgpu: kernel reduce_chunks: %v", err))
		return
	}
	partial := pb.(*buffer)
	defer d.Free(partial)
	p[4] = f32bits(1)
	d.run(k, nOut*chunks, p, in, partial)
	d.reduce(o, partial, []axis{{nOut, chunks}}, []axis{{chunks, 1}}, scale)
}

// maxDispatchFlops bounds the work of one matmul dispatch, so that no
// dispatch runs long (lavapipe crashes on very long ones).
const maxDispatchFlops = 1 << 31

// MatMul sets dst = op(a)·op(b), in row blocks of bounded work.
func (d *Device) MatMul(dst, a, b device.Buffer, m, k, n int, transA, transB bool) {
	o, x, y := d.buf(dst), d.buf(a), d.buf(b)
	if m == 0 || n == 0 {
		return
	}
	const tm, tn, wg = 8, 16, 8
	spec := map[string]any{
		"TM": tm, "TN": tn, "TransA": transA, "TransB": transB,
		"VecA": transA && m%4 == 0, "VecB": !transB && n%4 == 0,
	}
	key := fmt.Sprintf("matmul/%d×%d/ta=%v,tb=%v,va=%v,vb=%v", tm, tn, transA, transB, spec["VecA"], spec["VecB"])
	kern := d.kernel(key, "matmul", spec, false, false, true)
	gx := groupsOf(n, tn*wg)
	if gx > maxGroups {
		d.fail(fmt.Errorf("webgpu: kernel %s: %d columns need %d workgroups; at most %d", key, n, gx, maxGroups))
		return
	}
	rowsPer := maxDispatchFlops / max(2*k*n, 1) / (tm * wg) * (tm * wg)
	rowsPer = min(max(rowsPer, tm*wg), maxGroups*tm*wg)
	for row := 0; row < m; row += rowsPer {
		rows := min(rowsPer, m-row)
		d.dispatch(kern, uint32(gx), uint32(groupsOf(rows, tm*wg)), []uint32{uint32(m), uint32(k), uint32(n), uint32(row)}, x, y, o)
	}
}

// Transpose sets dst = xᵀ.
func (d *Device) Transpose(dst, x device.Buffer, rows, cols int) {
	o, in := d.buf(dst), d.buf(x)
	d.run(d.kernel("transpose", "transpose", nil, false, true), groupsOf(rows*cols, 256), []uint32{uint32(rows), uint32(cols)}, in, o)
}

// SoftmaxCrossEntropy sets the per-row loss.
func (d *Device) SoftmaxCrossEntropy(loss, logits, labels device.Buffer, n, c int) {
	k := d.kernel("softmax_xent", "softmax_xent", nil, false, false, true)
	d.run(k, groupsOf(n, 64), []uint32{uint32(n), uint32(c)}, d.buf(logits), d.buf(labels), d.buf(loss))
}

// SoftmaxCrossEntropyGrad sets dlogits = (softmax − onehot)·g/n.
func (d *Device) SoftmaxCrossEntropyGrad(dlogits, logits, labels, g device.Buffer, n, c int) {
	k := d.kernel("softmax_xent_grad", "softmax_xent_grad", nil, false, false, false, true)
	d.run(k, groupsOf(n, 64), []uint32{uint32(n), uint32(c)}, d.buf(logits), d.buf(labels), d.buf(g), d.buf(dlogits))
}

// Axpy sets y += alpha·x.
func (d *Device) Axpy(y, x device.Buffer, alpha float64) {
	d.elementwise("axpy", "out[i] + pf(1u) * x", d.buf(y), []string{"x"}, []*buffer{d.buf(x)}, f32bits(alpha))
}
