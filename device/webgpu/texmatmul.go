//go:build cgo || js

package webgpu

import (
	"fmt"

	"github.com/extensor/extensor/device"
	"github.com/oliverbestmann/webgpu/wgpu"
)

// The texture-input matrix product (matmul_tex.wgsl), chosen for CPU
// adapters (lavapipe): each invocation computes a block of texTM rows by
// texBlock columns from texel loads, which llvmpipe makes cheaper than
// storage-buffer loads. GPUs keep the storage kernel. Blocks of 32×32
// hold 1,024 accumulators an invocation, 32 KiB of spilled registers per
// SIMD batch on llvmpipe, and were the fastest block measured
// (docs/kernel-choices.md, matrix products). Products take 32×16 where
// 32×32 leaves a sixth or more of the columns its workgroups span past
// N (invocations whose lanes compute nothing), or where they have fewer
// workgroups of 32×32 than twice the threads running workgroups: 32×16
// gives the threads twice the workgroups.
const (
	texTM, texWG = 32, 8
	// texMinMACs is the smallest product the textures speed up: below
	// it, packing the operands costs more than the texel loads save
	// (docs/kernel-choices.md, matrix products).
	texMinMACs = 1 << 24
)

// texBlock returns how many columns of s an invocation of the texture
// kernel computes: 32, or 16 where 32 leaves a sixth of its workgroups'
// columns idle that 16 fills, or fewer than two workgroups a thread.
func (d *Device) texBlock(s device.GEMM) int {
	span := func(tn int) int { return groupsOf(s.N, tn*texWG) * tn * texWG }
	if 6*span(32) > 7*span(16) {
		return 16
	}
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
	// copied). out takes vec4s; one whose rows are not vec4s takes the
	// product in rows of nOut, a multiple of 4 (the columns past n are the
	// zeros of b's texture), in a scratch buffer copied into it after: the
	// kernel's scalar stores took llvmpipe several times as long to
	// compile (docs/kernel-choices.md).
	// op(a) transposed is laid out by rows (ARows), so that where its
	// rows are vec4s it copies or packs by vec4s, not by scalars.
	_, vecB, vecO := vec4s(y, s)
	aRows := s.TransA
	vecA := !s.TransA && k%4 == 0 && s.StrideA%4 == 0 || aRows && m%4 == 0 && s.StrideA%4 == 0
	st := d.storeOf(o.dt)
	dst, nOut, offDst := o, n, s.OffDst
	if !vecO {
		nOut, offDst = groupsOf(n, 4)*4, 0
		var err error
		if dst, err = d.alloc(device.Float32, s.Batch*m*nOut); err != nil {
			d.fail(fmt.Errorf("webgpu: matmul_tex: %v", err))
			return true
		}
		defer d.free(dst)
		if s.Accumulate {
			d.copyStrided(dst, o, padding(s, nOut, true))
		}
	}
	// The bias is added in the store, where the first part of k is, and
	// laid out by rows op(a) is summed along its rows by the invocations
	// of the first columns into s.Sums: dispatch parameters, not kernel
	// variants, the index flags and the spare buffer bound in the place of
	// those not set (read-write as they are: WebGPU refuses one buffer at
	// two bindings of a dispatch where one is written).
	binds := []bindKind{textureIn, textureIn, storageRW, storageRW}
	bias, wantBias := d.flags, s.Bias != nil
	if wantBias {
		bias = d.buf(s.Bias)
	}
	sums, wantSums := d.spare, s.Sums != nil
	if aRows {
		binds = append(binds, storageRW)
		if wantSums {
			sums = d.buf(s.Sums)
		}
	}
	mul := d.kernelOf(texSpec{Stage: "mul", TM: texTM, TN: texTN, F16: st.native(), ARows: aRows}, binds...)
	d.roomForTextures(2) // both operands' textures: making b's never releases a's
	la := texLayout{wide: k, depth: m, rows: m, sw: ak, sk: ar, texels: groupsOf(k, 4)}
	if aRows {
		la = texLayout{wide: m, depth: groupsOf(k, 4) * 4, rows: k, sw: ar, sk: ak, texels: ha / 4}
	}
	ta, err := d.texture(la.texels, la.depth, 0)
	if err != nil {
		d.fail(fmt.Errorf("webgpu: matmul_tex: %v", err))
		return true
	}
	tb, err := d.texture(wb, groupsOf(k, 4)*4, 1) // zeros past k: the kernel reads whole texels of op(a)
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
			la.off = s.OffA + ja*s.StrideA
			la.vec = vecA && la.off%4 == 0
			d.texOperand(x, ta, la)
		}
		if i == 0 || s.StrideB != 0 {
			d.texOperand(y, tb, texLayout{wide: n, depth: groupsOf(k, 4) * 4, rows: k, off: s.OffB + i*s.StrideB, sw: bw, sk: bk, texels: wb, vec: vecB})
		}
		for row := 0; row < m; row += rowsPer {
			rows := min(rowsPer, m-row)
			for k0 := 0; k0 < k; k0 += kPer {
				entries := []wgpu.BindGroupEntry{{Binding: 1, TextureView: ta.view}, {Binding: 2, TextureView: tb.view}, {Binding: 3, Buffer: dst.b, Size: dst.bindSize()}, {Binding: 4, Buffer: bias.b, Size: bias.bindSize()}}
				if aRows {
					entries = append(entries, wgpu.BindGroupEntry{Binding: 5, Buffer: sums.b, Size: sums.bindSize()})
				}
				d.dispatchEntries(mul, uint32(groupsOf(nOut, texTN*texWG)), uint32(groupsOf(rows, texTM*texWG)), 1,
					texMulParams{M: uint32(m), K: uint32(k), N: uint32(nOut), Row0: uint32(row), K0: uint32(k0), K1: uint32(min(k, k0+kPer)), Out: uint32(offDst + i*m*nOut), Add: b2u(k0 > 0 || s.Accumulate),
						Sums: b2u(wantSums), Bias: uint32(n * b2i(wantBias && k0 == 0))},
					entries)
			}
		}
	}
	if dst != o {
		d.copyStrided(o, dst, padding(s, nOut, false))
	}
	return true
}

