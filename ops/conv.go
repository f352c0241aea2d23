package ops

import (
	"fmt"
	"math"

	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/tensor"
)

// Window is the geometry of a 2-D convolution or pooling over NCHW
// images, each pair {height, width}. Strides must be given (a stride of 0
// is an error, as in PyTorch); a zero Dilation or Groups means 1.
type Window struct {
	Kernel   [2]int // pooling: the window's size (a convolution's is its weight's)
	Stride   [2]int // how far the window moves, ≥ 1
	Padding  [2]int // added on each side: zeros for conv2d and avg_pool2d, never chosen by max_pool2d
	Dilation [2]int // the distance between taps (avg_pool2d: 1 only)
	Groups   int    // conv2d: channel groups (Groups = C is depthwise)
}

// dilation returns the window's dilation, 1 for a zero.
func (w Window) dilation() [2]int {
	d := w.Dilation
	for i := range d {
		if d[i] == 0 {
			d[i] = 1
		}
	}
	return d
}

// geometry checks w for images of shape (n, c, h, wd) and a kernel of kh×kw
// taps, and returns the device's description of it.
func (w Window) geometry(op string, x []int, kh, kw int) device.Window2D {
	d := w.dilation()
	for i, name := range []string{"height", "width"} {
		switch {
		case w.Stride[i] < 1:
			tensor.Panicf(op, tensor.ErrArgument, "stride %v: %s stride %d; want ≥ 1", w.Stride, name, w.Stride[i])
		case w.Padding[i] < 0:
			tensor.Panicf(op, tensor.ErrArgument, "padding %v: negative %s padding", w.Padding, name)
		case d[i] < 1:
			tensor.Panicf(op, tensor.ErrArgument, "dilation %v: %s dilation %d; want ≥ 1", w.Dilation, name, d[i])
		case max(w.Stride[i], w.Padding[i], d[i]) > math.MaxInt32:
			tensor.Panicf(op, tensor.ErrArgument, "stride %v, padding %v, dilation %v: a %s past 2³¹−1; kernels index images in 32 bits", w.Stride, w.Padding, w.Dilation, name)
		}
	}
	g := device.Window2D{N: x[0], C: x[1], H: x[2], W: x[3], KH: kh, KW: kw, SH: w.Stride[0], SW: w.Stride[1],
		PH: w.Padding[0], PW: w.Padding[1], DH: d[0], DW: d[1]}
	fits := kh >= 1 && kw >= 1
	for i, k := range []int{kh, kw} {
		// The padded size and the window's span, each in an int.
		pad2, ok1 := device.CheckedMul(w.Padding[i], 2)
		padded, ok2 := device.CheckedAdd(x[2+i], pad2)
		span, ok3 := device.CheckedMul(d[i], max(k-1, 0))
		if !ok1 || !ok2 || !ok3 || span == math.MaxInt {
			tensor.Panicf(op, tensor.ErrArgument, "padding %v and dilation %v over images of %d×%d with a %d×%d kernel: sizes past what an int counts", w.Padding, w.Dilation, x[2], x[3], kh, kw)
		}
		fits = fits && padded >= span+1
	}
	if !fits {
		tensor.Panicf(op, tensor.ErrShape, "a %d×%d kernel (dilation %v) does not fit images of %d×%d padded by %v; want a kernel no larger than the padded input",
			kh, kw, d, g.H, g.W, w.Padding)
	}
	// A stride past the room the window has to move (the padded size less
	// the window's span) gives one position whatever it is: the kernels
	// get the least such stride, room + 1, never a huge one.
	g.SH = min(g.SH, g.H+2*g.PH-g.DH*(g.KH-1)+1)
	g.SW = min(g.SW, g.W+2*g.PW-g.DW*(g.KW-1)+1)
	return g
}

// images checks that x is a batch of NCHW images.
func images(op string, x *tensor.Tensor) []int {
	if x.Rank() != 4 {
		tensor.Panicf(op, tensor.ErrShape, "x has shape %v; want NCHW images (rank 4)", x.Shape())
	}
	return x.Shape()
}

// planConv checks a convolution of the images x with the filters w
// (and bias b, or nil) and returns the device's description of it and
// the output's shape.
func planConv(op string, x, w, b *tensor.Tensor, win Window) (device.Conv2D, []int) {
	return planConvOf(op, images(op, x), w, b, win)
}

// planConvOf is planConv for images of shape xs (NCHW).
func planConvOf(op string, xs []int, w, b *tensor.Tensor, win Window) (device.Conv2D, []int) {
	if w.Rank() != 4 {
		tensor.Panicf(op, tensor.ErrShape, "weight has shape %v; want [out channels, in channels / groups, KH, KW]", w.Shape())
	}
	ws := w.Shape()
	groups := max(win.Groups, 1)
	if win.Groups < 0 || xs[1]%groups != 0 || ws[0]%groups != 0 {
		tensor.Panicf(op, tensor.ErrArgument, "%d groups for %d input and %d output channels; want a positive divisor of both", win.Groups, xs[1], ws[0])
	}
	if ws[1] != xs[1]/groups {
		tensor.Panicf(op, tensor.ErrShape, "x has shape %v (%d channels), weight %v; want weight's second dimension %d (channels / groups)", xs, xs[1], ws, xs[1]/groups)
	}
	if b != nil && !equal(b.Shape(), []int{ws[0]}) {
		tensor.Panicf(op, tensor.ErrShape, "bias has shape %v; want [%d]", b.Shape(), ws[0])
	}
	c := device.Conv2D{Window2D: win.geometry(op, xs, ws[2], ws[3]), F: ws[0], Groups: groups}
	oh, ow := c.Out()
	return c, []int{xs[0], ws[0], oh, ow}
}

