//go:build cgo

package webgpu

import (
	"fmt"

	"github.com/extensor/extensor/device"
)

// attnBlocking returns the attention family's blocking: the query rows
// an invocation of the forward and of dq takes, and the keys one of dk
// and dv takes (each key chunk of the forward is attnKeys). On lavapipe,
// at B 8, H 8, L 512, d 64, forward and backward took 2.67 s with 4 and
// 2, 1.49 with 8 and 2, 1.21 with 8 and 4, 1.30 with 12 and 4, 1.57 with
// 8 and 8 (2026-11-27): loads cost there, registers do not. A GPU holds
// fewer registers; it takes 4 and 2, not measured yet.
func (d *Device) attnBlocking() (rows, gradRows int) {
	if d.loopLimited {
		return 8, 4
	}
	return 4, 2
}

// attnKeys are the keys the forward scores at a time.
const attnKeys = 4

// Attention sets out to softmax(scale·q·kᵀ + mask)·v and stats' first
// column to the rows' log-sum-exps (device.Attender).
func (d *Device) Attention(out, stats, q, k, v, mask device.Buffer, a device.AttentionSpec) {
	if !d.native(present(out, q, k, v, mask)...) && d.widen(1, func(b []device.Buffer) { d.Attention(b[0], stats, b[1], b[2], b[3], b[4], a) }, out, q, k, v, mask) {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if a.Batch*a.Lq == 0 {
		return
	}
	attnRows, _ := d.attnBlocking()
	kr := d.attnKernel("fwd", d.buf(q).dt, a, attnRows, flags(4, 2))
	if !d.rowLimit(kr, groupsOf(a.Lk, attnKeys)) {
		return
	}
	m := d.buf(q)
	if mask != nil {
		m = d.buf(mask)
	}
	d.run(kr, groupsOf(a.Batch*groupsOf(a.Lq, attnRows), 64), attnParams(a, attnRows), d.buf(q), d.buf(k), d.buf(v), m, d.buf(out), d.buf(stats))
}

// AttentionGrad sets dq, dk and dv to Attention's gradients
// (device.Attender): Δ = Σ dO·O into stats, then dq over the keys, and dk
// and dv over the queries into one scratch buffer (a kernel binds at most
// eight storage buffers), copied out.
func (d *Device) AttentionGrad(dq, dk, dv, stats, q, k, v, mask, o, dO device.Buffer, a device.AttentionSpec) {
	if !d.native(present(dq, dk, dv, q, k, v, mask, o, dO)...) && d.widen(3, func(b []device.Buffer) {
		d.AttentionGrad(b[0], b[1], b[2], stats, b[3], b[4], b[5], b[6], b[7], b[8], a)
	}, dq, dk, dv, q, k, v, mask, o, dO) {
		return
	}
	kv := d.attentionGrad(dq, stats, q, k, v, mask, o, dO, a)
	if kv == nil {
		return
	}
	w := a.D + a.DV
	rows := []int{a.Batch * a.Lk, a.D}
	d.CopyStrided(dk, kv, device.Strided{Shape: rows, SrcStrides: []int{w, 1}, DstStrides: []int{a.D, 1}})
	rows[1] = a.DV
	d.CopyStrided(dv, kv, device.Strided{Shape: rows, SrcStrides: []int{w, 1}, DstStrides: []int{a.DV, 1}, SrcOffset: a.D})
	d.Free(kv)
}

// attentionGrad runs the gradient's kernels, returning the scratch
// buffer of dk and dv ([Batch·Lk, D + DV]), or nil.
func (d *Device) attentionGrad(dq, stats, q, k, v, mask, o, dO device.Buffer, a device.AttentionSpec) *buffer {
	d.mu.Lock()
	defer d.mu.Unlock()
	if a.Batch*a.Lq*a.Lk == 0 {
		return nil
	}
	m := d.buf(q)
	if mask != nil {
		m = d.buf(mask)
	}
	dt := d.buf(q).dt
	attnRows, attnGradRows := d.attnBlocking()
	kd := d.attnKernel("delta", dt, a, 1, flags(6, 1))
	p := attnParams(a, 1)
	p[0] = uint32(a.Batch * a.Lq)
	d.run(kd, groupsOf(a.Batch*a.Lq, 64), p, d.buf(q), d.buf(k), d.buf(v), m, d.buf(dO), d.buf(o), d.buf(stats))
	kq := d.attnKernel("dq", dt, a, attnRows, flags(6, 1))
	kkv := d.attnKernel("dkv", dt, a, attnGradRows, flags(6, 1))
	if !d.rowLimit(kq, a.Lk) || !d.rowLimit(kkv, a.Lq) {
		return nil
	}
	d.run(kq, groupsOf(a.Batch*groupsOf(a.Lq, attnRows), 64), attnParams(a, attnRows), d.buf(q), d.buf(k), d.buf(v), m, d.buf(dO), d.buf(stats), d.buf(dq))
	kv := d.scratch(kkv, dt, a.Batch*a.Lk*(a.D+a.DV))
	if kv == nil {
		return nil
	}
	p = attnParams(a, attnGradRows)
	p[0], p[1] = uint32(a.Batch*groupsOf(a.Lk, attnGradRows)), uint32(groupsOf(a.Lk, attnGradRows))
	d.run(kkv, groupsOf(int(p[0]), 64), p, d.buf(q), d.buf(k), d.buf(v), m, d.buf(dO), d.buf(stats), kv)
	return kv
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
	d.mu.Lock()
	defer d.mu.Unlock()
	if a.Batch*a.Lq*a.Lk == 0 {
		return
	}
	m := d.buf(q)
	if mask != nil {
		m = d.buf(mask)
	}
	attnRows, _ := d.attnBlocking()
	k1 := d.attnKernel("ds", d.buf(q).dt, a, attnRows, flags(6, 1))
	if !d.rowLimit(k1, a.Lk) {
		return
	}
	d.run(k1, groupsOf(a.Batch*groupsOf(a.Lq, attnRows), 64), attnParams(a, attnRows), d.buf(q), d.buf(k), d.buf(v), m, d.buf(dO), d.buf(stats), d.buf(ds))
}

// attnKernel returns the attention family's kernel of a stage.
func (d *Device) attnKernel(stage string, dt device.DType, a device.AttentionSpec, rows int, writable []bool) *kernel {
	st := d.storeOf(dt)
	drop, ds := a.Dropout > 0, stage == "ds"
	if ds {
		stage = "dq"
	}
	spec := map[string]any{"Stage": stage, "DS": ds, "R": rows, "C": attnKeys, "D4": a.D / 4, "DV4": a.DV / 4, "Mask": int(a.Mask),
		"Causal": a.Causal, "Drop": drop, "F16": st.native()}
	key := fmt.Sprintf("attention/%s/ds=%v/r=%d,c=%d/d=%d,dv=%d/mask=%d,causal=%v,drop=%v/%s", stage, ds, rows, attnKeys, a.D, a.DV, a.Mask, a.Causal, drop, st)
	return d.kernel(key, "attention", spec, writable...)
}

// attnParams returns the attention family's parameter words, for
// invocations of rows query rows each.
func attnParams(a device.AttentionSpec, rows int) []uint32 {
	blocks := groupsOf(a.Lq, rows)
	p := []uint32{uint32(a.Batch * blocks), uint32(blocks), uint32(a.Lq), uint32(a.Lk), f32bits(a.Scale),
		uint32(a.MaskStride[0]), uint32(a.MaskStride[1]), uint32(a.MaskStride[2]), uint32(a.MaskStride[3]),
		uint32(a.Heads), uint32(a.Seed), uint32(a.Seed >> 32), device.DropThreshold(a.Dropout), f32bits(1 / (1 - a.Dropout)), uint32(rows)}
	return p
}

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
