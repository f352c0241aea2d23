//go:build cgo || js

package webgpu

import (
	"fmt"

	"github.com/extensor/extensor/device"
)

// attnBlocking returns the attention family's blocking: the query rows
// an invocation of the forward and of dq takes, and the keys one of dk
// and dv takes (each key chunk of the forward is attnKeys). On CPU
// adapters, 8 and 4: loads cost there, registers do not. GPUs take one
// row (one key) an invocation, and split the keys (the queries) of each
// among invocations where the rows alone leave the GPU idle (attnSplit).
// docs/kernel-choices.md, attention, has the measurements.
func (d *Device) attnBlocking() (rows, gradRows int) {
	// SwiftShader (in a browser) compiled the blocked kernels for minutes,
	// until Chromium ended its GPU process.
	if d.loopLimited && !browser {
		return 8, 4
	}
	return 1, 1
}

// attnInvocations is how many invocations an attention kernel should have
// on a GPU, and attnMinChunk the fewest keys (queries) a chunk of a split
// row takes.
const (
	attnInvocations = 1 << 16
	attnMinChunk    = 16
)

// attnSplit returns how a GPU splits the n keys (queries) of each of rows
// rows among invocations: chunks of chunk, a multiple of attnKeys, in
// parts chunks a row; parts is 1 on CPU adapters, for float16, and where
// the rows are invocations enough.
func (d *Device) attnSplit(dt device.DType, rows, n int) (parts, chunk int) {
	if d.loopLimited || dt != device.Float32 || rows >= attnInvocations/2 || n < 2*attnMinChunk {
		return 1, n
	}
	parts = min(attnInvocations/rows, n/attnMinChunk)
	chunk = groupsOf(groupsOf(n, parts), attnKeys) * attnKeys
	return groupsOf(n, chunk), chunk
}

// MaxAttentionDim is the largest head dimension the fused attention
// kernels take: they hold a query row, unrolled, in registers, and
// compile in time (tens of seconds on lavapipe at 256) only up to it.
const MaxAttentionDim = 256

// attnKeys are the keys the forward scores at a time.
const attnKeys = 4

// Attention sets out to softmax(scale·q·kᵀ + mask)·v and stats' first
// columns to the rows' statistics (device.Attender).
func (d *Device) Attention(out, stats, q, k, v, mask device.Buffer, a device.AttentionSpec) {
	if !d.native(present(out, q, k, v, mask)...) && d.widen(1, func(b []device.Buffer) { d.Attention(b[0], stats, b[1], b[2], b[3], b[4], a) }, out, q, k, v, mask) {
		return
	}
	d.writing(out, stats)
	defer d.written()
	if a.Batch*a.Lq == 0 {
		return
	}
	attnRows, _ := d.attnBlocking()
	dt := d.buf(q).dt
	parts, chunk := d.attnSplit(dt, a.Batch*a.Lq, a.Lk)
	kr := d.attnKernel("fwd", dt, a, attnRows, parts > 1, flags(4, 2))
	if !d.rowLimit(kr, groupsOf(a.Lk, attnKeys)) {
		return
	}
	m := d.buf(q)
	if mask != nil {
		m = d.buf(mask)
	}
	p := attnParamsOf(a, attnRows)
	if parts == 1 {
		d.run(kr, groupsOf(a.Batch*groupsOf(a.Lq, attnRows), 64), p, d.buf(q), d.buf(k), d.buf(v), m, d.buf(out), d.buf(stats))
		return
	}
	// Each chunk's max, sum and output into part, then combined.
	rows := a.Batch * a.Lq
	part := d.scratch(kr, device.Float32, parts*rows*(a.DV+4))
	if part == nil {
		return
	}
	defer d.free(part)
	p.Invocations, p.Chunk, p.ChunkInvocations = uint32(parts*rows), uint32(chunk), uint32(rows)
	d.run(kr, groupsOf(parts*rows, 64), p, d.buf(q), d.buf(k), d.buf(v), m, part, d.buf(stats))
	kc := d.attnKernel("combine", dt, a, 1, false, flags(5, 2))
	pc := attnParamsOf(a, 1)
	pc.Invocations, pc.Chunks = uint32(rows), uint32(parts)
	d.run(kc, groupsOf(rows, 64), pc, d.buf(q), d.buf(k), d.buf(v), m, part, d.buf(out), d.buf(stats))
}

