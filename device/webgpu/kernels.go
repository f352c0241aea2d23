//go:build cgo

package webgpu

import (
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/extensor/extensor/device"
	"github.com/oliverbestmann/webgpu/wgpu"
	"github.com/x448/float16"
)

// This file selects and specialises the WGSL kernels of package shaders;
// every line of WGSL lives there, one file per family.

func groupsOf(n, size int) int { return (n + size - 1) / size }

func f32bits(v float64) uint32 { return math.Float32bits(float32(v)) }

// unroll is how many elements (vec4s where the kernel reads vec4s) an
// invocation of an elementwise kernel takes: 4 measured 1.2–1.3× faster
// than 1 on lavapipe for unary ops.
func unroll(vec bool) int {
	if vec {
		return 4
	}
	return 1
}

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
	d.mu.Lock()
	defer d.mu.Unlock()
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
	k := d.kernel("fill/"+t, "update", map[string]any{"Op": "fill", "T": t}, true)
	d.runItems(k, 1, itemBytes(vec, "f32"), []uint32{uint32(n), word}, b)
}

// Axpy sets y += alpha·x.
func (d *Device) Axpy(y, x device.Buffer, alpha float64) {
	if !d.native(y, x) && d.widen(1, func(b []device.Buffer) { d.Axpy(b[0], b[1], alpha) }, y, x) {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	o := d.buf(y)
	vec, n := vec4(o.n)
	st := d.storeOf(o.dt)
	data := map[string]any{"Op": "axpy", "T": "E", "W": "f32", "V": "", "F16": st.native()}
	if vec {
		data["T"], data["W"], data["V"] = "E4", "vec4<f32>", "4"
	}
	k := d.kernel(fmt.Sprintf("axpy/vec=%v/%s", vec, st), "update", data, false, true)
	d.runItems(k, 1, itemBytes(vec, st), []uint32{uint32(n), f32bits(alpha)}, d.buf(x), o)
}

// Copy copies src into dst.
func (d *Device) Copy(dst, src device.Buffer) {
	d.mu.Lock()
	defer d.mu.Unlock()
	o, s := d.buf(dst), d.buf(src)
	if o.n == 0 || !d.ok() {
		return
	}
	if o.b == nil || s.b == nil {
		d.fail(errFreed("copy"))
		return
	}
	enc := d.encoderFor()
	if enc == nil {
		return
	}
	if err := enc.TryCopyBufferToBuffer(s.b, 0, o.b, 0, o.bytes()); err != nil {
		d.fail(fmt.Errorf("webgpu: copy of %d bytes: %v", o.bytes(), err))
		return
	}
	d.dispatches++
	d.labels = append(d.labels, "copy")
}

// scalars packs the count and up to two scalar parameters.
func scalars(n int, p []float64) []uint32 {
	w := []uint32{uint32(n), 0, 0}
	for i, v := range p[:min(len(p), 2)] {
		w[1+i] = f32bits(v)
	}
	return w
}

// store is how kernels store floating-point elements of a dtype: "f32",
// "f16" (WGSL's f16: shaders.Source's F16) or "packed" (float16 two to a
// 32-bit word, unpacked and packed by the kernels: a kernel's Half), on
// devices without the shader-f16 feature or with EnvF16 set.
type store string

// storeOf returns how the device's kernels store dt.
func (d *Device) storeOf(dt device.DType) store {
	switch {
	case dt != device.Float16:
		return "f32"
	case d.f16:
		return "f16"
	}
	return "packed"
}

func (s store) packed() bool { return s == "packed" }
func (s store) native() bool { return s == "f16" }

// unary records op or its gradient (grad) over x, writing out.
func (d *Device) unary(op device.UnaryOp, grad bool, out *buffer, p []float64, in ...*buffer) {
	st := d.storeOf(out.dt)
	count := out.n
	if st.packed() { // words of two values
		count = (count + 1) / 2
	}
	vec, n := vec4(count)
	key := fmt.Sprintf("unary/%s/grad=%v/vec=%v/%s", op, grad, vec, st)
	k := d.kernel(key, "unary", map[string]any{"Fn": string(op), "Grad": grad, "Vec": vec, "Half": st.packed(), "F16": st.native(), "Unroll": unroll(vec), "Coalesce": !d.loopLimited}, flags(len(in), 1)...)
	d.runItems(k, unroll(vec), itemBytes(vec, st), scalars(n, p), append(in, out)...)
}

// Unary sets dst = op(x; p).
func (d *Device) Unary(op device.UnaryOp, dst, x device.Buffer, p ...float64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.unary(op, false, d.buf(dst), p, d.buf(x))
}

// UnaryGrad sets dx = dy·op'(x; p).
func (d *Device) UnaryGrad(op device.UnaryOp, dx, x, dy device.Buffer, p ...float64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.unary(op, true, d.buf(dx), p, d.buf(x), d.buf(dy))
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

// sameLayout reports whether both operands of l are laid out as the
// output (no broadcasting), which the binary kernels run natively on
// float16.
func sameLayout(l device.Broadcast) bool {
	return contiguous(l.Shape, l.AStrides) && contiguous(l.Shape, l.BStrides)
}

// broadcastParams packs n, rank, shape and both operands' strides, and
// the shape's magic numbers (p[40…]; see magic).
func broadcastParams(l device.Broadcast) []uint32 {
	p := make([]uint32, 48)
	p[0], p[1] = uint32(l.Len()), uint32(len(l.Shape))
	for i := range l.Shape {
		p[2+i], p[10+i], p[18+i], p[40+i] = uint32(l.Shape[i]), uint32(l.AStrides[i]), uint32(l.BStrides[i]), magic(l.Shape[i])
	}
	return p
}

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
// grad, over operands of one shape as vec4s where possible, else with
// broadcasting.
func (d *Device) binary(op device.BinaryOp, grad int, out *buffer, l device.Broadcast, in ...*buffer) {
	same := sameLayout(l)
	st := d.storeOf(out.dt)
	vec, n := false, out.n
	params := broadcastParams(l)
	if same {
		count := out.n
		if st.packed() { // words of two values
			count = (count + 1) / 2
		}
		vec, n = vec4(count)
		params = []uint32{uint32(n)}
	}
	rank := len(l.Shape)
	if same {
		rank = 0
	}
	key := fmt.Sprintf("binary/%s/grad=%d/same=%v/vec=%v/%s/rank=%d", op, grad, same, vec, st, rank)
	k := d.kernel(key, "binary", map[string]any{"Fn": string(op), "Grad": grad, "Same": same, "Vec": vec, "Half": st.packed(), "F16": st.native(), "Unroll": unroll(vec), "Coalesce": !d.loopLimited, "Rank": rank}, flags(len(in), 1)...)
	if same {
		d.runItems(k, unroll(vec), itemBytes(vec, st), params, append(in, out)...)
		return
	}
	d.run(k, groupsOf(n, 256), params, append(in, out)...)
}

// Binary sets dst = op(a, b) with broadcasting.
func (d *Device) Binary(op device.BinaryOp, dst, a, b device.Buffer, l device.Broadcast) {
	if !sameLayout(l) && !d.native(dst, a, b) && d.widen(1, func(w []device.Buffer) { d.Binary(op, w[0], w[1], w[2], l) }, dst, a, b) {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.binary(op, -1, d.buf(dst), l, d.buf(a), d.buf(b))
}

// BinaryGrad sets dst to the output-shaped gradient with respect to operand wrt.
func (d *Device) BinaryGrad(op device.BinaryOp, wrt int, dst, g, a, b device.Buffer, l device.Broadcast) {
	if !sameLayout(l) && !d.native(dst, g, a, b) && d.widen(1, func(w []device.Buffer) { d.BinaryGrad(op, wrt, w[0], w[1], w[2], w[3], l) }, dst, g, a, b) {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.binary(op, wrt, d.buf(dst), l, d.buf(a), d.buf(b), d.buf(g))
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
	chunkLen     = 64 * 256 // reduced elements per chunk of an arg reduction
	chunkPerLane = 64       // reduced elements per invocation in the chunks of a reduction
	vecUnroll    = 16       // vec4s per invocation in the chunks of contiguous rows
	// maxLoop bounds the iterations of any loop over data: lavapipe
	// (llvmpipe) silently ends a loop after about 32768 iterations,
	// counting those of the loops nested in it.
	maxLoop = 16384
)

// Reduce reduces x over axes into dst.
//
// With WGSL's f16 every reduction reads and writes float16 as it is (and
// accumulates in float32); with packed float16 the sums, means, maxima and
// minima read x as it is, into a float32 stand-in for a float16 dst, and
// argmax and argmin read a float32 stand-in of x.
func (d *Device) Reduce(op device.ReduceOp, dst, x device.Buffer, shape, axes []int) {
	switch {
	case d.native(dst, x):
	case op == device.ArgMax || op == device.ArgMin:
		if d.widen(1, func(b []device.Buffer) { d.Reduce(op, b[0], b[1], shape, axes) }, dst, x) {
			return
		}
	default:
		if d.widen(1, func(b []device.Buffer) { d.Reduce(op, b[0], x, shape, axes) }, dst) {
			return
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	kept, red := coalesce(shape, axes)
	count := 1
	for _, a := range axes {
		count *= shape[a]
	}
	scale := 1.0
	if op == device.Mean {
		op, scale = device.Sum, 1/float64(count)
	}
	if count == 0 && op == device.Sum {
		d.fill(d.buf(dst), 0*scale) // the mean of nothing is NaN
		return
	}
	if op == device.ArgMax || op == device.ArgMin {
		d.argReduce(op, d.buf(dst), d.buf(x), kept, red)
		return
	}
	d.reduce(op, d.buf(dst), d.buf(x), kept, red, scale)
}

// reduceParams packs the parameters of the reduce kernels.
func reduceParams(nOut, r int, kept, red []axis, scale float64) []uint32 {
	p := make([]uint32, 56)
	p[0], p[1], p[2], p[3], p[4] = uint32(nOut), uint32(r), uint32(len(kept)), uint32(len(red)), f32bits(scale)
	for i, a := range kept {
		p[5+i], p[13+i], p[40+i] = uint32(a.size), uint32(a.stride), magic(a.size)
	}
	for i, a := range red {
		p[21+i], p[29+i], p[48+i] = uint32(a.size), uint32(a.stride), magic(a.size)
	}
	return p
}

func sizes(kept, red []axis) (nOut, r int) {
	nOut, r = 1, 1
	for _, a := range kept {
		nOut *= a.size
	}
	for _, a := range red {
		r *= a.size
	}
	return nOut, r
}

func (d *Device) reduce(op device.ReduceOp, o, in *buffer, kept, red []axis, scale float64) {
	nOut, r := sizes(kept, red)
	if nOut == 0 {
		return
	}
	p := reduceParams(nOut, r, kept, red, scale)
	xs, os := d.storeOf(in.dt), d.storeOf(o.dt)
	half := xs.packed()
	spec := map[string]any{"Op": op.String(), "Arg": false, "Chunks": false, "Vec": false, "Stage": 0, "Half": half,
		"XF16": xs.native(), "OF16": os.native(), "F16": xs.native() || os.native(), "Kept": len(kept), "Red": len(red), "Group": ""}
	suffix := fmt.Sprintf("/kept=%d/red=%d/x=%s/out=%s", len(kept), len(red), xs, os)
	// Short rows, and many outputs of rows not too long: one invocation
	// per output. On a GPU a row of more than a few dozen elements goes to
	// a workgroup instead: an invocation's loop over the 1024 partial
	// results of a 16M sum took about 100 µs on the H100 (sum 16M 327 GB/s,
	// against 537 with more passes).
	short := 1024
	if !d.loopLimited {
		short = 32
	}
	if r <= short || (nOut >= 8192 && r <= maxLoop) {
		d.run(d.kernel("reduce/"+op.String()+suffix, "reduce", spec, false, true), groupsOf(nOut, 256), p, in, o)
		return
	}
	// Long rows: each chunk of chunkLen elements reduced by a workgroup
	// into one partial result (with subgroup operations where the device
	// has them), which the next pass reduces in turn. Contiguous rows of
	// vec4s go faster, vecUnroll vec4s per invocation.
	spec["Chunks"], spec["OF16"] = true, false // partial results in float32
	spec["F16"] = xs.native()
	suffix = fmt.Sprintf("/kept=%d/red=%d/x=%s", len(kept), len(red), xs)
	group, lanes := d.group(), reduceLanes(d.loopLimited)
	spec["Group"], spec["SubgroupOp"], spec["L"] = group, subgroupOps[op], lanes
	suffix += fmt.Sprintf("/%s/lanes=%d", group, lanes)
	name, length, r4 := "reduce_chunks/"+op.String()+suffix, chunkPerLane*lanes, r
	if !half && len(red) == 1 && red[0].stride == 1 && r%4 == 0 && (len(kept) == 0 || len(kept) == 1 && kept[0].stride == r) {
		spec["Vec"], spec["Unroll"], spec["Coalesce"] = true, make([]int, vecUnroll), !d.loopLimited
		for i := range vecUnroll {
			spec["Unroll"].([]int)[i] = i
		}
		name, length, r4 = fmt.Sprintf("reduce_vec4/%v%s/coalesce=%v", op, suffix, !d.loopLimited), vecUnroll*lanes, r/4
	}
	chunks := groupsOf(r4, length)
	k := d.kernel(name, "reduce", spec, false, true)
	partial := d.scratch(k, device.Float32, nOut*chunks)
	if partial == nil {
		return
	}
	defer d.free(partial)
	p[0], p[1], p[37], p[38] = uint32(nOut*chunks*lanes), uint32(r4), uint32(chunks), uint32(length)
	d.run(k, nOut*chunks, p, in, partial)
	d.reduce(op, o, partial, []axis{{nOut, chunks}}, []axis{{chunks, 1}}, scale)
}

// reduceLanes is the workgroup size of the chunked reductions: 256 on
// GPUs; on CPU adapters 8, one SIMD batch of llvmpipe's, whose barrier
// costs little (a workgroup of 256 meets at its barriers 32 batches that
// llvmpipe runs one after another: on lavapipe, in alternating runs, sum
// 16M took 45–51 ms with 8 lanes, 54–60 with 256).
func reduceLanes(cpu bool) int {
	if cpu {
		return 8
	}
	return 256
}

// subgroupOps are the WGSL subgroup operations of the reductions.
var subgroupOps = map[device.ReduceOp]string{device.Sum: "subgroupAdd", device.Max: "subgroupMax", device.Min: "subgroupMin"}

// group names how the device combines a workgroup's values in a
// reduction: "subgroup" (subgroup operations, then workgroup memory
// across subgroups) where it has subgroups, else "workgroup".
func (d *Device) group() string {
	if d.subgroups {
		return "subgroup"
	}
	return "workgroup"
}

// scratch allocates a temporary buffer for kernel k, recording a failure
// naming k if it cannot.
func (d *Device) scratch(k *kernel, dt device.DType, n int) *buffer {
	if k == nil {
		return nil
	}
	b, err := d.alloc(dt, n)
	if err != nil {
		d.fail(fmt.Errorf("webgpu: kernel %s: %v", k.name, err))
		return nil
	}
	return b
}

// argReduce finds the index of the best element of each output's row: in
// one pass for rows of at most maxLoop elements, else in two, through the
// best value and index of each chunk of the row.
func (d *Device) argReduce(op device.ReduceOp, o, in *buffer, kept, red []axis) {
	nOut, r := sizes(kept, red)
	if nOut == 0 {
		return
	}
	p := reduceParams(nOut, r, kept, red, 1)
	xs := d.storeOf(in.dt) // f32 or f16: Reduce widens packed float16
	spec := func(stage int) map[string]any {
		f16 := xs.native() && stage < 2
		return map[string]any{"Op": op.String(), "Arg": true, "Chunks": false, "Vec": false, "Stage": stage, "Half": false,
			"XF16": f16, "OF16": false, "F16": f16, "Kept": len(kept), "Red": len(red), "Group": ""}
	}
	name := fmt.Sprintf("%s/kept=%d/red=%d/x=%s", op, len(kept), len(red), xs)
	if r <= maxLoop {
		d.run(d.kernel("reduce/"+name, "reduce", spec(0), false, true), groupsOf(nOut, 256), p, in, o)
		return
	}
	chunk := max(chunkLen, groupsOf(r, maxLoop))
	chunks := groupsOf(r, chunk)
	k1 := d.kernel("reduce/"+name+"/stage1", "reduce", spec(1), false, true, true)
	if chunk > maxLoop {
		d.fail(fmt.Errorf("webgpu: kernel %s: a row of %d elements needs loops of %d iterations; at most %d", k1.name, r, chunk, maxLoop))
		return
	}
	idx := d.scratch(k1, device.Int32, nOut*chunks)
	if idx == nil {
		return
	}
	defer d.free(idx)
	vals := d.scratch(k1, device.Float32, nOut*chunks)
	if vals == nil {
		return
	}
	defer d.free(vals)
	p[0], p[37], p[38] = uint32(nOut*chunks), uint32(chunks), uint32(chunk)
	d.run(k1, groupsOf(nOut*chunks, 256), p, in, idx, vals)
	k2 := d.kernel("reduce/"+name+"/stage2", "reduce", spec(2), false, false, true)
	d.run(k2, groupsOf(nOut, 256), []uint32{uint32(nOut), uint32(chunks)}, vals, idx, o)
}

// rows returns the rows of a softmax along axis of shape: their count, the
// axis length and the stride between a row's elements.
func rows(shape []int, axis int) (count, n, inner int) {
	inner = device.Numel(shape[axis+1:])
	n = shape[axis]
	return device.Numel(shape[:axis]) * inner, n, inner
}

// rowLimit fails kernel k if its rows of n elements need longer loops
// than the adapter runs correctly: on CPU adapters (lavapipe), maxLoop.
func (d *Device) rowLimit(k *kernel, n int) bool {
	if k == nil || !d.loopLimited || n <= maxLoop {
		return k != nil
	}
	d.fail(fmt.Errorf("webgpu: kernel %s: rows of %d elements are longer than %d, the most this adapter (%s) loops over correctly", k.name, n, maxLoop, d.info))
	return false
}

// softmaxUnroll is the vec4s per invocation of the softmax's apply pass
// over rows of a multiple of 4·softmaxUnroll elements.
const softmaxUnroll = 8

// softmaxBlock is the vec4s a step of the softmax's stats pass folds in
// at once, over rows of a multiple of 4·softmaxBlock elements.
const softmaxBlock = 4

// softmaxRow returns the shape of the one-pass softmax kernel (stage
// "row" of softmax.wgsl) for rows of quads vec4s: w invocations a row,
// each holding v vec4s; ok is false where the two-pass kernels serve
// instead: short rows (one workgroup a row costs more than the second
// read, and leaves lanes idle) and long ones (the row would not stay in
// registers).
func (d *Device) softmaxRow(quads int) (w, v int, ok bool) {
	// On llvmpipe a workgroup of 8 is one SIMD batch: rows of 1024 took
	// 22–23 ms for 16M floats, against 26–34 with 16 or 32 a row (their
	// barriers switch between batches) and 24–26 in two passes. On GPUs
	// (not yet timed) 64 invocations a row spread its loads over more
	// lanes; at most 16 vec4s of each operand an invocation keep the
	// gradient's y and dy (128 floats) within a GPU thread's registers.
	w, maxV := 64, 16
	if d.loopLimited {
		w, maxV = 8, 64
	}
	v = groupsOf(quads, w)
	return w, v, quads >= 64 && v <= maxV
}

// softmax runs the softmax family over rows of n elements (count rows,
// at stride inner): contiguous rows of vec4s that fit a workgroup in one
// pass, others in two: per-row stats into scratch buffers, then every
// element from them. in are the inputs (x, or y and dy).
func (d *Device) softmax(log, grad bool, out *buffer, shape []int, axis int, in ...*buffer) {
	count, n, inner := rows(shape, axis)
	if count == 0 || n == 0 {
		return
	}
	vec := inner == 1 && n%4 == 0
	st := d.storeOf(out.dt) // f32 or f16: Softmax widens packed float16
	if w, v, ok := d.softmaxRow(n / 4); vec && ok {
		spec := map[string]any{"Log": log, "Grad": grad, "Stage": "row", "W": w, "V": v, "Quads": n / 4, "Full": n / 4 / w, "Group": d.group(), "F16": st.native()}
		k := d.kernel(fmt.Sprintf("softmax/log=%v,grad=%v/row/n=%d,w=%d/%s/%s", log, grad, n, w, d.group(), st), "softmax", spec, flags(len(in), 1)...)
		if k == nil {
			return // the failure is recorded
		}
		// One workgroup a row, spread over y where there are more than
		// maxGroups rows, with fewer than gy workgroups past the last.
		gy := groupsOf(count, maxGroups)
		if gy > maxGroups {
			d.fail(fmt.Errorf("webgpu: kernel %s: %d rows exceed %d×%d workgroups", k.name, count, maxGroups, maxGroups))
			return
		}
		d.dispatch(k, uint32(groupsOf(count, gy)), uint32(gy), []uint32{uint32(count)}, append(in, out)...)
		return
	}
	spec := map[string]any{"Log": log, "Grad": grad, "Vec": vec, "Stage": "stats", "Block": 0, "F16": st.native()}
	if vec && n%(4*softmaxBlock) == 0 {
		spec["Block"] = softmaxBlock
	}
	name := fmt.Sprintf("softmax/log=%v,grad=%v,vec=%v,block=%v/%s", log, grad, vec, spec["Block"], st)
	nStats := 1
	if !log && !grad {
		nStats = 2 // the max and 1/Σ
	}
	ks := d.kernel(name+"/stats", "softmax", spec, flags(len(in), nStats)...)
	if !d.rowLimit(ks, n) {
		return
	}
	stats := make([]*buffer, 0, nStats)
	defer func() {
		for _, b := range stats {
			d.free(b)
		}
	}()
	for range nStats {
		b := d.scratch(ks, device.Float32, count)
		if b == nil {
			return
		}
		stats = append(stats, b)
	}
	params := []uint32{uint32(count), uint32(n), uint32(inner)}
	d.run(ks, groupsOf(count, 256), params, append(in, stats...)...)
	spec["Stage"] = "apply"
	u := unroll(vec)
	spec["Unroll"], spec["Whole"], spec["Coalesce"] = u, false, !d.loopLimited
	apply := name + "/apply"
	if vec {
		// The row length is a constant of the vec4 kernel: one pipeline per
		// length, as a network has few. Where rows hold whole invocations,
		// each invocation loads its row's stats once.
		if n%(4*softmaxUnroll) == 0 {
			u = softmaxUnroll
			spec["Unroll"], spec["Whole"] = u, true
		}
		spec["Quads"] = n / 4
		apply += fmt.Sprintf("/n=%d", n)
	}
	ka := d.kernel(apply, "softmax", spec, flags(len(in)+nStats, 1)...)
	elems := count * n
	if vec {
		elems /= 4
	}
	params[0] = uint32(elems)
	d.run(ka, groupsOf(groupsOf(elems, u), 256), params, append(append(in, stats...), out)...)
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

// Softmax sets dst to the (log-)softmax of x along axis.
func (d *Device) Softmax(dst, x device.Buffer, shape []int, axis int, log bool) {
	if !d.native(dst, x) && d.widen(1, func(b []device.Buffer) { d.Softmax(b[0], b[1], shape, axis, log) }, dst, x) {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.softmax(log, false, d.buf(dst), shape, axis, d.buf(x))
}

// SoftmaxGrad sets dx from the (log-)softmax output y and the upstream dy.
func (d *Device) SoftmaxGrad(dx, y, dy device.Buffer, shape []int, axis int, log bool) {
	if !d.native(dx, y, dy) && d.widen(1, func(b []device.Buffer) { d.SoftmaxGrad(b[0], b[1], b[2], shape, axis, log) }, dx, y, dy) {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.softmax(log, true, d.buf(dx), shape, axis, d.buf(y), d.buf(dy))
}

// Gather takes elements (or table rows) as t describes.
func (d *Device) Gather(dst, x, idx device.Buffer, t device.Take) {
	if !d.native(dst, x) && d.widen(1, func(b []device.Buffer) { d.Gather(b[0], b[1], b[2], t) }, dst, x, idx) {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	st := d.storeOf(d.buf(x).dt)
	k := d.kernel(fmt.Sprintf("gather/table=%v/%s", t.Table, st), "gather", map[string]any{"Grad": false, "Table": t.Table, "F16": st.native()}, flags(2, 2)...)
	n := t.N
	if t.Table {
		n *= t.D
	}
	d.run(k, groupsOf(n, 256), []uint32{uint32(t.N), uint32(t.C), f32bits(t.Scale), d.site(t.Site), uint32(t.D)},
		d.buf(x), d.buf(idx), d.buf(dst), d.flags)
}

// GatherGrad scatters scale·g back to where Gather took from, each
// element of dx gathering what it receives: a table row loops over the
// indices, in chunks of at most maxLoop a dispatch.
func (d *Device) GatherGrad(dx, idx, g device.Buffer, t device.Take) {
	if !d.native(dx, g) && d.widen(1, func(b []device.Buffer) { d.GatherGrad(b[0], b[1], b[2], t) }, dx, idx, g) {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	st := d.storeOf(d.buf(g).dt)
	k := d.kernel(fmt.Sprintf("gather_grad/table=%v/%s", t.Table, st), "gather", map[string]any{"Grad": true, "Table": t.Table, "F16": st.native()}, flags(2, 2)...)
	p := []uint32{uint32(t.N), uint32(t.C), f32bits(t.Scale), d.site(t.Site), uint32(t.D), 0, 0}
	if !t.Table {
		d.run(k, groupsOf(t.N*t.C, 256), p, d.buf(idx), d.buf(g), d.buf(dx), d.flags)
		return
	}
	for i0 := 0; i0 < max(t.N, 1); i0 += maxLoop {
		q := slices.Clone(p)
		q[5], q[6] = uint32(i0), uint32(min(t.N, i0+maxLoop))
		d.run(k, groupsOf(t.C*t.D, 256), q, d.buf(idx), d.buf(g), d.buf(dx), d.flags)
	}
}

// CopyStrided copies src into dst as s describes.
func (d *Device) CopyStrided(dst, src device.Buffer, s device.Strided) {
	if (d.buf(dst).dt == device.Float16) != (d.buf(src).dt == device.Float16) && d.widen(1, func(b []device.Buffer) { d.CopyStrided(b[0], b[1], s) }, dst, src) {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	n := s.Len()
	if n == 0 {
		return
	}
	// vec4s of both (4-byte elements, or f16), or of dst only (packed
	// float16: four halves, a vec2<u32>, no atomics).
	st := d.storeOf(d.buf(dst).dt)
	packed := st.packed()
	vec := !packed && vecStrided(s, true)
	vecDst := !vec && vecStrided(s, false) && vecEnd(s) <= d.buf(dst).n
	// The innermost dimension's length, if any; then for vec4s (of dst
	// only, for vecDst), the same copy counted in them.
	row := s.Shape[max(len(s.Shape)-1, 0):]
	if vec || vecDst {
		last := len(s.Shape) - 1
		v := device.Strided{Shape: slices.Clone(s.Shape), SrcStrides: slices.Clone(s.SrcStrides), DstStrides: make([]int, last+1),
			SrcOffset: s.SrcOffset, DstOffset: s.DstOffset / 4}
		v.Shape[last] = groupsOf(v.Shape[last], 4)
		for k := range last {
			v.DstStrides[k] = s.DstStrides[k] / 4
		}
		v.SrcStrides[last], v.DstStrides[last] = 4, 1
		if vec {
			for k := range last {
				v.SrcStrides[k] /= 4
			}
			v.SrcStrides[last], v.SrcOffset = 1, s.SrcOffset/4
		}
		s, n = v, v.Len()
	}
	p := broadcastParams(device.Broadcast{Shape: s.Shape, AStrides: s.SrcStrides, BStrides: s.DstStrides})
	p[26], p[27] = uint32(s.SrcOffset), uint32(s.DstOffset)
	if vecDst {
		p[28] = uint32(row[0])
	}
	k := d.kernel(fmt.Sprintf("strided/%s/rank=%d/vec=%v/vecdst=%v", st, len(s.Shape), vec, vecDst), "strided",
		map[string]any{"Half": packed, "F16": st.native(), "Rank": len(s.Shape), "Vec": vec, "VecDst": vecDst}, false, true)
	d.run(k, groupsOf(n, 256), p, d.buf(src), d.buf(dst))
}

// vecEnd returns the end, in elements, of the last vec4 of dst that a
// copy writing vec4s of dst writes (a binding's last whole vec4 must hold
// it: the kernels' indices past a binding are clamped into it).
func vecEnd(s device.Strided) int {
	last := len(s.Shape) - 1
	end := s.DstOffset + groupsOf(s.Shape[last], 4)*4
	for k := range last {
		end += (s.Shape[k] - 1) * s.DstStrides[k]
	}
	return end
}

// vecStrided reports whether a strided copy of 4-byte elements can write
// vec4s of dst: its innermost dimension contiguous in src and dst, dst's
// other strides and its offset multiples of 4; and with src, whether it
// can also read vec4s of src: the same of src, and the innermost
// dimension a multiple of 4 long. A copy that writes vec4s of dst only
// (src's rows unaligned, or dst's rows padded past the copy's) needs rows
// of at least 16 elements to gain.
func vecStrided(s device.Strided, src bool) bool {
	last := len(s.Shape) - 1
	if last < 0 || s.SrcStrides[last] != 1 || s.DstStrides[last] != 1 || s.DstOffset%4 != 0 {
		return false
	}
	for k := range last {
		if s.DstStrides[k]%4 != 0 || src && s.SrcStrides[k]%4 != 0 {
			return false
		}
	}
	if !src {
		return s.Shape[last] >= 16
	}
	return s.Shape[last]%4 == 0 && s.SrcOffset%4 == 0
}

// SoftmaxCrossEntropy sets the per-row loss.
func (d *Device) SoftmaxCrossEntropy(site string, loss, logits, labels device.Buffer, n, c int) {
	if !d.native(loss, logits) && d.widen(1, func(b []device.Buffer) { d.SoftmaxCrossEntropy(site, b[0], b[1], b[2], n, c) }, loss, logits, labels) {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	st := d.storeOf(d.buf(logits).dt)
	k := d.kernel("softmax_xent/"+string(st), "softmax_xent", map[string]any{"F16": st.native()}, false, false, true, true)
	if !d.rowLimit(k, c) {
		return
	}
	d.run(k, groupsOf(n, 64), []uint32{uint32(n), uint32(c), d.site(site)}, d.buf(logits), d.buf(labels), d.buf(loss), d.flags)
}

// SoftmaxCrossEntropyGrad sets dlogits = (softmax − onehot)·g[i] row by row.
func (d *Device) SoftmaxCrossEntropyGrad(site string, dlogits, logits, labels, g device.Buffer, n, c int) {
	if !d.native(dlogits, logits, g) && d.widen(1, func(b []device.Buffer) { d.SoftmaxCrossEntropyGrad(site, b[0], b[1], b[2], b[3], n, c) }, dlogits, logits, labels, g) {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	st := d.storeOf(d.buf(logits).dt)
	k := d.kernel("softmax_xent_grad/"+string(st), "softmax_xent_grad", map[string]any{"F16": st.native()}, false, false, false, true, true)
	if !d.rowLimit(k, c) {
		return
	}
	d.run(k, groupsOf(n, 64), []uint32{uint32(n), uint32(c), d.site(site)}, d.buf(logits), d.buf(labels), d.buf(g), d.buf(dlogits), d.flags)
}

// Window runs a kernel of the window family, one invocation per element
// of its output.
//
// On float16 tensors the kernels read and write WGSL's f16 where the
// device has it; else packed words (an invocation a word of output),
// unless col2im starts writing mid-word, where they run on float32
// stand-ins.
func (d *Device) Window(op device.WindowOp, dst, x, g device.Buffer, w device.Window2D) {
	st := d.storeOf(d.buf(dst).dt)
	half := st.packed()
	if half && op == device.Col2Im && w.N0*w.C*w.H*w.W%2 != 0 &&
		d.widen(1, func(b []device.Buffer) { d.Window(op, b[0], b[1], b[2], w) }, dst, x, g) {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	oh, ow := w.Out()
	var n, loop int
	var in []*buffer
	kk := w.KH * w.KW
	switch op {
	case device.Im2Col:
		n, loop, in = w.N*(w.C*kk+b2i(w.Ones))*oh, ow, []*buffer{d.buf(x)} // a row of windows each
	case device.MaxPool, device.AvgPool:
		n, loop, in = w.N*w.C*oh*ow, kk, []*buffer{d.buf(x)}
	case device.Col2Im:
		n, loop, in = w.N*w.C*w.H*w.W, kk, []*buffer{d.buf(x)}
	case device.AvgPoolGrad:
		n, loop, in = w.N*w.C*w.H*w.W, kk, []*buffer{d.buf(g)}
	case device.MaxPoolGrad:
		n, loop, in = w.N*w.C*w.H*w.W, kk*kk, []*buffer{d.buf(x), d.buf(g)}
	}
	// Pooling gradients over windows that do not overlap find each
	// pixel's window directly; max_pool_grad's run an invocation per cell
	// of SH×SW pixels (see window.wgsl), on float16 where a cell's rows
	// are whole words (SW, PW and W even).
	disjoint := (op == device.MaxPoolGrad || op == device.AvgPoolGrad) && w.SH > w.DH*(w.KH-1) && w.SW > w.DW*(w.KW-1)
	ch, cw := (w.H-1+w.PH)/w.SH+1, (w.W-1+w.PW)/w.SW+1
	cells := disjoint && op == device.MaxPoolGrad && (!half || w.SW%2 == 0 && w.PW%2 == 0 && w.W%2 == 0)
	if cells {
		n, loop = w.N*w.C*ch*cw, kk+w.SH*w.SW
	}
	if n == 0 {
		return
	}
	// Max pooling over windows 2 wide at even columns reads a row's taps
	// as one vec2 (see window.wgsl).
	pairs := !half && (op == device.MaxPool || op == device.MaxPoolGrad) && w.KW == 2 && w.DW == 1 && w.SW%2 == 0 && w.PW%2 == 0 && w.W%2 == 0
	// One pipeline per geometry (a network has few): its sizes are
	// constants of the kernel.
	spec := map[string]any{"Pairs": pairs, "Op": op.String(), "C": w.C, "H": w.H, "W": w.W, "KH": w.KH, "KW": w.KW, "CH": ch, "CW": cw,
		"SH": w.SH, "SW": w.SW, "PH": w.PH, "PW": w.PW, "DH": w.DH, "DW": w.DW, "OH": oh, "OW": ow, "Half": half, "F16": st.native(), "Disjoint": disjoint, "Cells": cells,
		"Ones": w.Ones && op == device.Im2Col, "Pitch": w.RowLen()}
	key := fmt.Sprintf("window/%s/c%d/%dx%d/k%dx%d/s%dx%d/p%dx%d/d%dx%d/%s/ones=%v/pitch=%d/pairs=%v", op, w.C, w.H, w.W, w.KH, w.KW, w.SH, w.SW, w.PH, w.PW, w.DH, w.DW, st, spec["Ones"], w.RowLen(), pairs)
	k := d.kernel(key, "window", spec, flags(len(in), 1)...)
	if half && op == device.Im2Col {
		loop = 0 // an element at a time, not a row: no loop
	}
	if !d.rowLimit(k, loop) {
		return
	}
	items := n
	if half && !cells { // cells: an invocation a cell, as on float32
		if op == device.Im2Col {
			n = n / oh * w.RowLen() // elements, not rows
		}
		items = groupsOf(n, 2) // words
	}
	d.run(k, groupsOf(items, 256), []uint32{uint32(items), uint32(w.N), uint32(w.N0), uint32(n)}, append(in, d.buf(dst))...)
}

// Step runs one fused optimiser step: one dispatch reading the gradient
// and updating the parameter and its state in place.
func (d *Device) Step(op device.Optimizer, param, grad device.Buffer, state []device.Buffer, h device.StepParams) {
	d.mu.Lock()
	defer d.mu.Unlock()
	p := d.buf(param)
	if p.n == 0 {
		return
	}
	bufs := []*buffer{d.buf(grad), p}
	for _, s := range state {
		bufs = append(bufs, d.buf(s))
	}
	// vec4s where the count allows: 4× fewer invocations, the same loads.
	vec, n := vec4(p.n)
	t := elemType(false, vec)
	var spec map[string]any
	var params []uint32
	switch op {
	case device.SGD:
		momentum := h.Momentum != 0
		spec = map[string]any{"Op": "sgd", "T": t, "Momentum": momentum, "First": h.FirstStep, "Nesterov": h.Nesterov}
		params = []uint32{uint32(n), f32bits(h.LR), f32bits(h.WeightDecay), f32bits(h.Momentum), f32bits(h.Dampening)}
		bufs = bufs[:2+b2i(momentum)]
	case device.Adam:
		spec = map[string]any{"Op": "adam", "T": t, "Decoupled": h.Decoupled, "AMSGrad": h.AMSGrad}
		bc1 := 1 - math.Pow(h.Beta1, float64(h.T))
		bc2 := 1 - math.Pow(h.Beta2, float64(h.T))
		params = []uint32{uint32(n), f32bits(h.LR), f32bits(h.WeightDecay), f32bits(h.Beta1), f32bits(h.Beta2), f32bits(h.Eps),
			f32bits(h.LR / bc1), f32bits(math.Sqrt(bc2))}
		bufs = bufs[:2+2+b2i(h.AMSGrad)]
	}
	key := fmt.Sprintf("step/%v", spec)
	k := d.kernel(key, "update", spec, flags(1, len(bufs)-1)...)
	d.runItems(k, 1, itemBytes(vec, "f32"), params, bufs...)
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
	return d.ran
}

// drawNames are the draw kernels' names in draw.wgsl.
var drawNames = map[device.DrawOp]string{device.DrawRect: "rect", device.DrawImages: "images", device.DrawCurve: "curve", device.DrawText: "text"}

// Draw paints into canvas, one invocation per pixel of the rectangle.
func (d *Device) Draw(op device.DrawOp, canvas, src, aux device.Buffer, p device.Paint) {
	d.mu.Lock()
	defer d.mu.Unlock()
	name := drawNames[op]
	k := d.kernel("draw/"+name, "draw", map[string]any{"Op": name}, flags(2, 1)...)
	params := []uint32{uint32(p.W), uint32(p.H), uint32(p.X), uint32(p.Y), uint32(p.RW), uint32(p.RH), p.Color,
		uint32(p.N), uint32(p.IH), uint32(p.IW), uint32(p.Cols), uint32(p.Border), uint32(max(p.Zoom, 1)),
		f32bits(p.Lo), f32bits(p.Hi), uint32(max(p.Thick, 1)), uint32(p.GW), uint32(p.GH)}
	d.run(k, groupsOf(p.RW*p.RH, 256), params, d.buf(src), d.buf(aux), d.buf(canvas))
}

// The texture-input matrix product (matmul_tex.wgsl), chosen for CPU
// adapters (lavapipe): each invocation computes a block of texTM rows by
// texBlock columns from texel loads, which llvmpipe makes cheaper than
// storage-buffer loads (1.7–1.9× the storage kernel's GFLOP/s at 1024³ and
// 2048³ there). GPUs keep the storage kernel. Blocks of 32×32 hold 1,024
// accumulators an invocation, 32 KiB of spilled registers per SIMD batch
// on llvmpipe; on this machine's cores (48 KiB of L1 data cache) they ran
// 1024³ at 62–63 GFLOP/s against 55–57 for 32×16 and 55–59 for 32×24
// (48×16, 64×16, 40×24, 24×32 and 32×20: 52–58), and 2048³ at 67 against
// 59–60. Products with fewer workgroups of them than twice the threads
// running workgroups take 32×16, which gives the threads twice the
// workgroups.
const (
	texTM, texWG = 32, 8
	// texMinMACs is the smallest product the textures speed up: the
	// linear layers of examples/cnn (M, K, N of 64, 1600, 128 and their
	// gradients', 13.1 M multiply-adds) took 7.6–8.0 ms on the register
	// kernel against 8.9–10.1 ms with packs and textures.
	texMinMACs = 1 << 24
)

// texBlock returns how many columns of s an invocation of the texture
// kernel computes: 32, or 16 where 32 leaves fewer than two workgroups a
// thread.
func (d *Device) texBlock(s device.GEMM) int {
	if groupsOf(s.M, texTM*texWG)*groupsOf(s.N, 32*texWG) >= 2*d.threads { // a dispatch a matrix
		return 32
	}
	return 16
}

// matMulTextures runs s with the texture kernel and reports whether it
// could: the matrices must be large enough to gain, and fit the adapter's
// texture size.
func (d *Device) matMulTextures(o, x, y *buffer, s device.GEMM) bool {
	if !d.texturesFit(s) {
		return false
	}
	m, k, n := s.M, s.K, s.N
	texTN := d.texBlock(s)
	ha, wb := groupsOf(m, texTM)*texTM, groupsOf(n, texTN)*texTN/4
	// Strides of op(a) (M×K) along k and its rows, of op(b) (K×N) along
	// its columns and k.
	ak, ar := 1, k
	if s.TransA {
		ak, ar = m, 1
	}
	bw, bk := 1, s.RowB()
	if s.TransB {
		bw, bk = s.RowB(), 1
	}
	// An operand whose texels are aligned vec4s of it packs by vec4s (or is
	// copied); out takes vec4s when its rows allow.
	_, vecB, vecO := vec4s(y, s)
	vecA := !s.TransA && k%4 == 0 && s.StrideA%4 == 0
	st := d.storeOf(o.dt)
	// The product's kernel: the variant that adds to out, or the one that
	// only writes it.
	mul := func(add bool) *kernel {
		return d.kernelOf(fmt.Sprintf("matmul_tex/%d×%d/%s,add=%v,vec=%v", texTM, texTN, st, add, vecO), "matmul_tex",
			map[string]any{"Stage": "mul", "TM": texTM, "TN": texTN, "Half": st.packed(), "F16": st.native(), "Add": add, "VecO": vecO},
			textureIn, textureIn, storageRW)
	}
	d.roomForTextures(2) // both operands' textures: making b's never releases a's
	ta, err := d.texture(groupsOf(k, 4), ha, 0)
	if err != nil {
		d.fail(fmt.Errorf("webgpu: matmul_tex: %v", err))
		return true
	}
	tb, err := d.texture(wb, k, 1)
	if err != nil {
		d.fail(fmt.Errorf("webgpu: matmul_tex: %v", err))
		return true
	}
	kPer := min(k, maxLoop)
	rowsPer := maxDispatchFlops / max(2*kPer*n, 1) / (texTM * texWG) * (texTM * texWG)
	rowsPer = min(max(rowsPer, texTM*texWG), maxGroups*texTM*texWG)
	for i := range s.Batch {
		ja := i
		if s.CycleA > 0 {
			ja = i % s.CycleA
		}
		if i == 0 || s.StrideA != 0 {
			offA := s.OffA + ja*s.StrideA
			d.texOperand(x, ta, texLayout{wide: k, depth: m, off: offA, sw: ak, sk: ar, texels: groupsOf(k, 4), vec: vecA && offA%4 == 0})
		}
		if i == 0 || s.StrideB != 0 {
			d.texOperand(y, tb, texLayout{wide: n, depth: k, off: s.OffB + i*s.StrideB, sw: bw, sk: bk, texels: wb, vec: vecB})
		}
		for row := 0; row < m; row += rowsPer {
			rows := min(rowsPer, m-row)
			for k0 := 0; k0 < k; k0 += kPer {
				d.dispatchEntries(mul(k0 > 0 || s.Accumulate), uint32(groupsOf(n, texTN*texWG)), uint32(groupsOf(rows, texTM*texWG)), 1,
					[]uint32{uint32(m), uint32(k), uint32(n), uint32(row), uint32(k0), uint32(min(k, k0+kPer)), uint32(s.OffDst + i*m*n)},
					[]wgpu.BindGroupEntry{{Binding: 1, TextureView: ta.view}, {Binding: 2, TextureView: tb.view}, {Binding: 3, Buffer: o.b, Size: o.bindSize()}})
			}
		}
	}
	return true
}

// texLayout is where an operand of the texture kernel lies in its buffer:
// wide entries (op(a)'s terms of k, op(b)'s columns) sw elements apart,
// depths (op(a)'s rows, op(b)'s terms of k) sk apart, from off; texels is
// how many texels of a depth its texture holds, and vec tells whether its
// texels are aligned vec4s of it.
type texLayout struct {
	wide, depth, off, sw, sk, texels int
	vec                              bool
}

// texOperand records what fills t with the operand of src laid out as l:
// a copy where its texels are float32 vec4s whose depths lie a multiple
// of 256 bytes apart (the alignment WebGPU asks of the rows of a copy;
// lavapipe copies with memcpy), else a pack by vec4s (vec) or by scalars.
// At 1024³ on lavapipe the copy made the product 6% faster than the pack
// by vec4s did, and op(a) laid out along k (copied, not packed across k
// as before) another 15%.
func (d *Device) texOperand(src *buffer, t opTexture, l texLayout) {
	st := d.storeOf(src.dt)
	half := src.dt == device.Float16
	row := groupsOf(l.wide, 4) // the texels of a depth that hold entries
	if src.b == nil {
		d.fail(errFreed("matmul_tex"))
		return
	}
	if l.vec && !half && l.sk%64 == 0 && l.off+(l.depth-1)*l.sk+4*row <= src.n {
		enc := d.encoderFor()
		if enc == nil {
			return
		}
		err := enc.TryCopyBufferToTexture(&wgpu.TexelCopyBufferInfo{Buffer: src.b, Layout: wgpu.TexelCopyBufferLayout{Offset: uint64(4 * l.off), BytesPerRow: uint32(4 * l.sk), RowsPerImage: uint32(l.depth)}},
			&wgpu.TexelCopyTextureInfo{Texture: t.tex, Aspect: wgpu.TextureAspectAll}, &wgpu.Extent3D{Width: uint32(row), Height: uint32(l.depth), DepthOrArrayLayers: 1})
		if err != nil {
			d.fail(fmt.Errorf("webgpu: matmul_tex: copying a %d×%d operand into its texture: %v", l.depth, l.wide, err))
		}
		return
	}
	k := d.kernelOf(fmt.Sprintf("matmul_tex/pack/%s,vec=%v", st, l.vec), "matmul_tex",
		map[string]any{"Stage": "pack", "Half": st.packed(), "F16": st.native(), "Vec": l.vec}, storageRO, textureOut)
	items := l.texels * l.depth
	d.dispatchEntries(k, uint32(min(groupsOf(items, 256), maxGroups)), uint32(groupsOf(groupsOf(items, 256), maxGroups)), 1,
		[]uint32{uint32(l.wide), uint32(l.depth), uint32(l.off), uint32(l.sw), uint32(l.sk), uint32(l.texels)},
		[]wgpu.BindGroupEntry{{Binding: 1, Buffer: src.b, Size: src.bindSize()}, {Binding: 2, TextureView: t.view}})
}

// texturesFit reports whether the texture kernel takes products shaped as
// s: each matrix of a batch costs up to three commands (its operands'
// packs or copies, and the product), so only products of at least
// texMinMACs multiply-adds gain (where EnvMatMul forces the texture
// kernel, products of any size take it), and the operands must fit the
// adapter's textures.
func (d *Device) texturesFit(s device.GEMM) bool {
	m, k, n := s.M, s.K, s.N
	if d.mm.force != "texture" && (m < 32 || n < 32 || k < 8 || m*n*k < texMinMACs) {
		return false
	}
	texTN := d.texBlock(s)
	ha, wb := groupsOf(m, texTM)*texTM, groupsOf(n, texTN)*texTN/4
	limit := int(d.limits.MaxTextureDimension2D)
	return k > 0 && groupsOf(k, 4) <= limit && ha <= limit && wb <= limit && k <= limit && groupsOf(n, texTN*texWG) <= maxGroups
}

// opTexture is a cached operand texture of the texture matmul.
type opTexture struct {
	tex  *wgpu.Texture
	view *wgpu.TextureView
}

// texKey names a cached operand texture: its size, and which operand.
type texKey struct{ w, h, slot int }

// maxTextures bounds the operand textures kept between products: a
// training loop reuses a few shapes, so each is made once.
const maxTextures = 16

// texture returns an rgba32float texture of at least w×h texels, and its
// view, for operand slot (0: a, 1: b) that packs or copies fill and
// kernels read, made once per size and kept (up to maxTextures, which the
// caller keeps to): work recorded in order on one encoder may reuse it.
func (d *Device) texture(w, h, slot int) (opTexture, error) {
	key := texKey{w, h, slot}
	if t, ok := d.textures[key]; ok {
		return t, nil
	}
	// No side a power of two: llvmpipe compiles a kernel again for each
	// combination of its textures' sides being powers of two or not
	// (TestMatMulKernels' texture products took 140 s on a cold shader
	// cache, 41 s so). A side at the adapter's limit stays.
	tw, th := w, h
	limit := int(d.limits.MaxTextureDimension2D)
	if tw&(tw-1) == 0 && tw < limit {
		tw++
	}
	if th&(th-1) == 0 && th < limit {
		th++
	}
	t, err := d.dev.TryCreateTexture(&wgpu.TextureDescriptor{Label: "matmul operand", Usage: wgpu.TextureUsageStorageBinding | wgpu.TextureUsageTextureBinding | wgpu.TextureUsageCopyDst,
		Dimension: wgpu.TextureDimension2D, Size: wgpu.Extent3D{Width: uint32(tw), Height: uint32(th), DepthOrArrayLayers: 1},
		Format: wgpu.TextureFormatRGBA32Float, MipLevelCount: 1, SampleCount: 1})
	if err != nil {
		return opTexture{}, fmt.Errorf("a %d×%d texture: %v", w, h, err)
	}
	v, err := t.TryCreateView(nil)
	if err != nil {
		t.Release()
		return opTexture{}, fmt.Errorf("a texture view: %v", err)
	}
	if d.textures == nil {
		d.textures = map[texKey]opTexture{}
	}
	d.textures[key] = opTexture{t, v}
	return opTexture{t, v}, nil
}

// roomForTextures releases the cached textures unless n more fit, so that
// making one of an op's textures never releases another; the open pass
// names the old ones, so it ends first.
func (d *Device) roomForTextures(n int) {
	if len(d.textures) > maxTextures-n {
		d.endPass()
		d.releaseTextures()
	}
}

// releaseTextures releases the cached operand textures (wgpu keeps them
// alive for work already recorded).
func (d *Device) releaseTextures() {
	for k, t := range d.textures {
		t.view.Release()
		t.tex.Release()
		delete(d.textures, k)
	}
}

// Convert converts src into dst's dtype (float32 and float16).
func (d *Device) Convert(dst, src device.Buffer) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.convert(d.buf(dst), d.buf(src))
}

func (d *Device) convert(o, s *buffer) {
	switch {
	case o.n == 0:
	case o.dt == s.dt:
		d.fail(fmt.Errorf("webgpu: Convert from %v to %v: use Copy", s.dt, o.dt))
	case o.dt == device.Float16 && s.dt == device.Float32, o.dt == device.Float32 && s.dt == device.Float16:
		half := o.dt == device.Float16
		name := "cast/from_half"
		if half {
			name = "cast/to_half"
		}
		if o.n%8 == 0 {
			// By vec4s, eight values an invocation: on lavapipe, 16M values
			// cast to float16 at 0.45–0.57 Gelem/s (the scalar kernel:
			// 0.26–0.31) and to float32 at 0.60–0.62 (0.13–0.16).
			k := d.kernel(name+"/vec", "cast", map[string]any{"ToHalf": half, "Vec": true}, false, true)
			d.run(k, groupsOf(o.n/8, 256), []uint32{uint32(o.n / 8)}, s, o)
			return
		}
		k := d.kernel(name, "cast", map[string]any{"ToHalf": half, "Vec": false}, false, true)
		if half {
			words := (o.n + 1) / 2
			d.run(k, groupsOf(words, 256), []uint32{uint32(words), uint32(o.n)}, s, o)
			return
		}
		d.run(k, groupsOf(o.n, 256), []uint32{uint32(o.n)}, s, o)
	default:
		d.fail(fmt.Errorf("webgpu: Convert from %v to %v: the device converts between float32 and float16", s.dt, o.dt))
	}
}

// native reports whether the kernels of a family written over E (see
// shaders.Source) take bufs as they are: their floating-point buffers are
// all float32, or all float16 on a device with WGSL's f16 (int32 ones,
// indices, are read as they are).
func (d *Device) native(bufs ...device.Buffer) bool {
	dt := device.Int32
	for _, b := range bufs {
		switch t := d.buf(b).dt; {
		case t == device.Int32:
		case dt == device.Int32:
			dt = t
		case t != dt:
			return false
		}
	}
	return dt != device.Float16 || d.f16
}

// widen runs op on float32 stand-ins when any of bufs (the first nOut of
// them op's outputs) is float16, a storage format the op's kernel family
// does not read, and reports whether it did: each float16 buffer is
// converted into a float32 scratch buffer, op runs on those in its place,
// and the outputs are converted back. (Outputs are converted in too, for
// kernels that add to what their output holds.) op takes the device's
// lock itself.
func (d *Device) widen(nOut int, op func(bufs []device.Buffer), bufs ...device.Buffer) bool {
	wide := slices.Clone(bufs)
	half := false
	for i, b := range bufs {
		if b != nil && d.buf(b).dt == device.Float16 {
			half = true
			wide[i] = nil
		}
	}
	if !half {
		return false
	}
	d.mu.Lock()
	for i, b := range bufs {
		if wide[i] != nil || b == nil {
			continue
		}
		h := d.buf(b)
		w, err := d.alloc(device.Float32, h.n)
		if err != nil {
			d.fail(fmt.Errorf("webgpu: widening a float16 operand of %d elements to float32: %v", h.n, err))
			for j := range i { // the stand-ins made so far
				if wide[j] != nil && wide[j] != bufs[j] {
					d.free(d.buf(wide[j]))
				}
			}
			d.mu.Unlock()
			return true
		}
		d.convert(w, h)
		wide[i] = w
	}
	d.mu.Unlock()
	op(wide)
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, b := range bufs {
		if b == nil || wide[i] == b {
			continue
		}
		if i < nOut {
			d.convert(d.buf(b), d.buf(wide[i]))
		}
		d.free(d.buf(wide[i]))
	}
	return true
}

// b2u is 1 for true, as a kernel parameter.
func b2u(b bool) uint32 { return uint32(b2i(b)) }
