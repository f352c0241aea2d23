//go:build cgo || js

package webgpu

import (
	"fmt"

	"github.com/extensor/extensor/device"
)

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
		if d.widenFresh(1, func(b []device.Buffer) { d.Reduce(op, b[0], b[1], shape, axes) }, dst, x) {
			return
		}
	default:
		if d.widenFresh(1, func(b []device.Buffer) { d.Reduce(op, b[0], x, shape, axes) }, dst) {
			return
		}
	}
	d.writing(dst)
	defer d.written()
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
	d.reduce(op, d.buf(dst), d.buf(x), false, kept, red, scale)
}

// reduceParams are the reduce family's parameters (shaders/reduce.wgsl):
// N outputs (the chunked kernels: outputs·chunks·lanes; the arg
// reductions' first pass: outputs·chunks), each reducing R elements (by
// vec4s, R counts them), scaled by Scale; the kept and reduced axes'
// shapes, strides in x and magic numbers (udiv), of ranks KeptRank and
// RedRank; Chunks chunks of ChunkLen elements an output in the chunked
// kernels.
type reduceParams struct {
	N, R, KeptRank, RedRank uint32
	Scale                   float32
	KeptShape, KeptStrides  [device.MaxRank]uint32
	RedShape, RedStrides    [device.MaxRank]uint32
	Chunks, ChunkLen        uint32
	KeptMagic, RedMagic     [device.MaxRank]uint32
}

func (reduceSpec) params() any { return reduceParams{} }

