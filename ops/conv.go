package ops

import (
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

// conv is the plan of a convolution.
type conv struct {
	g              device.Window2D
	cout, groups   int
	cg, og, kk, hw int // channels and filters per group, taps, output pixels
	pitch          int // the columns' rows: hw rounded up to a multiple of 4
	out            []int
}

func planConv(op string, x, w, b *tensor.Tensor, win Window) conv {
	return planConvOf(op, images(op, x), w, b, win)
}

// planConvOf is planConv for images of shape xs (NCHW).
func planConvOf(op string, xs []int, w, b *tensor.Tensor, win Window) conv {
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
	p := conv{g: win.geometry(op, xs, ws[2], ws[3]), cout: ws[0], groups: groups}
	oh, ow := p.g.Out()
	p.cg, p.og, p.kk, p.hw = xs[1]/groups, ws[0]/groups, ws[2]*ws[3], oh*ow
	p.pitch = (p.hw + 3) &^ 3
	p.g.Pitch = p.pitch
	p.out = []int{xs[0], ws[0], oh, ow}
	return p
}

// colsBudget bounds the elements of one chunk's im2col matrix (8 MiB of
// float32), so that the columns of a large batch never outgrow a binding
// nor dominate the memory of a training step: at batch 256, the CNN of
// examples/cnn peaked at 134.5 MiB with chunks of 2²⁴ elements, 87.5 MiB
// with these.
const colsBudget = 1 << 21

// fused reports whether the bias b rides in the products: without
// groups, the filters gain a last column holding the bias and each
// image's columns a last row of ones (device.Window2D.Ones), so that the
// products add the bias and the filters' gradient carries the bias's,
// with no pass of their own over the output.
func (p conv) fused(b *tensor.Tensor) bool { return b != nil && p.groups == 1 }

// rows returns the rows of each image's (and group's) columns: the
// taps, and the row of ones if fused.
func (p conv) rows(fused bool) int { return p.cg*p.kk + b2i(fused) }

// withBias returns the filters w with b as their last column, stored
// transposed: a [taps + 1, out channels] matrix, so that the forward
// product reads 4 filters' taps as a vec4 (on lavapipe a load costs per
// instruction and lane: four scalar loads cost about four vec4s).
func (p conv) withBias(dev device.Device, dt device.DType, w, b *tensor.Tensor) *tensor.Tensor {
	k := p.cg * p.kk
	wb, ok := output(dev, dt, []int{k + 1, p.cout}, w, b)
	if ok {
		dev.CopyStrided(wb.Buffer(), w.Buffer(), device.Strided{Shape: []int{p.cout, k}, SrcStrides: []int{k, 1}, DstStrides: []int{1, p.cout}})
		dev.CopyStrided(wb.Buffer(), b.Buffer(), device.Strided{Shape: []int{p.cout}, SrcStrides: []int{1}, DstStrides: []int{1}, DstOffset: k * p.cout})
	}
	return wb
}

// saveBudget bounds the columns that Conv2d's Save keeps for backward
// (elements over the whole batch, 64 MiB of float32): past it, backward
// computes them again, a chunk at a time.
const saveBudget = 1 << 24

// columns calls f, for each run of images n0… (nb of them) whose
// columns fit colsBudget, with their im2col matrix (with a row of ones
// per image if fused; rows of p.pitch, zeros past p.hw), released after
// f; kept tells f that the columns are saved ones, which it must leave
// unchanged. With saved columns that fit (Conv2d's Save), f gets those
// instead; with save set, the columns are returned instead of released.
// It stops at, and returns, the first failure.
func (p conv) columns(dev device.Device, dt device.DType, x *tensor.Tensor, fused bool, saved *Saved, save bool,
	f func(n0, nb int, cols *tensor.Tensor, kept bool) error) ([]*tensor.Tensor, error) {
	rows := p.g.C*p.kk + b2i(fused)
	if cs := p.savedColumns(dev, dt, rows, saved); cs != nil {
		n0 := 0
		for _, cols := range cs {
			nb := cols.Shape()[0]
			if err := f(n0, nb, cols, true); err != nil {
				return nil, err
			}
			n0 += nb
		}
		return nil, nil
	}
	step := max(colsBudget/max(rows*p.pitch, 1), 1)
	var kept []*tensor.Tensor
	fail := func(err error) ([]*tensor.Tensor, error) {
		for _, c := range kept {
			c.Release()
		}
		return nil, err
	}
	for n0 := 0; n0 < p.g.N; n0 += step {
		nb := min(step, p.g.N-n0)
		cols, ok := output(dev, dt, []int{nb, rows, p.pitch}, x)
		if !ok {
			return fail(cols.Err())
		}
		g := p.g
		g.N, g.N0, g.Ones = nb, n0, fused
		dev.Window(device.Im2Col, cols.Buffer(), x.Buffer(), nil, g)
		err := f(n0, nb, cols, false)
		if save && err == nil {
			kept = append(kept, cols)
		} else {
			cols.Release()
		}
		if err != nil {
			return fail(err)
		}
	}
	return kept, nil
}

// savedColumns returns the columns in saved if they are this
// convolution's (images in order, rows of ones as fused wants, dtype and
// device), nil otherwise.
func (p conv) savedColumns(dev device.Device, dt device.DType, rows int, saved *Saved) []*tensor.Tensor {
	if saved == nil || len(saved.tensors) == 0 {
		return nil
	}
	n := 0
	for _, c := range saved.tensors {
		s := c.Shape()
		if c.Err() != nil || c.Device() != dev || c.DType() != dt || len(s) != 3 || s[1] != rows || s[2] != p.pitch {
			return nil
		}
		n += s[0]
	}
	if n != p.g.N {
		return nil
	}
	return saved.tensors
}

// padded returns the upstream gradient g (N, out channels, OH, OW) as
// (N, out channels, pitch), zeros past OH·OW: g itself when no row needs
// padding.
func (p conv) padded(dev device.Device, dt device.DType, g *tensor.Tensor) *tensor.Tensor {
	if p.pitch == p.hw {
		return g
	}
	gp, ok := output(dev, dt, []int{p.g.N, p.cout, p.pitch}, g)
	if ok {
		dev.Fill(gp.Buffer(), 0)
		dev.CopyStrided(gp.Buffer(), g.Buffer(), device.Strided{Shape: []int{p.g.N * p.cout, p.hw}, SrcStrides: []int{p.hw, 1}, DstStrides: []int{p.pitch, 1}})
	}
	return gp
}

// convolver returns dev's own convolution kernels (device.Convolver) if
// it has them and this convolution has no groups, else nil; tried before
// im2col, they may still decline the geometry or dtype.
func (p conv) convolver(dev device.Device) device.Convolver {
	if c, ok := dev.(device.Convolver); ok && p.groups == 1 {
		return c
	}
	return nil
}

// direct2D is the geometry for device.Convolver: unpadded rows.
func (p conv) direct2D() device.Window2D {
	g := p.g
	g.Pitch, g.N0, g.Ones = 0, 0, false
	return g
}

// directBackward runs the gradients of the convolution on dev's
// device.Convolver, into gx (unless nil) and the filters' gradient with
// the bias's as its last column, which it returns (the caller releases
// it); ok is false, with nothing recorded, if the device declines.
func (p conv) directBackward(c device.Convolver, dev device.Device, dt device.DType, gx, x, w, g *tensor.Tensor) (gwb *tensor.Tensor, ok bool) {
	gwb, okw := output(dev, dt, []int{p.cout, p.rows(true)}, x, w, g)
	if !okw {
		return gwb, true
	}
	var gxb device.Buffer
	if gx != nil {
		gxb = gx.Buffer()
	}
	if !c.Conv2dBackward(gxb, gwb.Buffer(), x.Buffer(), w.Buffer(), g.Buffer(), p.direct2D(), p.cout) {
		gwb.Release()
		return nil, false
	}
	return gwb, true
}

// splitBias copies the filters' gradient from acc ([out channels, taps
// + 1], the bias's gradient its last column) into gw, and returns the
// bias's if withBias (else nil).
func (p conv) splitBias(dev device.Device, dt device.DType, gw, acc *tensor.Tensor, withBias bool) (gb *tensor.Tensor) {
	kr := p.rows(true)
	k := kr - 1
	if err := acc.Err(); err != nil {
		if withBias {
			gb = tensor.Failed(dev, dt, err, p.cout)
		}
		return gb
	}
	if gw.Err() == nil {
		dev.CopyStrided(gw.Buffer(), acc.Buffer(), device.Strided{Shape: []int{p.cout, k}, SrcStrides: []int{kr, 1}, DstStrides: []int{k, 1}})
	}
	if withBias {
		gb, _ = output(dev, dt, []int{p.cout}, acc)
		if gb.Err() == nil {
			dev.CopyStrided(gb.Buffer(), acc.Buffer(), device.Strided{Shape: []int{p.cout}, SrcStrides: []int{kr}, DstStrides: []int{1}, SrcOffset: k})
		}
	}
	return gb
}

// Conv2d returns the 2-D cross-correlation of the NCHW images x with the
// filters w ([out channels, in channels / groups, KH, KW]) plus the bias
// b ([out channels], or nil), as PyTorch's conv2d: stride, zero padding,
// dilation and groups from win (win.Kernel is unused). The result is
// (N, out channels, OH, OW) with OH = ⌊(H + 2·pad − dil·(KH−1) − 1)/stride⌋ + 1.
//
// On a device with direct convolution kernels (device.Convolver: the
// WebGPU backend on CPU adapters, for float32 or float16 images of at
// least 4 channels and 8 filters, groups 1) it runs on those, with no columns
// (docs/performance.md has their speed). Otherwise it runs as im2col (a window
// kernel copying each image's taps into a
// (C·KH·KW)×(OH·OW) matrix, its rows padded with zeros to a multiple of
// 4 so that the products read them by vec4s) and one batched matrix
// product of the filters with every image's matrix (per group), on the
// device's matrix-product kernels (docs/kernel-choices.md,
// convolutions). Large batches run in chunks of bounded column memory. The
// bias rides in the products (see conv.fused); with groups, the products
// add to the bias, copied into every pixel first. Either way a float16
// result (computed in float32) is rounded once.
func Conv2d[V Operand[E], E any](x, w, b V, win Window) V {
	return call(Conv2dOp, win, inputs("ops.Conv2d", []V{x, w}, b)...)
}

func conv2dOf(x, w, b *tensor.Tensor, win Window) *tensor.Tensor {
	out, _ := conv2d(x, w, b, win, false)
	return out
}

// conv2dSave is Conv2d that also returns the im2col columns for
// Conv2dBackward to reuse (the op table's Save), when it runs on im2col
// and they fit saveBudget: backward then runs no im2col, half the step's
// (docs/kernel-choices.md, convolutions). On a device.Convolver's
// direct kernels it keeps nothing: there are no columns.
func conv2dSave(x, w, b *tensor.Tensor, win Window) (*tensor.Tensor, *Saved) {
	return conv2d(x, w, b, win, true)
}

// conv2d is Conv2d, keeping the columns if save and they fit.
func conv2d(x, w, b *tensor.Tensor, win Window, save bool) (*tensor.Tensor, *Saved) {
	const op = "ops.Conv2d"
	dev, dt := layerOperands(op, x, w, b)
	p := planConv(op, x, w, b, win)
	deps := []*tensor.Tensor{x, w}
	if b != nil {
		deps = append(deps, b)
	}
	out, ok := output(dev, dt, p.out, deps...)
	fused, kr, filters := p.fused(b), p.rows(p.fused(b)), w
	if c := p.convolver(dev); ok && out.Len() > 0 && c != nil {
		var bb device.Buffer
		if b != nil {
			bb = b.Buffer()
		}
		if c.Conv2d(out.Buffer(), x.Buffer(), w.Buffer(), bb, p.direct2D(), p.cout) {
			return out, nil
		}
	}
	if ok && out.Len() > 0 && fused {
		filters = p.withBias(dev, dt, w, b)
		defer filters.Release()
		ok = filters.Err() == nil
		if !ok {
			out.Release()
			out = tensor.Failed(dev, dt, filters.Err(), p.out...)
		}
	}
	if ok && out.Len() > 0 {
		if b != nil && !fused {
			// The bias in every pixel, to which the products add (in
			// float32, so that a float16 result is rounded once).
			dev.CopyStrided(out.Buffer(), b.Buffer(), device.Strided{Shape: []int{p.g.N, p.cout, p.hw},
				SrcStrides: []int{0, 1, 0}, DstStrides: []int{p.cout * p.hw, p.hw, 1}})
		}
		save = save && p.g.N*kr*p.pitch <= saveBudget
		cols, failed := p.columns(dev, dt, x, fused, nil, save, func(n0, nb int, cols *tensor.Tensor, _ bool) error {
			// out[n, g] (+)= W_g · cols[n, g] for every image and group.
			dev.MatMul(out.Buffer(), filters.Buffer(), cols.Buffer(), device.GEMM{Batch: nb * p.groups, M: p.og, K: kr, N: p.hw, TransA: fused,
				StrideA: p.og * kr, CycleA: p.groups, StrideB: kr * p.pitch, LdB: p.pitch, OffDst: n0 * p.cout * p.hw, Accumulate: b != nil && !fused})
			return nil
		})
		if failed != nil {
			out.Release()
			out = tensor.Failed(dev, dt, failed, p.out...)
		}
		if cols != nil {
			return out, &Saved{tensors: cols}
		}
	}
	return out, nil
}

// Conv2dBackward returns the gradients of Conv2d for the upstream
// gradient g: gx (the transposed convolution of g, as col2im of Wᵀ·g),
// gw (g times each image's columns, summed over the batch) and gb (g
// summed over N, H and W; nil when b is nil).
func Conv2dBackward(x, w, b, g *tensor.Tensor, win Window) (gx, gw, gb *tensor.Tensor) {
	return conv2dBackward(x, w, b, g, win, true, nil)
}

// imagesGrad sets images n0…n0+nb−1 of gx to their gradient for the
// (row-padded) upstream gradient gp: the columns' gradient W_gᵀ · gp[n, g]
// into dc ((nb, C·KH·KW, pitch)), then col2im.
func (p conv) imagesGrad(dev device.Device, gx, dc, w, gp *tensor.Tensor, n0, nb int) {
	dev.MatMul(dc.Buffer(), w.Buffer(), gp.Buffer(), device.GEMM{Batch: nb * p.groups, M: p.cg * p.kk, K: p.og, N: p.pitch, TransA: true,
		StrideA: p.og * p.cg * p.kk, CycleA: p.groups, StrideB: p.og * p.pitch, OffB: n0 * p.cout * p.pitch})
	c := p.g
	c.N, c.N0 = nb, n0
	dev.Window(device.Col2Im, gx.Buffer(), dc.Buffer(), nil, c)
}

// conv2dInputGrad is Conv2dBackward's gradient of the images alone, for
// images of shape xs (conv_transpose2d's forward): per chunk of images and
// group, W_gᵀ · g[n, g] and col2im, with neither the images' columns nor
// the filters' gradient.
func conv2dInputGrad(op string, xs []int, w, g *tensor.Tensor, win Window) *tensor.Tensor {
	dev, dt := layerOperands(op, g, w, nil)
	p := planConvOf(op, xs, w, nil, win)
	sameShape(op, "upstream gradient", g, p.out)
	gx, ok := output(dev, dt, xs, w, g)
	if !ok {
		return gx
	}
	if g.Len() == 0 || gx.Len() == 0 {
		dev.Fill(gx.Buffer(), 0)
		return gx
	}
	gp := p.padded(dev, dt, g)
	if gp != g {
		defer gp.Release()
	}
	step := max(colsBudget/max(p.g.C*p.kk*p.pitch, 1), 1)
	for n0 := 0; n0 < p.g.N; n0 += step {
		nb := min(step, p.g.N-n0)
		dc, ok := output(dev, dt, []int{nb, p.g.C * p.kk, p.pitch}, gp)
		if !ok {
			gx.Release()
			return dc
		}
		p.imagesGrad(dev, gx, dc, w, gp, n0, nb)
		dc.Release()
	}
	return gx
}

// conv2dBackward is Conv2dBackward, gx left nil (and its products and
// col2im skipped) unless wantX, reading the columns from saved (Conv2d's
// Save) when it holds them.
func conv2dBackward(x, w, b, g *tensor.Tensor, win Window, wantX bool, saved *Saved) (gx, gw, gb *tensor.Tensor) {
	const op = "ops.Conv2dBackward"
	dev, dt := layerOperands(op, x, w, b, g)
	p := planConv(op, x, w, b, win)
	sameShape(op, "upstream gradient", g, p.out)
	okx := true
	if wantX {
		gx, okx = output(dev, dt, x.Shape(), x, w, g)
	}
	gw, okw := output(dev, dt, w.Shape(), x, w, g)
	if okx && okw && (g.Len() == 0 || x.Len() == 0) {
		// No products: gradients of zeros (an empty batch, or no filters).
		dev.Fill(gw.Buffer(), 0)
		if wantX {
			dev.Fill(gx.Buffer(), 0)
		}
	}
	if c := p.convolver(dev); okx && okw && g.Len() > 0 && x.Len() > 0 && c != nil {
		if gwb, ok := p.directBackward(c, dev, dt, gx, x, w, g); ok {
			defer gwb.Release()
			if err := gwb.Err(); err != nil {
				gw.Release()
				gw = tensor.Failed(dev, dt, err, w.Shape()...)
				if wantX {
					gx.Release()
					gx = tensor.Failed(dev, dt, err, x.Shape()...)
				}
			}
			return gx, gw, p.splitBias(dev, dt, gw, gwb, b != nil)
		}
	}
	fused := p.fused(b) && okx && okw && g.Len() > 0 && x.Len() > 0
	kr, acc := p.rows(fused), gw // acc: the filters' gradient, with the bias's if fused
	if fused {
		acc, okw = output(dev, dt, []int{p.cout, kr}, x, w, g)
		defer acc.Release()
	}
	var failed error
	if okx && okw && g.Len() > 0 && x.Len() > 0 {
		// g with its rows padded as the columns' are: the products
		// then read both by vec4s (device.GEMM.LdB).
		gp := p.padded(dev, dt, g)
		if gp != g {
			defer gp.Release()
		}
		first := true
		_, failed = p.columns(dev, dt, x, fused, saved, false, func(n0, nb int, cols *tensor.Tensor, kept bool) error {
			if err := gp.Err(); err != nil {
				return err
			}
			// Per image and group, g[n, g] · cols[n, g]ᵀ; summed over images.
			part, ok := output(dev, dt, []int{nb, p.cout * kr}, x, g)
			if !ok {
				return part.Err()
			}
			dev.MatMul(part.Buffer(), gp.Buffer(), cols.Buffer(), device.GEMM{Batch: nb * p.groups, M: p.og, K: p.pitch, N: kr, TransB: true,
				StrideA: p.og * p.pitch, OffA: n0 * p.cout * p.pitch, StrideB: kr * p.pitch})
			sum := sum(part, []int{0}, false)
			part.Release()
			if err := sum.Err(); err != nil {
				return err
			}
			if first {
				dev.Copy(acc.Buffer(), sum.Buffer())
			} else {
				dev.Axpy(acc.Buffer(), sum.Buffer(), 1)
			}
			sum.Release()
			first = false
			if !wantX {
				return nil
			}
			// The columns' gradient, W_gᵀ · g[n, g], into cols (as
			// (nb, C·KH·KW, pitch): no row of ones), or into a matrix of
			// its own if cols are saved ones, then col2im.
			dc := cols
			if kept {
				if dc, _ = output(dev, dt, []int{nb, p.g.C * p.kk, p.pitch}, cols); dc.Err() != nil {
					return dc.Err()
				}
				defer dc.Release()
			}
			p.imagesGrad(dev, gx, dc, w, gp, n0, nb)
			return nil
		})
		if failed != nil {
			gw.Release()
			gw = tensor.Failed(dev, dt, failed, w.Shape()...)
			if wantX {
				gx.Release()
				gx = tensor.Failed(dev, dt, failed, x.Shape()...)
			}
		}
	}
	switch {
	case fused && !okw: // no room for acc
		gw.Release()
		gw = tensor.Failed(dev, dt, acc.Err(), w.Shape()...)
		gb = tensor.Failed(dev, dt, acc.Err(), p.cout)
	case fused && failed != nil: // gw is failed already
		gb = tensor.Failed(dev, dt, failed, p.cout)
	case fused:
		gb = p.splitBias(dev, dt, gw, acc, true)
	case b != nil:
		gb = sum(g, []int{0, 2, 3}, false)
	}
	return gx, gw, gb
}
