//go:build cgo || js

package webgpu

import (
	"fmt"
	"math/bits"
	"runtime"

	"github.com/oliverbestmann/webgpu/wgpu"

	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/device/im2col"
)

// The direct convolution (conv_tex.wgsl), chosen for CPU adapters: the
// images are packed into an rgba32float texture 4 channels a texel, with
// their padding as a border of zeros, the filters likewise, and each
// invocation computes convTM filters × convTN output pixels straight from
// the texels, an implicit matrix product with no im2col matrix.
const (
	convTM, convTN = 32, 16 // filters × output pixels an invocation (fwd)
	convWG         = 64     // invocations a workgroup (fwd)
	dwTM, dwTN     = 32, 16 // filters × (channel, tap) columns an invocation (dw)
)

// convImages packs images n0…n0+nb−1 of x (C channels of H×W) into the
// texture of slot with borders of ph rows and pw columns, and returns its
// view (nil after recording a failure).
func (d *Device) convImages(x *buffer, n0, nb, c, h, w, ph, pw, slot int) *wgpu.TextureView {
	t, err := d.texture(groupsOf(c, 4)*(w+2*pw), nb*(h+2*ph), slot)
	if err != nil {
		d.fail(fmt.Errorf("webgpu: conv_tex/pack: %v", err))
		return nil
	}
	d.packImages(t.view, x, n0, nb, c, h, w, ph, pw)
	return t.view
}

// packImages records stage pack: images n0…n0+nb−1 of x into the texture
// of view v (groupsOf(c, 4)·(w + 2·pw) × nb·(h + 2·ph) texels), as
// convImages.
func (d *Device) packImages(v *wgpu.TextureView, x *buffer, n0, nb, c, h, w, ph, pw int) {
	hp, wp := h+2*ph, w+2*pw
	q := groupsOf(c, 4)
	rows := nb * q * hp
	d.packTexture("pack", rows, convPackParams{W: uint32(w), H: uint32(h), C: uint32(c), Wp: uint32(wp), Hp: uint32(hp), PW: uint32(pw), PH: uint32(ph), Q: uint32(q),
		Rows: uint32(rows), Src: uint32(n0 * c * h * w), MagicQ: magic(q), MagicHp: magic(hp)}, x, v)
}

// convRows writes the rows' window entries of images n0…n0+nb−1 of x
// under the window g (of fewer than 4 channels) into the texture of slot
// (stage rows), and returns its view (nil after recording a failure).
func (d *Device) convRows(x *buffer, n0, nb int, g device.Window2D, slot int) *wgpu.TextureView {
	_, ow := g.Out()
	q, hp := groupsOf(g.C*g.KW, 4), g.H+2*g.PH
	t, err := d.texture(q*ow, nb*hp, slot)
	if err != nil {
		d.fail(fmt.Errorf("webgpu: conv_tex/rows: %v", err))
		return nil
	}
	rows := nb * hp * q
	d.packTexture("rows", rows, convRowsParams{W: uint32(g.W), H: uint32(g.H), C: uint32(g.C), KW: uint32(g.KW), Q: uint32(q), SW: uint32(g.SW), DW: uint32(g.DW),
		PW: uint32(g.PW), PH: uint32(g.PH), OW: uint32(ow), Hp: uint32(hp), Rows: uint32(rows), Src: uint32(n0 * g.C * g.H * g.W),
		MagicQ: magic(q), MagicHp: magic(hp)}, x, t.view)
	return t.view
}

// packTexture records stage (pack or rows) of conv_tex.wgsl, which writes
// the texture of view v from x, rows rows of texels an invocation, with
// parameters p.
func (d *Device) packTexture(stage string, rows int, p any, x *buffer, v *wgpu.TextureView) {
	k := d.kernelOf(convTexSpec{Stage: stage, F16: d.storeOf(x.dt).native()}, storageRO, textureOut)
	d.dispatchEntries(k, uint32(min(groupsOf(rows, 256), maxGroups)), uint32(groupsOf(groupsOf(rows, 256), maxGroups)), 1, p,
		[]wgpu.BindGroupEntry{{Binding: 1, Buffer: x.b, Size: x.bindSize()}, {Binding: 2, TextureView: v}})
}