// padding returns the copy between out's matrices of s and the same with
// rows of nOut columns: into those (toPadded) or out of them.
func padding(s device.GEMM, nOut int, toPadded bool) device.Strided {
	shape := []int{s.Batch, s.M, s.N}
	out, pad := []int{s.M * s.N, s.N, 1}, []int{s.M * nOut, nOut, 1}
	if toPadded {
		return device.Strided{Shape: shape, SrcStrides: out, DstStrides: pad, SrcOffset: s.OffDst}
	}
	return device.Strided{Shape: shape, SrcStrides: pad, DstStrides: out, DstOffset: s.OffDst}
}

// texLayout is where an operand of the texture kernel lies in its buffer:
// wide entries (op(a)'s terms of k, op(b)'s columns) sw elements apart,
// rows depths (op(a)'s rows, op(b)'s terms of k) sk apart, from off;
// texels is how many texels of a depth its texture holds, depth how many
// depths (zeros past rows), and vec tells whether its texels are aligned
// vec4s of it.
type texLayout struct {
	wide, depth, rows, off, sw, sk, texels int
	vec                                    bool
}

// texOperand records what fills t with the operand of src laid out as l:
// a copy where its texels are float32 vec4s whose depths lie a multiple
// of 256 bytes apart (the alignment WebGPU asks of the rows of a copy;
// lavapipe copies with memcpy), else a pack by vec4s (vec) or by scalars;
// op(a) is laid out along k, or by rows where it is transposed
// (docs/kernel-choices.md, matrix products).
func (d *Device) texOperand(src *buffer, t opTexture, l texLayout) {
	st := d.storeOf(src.dt)
	half := src.dt == device.Float16
	row := groupsOf(l.wide, 4) // the texels of a depth that hold entries
	if src.b == nil {
		d.fail(errFreed("matmul_tex"))
		return
	}
	if l.vec && !half && l.depth == l.rows && l.sk%64 == 0 && l.off+(l.depth-1)*l.sk+4*row <= src.n {
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
	k := d.kernelOf(texSpec{Stage: "pack", F16: st.native(), Vec: l.vec}, storageRO, textureOut)
	items := l.texels * l.depth
	d.dispatchEntries(k, uint32(min(groupsOf(items, 256), maxGroups)), uint32(groupsOf(groupsOf(items, 256), maxGroups)), 1,
		texPackParams{Wide: uint32(l.wide), Depth: uint32(l.depth), Rows: uint32(l.rows), Off: uint32(l.off), StrideWide: uint32(l.sw), StrideDepth: uint32(l.sk), Texels: uint32(l.texels)},
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
	return k > 0 && groupsOf(k, 4) <= limit && ha <= limit && wb <= limit && groupsOf(k, 4)*4 <= limit && groupsOf(n, texTN*texWG) <= maxGroups
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
	t, err := d.newTexture(w, h)
	if err != nil {
		return opTexture{}, err
	}
	if d.textures == nil {
		d.textures = map[texKey]opTexture{}
	}
	d.textures[key] = t
	return t, nil
}

// newTexture returns a new rgba32float texture of at least w×h texels,
// and its view, for the caller to release.
func (d *Device) newTexture(w, h int) (opTexture, error) {
	// No side a power of two: llvmpipe compiles a kernel again for each
	// combination of its textures' sides being powers of two or not
	// (docs/kernel-choices.md, matrix products). A side at the adapter's
	// limit stays.
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
	return opTexture{t, v}, nil
}

// release releases t's view and texture, once (wgpu keeps them alive for
// work already recorded).
func (t *opTexture) release() {
	if t.tex == nil {
		return
	}
	t.view.Release()
	t.tex.Release()
	t.tex, t.view = nil, nil
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
		t.release()
		delete(d.textures, k)
	}
}

// texMulParams are stage mul's parameters: out (M×N, at Out) gets the
// terms k in [K0, K1) of rows from Row0 of op(a)·op(b), plus bias in its
// first Bias columns (none where Bias = 0), added to what it holds where
// Add ≠ 0; where Sums ≠ 0 (op(a) laid out by rows), sums gets the same
// terms of op(a)'s rows summed, added likewise.
type texMulParams struct{ M, K, N, Row0, K0, K1, Out, Add, Sums, Bias uint32 }

// texPackParams are stage pack's: Wide entries StrideWide apart (4 a
// texel, Texels a depth) at each of Depth depths StrideDepth apart, from
// Off, zeros at depths from Rows.
type texPackParams struct{ Wide, Depth, Rows, Off, StrideWide, StrideDepth, Texels uint32 }

func (s texSpec) params() any {
	if s.Stage == "pack" {
		return texPackParams{}
	}
	return texMulParams{}
}
