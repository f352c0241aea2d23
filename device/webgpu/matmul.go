//go:build cgo || js

package webgpu

import (
	"fmt"
	"log/slog"
	"math/bits"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/extensor/extensor/device"
	"github.com/oliverbestmann/webgpu/wgpu"
)

// The matrix product has three kernel families, and which is fastest
// depends on the adapter (../shared/notes: the kernel that wins on
// lavapipe loses on an H100 by 10×, and the reverse):
//
//   - "texture" (matmul_tex.wgsl): operands packed or copied into
//     rgba32float textures, 32×32 or 32×16 outputs a thread (texBlock), no
//     workgroup memory: the fastest on CPU adapters for large products;
//   - "register" (matmul.wgsl): blocks of 16×16 or 8×16 outputs a
//     thread from storage buffers: CPU adapters' kernel for the rest;
//   - "tiled/BM×BN×BK/TM×TN…" (matmul_tiled.wgsl): shared-memory tiles of
//     BM×BK and BK×BN, a TM×TN register block a thread, and the options
//     of type tile: the GPUs' kernel.
//
// On a CPU adapter the choice is by size. On any other, the tiled
// variants are timed on the first product of each shape class (the sizes'
// orders of magnitude and the transposes), and one is kept for the class
// (tiles says which); the choice is logged by log/slog at debug level and told by
// MatMulKernel. EXTENSOR_MATMUL names a family or variant to use instead
// (for tests, or to compare them): "texture", "register", "tiled" (timed
// as on a GPU) or one variant such as "tiled/64×64×8/4×4" (an x for ×
// will do).

// EnvMatMul is the environment variable that forces a matmul kernel.
const EnvMatMul = "EXTENSOR_MATMUL"

// maxDispatchFlops bounds the work of one matmul dispatch on CPU adapters,
// so that no dispatch runs long (lavapipe crashes on very long ones).
const maxDispatchFlops = 1 << 31

// tile is a variant of the tiled kernel: a workgroup's BM×BN block of
// out, BK terms of k a step, a thread's TM×TN block, its columns spread
// (groups of 4, BN/TN groups apart: suffix s) or side by side; with Vec
// (suffix v) the operands are loaded by vec4s where their shapes allow
// (vecLoads), and with Pre (suffix p) each step's loads are issued before
// the last step's products, so that they overlap.
type tile struct {
	BM, BN, BK, TM, TN int
	Spread, Vec, Pre   bool
}

func (t tile) String() string {
	s := fmt.Sprintf("tiled/%d×%d×%d/%d×%d", t.BM, t.BN, t.BK, t.TM, t.TN)
	for _, o := range t.options() {
		if *o.on {
			s += string(o.letter)
		}
	}
	return s
}

// tileOption is one of a tile's options and the letter that names it.
type tileOption struct {
	letter rune
	on     *bool
}

// options returns t's options.
func (t *tile) options() []tileOption {
	return []tileOption{{'s', &t.Spread}, {'v', &t.Vec}, {'p', &t.Pre}}
}

// variant returns the tile of these sizes with the options named by the
// letters of opts, as in its name.
func variant(bm, bn, bk, tm, tn int, opts string) tile {
	t := tile{BM: bm, BN: bn, BK: bk, TM: tm, TN: tn}
	options := t.options()
	for _, c := range opts {
		i := slices.IndexFunc(options, func(o tileOption) bool { return o.letter == c })
		if i < 0 {
			panic(fmt.Sprintf("webgpu: tile option %q", c))
		}
		*options[i].on = true
	}
	return t
}

// threads is the size of t's workgroup.
func (t tile) threads() int { return t.BM / t.TM * t.BN / t.TN }

// shared is the most workgroup memory t takes, in bytes: its tiles' rows
// padded by a vec4.
func (t tile) shared() int {
	return 16 * t.BK * (t.BM/4 + t.BN/4 + 2)
}

