//go:build cgo || js

package webgpu

import (
	"github.com/extensor/extensor/device"
)

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
	d.writing(dst)
	defer d.written()
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
	k := d.kernel(windowSpec{Pairs: pairs, Op: op.String(), C: w.C, H: w.H, W: w.W, KH: w.KH, KW: w.KW, CH: ch, CW: cw,
		SH: w.SH, SW: w.SW, PH: w.PH, PW: w.PW, DH: w.DH, DW: w.DW, OH: oh, OW: ow, Half: half, F16: st.native(), Disjoint: disjoint, Cells: cells,
		Ones: w.Ones && op == device.Im2Col, Pitch: w.RowLen()}, flags(len(in), 1)...)
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
	d.run(k, groupsOf(items, 256), windowParams{Items: uint32(items), N: uint32(w.N), N0: uint32(w.N0), Elems: uint32(n)}, append(in, d.buf(dst))...)
}

// windowParams are the window family's parameters (shaders/window.wgsl):
// Items invocations' items over N images from N0, Elems elements (words
// on packed float16: Items of them).
type windowParams struct{ Items, N, N0, Elems uint32 }

func (windowSpec) params() any { return windowParams{} }