// AttentionGrad sets dq, dk and dv to Attention's gradients
// (device.Attender): Δ = Σ dO·O into stats, then dq over the keys, and dk
// and dv over the queries: written in place where they are one buffer
// (a packed projection's gradient) and the keys are not split into
// chunks, else into one scratch buffer (a kernel binds at most eight
// storage buffers) copied out.
func (d *Device) AttentionGrad(dq, dk, dv, stats, q, k, v, mask, o, dO device.Buffer, a device.AttentionSpec) {
	if !d.native(present(dq, dk, dv, q, k, v, mask, o, dO)...) && d.widen(3, func(b []device.Buffer) {
		d.AttentionGrad(b[0], b[1], b[2], stats, b[3], b[4], b[5], b[6], b[7], b[8], a)
	}, dq, dk, dv, q, k, v, mask, o, dO) {
		return
	}
	kv, placed := d.attentionGrad(dq, dk, dv, stats, q, k, v, mask, o, dO, a)
	if kv == nil || placed {
		return
	}
	_, lk, lv, _ := a.Layouts()
	w := a.D + a.DV
	d.CopyStrided(dk, kv, placing(a, lk, a.Lk, a.D, w, 0))
	d.CopyStrided(dv, kv, placing(a, lv, a.Lk, a.DV, w, a.D))
	d.Free(kv)
}

// placing returns the strided copy of the columns from off to off + cols
// of src, [Batch·rows, w] contiguous, into layout l's matrices of rows
// rows.
func placing(a device.AttentionSpec, l device.AttentionLayout, rows, cols, w, off int) device.Strided {
	if l == (device.AttentionLayout{}).Resolve(a.Heads, rows, cols) {
		return device.Strided{Shape: []int{a.Batch * rows, cols}, SrcStrides: []int{w, 1}, DstStrides: []int{cols, 1}, SrcOffset: off}
	}
	outer := a.Batch / a.Heads
	return device.Strided{Shape: []int{outer, a.Heads, rows, cols}, SrcStrides: []int{a.Heads * rows * w, rows * w, w, 1},
		DstStrides: []int{l.Outer, l.Head, l.Row, 1}, SrcOffset: off, DstOffset: l.Offset}
}