// fits reports whether the device can run t: its threads and workgroup
// memory within the limits the adapter granted.
func (t tile) fits(l wgpu.Limits) bool {
	return uint32(t.threads()) <= l.MaxComputeInvocationsPerWorkgroup && uint32(t.shared()) <= l.MaxComputeWorkgroupStorageSize
}

// vecLoads reports whether the tiled kernel may load a and b of s by vec4s
// along their stored rows: float32, and the rows, offsets, batch strides
// and the k split of CPU adapters (maxLoop) multiples of 4.
func vecLoads(s device.GEMM, ha, hb bool) (va, vb bool) {
	m4 := func(n ...int) bool {
		for _, v := range n {
			if v%4 != 0 {
				return false
			}
		}
		return true
	}
	rowA, rowB := s.K, s.K // the lengths vec4s run along
	if s.TransA {
		rowA = s.M
	}
	if !s.TransB {
		rowB = s.N
	}
	va = !ha && m4(rowA, s.OffA, s.StrideA, maxLoop)
	vb = !hb && m4(rowB, s.RowB(), s.OffB, s.StrideB, maxLoop)
	return va, vb
}

// tiles are the tiled kernel's variants, each of at most 256 threads:
// the first is the default for products too small to time; the others are
// the candidates tileFor times, the first of them kept unless another runs
// in under tuneMargin of its time (the first was the fastest at 1024³ to
// 4096³ on an H100 and an H200: docs/performance*.md). Each variant
// compiles once for every layout of the operands, so the list is short.
// Those with more than 16 KiB of workgroup memory (WebGPU's default limit)
// run where the adapter grants it.
var tiles = []tile{
	variant(64, 64, 8, 4, 4, ""),
	variant(128, 64, 16, 8, 4, "svp"),
	variant(128, 128, 32, 8, 8, "svp"),
	variant(64, 64, 16, 4, 8, "s"),
	variant(64, 64, 16, 4, 4, ""),
	variant(32, 32, 8, 4, 4, ""),
}

// tuneMargin is how much faster than the first candidate another must
// time to be chosen: the timed choices have run slower than the first in
// the benchmarks of the same run.
const tuneMargin = 0.9

// tuneMinMACs is the smallest product whose class is timed: smaller ones
// take the first variant (their time is the dispatch's, whatever the
// tile).
const tuneMinMACs = 1 << 18

// matmulChoice is how a device picks the matmul kernel.
type matmulChoice struct {
	force  string          // EXTENSOR_MATMUL: a family or variant, or ""
	chosen map[string]tile // the timed choice, by shape class
}

// parseMatMul reads EXTENSOR_MATMUL.
func parseMatMul() (string, error) {
	v := strings.TrimSpace(os.Getenv(EnvMatMul))
	if strings.HasPrefix(v, "tiled/") {
		v = strings.ReplaceAll(v, "x", "×")
	}
	switch v {
	case "", "texture", "register", "tiled":
		return v, nil
	}
	for _, t := range tiles {
		if v == t.String() {
			return v, nil
		}
	}
	return "", fmt.Errorf("webgpu: %s=%q names no matmul kernel; want one of %s", EnvMatMul, os.Getenv(EnvMatMul), strings.Join(MatMulKernels(), ", "))
}

// class names the shape class of s: the orders of magnitude of M, N and K
// (in powers of 2: a GPU's fastest variant for 1024³ need not be its
// fastest for 2048³) and the transposes.
func class(s device.GEMM) string {
	o := func(n int) int { return bits.Len(uint(n)) }
	return fmt.Sprintf("%d/%d/%d/ta=%v/tb=%v/batch=%v", o(s.M), o(s.N), o(s.K), s.TransA, s.TransB, s.Batch > 1)
}