// convFilters packs the filters w (f filters of c channels, taps taps) into
// the texture of slot, turned for the transposed convolution if flip, or
// for stage rows (taps = KH, rows of kw) if kw > 0.
func (d *Device) convFilters(w *buffer, f, c, taps, slot int, flip bool, kw int) *wgpu.TextureView {
	row := groupsOf(c, 4) * taps
	if kw > 0 {
		row = groupsOf(c*kw, 4) * taps
	}
	t, err := d.texture(row, f, slot)
	if err != nil {
		d.fail(fmt.Errorf("webgpu: conv_tex/wpack: %v", err))
		return nil
	}
	v := t.view
	st := d.storeOf(w.dt)
	k := d.kernelOf(convTexSpec{Stage: "wpack", Taps: taps, Flip: flip, Rows: kw > 0, F16: st.native()}, storageRO, textureOut)
	d.dispatchEntries(k, uint32(groupsOf(f*row, 256)), 1, 1, convWPackParams{F: uint32(f), C: uint32(c), Texels: uint32(row), KW: uint32(kw)},
		[]wgpu.BindGroupEntry{{Binding: 1, Buffer: w.b, Size: w.bindSize()}, {Binding: 2, TextureView: v}})
	return v
}

// convFits reports whether the direct convolution takes g with f
// filters. Convolutions of less work than directMinFlops (by default,
// as much as a product of tuneMinMACs) are left to im2col and the small
// matrix product: their time is about the dispatches', and their kernels
// compile in a fraction of the direct kernels' time on llvmpipe
// (docs/kernel-choices.md, convolutions).
func (d *Device) convFits(g device.Window2D, f int) bool {
	if d.noDirectConv || g.N*convImageFlops(g, f) < d.directMinFlops {
		return false
	}
	limit := int(d.limits.MaxTextureDimension2D)
	hp, wp := g.H+2*g.PH, g.W+2*g.PW
	k4 := groupsOf(g.C, 4) * g.KH * g.KW
	return d.loopLimited && g.C >= 4 && f >= 8 && convImageFlops(g, f) <= maxDispatchFlops &&
		groupsOf(g.C, 4)*wp <= limit && hp <= limit && k4 <= limit && f <= limit && wp <= maxLoop && k4 <= maxLoop
}

// rowsFits reports whether the direct convolution's forward takes g, of
// images of fewer than 4 channels, with f filters through the texture of
// its rows' window entries (stage rows): C·KW entries a row in at most
// rowsMostTexels texels, and enough work (directMinFlops), on CPU
// adapters. Its gradients are im2col's.
func (d *Device) rowsFits(g device.Window2D, f int) bool {
	if d.noDirectConv || !d.loopLimited || g.C >= 4 || f < 8 || g.N*rowsImageFlops(g, f) < d.directMinFlops {
		return false
	}
	oh, ow := g.Out()
	q, hp := groupsOf(g.C*g.KW, 4), g.H+2*g.PH
	limit := int(d.limits.MaxTextureDimension2D)
	return oh*ow > 0 && q <= rowsMostTexels && rowsImageFlops(g, f) <= maxDispatchFlops &&
		q*ow <= limit && hp <= limit && q*g.KH <= limit && f <= limit && ow <= maxLoop && q*g.KH <= maxLoop
}

// rowsMostTexels is the most texels of a row's window entries stage
// rows writes (16 entries: 3 channels of a window 5 wide, say).
const rowsMostTexels = 4

// rowsImageFlops is the work of the forward of the convolution g with f
// filters on one image through its rows' texture.
func rowsImageFlops(g device.Window2D, f int) int {
	oh, ow := g.Out()
	return 2 * f * oh * ow * groupsOf(g.C*g.KW, 4) * 4 * g.KH
}

