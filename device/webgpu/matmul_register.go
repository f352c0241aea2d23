//go:build cgo || js

package webgpu

import (
	"fmt"

	"github.com/extensor/extensor/device"
)

// The register-blocked matmul kernel (shaders/matmul.wgsl): its blocks,
// its split over k and its kernel names.

// matMulRegister records the products with the register-blocked kernel:
// blocks of 16×16 where k runs long enough, of 8×16 for short k and for
// the DotK variant (on lavapipe, the fastest of 8×8, 8×16 and 16×16 for
// each), and of 16×12 or 8×12 for DotK products at most 12 wide
// (registerBlocks); docs/kernel-choices.md, matrix products.
//
// Products of fewer than tuneMinMACs multiply-adds, whose time is the
// dispatch's whatever the block, take blocks of 4×4 and scalar loads: a
// kernel llvmpipe compiles several times faster than 16×16 blocks, and
// fewer variants of it.
func (d *Device) matMulRegister(o, x, y *buffer, s device.GEMM) {
	va, vb, vo := vec4s(y, s)
	tm, tn, dotK, flat := d.registerBlocks(s)
	if small(s) {
		va, vb, vo = false, false, false
	}
	// MatMul widens float16 products: the kernel reads and writes float32.
	parts := d.kParts(s)
	out, ps, finish := d.splitOut(o, s, parts)
	if out == nil {
		return
	}
	defer finish()
	if parts > 1 {
		vo = s.N%4 == 0
	}
	ld := s.N
	if !vo && parts == 1 && !small(s) {
		// Rows that are not whole vec4s: the product in rows of a multiple
		// of 4, in scratch copied into out after, as the texture kernel's.
		// The blocks' scalar stores took llvmpipe about four times as long
		// to compile (docs/kernel-choices.md).
		ld = groupsOf(s.N, 4) * 4
		pad, err := d.alloc(device.Float32, s.Batch*s.M*ld)
		if err != nil {
			d.fail(fmt.Errorf("webgpu: matmul: rows padded to %d columns: %v", ld, err))
			return
		}
		defer d.free(pad)
		if s.Accumulate {
			d.copyStrided(pad, out, padding(s, ld, true))
		}
		defer d.copyStrided(out, pad, padding(s, ld, false))
		out, ps.OffDst, vo = pad, 0, true
	}
	kern := d.kernel(registerSpec{TM: tm, TN: tn, TransA: s.TransA, TransB: s.TransB, VecA: va, VecB: vb, VecO: vo,
		DotK: dotK, Flat: flat}, false, false, true)
	bm, bn := tm, tn
	if !flat {
		bm, bn = tm*registerWG, tn*registerWG
	}
	d.matMulDispatches(kern, bm, bn, out, x, y, ps, ld, va || dotK, vb || dotK, flat, parts)
}

// small reports whether s has fewer than tuneMinMACs multiply-adds in
// all.
func small(s device.GEMM) bool {
	return int64(s.Batch)*int64(s.M)*int64(s.N)*int64(s.K) < tuneMinMACs
}

// registerWG is the side of the register kernel's 8×8 workgroups.
const registerWG = 8

// registerBlocks returns the register kernel's block for s on d, tm×tn
// outputs an invocation; whether it reads both operands by vec4s along k
// (dotsAlongK); and whether, with fewer than registerWG column blocks, it
// numbers its blocks in one sequence (flat: see matmul.wgsl).
func (d *Device) registerBlocks(s device.GEMM) (tm, tn int, dotK, flat bool) {
	dotK = dotsAlongK(s)
	tm, tn = 8, 16
	switch {
	case small(s):
		tm, tn, dotK = 4, 4, false
	case !dotK && s.K >= 32:
		tm = 16
	case dotK && s.N <= 12:
		// Narrow rows times rows (a convolution's filters' gradient on
		// im2col: conv1's 10 columns): 12 columns waste fewer loads than
		// 16, and 16 rows, where they leave every thread a workgroup,
		// load 28 vec4s a step for 192 outputs where 8×16 loads 24 for
		// 128 (docs/kernel-choices.md, matrix products).
		tn = 12
		if groupsOf(groupsOf(s.M, 16)*s.Batch, 64) >= d.threads {
			tm = 16
		}
	}
	return tm, tn, dotK, groupsOf(s.N, tn) < registerWG
}

// minPartK is the fewest terms of k a part of a split product sums, and
// minSplitMACs the fewest multiply-adds of a product split: below them the
// second dispatch costs what the parts save.
const (
	minPartK     = 128
	minSplitMACs = 1 << 20
)

// kParts returns how many parts the register kernel splits s's k into on
// a CPU adapter: where s has fewer workgroups than the adapter has
// threads (lavapipe runs a workgroup on one thread), as many as give every
// thread one, each of at least minPartK terms (products of at least
// minSplitMACs); else 1. The parts are written to float32 scratch
// (Batch·M·N a part) and summed by a second kernel, so their sums add up
// in another order than a single part's (docs/kernel-choices.md, matrix
// products).
func (d *Device) kParts(s device.GEMM) int {
	if !d.loopLimited || s.K < 2*minPartK || s.Batch*s.M*s.N*s.K < minSplitMACs {
		return 1
	}
	tm, tn, _, flat := d.registerBlocks(s)
	groups := groupsOf(s.N, tn*registerWG) * groupsOf(s.M, tm*registerWG) * s.Batch
	if flat {
		groups = groupsOf(groupsOf(s.N, tn)*groupsOf(s.M, tm)*s.Batch, 64)
	}
	if groups >= d.threads {
		return 1
	}
	return min(groupsOf(d.threads, groups), s.K/minPartK)
}

// registerName is MatMulKernel's name for s on the register kernel.
func (d *Device) registerName(s device.GEMM) string {
	if n := d.kParts(s); n > 1 {
		return fmt.Sprintf("register, k in %d parts", n)
	}
	return "register"
}

// vec4s reports which of the products' matrices kernels may access as
// aligned vec4s: op(a) when it is
// stored transposed (K×M, its rows of M consecutive), op(b) when it is
// not (K×N), and out (M×N), each with its stored rows' lengths, offsets
// and batch strides multiples of 4. A vec4 of b's may run into the
// padding of a row LdB apart, never past it, and b's binding must hold
// the last row's padding too (a kernel's index past a binding is clamped
// into it, onto other entries).
func vec4s(y *buffer, s device.GEMM) (va, vb, vo bool) {
	va = s.TransA && s.M%4 == 0 && s.StrideA%4 == 0 && s.OffA%4 == 0
	vb = !s.TransB && s.RowB()%4 == 0 && s.StrideB%4 == 0 && s.OffB%4 == 0 &&
		(s.N%4 == 0 || y.n >= s.OffB+max(s.Batch-1, 0)*s.StrideB+s.K*s.RowB())
	vo = s.N%4 == 0 && s.OffDst%4 == 0
	return va, vb, vo
}

// dotsAlongK reports whether the register kernel reads op(a) and op(b)
// as vec4s along k (DotK in matmul.wgsl): both stored with their rows
// along k (a not transposed, b transposed: the product of rows with
// rows, as a convolution's filters' gradient), K, the row strides,
// offsets and batch strides multiples of 4. Its loads are a quarter of
// the scalar kernel's (an eighth, of float16).
func dotsAlongK(s device.GEMM) bool {
	return !s.TransA && s.TransB && s.K%4 == 0 &&
		s.StrideA%4 == 0 && s.OffA%4 == 0 && s.RowB()%4 == 0 && s.StrideB%4 == 0 && s.OffB%4 == 0
}