// MatMul computes the batch of products with the kernel chosen for the
// adapter and shape. The tiled kernel reads and writes float16 tensors as
// they are (WGSL's f16, or packed words), unless the product is split
// over k; the texture kernel reads them as WGSL's f16 and writes
// float32; the register kernel takes float32 stand-ins.
func (d *Device) MatMul(dst, a, b device.Buffer, s device.GEMM) {
	f := d.mm.force
	cpuKernels := f == "texture" || (f == "" && d.loopLimited)
	textures := cpuKernels && d.texturesFit(s)
	register := f == "register" || cpuKernels && !textures
	// The texture kernel adds s.Bias in its store and sums op(a)'s rows
	// where it lays op(a) out by rows (transposed); other products leave
	// the bias to the binary family and s.Sums to the reduction.
	if s.Bias != nil {
		s.CheckBias(dst)
		if !textures {
			d.biasAfter(dst, a, b, s)
			return
		}
	}
	outs := []device.Buffer{dst}
	if s.Sums != nil {
		s.CheckSums(dst, a)
		if !textures || !s.TransA {
			t := s
			t.Sums = nil
			d.MatMul(dst, a, b, t)
			s.RowSums(d, a)
			return
		}
		outs = append(outs, s.Sums)
	}
	// with is s on the stand-ins w of outs, w's last the bias's.
	with := func(w []device.Buffer) device.GEMM {
		t := s
		if t.Sums != nil {
			t.Sums = w[1]
		}
		if t.Bias != nil {
			t.Bias = w[len(w)-1]
		}
		return t
	}
	var bias []device.Buffer
	if s.Bias != nil {
		bias = []device.Buffer{s.Bias}
	}
	// The register kernel computes in float32 only: its float16 products
	// take float32 stand-ins, as do, on CPU adapters, products split over
	// k (so that a float16 result is rounded once) and, without WGSL's
	// f16, the texture kernel's (unpacking words in its unrolled loops made
	// it compile 3–5 times as slowly on llvmpipe).
	n := len(outs)
	if (register || d.loopLimited && s.K > maxLoop || textures && !d.native(dst, a, b)) &&
		d.widenAs(n, d.writesAll(dst, s), func(w []device.Buffer) { d.MatMul(w[0], w[n], w[n+1], with(w)) }, slices.Concat(outs, []device.Buffer{a, b}, bias)...) {
		return
	}
	// The texture kernel writes float32, and the tiled kernel adds the
	// parts of a product split over k in float32: a float16 result takes a
	// float32 stand-in; the operands are read as they are.
	if (textures || !cpuKernels && f != "register" && d.tiledParts(s) > 1) &&
		d.widenAs(n, d.writesAll(dst, s), func(w []device.Buffer) { d.MatMul(w[0], a, b, with(w)) }, slices.Concat(outs, bias)...) {
		return
	}
	d.writing(outs...)
	defer d.written()
	o, x, y := d.buf(dst), d.buf(a), d.buf(b)
	if s.M == 0 || s.N == 0 || s.Batch == 0 {
		return
	}
	switch {
	case textures:
		d.matMulTextures(o, x, y, s)
	case register:
		d.matMulRegister(o, x, y, s)
	default:
		d.matMulTiled(d.tileFor(o, x, y, s), o, x, y, s)
	}
}

// biasAfter runs the products s without their bias into scratch, then
// adds s.Bias to every row by the binary family (a call that joins the
// chain after it), on float32 stand-ins of a float16 dst (and Sums), so
// that it rounds once.
func (d *Device) biasAfter(dst, a, b device.Buffer, s device.GEMM) {
	t := s
	t.Bias = nil
	l := device.Broadcast{Shape: []int{s.Batch * s.M, s.N}, AStrides: []int{s.N, 1}, BStrides: []int{0, 1}}
	bufs := []device.Buffer{dst}
	if s.Sums != nil {
		bufs = append(bufs, s.Sums)
	}
	n := len(bufs)
	run := func(w []device.Buffer) {
		if t.Sums != nil {
			t.Sums = w[1]
		}
		// The products go to a scratch buffer: a kernel may not read and
		// write one buffer.
		o := d.buf(w[0])
		prod, err := d.Alloc(o.dt, o.n)
		if err != nil {
			d.writing(w[:n]...)
			d.refuse(fmt.Errorf("webgpu: matmul: the products before their bias, %d %v: %v", o.n, o.dt, err))
			d.written()
			return
		}
		defer d.Free(prod)
		d.MatMul(prod, a, b, t)
		d.Binary(device.Add, w[0], prod, w[n], l)
	}
	bufs = append(bufs, s.Bias)
	if !d.widenAs(n, true, run, bufs...) {
		run(bufs)
	}
}