// convImageFlops is the work of the convolution g with f filters on one
// image (of its gradients, likewise).
func convImageFlops(g device.Window2D, f int) int {
	oh, ow := g.Out()
	return 2 * f * oh * ow * groupsOf(g.C, 4) * 4 * g.KH * g.KW
}

// convStep is the number of images a dispatch of the convolution g with
// f filters takes: as many as fit the texture of hp rows an image and
// maxDispatchFlops.
func (d *Device) convStep(g device.Window2D, f, hp int) int {
	return max(min(g.N, int(d.limits.MaxTextureDimension2D)/hp, maxDispatchFlops/max(convImageFlops(g, f), 1)), 1)
}

// dtypesTaken reports whether the direct kernels take these buffers:
// float32 or float16 (WGSL's f16 read as it is, the results written to
// float32 stand-ins; packed words wholly on stand-ins).
func dtypesTaken(bufs ...device.Buffer) bool {
	for _, b := range bufs {
		if b != nil && b.DType() != device.Float32 && b.DType() != device.Float16 {
			return false
		}
	}
	return true
}

// convForward records the fwd stage: f filters (texture wv, k4 texels a
// row) over the images of texture xv (borders included: wp×hp texels an
// image and channel quad), pix output pixels of oh×ow, into o at off,
// adding bias b unless nil.
func (d *Device) convForward(o, b *buffer, xv, wv *wgpu.TextureView, f, pix, ow, ohw, k4, off int, g device.Window2D, wp, hp int) {
	// A workgroup of wy blocks of filters (at most 8, as many as f needs)
	// by wx of pixels.
	wy := 1
	for wy < 8 && wy*convTM < f {
		wy *= 2
	}
	wx := convWG / wy
	k := d.kernelOf(convTexSpec{Stage: "fwd", TM: convTM, TN: convTN}, textureIn, textureIn, storageRW, storageRO)
	// Without a bias, binding 4 holds the index flags' buffer, unread:
	// one kernel for both.
	hasBias, bias := uint32(1), b
	if b == nil {
		hasBias, bias = 0, d.flags
	}
	// out and bias are float32: Conv2d and Conv2dBackward widen float16.
	entries := []wgpu.BindGroupEntry{{Binding: 1, TextureView: xv}, {Binding: 2, TextureView: wv}, {Binding: 3, Buffer: o.b, Size: o.bindSize()},
		{Binding: 4, Buffer: bias.b, Size: bias.bindSize()}}
	d.dispatchEntries(k, uint32(groupsOf(pix, convTN*wx)), uint32(groupsOf(f, convTM*wy)), 1,
		convFwdParams{F: uint32(f), P: uint32(pix), OW: uint32(ow), OHW: uint32(ohw), SW: uint32(g.SW), SH: uint32(g.SH), DW: uint32(g.DW), DH: uint32(g.DH),
			KW: uint32(g.KW), KH: uint32(g.KH), Wp: uint32(wp), Hp: uint32(hp), Texels: uint32(k4), Out: uint32(off), Bias: hasBias, WXLog: uint32(bits.TrailingZeros(uint(wx)))}, entries)
}

// Conv2d runs the convolution on the direct kernels when they take it
// (conv2dDirect), else as im2col and matrix products (package im2col).
func (d *Device) Conv2d(out, x, w, b device.Buffer, c device.Conv2D, keep bool) ([]device.Buffer, error) {
	if c.Groups <= 1 && out.Len() > 0 {
		if ok, kept := d.conv2dDirect(out, x, w, b, c.Window2D, c.F, keep); ok {
			return kept, nil
		}
	}
	return im2col.Conv2d(d, out, x, w, b, c, keep)
}