// attentionGrad runs the gradient's kernels, returning the scratch
// buffer of dk and dv ([Batch·Lk, D + DV]), or nil (a failure fails dk
// and dv too); placed, where dk and dv are one buffer (a packed
// projection's gradient, its heads merged), when the kernel wrote them
// there at their layouts, with no scratch.
func (d *Device) attentionGrad(dq, dk, dv, stats, q, k, v, mask, o, dO device.Buffer, a device.AttentionSpec) (kv *buffer, placed bool) {
	d.writing(dq, dk, dv, stats)
	defer d.written()
	if a.Batch*a.Lq*a.Lk == 0 {
		return nil, false
	}
	m := d.buf(q)
	if mask != nil {
		m = d.buf(mask)
	}
	dt := d.buf(q).dt
	attnRows, attnGradRows := d.attnBlocking()
	kd := d.attnKernel("delta", dt, a, 1, false, flags(6, 1))
	p := attnParamsOf(a, 1)
	p.Invocations = uint32(a.Batch * a.Lq)
	d.run(kd, groupsOf(a.Batch*a.Lq, 64), p, d.buf(q), d.buf(k), d.buf(v), m, d.buf(dO), d.buf(o), d.buf(stats))
	qParts, qChunk := d.attnSplit(dt, a.Batch*a.Lq, a.Lk)
	kvParts, kvChunk := d.attnSplit(dt, a.Batch*a.Lk, a.Lq)
	kq := d.attnKernel("dq", dt, a, attnRows, qParts > 1, flags(6, 1))
	kkv := d.attnKernel("dkv", dt, a, attnGradRows, kvParts > 1, flags(6, 1))
	if !d.rowLimit(kq, a.Lk) || !d.rowLimit(kkv, a.Lq) {
		return nil, false
	}
	p = attnParamsOf(a, attnRows)
	if qParts == 1 {
		d.run(kq, groupsOf(a.Batch*groupsOf(a.Lq, attnRows), 64), p, d.buf(q), d.buf(k), d.buf(v), m, d.buf(dO), d.buf(stats), d.buf(dq))
	} else {
		n := a.Batch * a.Lq * a.D
		part := d.scratch(kq, device.Float32, qParts*n)
		if part == nil {
			return nil, false
		}
		p.Invocations, p.Chunk, p.ChunkInvocations = uint32(qParts*a.Batch*a.Lq), uint32(qChunk), uint32(a.Batch*a.Lq)
		d.run(kq, groupsOf(int(p.Invocations), 64), p, d.buf(q), d.buf(k), d.buf(v), m, d.buf(dO), d.buf(stats), part)
		lq, _, _, _ := a.Layouts()
		if lq == (device.AttentionLayout{}).Resolve(a.Heads, a.Lq, a.D) {
			d.sumParts(d.buf(dq), part, n, qParts, 0, false)
		} else { // summed, then placed
			sum := d.scratch(kq, dt, n)
			if sum == nil {
				d.free(part)
				return nil, false
			}
			d.sumParts(sum, part, n, qParts, 0, false)
			d.copyStrided(d.buf(dq), sum, placing(a, lq, a.Lq, a.D, a.D, 0))
			d.free(sum)
		}
		d.free(part)
	}
	p = attnParamsOf(a, attnGradRows)
	p.Invocations, p.Blocks = uint32(a.Batch*groupsOf(a.Lk, attnGradRows)), uint32(groupsOf(a.Lk, attnGradRows))
	if kvParts == 1 && dk != nil && dk == dv {
		// No scratch and no copies: the kernel writes dk and dv in place.
		p.Placed = 1
		d.run(kkv, groupsOf(int(p.Invocations), 64), p, d.buf(q), d.buf(k), d.buf(v), m, d.buf(dO), d.buf(stats), d.buf(dk))
		return nil, true
	}
	kv = d.scratch(kkv, dt, a.Batch*a.Lk*(a.D+a.DV))
	if kv == nil {
		return nil, false
	}
	if kvParts == 1 {
		d.run(kkv, groupsOf(int(p.Invocations), 64), p, d.buf(q), d.buf(k), d.buf(v), m, d.buf(dO), d.buf(stats), kv)
		return kv, false
	}
	n := a.Batch * a.Lk * (a.D + a.DV)
	part := d.scratch(kkv, device.Float32, kvParts*n)
	if part == nil {
		d.free(kv)
		return nil, false
	}
	defer d.free(part)
	p.Chunk, p.ChunkInvocations = uint32(kvChunk), p.Invocations
	p.Invocations *= uint32(kvParts)
	d.run(kkv, groupsOf(int(p.Invocations), 64), p, d.buf(q), d.buf(k), d.buf(v), m, d.buf(dO), d.buf(stats), part)
	d.sumParts(kv, part, n, kvParts, 0, false)
	return kv, false
}

// AttentionScoresGrad sets ds to the gradient of the masked scores
// (device.Attender): the dq kernel writing each score's gradient.
func (d *Device) AttentionScoresGrad(ds, stats, q, k, v, mask, dO device.Buffer, a device.AttentionSpec) {
	if !d.native(present(ds, q, k, v, mask, dO)...) && d.widen(1, func(b []device.Buffer) {
		d.AttentionScoresGrad(b[0], stats, b[1], b[2], b[3], b[4], b[5], a)
	}, ds, q, k, v, mask, dO) {
		return
	}
	d.Fill(ds, 0) // the keys after a causal block's last query are not visited
	d.writing(ds)
	defer d.written()
	if a.Batch*a.Lq*a.Lk == 0 {
		return
	}
	m := d.buf(q)
	if mask != nil {
		m = d.buf(mask)
	}
	attnRows, _ := d.attnBlocking()
	k1 := d.attnKernel("ds", d.buf(q).dt, a, attnRows, false, flags(6, 1))
	if !d.rowLimit(k1, a.Lk) {
		return
	}
	d.run(k1, groupsOf(a.Batch*groupsOf(a.Lq, attnRows), 64), attnParamsOf(a, attnRows), d.buf(q), d.buf(k), d.buf(v), m, d.buf(dO), d.buf(stats), d.buf(ds))
}