// writesAll reports whether the products s write every element of dst
// without reading it.
func (d *Device) writesAll(dst device.Buffer, s device.GEMM) bool {
	return !s.Accumulate && s.OffDst == 0 && s.Batch*s.M*s.N == d.buf(dst).n
}

// MatMulKernel names the kernel that products shaped as s use on d:
// "texture", "register" (with ", k in N parts" where it splits k: see
// kParts) or a tiled variant; for a GPU's shape class not yet timed,
// "tiled (chosen at the first product)".
func (d *Device) MatMulKernel(s device.GEMM) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch f := d.mm.force; {
	case f == "texture" || (f == "" && d.loopLimited):
		if d.texturesFit(s) {
			return "texture"
		}
		return d.registerName(s)
	case f == "register":
		return d.registerName(s)
	}
	t, ok := tiles[0], true
	if int64(s.M)*int64(s.N)*int64(s.K) >= tuneMinMACs {
		t, ok = d.mm.chosen[class(s)]
	}
	if strings.HasPrefix(d.mm.force, "tiled/") {
		t, ok = d.forcedTile(), true
	}
	if !ok {
		return "tiled (chosen at the first product)"
	}
	if n := d.tiledParts(s); n > 1 {
		return fmt.Sprintf("%v, k in %d parts", t, n)
	}
	return t.String()
}

// tileFor returns the tiled variant for s: the forced one, the first for
// small products, or the candidate (tiles) chosen for s's class,
// timed now on these operands if the class is new.
func (d *Device) tileFor(o, x, y *buffer, s device.GEMM) tile {
	if strings.HasPrefix(d.mm.force, "tiled/") {
		t := d.forcedTile()
		if !t.fits(d.limits) {
			d.fail(fmt.Errorf("webgpu: %s=%s needs %d threads and %d bytes of workgroup memory; %s grants %d and %d", EnvMatMul, t, t.threads(), t.shared(), d.info, d.limits.MaxComputeInvocationsPerWorkgroup, d.limits.MaxComputeWorkgroupStorageSize))
			return tiles[0]
		}
		return t
	}
	if int64(s.M)*int64(s.N)*int64(s.K) < tuneMinMACs {
		return tiles[0]
	}
	c := class(s)
	if t, ok := d.mm.chosen[c]; ok {
		return t
	}
	// The candidates write a scratch matrix, not o: run four times each,
	// they would add to an accumulating o four times over.
	scratch, err := d.alloc(o.dt, o.n)
	if err != nil {
		d.fail(fmt.Errorf("webgpu: timing the matmul kernels for %v: %v", c, err))
		return tiles[0]
	}
	defer d.free(scratch)
	ts := s
	ts.Accumulate = false
	var cands []tile
	for _, t := range tiles[1:] {
		if t.fits(d.limits) {
			cands = append(cands, t)
		}
	}
	reps := 1 // a CPU adapter's wait costs little beside its products
	if !d.loopLimited {
		reps = tuneReps(s)
	}
	for _, t := range cands {
		d.matMulTiled(t, scratch, x, y, ts) // compiles the kernel, warms up
	}
	d.wait()
	// The fastest of three runs of reps products each, the candidates
	// taking turns: a GPU's clocks and other work make single runs vary
	// by tens of percent, and drift.
	el := make([]time.Duration, len(cands))
	for i := range el {
		el[i] = time.Duration(1 << 62)
	}
	for range 3 {
		for i, t := range cands {
			start := time.Now()
			for range reps {
				d.matMulTiled(t, scratch, x, y, ts)
			}
			d.wait()
			if d.err == nil {
				el[i] = min(el[i], time.Since(start))
			}
		}
	}
	best, times := 0, make([]string, len(cands))
	for i, t := range cands {
		times[i] = fmt.Sprintf("%v %v", t, el[i])
		if el[i] < el[best] {
			best = i
		}
	}
	if len(cands) == 0 {
		cands = tiles[:1]
	} else if float64(el[best]) > tuneMargin*float64(el[0]) {
		best = 0
	}
	if d.mm.chosen == nil {
		d.mm.chosen = map[string]tile{}
	}
	d.mm.chosen[c] = cands[best]
	slog.Debug("extensor: matmul kernel chosen", "device", d.info, "class", c, "kernel", cands[best].String(), "timings", strings.Join(times, ", "))
	return cands[best]
}

