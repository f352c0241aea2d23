//go:build cgo || js

package webgpu

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"unsafe"

	"github.com/extensor/extensor/device"
	"github.com/x448/float16"
)

// The kernels are WGSL templates of package shaders, one file per family,
// which this package selects and specialises: this file the elementwise
// families (fill, axpy, copy, unary, binary) and the helpers the families
// share; each other family has a file of its own (reduce.go, softmax.go,
// gather.go, strided.go, window.go, step.go, draw.go, float16.go,
// matmul.go, texmatmul.go, conv.go).

func groupsOf(n, size int) int { return (n + size - 1) / size }

func f32bits(v float64) uint32 { return math.Float32bits(float32(v)) }

// elemUnroll is how many items (vec4s where the kernel reads vec4s) an
// invocation of an elementwise kernel takes: on lavapipe 2 run as fast as
// 4 and faster than 1, and compile in half the time of 4
// (docs/kernel-choices.md, elementwise).
const elemUnroll = 2

// itemBytes is the size of an elementwise kernel's item: a vec4 or a
// 32-bit word.
func itemBytes(vec bool, st store) int {
	b := 4
	if st.native() {
		b = 2
	}
	if vec {
		return 4 * b
	}
	return b
}

// vecs is the count of vec4s that hold n items, the last padded with
// what the buffer holds past them (bindSize): a kernel that maps
// elements to elements alone (unary, binary of one layout, the
// optimisers' steps) runs by vec4s at every length, and what it writes
// past the n items is never read.
func vecs(n int) int { return (n + 3) / 4 }

// vec4 reports whether n items are whole vec4s, and their count in the
// kernel's items.
func vec4(n int) (bool, int) {
	if n%4 == 0 {
		return true, n / 4
	}
	return false, n
}

// elemType is the WGSL element type of an update kernel: fill writes
// u32 words (the bits of an f32 or i32), axpy f32s.
func elemType(fill, vec bool) string {
	t := "f32"
	if fill {
		t = "u32"
	}
	if vec {
		return "vec4<" + t + ">"
	}
	return t
}

// Fill sets every element of dst to v.
func (d *Device) Fill(dst device.Buffer, v float64) {
	d.writing(dst)
	defer d.written()
	d.fill(d.buf(dst), v)
}

func (d *Device) fill(b *buffer, v float64) {
	word := f32bits(v)
	n := b.n
	switch b.dt {
	case device.Int32:
		word = uint32(int32(v))
	case device.Float16: // two halves a word
		h := uint32(float16.Fromfloat32(float32(v)).Bits())
		word, n = h|h<<16, (n+1)/2
	}
	vec, n := vec4(n)
	t := elemType(true, vec)
	k := d.kernel(updateSpec{Op: "fill", T: t}, true)
	d.runItems(k, 1, itemBytes(vec, "f32"), fillParams{N: uint32(n), Bits: word}, b)
}

// Arange sets element i of dst to start + i·step: int32 arithmetic for
// int32 dst, float32 for float32, and float16 through a float32 stand-in.
func (d *Device) Arange(dst device.Buffer, start, step float64) {
	if d.widen(1, func(b []device.Buffer) { d.Arange(b[0], start, step) }, dst) {
		return
	}
	d.writing(dst)
	defer d.written()
	b := d.buf(dst)
	t, p1, p2 := "f32", f32bits(start), f32bits(step)
	if b.dt == device.Int32 {
		t, p1, p2 = "i32", uint32(int32(start)), uint32(int32(step))
	}
	k := d.kernel(updateSpec{Op: "arange", T: t}, true)
	first := int(unsafe.Offsetof(arangeParams{}.First) / 4) // its word
	d.runChunks(k, 1, 4, arangeParams{N: uint32(b.n), Start: p1, Step: p2}, 0, first, b)
}

