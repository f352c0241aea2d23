//go:build cgo || js

package webgpu

import (
	"slices"

	"github.com/extensor/extensor/device"
)

// CopyStrided copies src into dst as s describes.
func (d *Device) CopyStrided(dst, src device.Buffer, s device.Strided) {
	if (d.buf(dst).dt == device.Float16) != (d.buf(src).dt == device.Float16) && d.widen(1, func(b []device.Buffer) { d.CopyStrided(b[0], b[1], s) }, dst, src) {
		return
	}
	d.writing(dst)
	defer d.written()
	d.copyStrided(d.buf(dst), d.buf(src), s)
}

// copyStrided is CopyStrided, d.mu held, for buffers of one storage.
func (d *Device) copyStrided(dst, src *buffer, s device.Strided) {
	n := s.Len()
	if n == 0 || d.copyRun(dst, src, s, n) {
		return
	}
	// vec4s of both (4-byte elements, or f16), or of dst only (packed
	// float16: four halves, a vec2<u32>, no atomics).
	st := d.storeOf(dst.dt)
	packed := st.packed()
	vec := !packed && vecStrided(s, true)
	vecDst := !vec && vecStrided(s, false) && vecEnd(s) <= dst.n
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
	p := broadcastParamsOf(device.Broadcast{Shape: s.Shape, AStrides: s.SrcStrides, BStrides: s.DstStrides})
	p.AOff, p.BOff = uint32(s.SrcOffset), uint32(s.DstOffset)
	if vecDst {
		p.Row = uint32(row[0])
	}
	k := d.kernel(stridedSpec{Half: packed, F16: st.native(), Rank: len(s.Shape), Vec: vec, VecDst: vecDst}, false, true)
	d.run(k, groupsOf(n, 256), p, src, dst)
}

// copyRun records s as a buffer-to-buffer copy where it moves one run of
// n elements, contiguous in both buffers, that starts and ends on 4-byte
// words in each (any run of 4-byte elements; float16's at even offsets and
// of even length), between two buffers; it reports whether it did. On a
// CPU adapter the copy kernel, an invocation an element, takes several
// times a copy's time (docs/kernel-choices.md, elementwise).
func (d *Device) copyRun(dst, src *buffer, s device.Strided, n int) bool {
	if dst.b == src.b || !device.IsRowMajor(s.Shape, s.SrcStrides) || !device.IsRowMajor(s.Shape, s.DstStrides) {
		return false
	}
	size := dst.dt.Size()
	from, to, bytes := s.SrcOffset*size, s.DstOffset*size, n*size
	if from%4 != 0 || to%4 != 0 || bytes%4 != 0 {
		return false
	}
	d.copyBytes(dst, src, uint64(to), uint64(from), uint64(bytes))
	return true
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
