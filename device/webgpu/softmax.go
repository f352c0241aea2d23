//go:build cgo || js

package webgpu

import (
	"fmt"

	"github.com/extensor/extensor/device"
)

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
	d.refuse(fmt.Errorf("webgpu: kernel %s: rows of %d elements are longer than %d, the most this adapter (%s) loops over correctly", k.name, n, maxLoop, d.info))
	return false
}

// dispatchRows records kernel k with one workgroup a row: rows of them,
// spread over y where there are more than maxGroups, with fewer than a
// column of workgroups past the last.
func (d *Device) dispatchRows(k *kernel, rows int, params any, bufs ...*buffer) {
	gy := groupsOf(rows, maxGroups)
	if gy > maxGroups {
		d.refuse(fmt.Errorf("webgpu: kernel %s: %d rows exceed %d×%d workgroups", k.name, rows, maxGroups, maxGroups))
		return
	}
	d.dispatch(k, uint32(groupsOf(rows, gy)), uint32(gy), params, bufs...)
}

// softmaxUnroll is the vec4s per invocation of the softmax's apply pass
// over rows of a multiple of 4·softmaxUnroll elements.
const softmaxUnroll = 8

// softmaxBlock is the vec4s a step of the softmax's stats pass folds in
// at once, over rows of a multiple of 4·softmaxBlock elements.
const softmaxBlock = 4

// The fewest vec4s a row that the one-pass softmax and norm kernels take
// on CPU adapters (oneRow): the softmax's two passes kept up with its one
// below 64, where the norm's invocation a row took two to four times as
// long as its workgroup a row from 16 on (docs/kernel-choices.md,
// reductions).
const (
	softmaxLeastQuads = 64
	normLeastQuads    = 16
)

// oneRow returns the shape of the one-pass softmax and norm kernels
// (stage "row" of softmax.wgsl and norm.wgsl) for rows of quads vec4s: w
// invocations a row, each holding v vec4s; ok is false where the other
// kernels serve instead: short rows (on CPU adapters fewer than least
// vec4s, on GPUs fewer than 8: one workgroup a row costs more than the
// second read, and leaves lanes idle) and long ones (the row would not
// stay in registers).
func (d *Device) oneRow(quads, least int) (w, v int, ok bool) {
	// On llvmpipe a workgroup of 8 is one SIMD batch, whose barriers
	// switch no batches: faster than 16 or 32 a row, or two passes, for
	// rows of up to 1024 elements (32 vec4s an invocation); longer rows
	// take two passes, whose kernels llvmpipe compiles in a fraction of
	// the time (docs/kernel-choices.md, reductions).
	if d.loopLimited {
		v = groupsOf(quads, 8)
		return 8, v, quads >= least && v <= 32
	}
	// On GPUs 64 invocations a row, or the power of two that holds a
	// shorter row's vec4s (at least 8), at most 16 vec4s of each operand
	// an invocation (the gradient's y and dy, 128 floats, within a GPU
	// thread's registers), where one invocation a row left the GPU idle
	// (docs/kernel-choices.md, reductions).
	w = 64
	for w > 8 && w/2 >= quads {
		w /= 2
	}
	v = groupsOf(quads, w)
	return w, v, quads >= 8 && v <= 16
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
	if w, v, ok := d.oneRow(n/4, softmaxLeastQuads); vec && ok {
		k := d.kernel(softmaxSpec{Log: log, Grad: grad, Stage: "row", W: w, V: v, Group: d.group(), F16: st.native()}, flags(len(in), 1)...)
		if k == nil {
			return // the failure is recorded
		}
		d.dispatchRows(k, count, rowsParams{Rows: uint32(count), Quads: uint32(n / 4)}, append(in, out)...)
		return
	}
	spec := softmaxSpec{Log: log, Grad: grad, Vec: vec, Stage: "stats", F16: st.native()}
	if vec && n%(4*softmaxBlock) == 0 {
		spec.Block = softmaxBlock
	}
	nStats := 1
	if !log && !grad {
		nStats = 2 // the max and 1/Σ
	}
	ks := d.kernel(spec, flags(len(in), nStats)...)
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
	params := lineParams{Count: uint32(count), N: uint32(n), Inner: uint32(inner)}
	d.run(ks, groupsOf(count, 256), params, append(in, stats...)...)
	spec.Stage = "apply"
	u := elemUnroll
	spec.Unroll, spec.Whole, spec.Coalesce = u, false, !d.loopLimited
	if vec {
		// The row length is a constant of the vec4 kernel: one pipeline per
		// length, as a network has few. Where rows hold whole invocations,
		// each invocation loads its row's stats once.
		if n%(4*softmaxUnroll) == 0 {
			u = softmaxUnroll
			spec.Unroll, spec.Whole = u, true
		}
		spec.Quads = n / 4
	}
	ka := d.kernel(spec, flags(len(in)+nStats, 1)...)
	elems := count * n
	if vec {
		elems /= 4
	}
	params.Count = uint32(elems)
	d.run(ka, groupsOf(groupsOf(elems, u), 256), params, append(append(in, stats...), out)...)
}