// attnKernel returns the attention family's kernel of a stage.
// With split, each invocation takes a chunk of its row's keys (queries),
// writing partial results (attnSplit); rows must then be 1. On GPUs the
// causal dk and dv start each invocation's queries where its workgroup's
// first key's start (Align), so that a warp's loads coincide
// (docs/kernel-choices.md, attention).
func (d *Device) attnKernel(stage string, dt device.DType, a device.AttentionSpec, rows int, split bool, writable []bool) *kernel {
	if a.D > MaxAttentionDim || a.DV > MaxAttentionDim {
		d.refuse(fmt.Errorf("webgpu: kernel attention/%s: head dimensions of %d (q, k) and %d (v); the fused kernels, unrolled over them, take at most %d (use the composed ops past it)", stage, a.D, a.DV, MaxAttentionDim))
		return nil
	}
	lq, lk, lv, lo := a.Layouts()
	for _, l := range []device.AttentionLayout{lq, lk, lv, lo} {
		if _, ok := vec4Layout(l); !ok {
			d.refuse(fmt.Errorf("webgpu: kernel attention/%s: layout %+v; the kernels read rows of vec4s, so want offsets and strides that are multiples of 4", stage, l))
			return nil
		}
	}
	st := d.storeOf(dt)
	drop, ds := a.Dropout > 0, stage == "ds"
	if ds {
		stage = "dq"
	}
	return d.kernel(attentionSpec{Stage: stage, DS: ds, R: rows, C: attnKeys, D4: a.D / 4, DV4: a.DV / 4, Mask: int(a.Mask),
		Drop: drop, F16: st.native(), Split: split, Align: !d.loopLimited}, writable...)
}

// attnParamsOf returns the attention family's parameters, for
// invocations of rows query rows each.
func attnParamsOf(a device.AttentionSpec, rows int) attnParams {
	blocks := groupsOf(a.Lq, rows)
	lq, lk, lv, lo := a.Layouts()
	p := attnParams{Invocations: uint32(a.Batch * blocks), Blocks: uint32(blocks), Lq: uint32(a.Lq), Lk: uint32(a.Lk), Scale: float32(a.Scale),
		MaskStride: [4]uint32{uint32(a.MaskStride[0]), uint32(a.MaskStride[1]), uint32(a.MaskStride[2]), uint32(a.MaskStride[3])},
		Heads:      uint32(a.Heads), Seed: [2]uint32{uint32(a.Seed), uint32(a.Seed >> 32)},
		DropThreshold: device.DropThreshold(a.Dropout), DropScale: float32(1 / (1 - a.Dropout)), Rows: uint32(rows), Causal: b2u(a.Causal)}
	p.LQ, _ = vec4Layout(lq)
	p.LK, _ = vec4Layout(lk)
	p.LV, _ = vec4Layout(lv)
	p.LO, _ = vec4Layout(lo)
	return p
}

// attnParams are the attention family's parameters (shaders/attention.wgsl
// reads them as p), but stage combine's.
type attnParams struct {
	Invocations uint32    // of this dispatch
	Blocks      uint32    // blocks of Rows queries (keys, for dk and dv) a batch
	Lq, Lk      uint32    // queries and keys
	Scale       float32   // of q·kᵀ
	MaskStride  [4]uint32 // the mask's strides: outer batch, heads, query, key
	Heads       uint32
	Seed        [2]uint32 // dropout's seed, low half first
	// Dropout: a probability below DropThreshold (device.DropThreshold)
	// is kept, scaled by DropScale, 1/(1 − dropout).
	DropThreshold uint32
	DropScale     float32
	Rows          uint32 // the queries (keys, for dk and dv) an invocation takes
	Causal        uint32 // 1: a query sees only the keys up to its own position
	// Split: the keys (queries) of a chunk, the invocations a chunk, and
	// the chunks a row (stage combine, an invocation a row).
	Chunk, ChunkInvocations, Chunks uint32
	// The layouts of q, k, v and out (device.AttentionLayout's offset,
	// outer, head and row strides), in vec4s.
	LQ, LK, LV, LO [4]uint32
	// Placed (stage dkv, not Split): 1 where dk and dv are one buffer,
	// written at the layouts of k and v, else 0 (the scratch of both).
	Placed uint32
}

// vec4Layout returns l in vec4s, and whether its fields are multiples of 4.
func vec4Layout(l device.AttentionLayout) ([4]uint32, bool) {
	f := [4]int{l.Offset, l.Outer, l.Head, l.Row}
	var w [4]uint32
	for i, x := range f {
		if x%4 != 0 || x < 0 {
			return w, false
		}
		w[i] = uint32(x / 4)
	}
	return w, true
}

func (attentionSpec) params() any { return attnParams{} }

// present returns the buffers that are not nil.
func present(bufs ...device.Buffer) []device.Buffer {
	out := bufs[:0:0]
	for _, b := range bufs {
		if b != nil {
			out = append(out, b)
		}
	}
	return out
}