// bufferOf returns t's buffer, nil for a nil t.
func bufferOf(t *tensor.Tensor) device.Buffer {
	if t == nil {
		return nil
	}
	return t.Buffer()
}

// Conv2d returns the 2-D cross-correlation of the NCHW images x with the
// filters w ([out channels, in channels / groups, KH, KW]) plus the bias
// b ([out channels], or nil), as PyTorch's conv2d: stride, zero padding,
// dilation and groups from win (win.Kernel is unused). The result is
// (N, out channels, OH, OW) with OH = ⌊(H + 2·pad − dil·(KH−1) − 1)/stride⌋ + 1.
//
// The device lowers it (device.Convolver): the CPU backend as im2col and
// gonum's BLAS, the WebGPU backend on direct kernels on CPU adapters and
// as im2col and its matrix products elsewhere (docs/kernel-choices.md,
// convolutions). A float16 result (computed in float32) is rounded once.
func Conv2d[V Operand[E], E any](x, w, b V, win Window) V {
	return call(Conv2dOp, win, inputs("ops.Conv2d", []V{x, w}, b)...)
}

func conv2dOf(x, w, b *tensor.Tensor, win Window) *tensor.Tensor {
	out, _ := conv2d(x, w, b, win, false)
	return out
}

// conv2dSave is Conv2d that also keeps what the device returns for
// Conv2dBackward to reuse (the op table's Save): im2col's columns, where
// the device runs im2col and they fit its budget, backward then running
// no im2col (docs/kernel-choices.md, convolutions).
func conv2dSave(x, w, b *tensor.Tensor, win Window) (*tensor.Tensor, *Saved) {
	return conv2d(x, w, b, win, true)
}

// conv2d is Conv2d, keeping what the device returns if save.
func conv2d(x, w, b *tensor.Tensor, win Window, save bool) (*tensor.Tensor, *Saved) {
	const op = "ops.Conv2d"
	dev, dt := layerOperands(op, x, w, b)
	c, shape := planConv(op, x, w, b, win)
	deps := []*tensor.Tensor{x, w}
	if b != nil {
		deps = append(deps, b)
	}
	out, ok := output(dev, dt, shape, deps...)
	if !ok || out.Len() == 0 {
		return out, nil
	}
	kept, err := dev.Conv2d(out.Buffer(), x.Buffer(), w.Buffer(), bufferOf(b), c, save)
	if err != nil {
		return failedAs(out, fmt.Errorf("%s: %w", op, err)), nil
	}
	if len(kept) > 0 {
		return out, &Saved{buffers: kept, dev: dev}
	}
	return out, nil
}

// Conv2dBackward returns the gradients of Conv2d for the upstream
// gradient g: gx (the transposed convolution of g), gw (g times each
// image's windows, summed over the batch) and gb (g summed over N, H and
// W; nil when b is nil).
func Conv2dBackward(x, w, b, g *tensor.Tensor, win Window) (gx, gw, gb *tensor.Tensor) {
	return conv2dBackward(x, w, b, g, win, true, nil)
}

// conv2dInputGrad is Conv2dBackward's gradient of the images alone, for
// images of shape xs (conv_transpose2d's forward).
func conv2dInputGrad(op string, xs []int, w, g *tensor.Tensor, win Window) *tensor.Tensor {
	dev, dt := layerOperands(op, g, w, nil)
	c, shape := planConvOf(op, xs, w, nil, win)
	sameShape(op, "upstream gradient", g, shape)
	gx, ok := output(dev, dt, xs, w, g)
	if !ok {
		return gx
	}
	if err := dev.Conv2dBackward(gx.Buffer(), nil, nil, nil, w.Buffer(), g.Buffer(), c, nil); err != nil {
		return failedAs(gx, fmt.Errorf("%s: %w", op, err))
	}
	return gx
}

// conv2dBackward is Conv2dBackward, gx left nil (and its work skipped)
// unless wantX, handing the device what saved kept (Conv2d's Save).
func conv2dBackward(x, w, b, g *tensor.Tensor, win Window, wantX bool, saved *Saved) (gx, gw, gb *tensor.Tensor) {
	const op = "ops.Conv2dBackward"
	dev, dt := layerOperands(op, x, w, b, g)
	c, shape := planConv(op, x, w, b, win)
	sameShape(op, "upstream gradient", g, shape)
	outs := []*tensor.Tensor{nil, nil, nil} // gx, gw, gb
	var failed error
	for i, s := range [][]int{x.Shape(), w.Shape(), {c.F}} {
		if i == 0 && !wantX || i == 2 && b == nil {
			continue
		}
		outs[i], _ = output(dev, dt, s, x, w, g)
		if failed == nil {
			failed = outs[i].Err()
		}
	}
	if failed == nil {
		var kept []device.Buffer
		if saved != nil && saved.dev == dev {
			kept = saved.buffers
		}
		if err := dev.Conv2dBackward(bufferOf(outs[0]), outs[1].Buffer(), bufferOf(outs[2]), x.Buffer(), w.Buffer(), g.Buffer(), c, kept); err != nil {
			failed = fmt.Errorf("%s: %w", op, err)
		}
	}
	for i, t := range outs {
		if t != nil && failed != nil {
			outs[i] = failedAs(t, failed)
		}
	}
	return outs[0], outs[1], outs[2]
}