// Softmax sets dst to the (log-)softmax of x along axis.
func (d *Device) Softmax(dst, x device.Buffer, shape []int, axis int, log bool) {
	if !d.native(dst, x) && d.widenFresh(1, func(b []device.Buffer) { d.Softmax(b[0], b[1], shape, axis, log) }, dst, x) {
		return
	}
	d.writing(dst)
	defer d.written()
	d.softmax(log, false, d.buf(dst), shape, axis, d.buf(x))
}

// SoftmaxGrad sets dx from the (log-)softmax output y and the upstream dy.
func (d *Device) SoftmaxGrad(dx, y, dy device.Buffer, shape []int, axis int, log bool) {
	if !d.native(dx, y, dy) && d.widenFresh(1, func(b []device.Buffer) { d.SoftmaxGrad(b[0], b[1], b[2], shape, axis, log) }, dx, y, dy) {
		return
	}
	d.writing(dx)
	defer d.written()
	d.softmax(log, true, d.buf(dx), shape, axis, d.buf(y), d.buf(dy))
}

// SoftmaxCrossEntropy sets the per-row loss.
func (d *Device) SoftmaxCrossEntropy(site string, loss, logits, labels device.Buffer, n, c int) {
	if !d.native(loss, logits) && d.widen(1, func(b []device.Buffer) { d.SoftmaxCrossEntropy(site, b[0], b[1], b[2], n, c) }, loss, logits, labels) {
		return
	}
	d.writing(loss)
	defer d.written()
	st := d.storeOf(d.buf(logits).dt)
	k := d.kernel(xentSpec{F16: st.native()}, false, false, true, true)
	if !d.rowLimit(k, c) {
		return
	}
	d.run(k, groupsOf(n, 64), xentParams{N: uint32(n), C: uint32(c), Site: d.site(site)}, d.buf(logits), d.buf(labels), d.buf(loss), d.flags)
}

// SoftmaxCrossEntropyGrad sets dlogits = (softmax − onehot)·g[i] row by row.
func (d *Device) SoftmaxCrossEntropyGrad(site string, dlogits, logits, labels, g device.Buffer, n, c int) {
	if !d.native(dlogits, logits, g) && d.widen(1, func(b []device.Buffer) { d.SoftmaxCrossEntropyGrad(site, b[0], b[1], b[2], b[3], n, c) }, dlogits, logits, labels, g) {
		return
	}
	d.writing(dlogits)
	defer d.written()
	st := d.storeOf(d.buf(logits).dt)
	k := d.kernel(xentSpec{Grad: true, F16: st.native()}, false, false, false, true, true)
	if !d.rowLimit(k, c) {
		return
	}
	d.run(k, groupsOf(n, 64), xentParams{N: uint32(n), C: uint32(c), Site: d.site(site)}, d.buf(logits), d.buf(labels), d.buf(g), d.buf(dlogits), d.flags)
}

// rowsParams are the parameters of the kernels that take a row a
// workgroup (softmax.wgsl's stage row): Rows rows of Quads vec4s.
type rowsParams struct{ Rows, Quads uint32 }

// lineParams are the parameters of the kernels over lines of an axis
// (softmax.wgsl's stats and apply, scan.wgsl): Count lines of N elements
// Inner apart (the softmax's apply: Count elements).
type lineParams struct{ Count, N, Inner uint32 }

// xentParams are the fused softmax cross-entropy's (softmax_xent.wgsl
// and its gradient): N rows of C classes, a bad label reported at Site.
type xentParams struct{ N, C, Site uint32 }

func (s softmaxSpec) params() any {
	if s.Stage == "row" {
		return rowsParams{}
	}
	return lineParams{}
}

func (xentSpec) params() any { return xentParams{} }