// ColumnBudget bounds one chunk of im2col's columns (im2col.Budgeter):
// im2col.ColsBudget on CPU adapters, where a chunk beyond the caches
// costs; on GPUs 2²⁴ elements (64 MiB of float32) or the binding limit's
// worth, so that a batch's products run as one dispatch.
func (d *Device) ColumnBudget() int {
	if d.loopLimited {
		return im2col.ColsBudget
	}
	return int(min(1<<24, d.limits.MaxStorageBufferBindingSize/4))
}

// conv2dDirect sets out (N, F, OH, OW) to the convolution of the images x
// (N, C, H, W) with the f filters w (F, C, KH, KW), plus b (F) if not
// nil, on the direct kernels, and reports whether it could: they take
// images of at least 4 channels and 8 filters, of enough work
// (convFits), and images of fewer channels through their rows' window
// entries (rowsFits), on CPU adapters, float32 or float16. With keep,
// a forward of one dispatch keeps the texture of x for Conv2dBackward
// (keptImages).
func (d *Device) conv2dDirect(out, x, w, b device.Buffer, g device.Window2D, f int, keep bool) (ok bool, kept []device.Buffer) {
	if !dtypesTaken(out, x, w, b) || b != nil && b.DType() != out.DType() {
		return false, nil
	}
	d.mu.Lock()
	fits, rows := d.convFits(g, f), d.rowsFits(g, f)
	d.mu.Unlock()
	if !fits && !rows {
		return false, nil
	}
	// Float16 as packed words: all on float32 stand-ins (see MatMul). (The
	// call below on out's and b's stand-ins has float16 x and w beside
	// them: native each pair.)
	if !(d.native(x, w) && d.native(out, b)) && d.widenFresh(1, func(s []device.Buffer) { d.conv2dDirect(s[0], s[1], s[2], s[3], g, f, false) }, out, x, w, b) {
		return true, nil
	}
	// The forward writes float32, and reads its bias so: a float16 out and
	// bias take stand-ins (the images and filters are packed into
	// textures as they are), one kernel for llvmpipe to compile, not two.
	// The forward sets every element of out: its stand-in starts unset.
	if d.widenFresh(1, func(s []device.Buffer) { _, kept = d.conv2dDirect(s[0], x, w, s[1], g, f, keep) }, out, b) {
		return true, kept
	}
	d.writing(out)
	defer d.written()
	o, xb, wb := d.buf(out), d.buf(x), d.buf(w)
	var bb *buffer
	if b != nil {
		bb = d.buf(b)
	}
	oh, ow := g.Out()
	taps := g.KH * g.KW
	d.roomForTextures(2)
	if rows {
		// The rows' window entries as images of C·KW channels under a
		// window of KH taps by one, the filters likewise.
		wv := d.convFilters(wb, f, g.C, g.KH, 3, false, g.KW)
		t := device.Window2D{KH: g.KH, KW: 1, SH: g.SH, SW: 1, DH: g.DH, DW: 1}
		hp := g.H + 2*g.PH
		step := max(min(g.N, int(d.limits.MaxTextureDimension2D)/hp, maxDispatchFlops/max(rowsImageFlops(g, f), 1)), 1)
		for n0 := 0; n0 < g.N; n0 += step {
			nb := min(step, g.N-n0)
			xv := d.convRows(xb, n0, nb, g, 2)
			if xv == nil || wv == nil {
				return true, nil
			}
			d.convForward(o, bb, xv, wv, f, nb*oh*ow, ow, oh*ow, groupsOf(g.C*g.KW, 4)*g.KH, n0*f*oh*ow, t, ow, hp)
		}
		return true, nil
	}
	hp, wp := g.H+2*g.PH, g.W+2*g.PW
	wv := d.convFilters(wb, f, g.C, taps, 3, false, 0)
	step := d.convStep(g, f, hp)
	for n0 := 0; n0 < g.N; n0 += step {
		nb := min(step, g.N-n0)
		var xv *wgpu.TextureView
		if keep && nb == g.N && d.keepsImages(g, f) {
			k := d.keepImages(xb, g)
			if k == nil {
				return true, nil
			}
			xv, kept = k.tex.view, []device.Buffer{k}
		} else {
			xv = d.convImages(xb, n0, nb, g.C, g.H, g.W, g.PH, g.PW, 2)
		}
		if xv == nil || wv == nil {
			return true, kept
		}
		d.convForward(o, bb, xv, wv, f, nb*oh*ow, ow, oh*ow, groupsOf(g.C, 4)*taps, n0*f*oh*ow, g, wp, hp)
	}
	return true, kept
}