// Axpy sets y += alpha·x.
func (d *Device) Axpy(y, x device.Buffer, alpha float64) {
	if !d.native(y, x) && d.widen(1, func(b []device.Buffer) { d.Axpy(b[0], b[1], alpha) }, y, x) {
		return
	}
	d.writing(y)
	defer d.written()
	o := d.buf(y)
	vec, n := vec4(o.n)
	st := d.storeOf(o.dt)
	s := updateSpec{Op: "axpy", T: "E", W: "f32", F16: st.native()}
	if vec {
		s.T, s.W, s.V = "E4", "vec4<f32>", "4"
	}
	k := d.kernel(s, false, true)
	d.runItems(k, 1, itemBytes(vec, st), axpyParams{N: uint32(n), Alpha: float32(alpha)}, d.buf(x), o)
}

// Copy copies src into dst.
func (d *Device) Copy(dst, src device.Buffer) {
	d.writing(dst)
	defer d.written()
	if o := d.buf(dst); o.n > 0 {
		d.copyBytes(o, d.buf(src), 0, 0, o.bytes())
	}
}

// copyBytes records a copy of size bytes (a multiple of 4) from src at
// byte srcOff into dst at byte dstOff (multiples of 4), two buffers.
func (d *Device) copyBytes(dst, src *buffer, dstOff, srcOff, size uint64) {
	if !d.ok() || d.tainted(src) {
		return
	}
	if dst.b == nil || src.b == nil {
		d.fail(errFreed("copy"))
		return
	}
	enc := d.encoderFor()
	if enc == nil {
		return
	}
	if err := enc.TryCopyBufferToBuffer(src.b, srcOff, dst.b, dstOff, size); err != nil {
		d.fail(fmt.Errorf("webgpu: copy of %d bytes: %v", size, err))
		return
	}
	d.dispatches++
	d.copies++
	d.labels = append(d.labels, "copy")
}

// unaryParams are the unary family's parameters (shaders/unary.wgsl):
// N items, and the op's scalars A and B.
type unaryParams struct {
	N    uint32
	A, B float32
}

func (unarySpec) params() any { return unaryParams{} }

// scalars returns the parameters of n items and up to two scalars.
func scalars(n int, p []float64) unaryParams {
	u := unaryParams{N: uint32(n)}
	if len(p) > 0 {
		u.A = float32(p[0])
	}
	if len(p) > 1 {
		u.B = float32(p[1])
	}
	return u
}

// unary records op or its gradient (grad) over x, writing out.
func (d *Device) unary(op device.UnaryOp, grad bool, out *buffer, p []float64, in ...*buffer) {
	st := d.storeOf(out.dt)
	count := out.n
	if st.packed() { // words of two values
		count = (count + 1) / 2
	}
	k := d.kernel(unarySpec{Fn: string(op), Grad: grad, Half: st.packed(), F16: st.native(), Unroll: elemUnroll, Coalesce: !d.loopLimited}, flags(len(in), 1)...)
	d.runItems(k, elemUnroll, itemBytes(true, st), scalars(vecs(count), p), append(in, out)...)
}

// Unary sets dst = op(x; p).
func (d *Device) Unary(op device.UnaryOp, dst, x device.Buffer, p ...float64) {
	d.writing(dst)
	defer d.written()
	o, xb := d.buf(dst), d.buf(x)
	if d.join(nodeUnary, string(op), -1, o, p, device.Broadcast{}, []fuseIn{{b: xb}}, []*buffer{xb}) {
		return
	}
	d.unary(op, false, o, p, xb)
}

// UnaryGrad sets dx = dy·op'(x; p).
func (d *Device) UnaryGrad(op device.UnaryOp, dx, x, dy device.Buffer, p ...float64) {
	d.writing(dx)
	defer d.written()
	o, xb, g := d.buf(dx), d.buf(x), d.buf(dy)
	if d.join(nodeUnaryGrad, string(op), -1, o, p, device.Broadcast{}, []fuseIn{{b: xb}, {b: g}}, []*buffer{xb, g}) {
		return
	}
	d.unary(op, true, o, p, xb, g)
}