// forcedTile returns the tiled variant EnvMatMul names (parseMatMul
// checked that one does).
func (d *Device) forcedTile() tile {
	i := slices.IndexFunc(tiles, func(t tile) bool { return t.String() == d.mm.force })
	return tiles[i]
}

// tuneReps is how many products of s a timing of tileFor runs before its
// wait: enough for about 2³⁴ multiply-adds, at most 64, so that the wait
// does not decide the choice (docs/kernel-choices.md, matrix products).
func tuneReps(s device.GEMM) int {
	macs := max(int64(s.Batch)*int64(s.M)*int64(s.N)*int64(s.K), 1)
	return int(min(max((1<<34)/macs, 1), 64))
}

// productStore returns how a product's kernel stores its operands: all
// three as WGSL's f16 (nat) where they are all float16 on a device with
// it and the product is not split over k into float32 parts; else each
// float16 one as packed words (ha, hb, ho).
func (d *Device) productStore(o, x, y *buffer, parts int) (nat, ha, hb, ho bool) {
	ha, hb, ho = x.dt == device.Float16, y.dt == device.Float16, o.dt == device.Float16
	if d.f16 && ha && hb && ho && parts == 1 {
		return true, false, false, false
	}
	return false, ha, hb, ho
}

// matMulTiled records the products with the tiled variant t: the batch in
// the grid's z, the rows and k split into dispatches of bounded work on
// CPU adapters; on GPUs, products of few blocks split over k into parts
// (tiledParts), in the grid's z too, added up by stage matmul_sum.
func (d *Device) matMulTiled(t tile, o, x, y *buffer, s device.GEMM) {
	parts := d.tiledParts(s)
	out, ps, finish := d.splitOut(o, s, parts)
	if out == nil {
		return
	}
	defer finish()
	nat, ha, hb, ho := d.productStore(out, x, y, parts)
	va, vb := vecLoads(s, ha, hb)
	va, vb = va && t.Vec, vb && t.Vec
	kern := d.kernel(tiledSpec{BM: t.BM, BN: t.BN, BK: t.BK, TM: t.TM, TN: t.TN, Spread: t.Spread, TransA: s.TransA, TransB: s.TransB,
		HalfA: ha, HalfB: hb, Half: ho, F16: nat, VecA: va, VecB: vb, Pre: t.Pre}, false, false, true)
	d.matMulDispatches(kern, t.BM, t.BN, out, x, y, ps, ps.N, false, false, false, parts)
}

// splitOut returns where a product split over k in parts writes them:
// float32 scratch of parts·Batch·M·N elements, s without its offset and
// accumulation (ps); and finish, which adds the parts up into o as s says
// (stage matmul_sum) and frees the scratch. out is nil where the scratch
// could not be had (the failure recorded). A product of one part writes
// o as s says.
func (d *Device) splitOut(o *buffer, s device.GEMM, parts int) (out *buffer, ps device.GEMM, finish func()) {
	if parts <= 1 {
		return o, s, func() {}
	}
	out, err := d.alloc(device.Float32, parts*s.Batch*s.M*s.N)
	if err != nil {
		d.fail(fmt.Errorf("webgpu: a %d×%d×%d product split over k in %d parts: %v", s.M, s.K, s.N, parts, err))
		return nil, s, nil
	}
	ps = s
	ps.OffDst, ps.Accumulate = 0, false
	return out, ps, func() {
		d.sumParts(o, out, s.Batch*s.M*s.N, parts, s.OffDst, s.Accumulate)
		d.free(out)
	}
}