// keptImages is the texture of a convolution's images that its forward
// packed, kept for its gradients (device.Convolver's keep): a
// device.Buffer of no elements, whose texture Free, Close or, once it is
// unreachable, the garbage collector releases.
type keptImages struct {
	tex *opTexture
	x   *resource // the images'
	g   device.Window2D
}

// Len is 0: a kept texture holds no elements of a buffer.
func (*keptImages) Len() int { return 0 }

// DType is float32, the texture's.
func (*keptImages) DType() device.DType { return device.Float32 }

// keepsImages reports whether the forward of g with f filters keeps its
// images' texture for the gradients: where the direct kernels take the
// filters' gradient in one dispatch (the input's, where they take it
// too). The caller holds d.mu.
func (d *Device) keepsImages(g device.Window2D, f int) bool {
	pl, ok := d.planBackward(g, f, false)
	return ok && pl.step >= g.N
}

// keepImages packs all the images x of g into a texture of their own
// (stage pack), kept until freed, or records a failure and returns nil.
// The caller holds d.mu.
func (d *Device) keepImages(x *buffer, g device.Window2D) *keptImages {
	hp, wp := g.H+2*g.PH, g.W+2*g.PW
	t, err := d.newTexture(groupsOf(g.C, 4)*wp, g.N*hp)
	if err != nil {
		d.fail(fmt.Errorf("webgpu: conv_tex/pack, the images kept for the gradients: %v", err))
		return nil
	}
	d.packImages(t.view, x, 0, g.N, g.C, g.H, g.W, g.PH, g.PW)
	k := &keptImages{tex: &t, x: x.resource, g: g}
	if d.kept == nil {
		d.kept = map[*opTexture]struct{}{}
	}
	d.kept[k.tex] = struct{}{}
	runtime.AddCleanup(k, d.collectTexture, k.tex)
	return k
}

// keptView returns the view of the texture Conv2d kept in kept for the
// images x of g, or nil. The caller holds d.mu.
func (d *Device) keptView(kept []device.Buffer, x *buffer, g device.Window2D) *wgpu.TextureView {
	for _, b := range kept {
		if k, ok := b.(*keptImages); ok && k.tex.tex != nil && k.x == x.resource && k.g == g {
			return k.tex.view
		}
	}
	return nil
}

// releaseKept releases a kept texture, once. The caller holds d.mu.
func (d *Device) releaseKept(t *opTexture) {
	t.release()
	delete(d.kept, t)
}

// collectTexture releases a kept texture that became unreachable
// without Free.
func (d *Device) collectTexture(t *opTexture) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.releaseKept(t)
}

// convSplits is the number of invocations the filters' gradient aims at:
// the output rows are split so that about as many run.
var convSplits = 1024

// backwardPlan is how Conv2dBackward divides its work: dispatches of step
// images, the filters' gradient summed in splits of per output rows (n,
// oy), splits in all.
type backwardPlan struct {
	t                 device.Window2D // the transposed convolution, its images gy
	step, per, splits int
	k4, fb, kb        int // texels of a filter; blocks of filters and of columns
}