// reduceParamsOf returns the parameters of a reduction of kept and red.
func reduceParamsOf(nOut, r int, kept, red []axis, scale float64) reduceParams {
	p := reduceParams{N: uint32(nOut), R: uint32(r), KeptRank: uint32(len(kept)), RedRank: uint32(len(red)), Scale: float32(scale)}
	for i, a := range kept {
		p.KeptShape[i], p.KeptStrides[i], p.KeptMagic[i] = uint32(a.size), uint32(a.stride), magic(a.size)
	}
	for i, a := range red {
		p.RedShape[i], p.RedStrides[i], p.RedMagic[i] = uint32(a.size), uint32(a.stride), magic(a.size)
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

// reduce reduces in over red into o, times scale; acc says that in holds
// the accumulators of a previous pass (pairs of float32 for a sum).
func (d *Device) reduce(op device.ReduceOp, o, in *buffer, acc bool, kept, red []axis, scale float64) {
	nOut, r := sizes(kept, red)
	if nOut == 0 {
		return
	}
	p := reduceParamsOf(nOut, r, kept, red, scale)
	xs, os := d.storeOf(in.dt), d.storeOf(o.dt)
	half := xs.packed()
	spec := reduceSpec{Op: op.String(), Acc: acc, Half: half, XF16: xs.native(), OF16: os.native(), F16: xs.native() || os.native(), Kept: len(kept), Red: len(red)}
	// Short rows, and many outputs of rows not too long: one invocation
	// per output. On a GPU a row of more than a few dozen elements goes to
	// a workgroup instead, where one invocation's loop over it would
	// dominate the sum (docs/kernel-choices.md, reductions).
	short := 1024
	if !d.loopLimited {
		short = 32
	}
	if r <= short || (nOut >= 8192 && r <= maxLoop) {
		d.run(d.kernel(spec, false, true), groupsOf(nOut, 256), p, in, o)
		return
	}
	// Long rows: each chunk of chunkLen elements reduced by a workgroup
	// into one partial result (with subgroup operations where the device
	// has them), which the next pass reduces in turn (a row of one chunk
	// is done: its result goes to dst, a dispatch fewer). Contiguous rows
	// of vec4s go faster, vecUnroll vec4s per invocation.
	spec.Chunks, spec.OF16 = true, false // partial results in float32
	spec.F16 = xs.native()
	lanes := reduceLanes(d.loopLimited)
	spec.Group, spec.SubgroupOp, spec.L = d.reduceGroup(op), subgroupOps[op], lanes
	length, r4 := chunkPerLane*lanes, r
	if !half && !acc && len(red) == 1 && red[0].stride == 1 && r%4 == 0 && (len(kept) == 0 || len(kept) == 1 && kept[0].stride == r) {
		spec.Vec, spec.Unroll, spec.Coalesce = true, vecUnroll, !d.loopLimited
		length, r4 = vecUnroll*lanes, r/4
	}
	chunks := groupsOf(r4, length)
	p.N, p.R, p.Chunks, p.ChunkLen = uint32(nOut*chunks*lanes), uint32(r4), uint32(chunks), uint32(length)
	if chunks == 1 && o.dt == device.Float32 {
		// A chunk a row: its workgroup writes the row's result, scaled.
		d.run(d.kernel(spec, false, true), nOut, p, in, o)
		return
	}
	// The partial results: accumulators, unscaled (the next pass scales).
	spec.Partial = op == device.Sum
	k := d.kernel(spec, false, true)
	width := 1
	if spec.Partial {
		width = 2
	}
	partial := d.scratch(k, device.Float32, width*nOut*chunks)
	if partial == nil {
		return
	}
	defer d.free(partial)
	p.Scale = 1
	d.run(k, nOut*chunks, p, in, partial)
	d.reduce(op, o, partial, spec.Partial, []axis{{nOut, chunks}}, []axis{{chunks, 1}}, scale)
}

// reduceLanes is the workgroup size of the chunked reductions: 256 on
// GPUs; on CPU adapters 8, one SIMD batch of llvmpipe's, whose barrier
// costs little (a workgroup of 256 meets at its barriers 32 batches that
// llvmpipe runs one after another; docs/kernel-choices.md, reductions).
func reduceLanes(cpu bool) int {
	if cpu {
		return 8
	}
	return 256
}

// subgroupOps are the WGSL subgroup operations of the reductions.
var subgroupOps = map[device.ReduceOp]string{device.Sum: "subgroupAdd", device.Max: "subgroupMax", device.Min: "subgroupMin"}

// reduceGroup is group for a chunked reduction by op, except that on GPUs
// max and min combine through workgroup memory, where their subgroup form
// ran slower on an H100 and an H200 (docs/performance*.md) and sum's did
// not. CPU adapters keep the subgroup form of all three, so that lavapipe
// tests it.
func (d *Device) reduceGroup(op device.ReduceOp) string {
	if op != device.Sum && !d.loopLimited {
		return "workgroup"
	}
	return d.group()
}

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
	p := reduceParamsOf(nOut, r, kept, red, 1)
	xs := d.storeOf(in.dt) // f32 or f16: Reduce widens packed float16
	spec := func(stage int) reduceSpec {
		f16 := xs.native() && stage < 2
		return reduceSpec{Op: op.String(), Arg: true, Stage: stage, XF16: f16, F16: f16, Kept: len(kept), Red: len(red)}
	}
	if r <= maxLoop {
		d.run(d.kernel(spec(0), false, true), groupsOf(nOut, 256), p, in, o)
		return
	}
	chunk := max(chunkLen, groupsOf(r, maxLoop))
	chunks := groupsOf(r, chunk)
	k1 := d.kernel(spec(1), false, true, true)
	if chunk > maxLoop {
		d.refuse(fmt.Errorf("webgpu: kernel %s: a row of %d elements needs loops of %d iterations; at most %d", k1.name, r, chunk, maxLoop))
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
	p.N, p.Chunks, p.ChunkLen = uint32(nOut*chunks), uint32(chunks), uint32(chunk)
	d.run(k1, groupsOf(nOut*chunks, 256), p, in, idx, vals)
	k2 := d.kernel(spec(2), false, false, true)
	d.run(k2, groupsOf(nOut, 256), reduceParams{N: uint32(nOut), R: uint32(chunks)}, vals, idx, o)
}