// sumParts sets out's n elements from off on to the sum of part's parts
// of n elements each, added to them with acc (all float32).
func (d *Device) sumParts(out, part *buffer, n, parts, off int, acc bool) {
	d.run(d.kernel(sumSpec{}, false, true), groupsOf(n, 256),
		sumParams{N: uint32(n), Parts: uint32(parts), Off: uint32(off), Add: b2u(acc)}, part, out)
}

// gpuBlocks is how many workgroups a GPU's product should have: about
// two for each multiprocessor of a large GPU (an H100 has 132). Products
// of fewer than half as many blocks of 64×64 are split over k.
const gpuBlocks = 264

// tiledParts returns how many parts the tiled kernel splits s's k into on
// a GPU: where s has fewer blocks of 64×64 than gpuBlocks/2, as many as
// make them gpuBlocks, each of at least minPartK terms (products of at least
// minSplitMACs); else 1. A product with long k and a small result (a
// weight's gradient: 128×384 from k = 1024 is 12 blocks) otherwise keeps
// most of the GPU idle. The parts go to float32 scratch and are added up
// in order, so the sums are deterministic but rounded otherwise than a
// single part's (MatMul gives a float16 product split so float32
// stand-ins, rounded once).
func (d *Device) tiledParts(s device.GEMM) int {
	if d.loopLimited || s.K < 2*minPartK || s.Batch*s.M*s.N*s.K < minSplitMACs {
		return 1
	}
	blocks := groupsOf(s.M, 64) * groupsOf(s.N, 64) * s.Batch
	if blocks >= gpuBlocks/2 {
		return 1
	}
	return min(groupsOf(gpuBlocks, blocks), s.K/minPartK)
}