// planBackward plans the gradients of the convolution g with f filters
// (the input's too if withX), or reports that the direct kernels do not
// take them. The caller holds d.mu.
func (d *Device) planBackward(g device.Window2D, f int, withX bool) (backwardPlan, bool) {
	oh, ow := g.Out()
	// gy's texture is bordered for the input's gradient, the convolution
	// of gy with the filters turned by 180°, with stride 1.
	t := g
	t.C, t.H, t.W, t.PH, t.PW = f, oh, ow, 0, 0
	if withX {
		t.PH, t.PW, t.SH, t.SW = (g.KH-1)*g.DH-g.PH, (g.KW-1)*g.DW-g.PW, 1, 1
		if !d.convFits(t, g.C) || g.SH != 1 || g.SW != 1 || t.PH < 0 || t.PW < 0 {
			return backwardPlan{}, false
		}
	}
	if !d.convFits(g, f) || oh*ow == 0 || ow+1 > maxLoop {
		return backwardPlan{}, false
	}
	k4 := groupsOf(g.C, 4) * g.KH * g.KW
	fb, kb := groupsOf(f, dwTM), groupsOf(k4, dwTN/4)
	rows := max(g.H+2*g.PH, oh+2*t.PH)
	step := min(d.convStep(g, f, rows), d.convStep(t, g.C, rows))
	// Splits of about convSplits invocations, each summing at most
	// maxLoop pixels (llvmpipe ends longer loops early).
	per := groupsOf(g.N*oh, min(max(convSplits/(fb*kb), 1), g.N*oh))
	per = max(min(per, maxLoop/(ow+1)), 1)
	splits := 0
	for n0 := 0; n0 < g.N; n0 += step {
		splits += groupsOf(min(step, g.N-n0)*oh, per)
	}
	if uint64(splits*f*(g.C*g.KH*g.KW+1))*4 > d.limits.MaxStorageBufferBindingSize {
		return backwardPlan{}, false // too many partial sums: the matrix products take it
	}
	return backwardPlan{t, step, per, splits, k4, fb, kb}, true
}

// Conv2dBackward runs the convolution's gradients on the direct kernels
// when they take them (conv2dBackwardDirect, the filters' gradient
// wanted), else as im2col and matrix products (package im2col).
func (d *Device) Conv2dBackward(gx, gw, gb, x, w, gy device.Buffer, c device.Conv2D, kept []device.Buffer) error {
	if pl, ok := d.directPlan(c, gx, gw, x, w, gy); ok {
		k := c.C * c.KH * c.KW
		gwb, err := d.Alloc(gw.DType(), c.F*(k+1))
		if err != nil {
			return fmt.Errorf("webgpu: conv2d's filters' gradient with the bias's: %w", err)
		}
		defer d.Free(gwb)
		d.conv2dBackwardDirect(pl, gx, gwb, x, w, gy, c.Window2D, c.F, kept)
		d.CopyStrided(gw, gwb, device.Strided{Shape: []int{c.F, k}, SrcStrides: []int{k + 1, 1}, DstStrides: []int{k, 1}})
		if gb != nil {
			d.CopyStrided(gb, gwb, device.Strided{Shape: []int{c.F}, SrcStrides: []int{k + 1}, DstStrides: []int{1}, SrcOffset: k})
		}
		return nil
	}
	return im2col.Conv2dBackward(d, gx, gw, gb, x, w, gy, c, kept)
}