// broadcastParams are the parameters of a broadcast (binary.wgsl) or a
// strided copy (strided.wgsl): N elements of a shape of rank Rank, their
// strides in a (src) and b (dst), the shape's magic numbers (udiv); a
// copy's offsets AOff and BOff, and Row, the length of its rows (of dst's
// vec4s).
type broadcastParams struct {
	N, Rank                   uint32
	Shape, AStrides, BStrides [device.MaxRank]uint32
	AOff, BOff, Row           uint32
	Magic                     [device.MaxRank]uint32
}

// broadcastParamsOf returns the parameters of the broadcast l.
func broadcastParamsOf(l device.Broadcast) broadcastParams {
	p := broadcastParams{N: uint32(l.Len()), Rank: uint32(len(l.Shape))}
	for i := range l.Shape {
		p.Shape[i], p.AStrides[i], p.BStrides[i], p.Magic[i] = uint32(l.Shape[i]), uint32(l.AStrides[i]), uint32(l.BStrides[i]), magic(l.Shape[i])
	}
	return p
}

func (s binarySpec) params() any {
	if s.Same {
		return countParams{}
	}
	return broadcastParams{}
}

func (stridedSpec) params() any { return broadcastParams{} }

// magic returns the number by which the kernels' udiv (common.wgsl)
// divides by d > 0 with multiplications: ⌊2³²·(2^l − d) / d⌋ + 1, l =
// ⌈log₂ d⌉ (Granlund and Montgomery, 1994); 0 for d ≤ 0, a dimension that
// leaves nothing to divide.
func magic(d int) uint32 {
	if d <= 0 {
		return 0
	}
	l := bits.Len32(uint32(d - 1))
	return uint32((uint64(1)<<32)*(uint64(1)<<l-uint64(d))/uint64(d) + 1)
}

// binary records op (grad < 0) or its gradient with respect to operand
// grad, over operands of one shape by vec4s (vecs), or so with one
// operand one element (scalarOperand), else with broadcasting.
func (d *Device) binary(op device.BinaryOp, grad int, out *buffer, l device.Broadcast, in ...*buffer) {
	same := l.SameLayout() // the binary kernels run such operands natively on float16
	st := d.storeOf(out.dt)
	bufs, writable, whole := append(in, out), flags(len(in), 1), 0
	scalar := 0
	if !same && !st.packed() {
		scalar = scalarOperand(l)
	}
	if scalar > 0 { // by vec4s, the one element splat: its buffer bound whole, last
		same, whole = true, 1
		bufs = append(slices.Delete(slices.Clone(in), scalar-1, scalar), out, in[scalar-1])
		writable = append(flags(len(in)-1, 1), false)
	}
	n := out.n
	var params any = broadcastParamsOf(l)
	if same { // by vec4s (vecs)
		count := out.n
		if st.packed() { // words of two values
			count = (count + 1) / 2
		}
		n = vecs(count)
		params = countParams{N: uint32(n)}
	}
	rank := len(l.Shape)
	if same {
		rank = 0
	}
	rowVec, vecA, vecB := rowVectors(l)
	rowVec = rowVec && !same && !st.packed()
	if rowVec {
		n = out.n / 4
		b := params.(broadcastParams)
		b.N = uint32(n)
		params = b
	}
	u := 1 // a broadcast's kernel: an element (or a row's vec4) an invocation
	if same {
		u = elemUnroll
	}
	k := d.kernel(binarySpec{Fn: string(op), Grad: grad, Same: same, Half: st.packed(), F16: st.native(), Scalar: scalar, Unroll: u,
		Coalesce: !d.loopLimited, Rank: rank, RowVec: rowVec, VecA: vecA, VecB: vecB}, writable...)
	if same {
		d.runItemsWhole(k, elemUnroll, itemBytes(true, st), params, whole, bufs...)
		return
	}
	d.run(k, groupsOf(n, 256), params, bufs...)
}