// matMulDispatches records kern over the products, a workgroup computing
// a bm×bn block; va and vb tell whether the kernel reads a or b as vec4s
// (its offsets and strides count vec4s).
// With flat, bm×bn is an invocation's block, the blocks of the dispatch's
// matrices numbered in one sequence over workgroups of 64. With parts > 1
// (p.Parts in matmul.wgsl and matmul_tiled.wgsl), each dispatch's terms
// of k are split in as many parts, each written to o as a product of its
// own, Batch·M·N elements after the last part's.
func (d *Device) matMulDispatches(kern *kernel, bm, bn int, o, x, y *buffer, s device.GEMM, ld int, va, vb, flat bool, parts int) {
	if kern == nil {
		return
	}
	m, k, n := s.M, s.K, s.N
	gx := groupsOf(n, bn)
	if gx > maxGroups {
		d.refuse(fmt.Errorf("webgpu: kernel %s: %d columns need %d workgroups; at most %d", kern.name, n, gx, maxGroups))
		return
	}
	// On CPU adapters, dispatches of row blocks (or, for small matrices,
	// of several matrices) of bounded work, each looping over at most
	// maxLoop of the k terms and adding to what the last one wrote.
	kPer, maxWork := max(k, 1), 1<<62
	if d.loopLimited {
		kPer, maxWork = min(kPer, maxLoop), maxDispatchFlops
	}
	work := max(2*kPer*n, 1)
	rowsPer := maxWork / work / bm * bm
	rowsPer = min(max(rowsPer, bm), maxGroups*bm)
	batchPer := 1
	if rowsPer >= m {
		batchPer = min(max(maxWork/(work*m), 1), maxGroups)
	}
	vec := func(stride int, v bool) uint32 {
		if v {
			return uint32(stride / 4)
		}
		return uint32(stride)
	}
	for b0 := 0; b0 < s.Batch; b0 += batchPer {
		nb := min(batchPer, s.Batch-b0)
		for row := 0; row < m; row += rowsPer {
			rows := min(rowsPer, m-row)
			for k0 := 0; k0 < max(k, 1); k0 += kPer {
				k1 := min(k, k0+kPer)
				p := gemmParams{M: uint32(m), K: uint32(k), N: uint32(n), Row0: uint32(row), K0: uint32(k0), K1: uint32(k1),
					Batch0: uint32(b0), StrideA: vec(s.StrideA, va), StrideB: vec(s.StrideB, vb), CycleA: uint32(s.CycleA),
					OffA: vec(s.OffA, va), OffB: vec(s.OffB, vb), OffOut: uint32(s.OffDst), Accumulate: b2u(s.Accumulate), RowB: vec(s.RowB(), vb), LdOut: uint32(ld)}
				// Parts of a multiple of 4 terms (DotK reads by vec4s along k),
				// or one of them all.
				p.Parts, p.PartTerms = 1, uint32(k1-k0)
				if parts > 1 {
					p.Parts, p.PartTerms, p.PartStride = uint32(parts), uint32(groupsOf(groupsOf(k1-k0, parts), 4)*4), uint32(s.Batch*m*n)
				}
				if !flat {
					d.dispatch3(kern, uint32(gx), uint32(groupsOf(rows, bm)), uint32(nb*parts), p, x, y, o)
					continue
				}
				blocks := gx * groupsOf(rows, bm) * nb * parts
				p.ColBlocks, p.RowBlocks, p.Blocks = uint32(gx), uint32(groupsOf(rows, bm)), uint32(blocks)
				wx, wy, err := grid(groupsOf(blocks, 64))
				if err != nil {
					d.fail(fmt.Errorf("webgpu: kernel %s: %v", kern.name, err))
					return
				}
				d.dispatch(kern, wx, wy, p, x, y, o)
			}
		}
	}
}

// MatMulKernels lists the names EXTENSOR_MATMUL takes: the families, then
// the tiled variants.
func MatMulKernels() []string {
	names := []string{"texture", "register", "tiled"}
	for _, t := range tiles {
		names = append(names, t.String())
	}
	return names
}

// gemmParams are the register and tiled products' parameters
// (shaders/matmul.wgsl, matmul_tiled.wgsl): out (M×N) = op(a)·op(b) over
// the terms k in [K0, K1) of rows from Row0, added to out unless K0 = 0,
// and always where Accumulate ≠ 0. Matrix z = Batch0 + the grid's z of a
// batch starts at OffA + (z, or z mod CycleA where CycleA > 0)·StrideA in
// a, OffB + z·StrideB in b (in the arrays' elements, vec4s where read so)
// and OffOut + z·M·LdOut in out, whose rows are LdOut apart (the register
// kernel; the tiled kernel's are N apart); RowB is the distance between
// b's stored rows.
type gemmParams struct {
	M, K, N, Row0, K0, K1                uint32
	Batch0, StrideA, StrideB, CycleA     uint32
	OffA, OffB, OffOut, Accumulate, RowB uint32
	LdOut                                uint32
	// Flat: the column blocks a row of blocks, the rows of blocks a
	// matrix, the blocks in all.
	ColBlocks, RowBlocks, Blocks uint32
	// k in Parts parts (1 or more) of PartTerms terms, each PartStride
	// further in out.
	Parts, PartTerms, PartStride uint32
}

// sumParams are stage sum's: out[Off + i] = Σ over Parts parts of N
// elements, added to it where Add ≠ 0.
type sumParams struct{ N, Parts, Off, Add uint32 }

func (registerSpec) params() any { return gemmParams{} }
func (tiledSpec) params() any    { return gemmParams{} }
func (sumSpec) params() any      { return sumParams{} }