// directPlan plans the gradients of the convolution c on the direct
// kernels, or reports that they do not take them: with the filters'
// gradient wanted, no groups, float32 or float16 buffers (gx may be nil),
// and as planBackward takes the geometry.
func (d *Device) directPlan(c device.Conv2D, gx, gw, x, w, gy device.Buffer) (backwardPlan, bool) {
	if c.Groups > 1 || gw == nil || gy.Len() == 0 || x.Len() == 0 || !dtypesTaken(gx, gw, x, w, gy) {
		return backwardPlan{}, false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.planBackward(c.Window2D, c.F, gx != nil)
}

// conv2dBackwardDirect sets gwb (F, C·KH·KW + 1) to the gradient of
// Conv2d's filters, the bias's as its last column, and gx (N, C, H, W) to
// its input's unless gx is nil, for the upstream gradient gy (N, F, OH,
// OW), on the direct kernels as directPlan planned them: for gx, stride 1
// and padding of at most the dilated window's reach (the input's
// gradient is then the convolution of gy, bordered with zeros, with the
// filters turned by 180°).
func (d *Device) conv2dBackwardDirect(pl backwardPlan, gx, gwb, x, w, gy device.Buffer, g device.Window2D, f int, kept []device.Buffer) {
	if !d.native(gx, gwb, x, w, gy) && d.widenFresh(2, func(s []device.Buffer) { d.conv2dBackwardDirect(pl, s[0], s[1], s[2], s[3], s[4], g, f, nil) }, gx, gwb, x, w, gy) {
		return // float16 as packed words: on float32 stand-ins (see MatMul)
	}
	// The kernels read WGSL's f16 as it is and write float32: a float16
	// gradient takes a float32 stand-in (the filters' gradient is summed
	// into one, and the images' is written by the forward's kernel), which
	// starts unset: the kernels set every element of gx and gwb.
	run := func(gx, gwb device.Buffer) {
		d.writing(gx, gwb)
		defer d.written()
		d.conv2dBackward(pl, gx, gwb, x, w, gy, g, f, kept)
	}
	if !d.widenFresh(2, func(s []device.Buffer) { run(s[0], s[1]) }, gx, gwb) {
		run(gx, gwb)
	}
}

// conv2dBackward records Conv2dBackward as planned by pl. The caller
// holds d.mu.
func (d *Device) conv2dBackward(pl backwardPlan, gx, gwb, x, w, gy device.Buffer, g device.Window2D, f int, kept []device.Buffer) {
	t := pl.t
	oh, ow := g.Out()
	taps := g.KH * g.KW
	k4, fb, kb := pl.k4, pl.fb, pl.kb
	hp, wp := g.H+2*g.PH, g.W+2*g.PW
	hq, wq := oh+2*t.PH, ow+2*t.PW
	row := g.C*taps + 1
	o := d.buf(gwb)
	part := o
	if pl.splits > 1 {
		var err error
		if part, err = d.alloc(device.Float32, pl.splits*f*row); err != nil {
			d.fail(fmt.Errorf("webgpu: conv_tex/dw: the partial sums of %d splits: %v", pl.splits, err))
			return
		}
		defer d.free(part)
	}
	k := d.kernelOf(convTexSpec{Stage: "dw", TM: dwTM, TN: dwTN}, textureIn, textureIn, storageRW)
	d.roomForTextures(3)
	var wv *wgpu.TextureView
	if gx != nil {
		wv = d.convFilters(d.buf(w), g.C, f, taps, 4, true, 0)
	}
	xb, yb := d.buf(x), d.buf(gy)
	first := 0 // the first split of the dispatch
	for n0 := 0; n0 < g.N; n0 += pl.step {
		nb := min(pl.step, g.N-n0)
		var xv *wgpu.TextureView
		if nb == g.N {
			xv = d.keptView(kept, xb, g) // the forward's, where kept
		}
		if xv == nil {
			xv = d.convImages(xb, n0, nb, g.C, g.H, g.W, g.PH, g.PW, 2)
		}
		yv := d.convImages(yb, n0, nb, f, oh, ow, t.PH, t.PW, 5)
		if xv == nil || yv == nil || gx != nil && wv == nil {
			return
		}
		s := groupsOf(nb*oh, pl.per)
		gx0, gy0, err := grid(groupsOf(fb*kb*s, 64))
		if err != nil {
			d.fail(fmt.Errorf("webgpu: kernel conv_tex/dw: %v", err))
			return
		}
		d.dispatchEntries(k, gx0, gy0, 1,
			convDWParams{F: uint32(f), C: uint32(g.C), K4: uint32(k4), Taps: uint32(taps), KW: uint32(g.KW), OW: uint32(ow), OH: uint32(oh), RowsPerSplit: uint32(pl.per), Rows: uint32(nb * oh),
				SW: uint32(g.SW), SH: uint32(g.SH), DW: uint32(g.DW), DH: uint32(g.DH), Wp: uint32(wp), Hp: uint32(hp),
				GyWp: uint32(wq), GyHp: uint32(hq), GyPW: uint32(t.PW), GyPH: uint32(t.PH), Split0: uint32(first)},
			[]wgpu.BindGroupEntry{{Binding: 1, TextureView: xv}, {Binding: 2, TextureView: yv}, {Binding: 3, Buffer: part.b, Size: part.bindSize()}})
		first += s
		if gx != nil {
			d.convForward(d.buf(gx), nil, yv, wv, g.C, nb*g.H*g.W, g.W, g.H*g.W, groupsOf(f, 4)*taps, n0*g.C*g.H*g.W, t, wq, hq)
		}
	}
	if pl.splits > 1 {
		d.reduce(device.Sum, o, part, false, []axis{{f * row, 1}}, []axis{{pl.splits, f * row}}, 1)
	}
}

// convPackParams are conv_tex's stage pack's parameters: Rows (N·Q·Hp)
// rows of Q channel quads of images W×H of C channels, from Src, into
// texels Wp×Hp an image and quad, with borders of PW columns and PH rows;
// MagicQ and MagicHp are Q's and Hp's magic numbers (udiv).
type convPackParams struct {
	W, H, C, Wp, Hp, PW, PH, Q, Rows, Src uint32
	MagicQ, MagicHp                       uint32
}

// convRowsParams are stage rows's: Rows (N·Hp·Q) rows of OW texels, Q
// texel quads of window entries for each row of images W×H of C
// channels, from Src, under a window KW wide with stride SW, dilation DW
// and padding PW, PH, for OW output columns, Hp = H + 2·PH rows an
// image; MagicQ and MagicHp are Q's and Hp's magic numbers (udiv).
type convRowsParams struct {
	W, H, C, KW, Q, SW, DW, PW, PH, OW, Hp, Rows, Src uint32
	MagicQ, MagicHp                                   uint32
}

// convWPackParams are stage wpack's: F filters of C channels, Texels
// (C4·KH·KW, or for stage rows' filters Q·KH of rows KW wide) a row.
type convWPackParams struct{ F, C, Texels, KW uint32 }

// convFwdParams are stage fwd's: F filters over P output pixels (N·OH·OW;
// OW a row, OHW an image) with strides SW, SH and dilations DW, DH, from
// images Wp×Hp texels (borders included) and filters KH×KW of Texels
// (C4·KH·KW) texels, into out at Out, adding the bias where Bias is 1;
// a workgroup covers 2^WXLog blocks of pixels.
type convFwdParams struct {
	F, P, OW, OHW, SW, SH, DW, DH, KW, KH, Wp, Hp, Texels, Out, Bias, WXLog uint32
}

// convDWParams are stage dw's: F filters of C channels, K4 (C4·KH·KW)
// columns of Taps (KH·KW) taps, KW a row, over output pixels OW×OH with
// strides SW, SH and dilations DW, DH, Rows (images·OH) rows in splits of
// RowsPerSplit, the first of this dispatch Split0; x's texture is Wp×Hp
// texels an image, gy's GyWp×GyHp with borders of GyPW columns and GyPH
// rows.
type convDWParams struct {
	F, C, K4, Taps, KW, OW, OH, RowsPerSplit, Rows, SW, SH, DW, DH uint32
	Wp, Hp, GyWp, GyHp, GyPW, GyPH, Split0                         uint32
}

func (s convTexSpec) params() any {
	switch s.Stage {
	case "pack":
		return convPackParams{}
	case "rows":
		return convRowsParams{}
	case "wpack":
		return convWPackParams{}
	case "fwd":
		return convFwdParams{}
	}
	return convDWParams{}
}