// scalarOperand returns 1 or 2 where operand a or b of a broadcast is one
// element (its strides all 0) and the other is laid out as the output;
// else 0. On a CPU adapter the broadcast kernel, an element an
// invocation, took 6 times the same-layout kernel's time
// (docs/kernel-choices.md, elementwise).
func scalarOperand(l device.Broadcast) int {
	switch {
	case allZero(l.AStrides) && device.IsRowMajor(l.Shape, l.BStrides):
		return 1
	case allZero(l.BStrides) && device.IsRowMajor(l.Shape, l.AStrides):
		return 2
	}
	return 0
}

// allZero reports whether every stride is 0: an operand of one element.
func allZero(strides []int) bool {
	return !slices.ContainsFunc(strides, func(s int) bool { return s != 0 })
}

// rowVectors reports whether a broadcast runs by vec4s along the output's
// last axis: its length a multiple of 4, each operand either whole along
// it (stride 1, its other strides multiples of 4: read by vec4s, vecA and
// vecB) or broadcast along it (stride 0: one element splat).
func rowVectors(l device.Broadcast) (ok, vecA, vecB bool) {
	r := len(l.Shape)
	if r == 0 || l.Shape[r-1]%4 != 0 {
		return false, false, false
	}
	vec := func(st []int) (bool, bool) {
		switch st[r-1] {
		case 0:
			return true, false
		case 1:
			for _, s := range st[:r-1] {
				if s%4 != 0 {
					return false, false
				}
			}
			return true, true
		}
		return false, false
	}
	okA, vecA := vec(l.AStrides)
	okB, vecB := vec(l.BStrides)
	return okA && okB, vecA, vecB
}

// Binary sets dst = op(a, b) with broadcasting.
func (d *Device) Binary(op device.BinaryOp, dst, a, b device.Buffer, l device.Broadcast) {
	if !l.SameLayout() && !d.native(dst, a, b) && d.widenAs(1, l.Len() == d.buf(dst).n, func(w []device.Buffer) { d.Binary(op, w[0], w[1], w[2], l) }, dst, a, b) {
		return
	}
	d.writing(dst)
	defer d.written()
	o, ab, bb := d.buf(dst), d.buf(a), d.buf(b)
	if d.join(nodeBinary, string(op), -1, o, nil, l, broadcastIns(l, ab, bb), []*buffer{ab, bb}) {
		return
	}
	d.binary(op, -1, o, l, ab, bb)
}

// BinaryGrad sets dst to the output-shaped gradient with respect to operand wrt.
func (d *Device) BinaryGrad(op device.BinaryOp, wrt int, dst, g, a, b device.Buffer, l device.Broadcast) {
	if !l.SameLayout() && !d.native(dst, g, a, b) && d.widenAs(1, l.Len() == d.buf(dst).n, func(w []device.Buffer) { d.BinaryGrad(op, wrt, w[0], w[1], w[2], w[3], l) }, dst, g, a, b) {
		return
	}
	d.writing(dst)
	defer d.written()
	o, ab, bb, gb := d.buf(dst), d.buf(a), d.buf(b), d.buf(g)
	if d.join(nodeBinaryGrad, string(op), wrt, o, nil, l, append(broadcastIns(l, ab, bb), fuseIn{b: gb}), []*buffer{ab, bb, gb}) {
		return
	}
	d.binary(op, wrt, o, l, ab, bb, gb)
}

// flags returns the writable flags of a kernel's storage bindings: read
// ones, then written ones.
func flags(read, written int) []bool {
	f := make([]bool, read+written)
	for i := read; i < len(f); i++ {
		f[i] = true
	}
	return f
}

// b2i is 1 for true.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Kernels returns the number of kernel dispatches recorded since the
// device opened (device.Counter).
func (d *Device) Kernels() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.flushChain()
	return d.ran
}

// Copies returns the number of buffer copies recorded since the device
// opened (device.Counter).
func (d *Device) Copies() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.flushChain()
	return d.copies
}

// b2u is 1 for true, as a kernel parameter.
func b2u(b bool) uint32 { return uint32(b2i(b)) }
