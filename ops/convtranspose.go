package ops

import (
	"fmt"

	"github.com/extensor/extensor/device"

	"github.com/extensor/extensor/tensor"
)

// conv_transpose2d: its functions, table entry and cases. It is the
// adjoint of conv2d in its input: y = convT(x, w) is the input gradient
// of z = conv2d(u, w) for the upstream gradient x, with u of y's shape.
// So its forward runs conv2d's backward (on an input of zeros), its input
// gradient is conv2d(g, w) and its weight's gradient is conv2d's weight
// gradient for the input g and the upstream gradient x.

// The entries of transposedConvs. Each var is an op's handle, by which autograd.Apply
// and the rules reach it.
var (
	ConvTranspose2dOp = &Op{Name: "conv_transpose2d", Family: "window, conv_tex", Doc: "the transposed convolution of NCHW x, weight [in, out/groups, KH, KW], stride, padding, output padding (< stride), dilation, groups: output (H − 1)·stride − 2·padding + dilation·(KH − 1) + output padding + 1 high; conv2d's backward for the input, run forward.",
		Forward: fwd(func(in []*T, a ConvTransposeAttrs) *T {
			return convTranspose2d(in[0], in[1], bias(in), a.Window, a.OutputPadding)
		}),
		Backward: bwd(func(in []*T, g *T, a ConvTransposeAttrs) []*T {
			gx, gw, gb := ConvTranspose2dBackward(in[0], in[1], bias(in), g, a.Window, a.OutputPadding)
			if len(in) < 3 {
				return []*T{gx, gw}
			}
			return []*T{gx, gw, gb}
		}),
		Cases: convTransposeCases()}
)

// transposedConvs is conv_transpose2d, in the coverage table's order.
var transposedConvs = []*Op{
	ConvTranspose2dOp.with(convTransposeRule),
}

// convTransposeShape checks conv_transpose2d's arguments and returns its
// output's shape.
func convTransposeShape(op string, x, w, b *T, win Window, outPad [2]int) []int {
	ts := []*T{x, w}
	if b != nil {
		ts = append(ts, b)
	}
	operands(op, ts...)
	floats(op, ts...)
	xs := images(op, x)
	if w.Rank() != 4 {
		tensor.Panicf(op, tensor.ErrShape, "weight has shape %v; want [in channels, out channels / groups, KH, KW]", w.Shape())
	}
	ws := w.Shape()
	groups := max(win.Groups, 1)
	if win.Groups < 0 || ws[0] != xs[1] || xs[1]%groups != 0 {
		tensor.Panicf(op, tensor.ErrShape, "x has shape %v, weight %v, %d groups; want weight's first dimension x's channels, a multiple of the groups", xs, ws, win.Groups)
	}
	if b != nil && !equal(b.Shape(), []int{ws[1] * groups}) {
		tensor.Panicf(op, tensor.ErrShape, "bias has shape %v; want [%d]", b.Shape(), ws[1]*groups)
	}
	out := []int{xs[0], ws[1] * groups, 0, 0}
	d := win.dilation()
	for i := range 2 {
		if win.Stride[i] < 1 || win.Stride[i] > 1<<24 || win.Padding[i] < 0 || win.Padding[i] > 1<<24 || d[i] > 1<<24 {
			tensor.Panicf(op, tensor.ErrArgument, "stride %v, padding %v, dilation %v; want strides and dilations in [1, 2²⁴], paddings in [0, 2²⁴]", win.Stride, win.Padding, win.Dilation)
		}
		if outPad[i] < 0 || outPad[i] >= max(win.Stride[i], d[i]) {
			tensor.Panicf(op, tensor.ErrArgument, "output padding %v for stride %v and dilation %v; want 0 ≤ output padding < max(stride, dilation) (PyTorch's rule)", outPad, win.Stride, win.Dilation)
		}
		n := (xs[2+i]-1)*win.Stride[i] - 2*win.Padding[i] + d[i]*(ws[2+i]-1) + outPad[i] + 1
		if xs[2+i] < 1 || n < 1 || xs[2+i] > 1<<24 || ws[2+i] > 1<<24 {
			tensor.Panicf(op, tensor.ErrShape, "x %v, weight %v, stride %v, padding %v, dilation %v: an output %d pixels high or wide; want at least 1", xs, ws, win.Stride, win.Padding, win.Dilation, n)
		}
		out[2+i] = n
	}
	return out
}

// ConvTranspose2d returns PyTorch's conv_transpose2d of NCHW x with the
// weight w [in channels, out channels / groups, KH, KW] and bias b
// ([out channels] or nil): each input pixel scatters its channels times
// the kernel into the output, stride apart, the output cropped by padding
// on each side and extended by outPad (< max(stride, dilation), PyTorch's
// rule) at the bottom and right. float16 computes in float32 and rounds
// once.
func ConvTranspose2d[V Operand[E], E any](x, w, b V, win Window, outPad [2]int) V {
	return call(ConvTranspose2dOp, ConvTransposeAttrs{Window: win, OutputPadding: outPad}, inputs("ops.ConvTranspose2d", []V{x, w}, b)...)
}

func convTranspose2d(x, w, b *T, win Window, outPad [2]int) *T {
	const op = "ops.ConvTranspose2d"
	shape := convTransposeShape(op, x, w, b, win, outPad)
	if x.DType() == device.Float16 { // summed in float32, rounded once
		in, done := wide32(x, w, b)
		defer done()
		return narrow16(convTranspose2d(in[0], in[1], in[2], win, outPad))
	}
	var y *T
	if full, ok := uncropped(win, outPad); ok {
		// Output padding of a stride or more: the output uncropped,
		// then cropped to the padding and the output padding (whose
		// rows past the uncropped output are zeros).
		u := convTranspose2d(x, w, nil, full, [2]int{})
		y = cropTo(u, shape, win.Padding)
		u.Release()
	} else {
		y = as(op, func() *T { return conv2dInputGrad(op, shape, w, x, win) })
	}
	if b == nil {
		return y
	}
	defer y.Release()
	bv := b.Reshape(1, shape[1], 1, 1)
	defer bv.Release()
	return add(y, bv)
}

// ConvTranspose2dBackward returns the gradients of ConvTranspose2d for x
// (conv2d of g), w and b (g summed over N, H and W; nil for a nil b).
func ConvTranspose2dBackward(x, w, b, g *T, win Window, outPad [2]int) (gx, gw, gb *T) {
	const op = "ops.ConvTranspose2dBackward"
	shape := convTransposeShape(op, x, w, b, win, outPad)
	operands(op, x, g)
	floats(op, x, g)
	sameShape(op, "upstream gradient", g, shape)
	if x.DType() == device.Float16 {
		in, done := wide32(x, w, b, g)
		defer done()
		gx, gw, gb = ConvTranspose2dBackward(in[0], in[1], in[2], in[3], win, outPad)
		return narrow16(gx), narrow16(gw), narrow16(gb)
	}
	if full, ok := uncropped(win, outPad); ok {
		// The upstream gradient of the uncropped output: g where the
		// crop kept it, zeros elsewhere.
		fs := convTransposeShape(op, x, w, nil, full, [2]int{})
		gu := uncrop(g, fs, win.Padding)
		defer gu.Release()
		gx, gw, _ = ConvTranspose2dBackward(x, w, nil, gu, full, [2]int{})
		if b != nil {
			gb = sum(g, []int{0, 2, 3}, false)
		}
		return gx, gw, gb
	}
	gx = as(op, func() *T { return conv2dOf(g, w, nil, win) })
	gw = as(op, func() (r [3]*T) {
		r[0], r[1], r[2] = conv2dBackward(g, w, nil, x, win, false, nil)
		return r
	})[1]
	if b != nil {
		gb = sum(g, []int{0, 2, 3}, false)
	}
	return gx, gw, gb
}

// uncropped reports whether outPad reaches the stride in a dimension
// (as PyTorch allows where the dilation is larger), which the output's
// relation to conv2d's input gradient cannot express, and returns win
// without padding.
func uncropped(win Window, outPad [2]int) (Window, bool) {
	if outPad[0] < win.Stride[0] && outPad[1] < win.Stride[1] {
		return win, false
	}
	win.Padding = [2]int{}
	return win, true
}

// cropTo returns the rows and columns of u, a transposed convolution's
// output without padding, that the output of shape keeps: from crop on,
// zeros past u's end.
func cropTo(u *T, shape []int, crop [2]int) *T {
	y := u
	for i := range 2 {
		axis, n := 2+i, shape[2+i]
		keep := min(n, u.Shape()[axis]-crop[i])
		next := slice(y, axis, crop[i], crop[i]+keep, 1)
		if keep < n {
			pads := make([][2]int, 4)
			pads[axis] = [2]int{0, n - keep}
			padded := pad(next, pads, 0)
			next.Release()
			next = padded
		}
		if y != u {
			y.Release()
		}
		y = next
	}
	return y
}

// uncrop is cropTo's adjoint: g, of the cropped output's shape, placed
// from crop on in zeros of the uncropped shape fs.
func uncrop(g *T, fs []int, crop [2]int) *T {
	y := g
	for i := range 2 {
		axis := 2 + i
		keep := min(g.Shape()[axis], fs[axis]-crop[i])
		s := slice(y, axis, 0, keep, 1)
		pads := make([][2]int, 4)
		pads[axis] = [2]int{crop[i], fs[axis] - crop[i] - keep}
		next := pad(s, pads, 0)
		s.Release()
		if y != g {
			y.Release()
		}
		y = next
	}
	return y
}

func convTransposeCases() []Case {
	c := func(x, w []int, bias bool, win Window, outPad [2]int) Case {
		in := []Input{{Shape: x}, {Shape: w}}
		name := fmt.Sprintf("%s*%s s%v p%v", ShapeName(x), ShapeName(w), win.Stride, win.Padding)
		if outPad != [2]int{} {
			name += fmt.Sprintf(" op%v", outPad)
		}
		if win.Dilation != [2]int{} {
			name += fmt.Sprintf(" d%v", win.Dilation)
		}
		if win.Groups > 1 {
			name += fmt.Sprintf(" g%d", win.Groups)
		}
		if bias {
			in = append(in, Input{Shape: sh(w[1] * max(win.Groups, 1))})
		} else {
			name += " no bias"
		}
		return Case{Name: name, Inputs: in, Attrs: ConvTransposeAttrs{Window: win, OutputPadding: outPad}}
	}
	s1 := Window{Stride: pair(1, 1)}
	special := c(sh(1, 1, 3, 4), sh(1, 1, 2, 2), true, s1, [2]int{})
	special.Name, special.NoFD = "special values "+special.Name, true
	special.Inputs[0].Domain = Domain{Values: []float64{nan, 1, 2, 3, 4, inf, 0, 1, 1e30, 2, 3, -1}}
	big := c(sh(8, 16, 14, 14), sh(16, 8, 4, 4), true, Window{Stride: pair(2, 2), Padding: pair(1, 1)}, [2]int{})
	big.NoFD, big.ATol = true, 1e-3
	return []Case{
		c(sh(1, 2, 3, 3), sh(2, 3, 3, 3), true, s1, [2]int{}),
		c(sh(2, 2, 3, 4), sh(2, 3, 3, 3), true, Window{Stride: pair(2, 2), Padding: pair(1, 1)}, [2]int{1, 1}),
		c(sh(1, 4, 3, 3), sh(4, 2, 2, 3), false, Window{Stride: pair(2, 1), Groups: 2}, [2]int{1, 0}),
		c(sh(1, 2, 4, 3), sh(2, 2, 3, 2), true, Window{Stride: pair(1, 2), Padding: pair(2, 1), Dilation: pair(2, 1)}, [2]int{0, 1}),
		c(sh(0, 2, 3, 3), sh(2, 3, 2, 2), true, s1, [2]int{}),
		// Output padding of the stride or more, below the dilation.
		c(sh(1, 2, 3, 4), sh(2, 3, 2, 3), true, Window{Stride: pair(1, 1), Dilation: pair(2, 3)}, [2]int{1, 2}),
		c(sh(2, 2, 4, 3), sh(2, 2, 3, 2), true, Window{Stride: pair(1, 2), Padding: pair(2, 1), Dilation: pair(3, 1)}, [2]int{2, 1}),
		c(sh(1, 4, 3, 3), sh(4, 1, 2, 2), false, Window{Stride: pair(2, 1), Padding: pair(1, 0), Dilation: pair(4, 2), Groups: 4}, [2]int{3, 1}),
		special, big,
	}
}

// The second-order rules of the convolutions: each gradient in table ops
// (conv2d, conv_transpose2d, permute, slice, concat, sum), per group where
// there are groups.
var (
	// conv2d: gx = conv_transpose2d(g, w) (its output padding restores x's
	// size), gw = convWeightGrad(x, g), gb = Σ g.
	conv2dRule = rule(func(b Builder, in []Value, _, g Value, a Window) []Value {
		r := rb{b}
		x, w := in[0], in[1]
		xs, ws := x.Shape(), w.Shape()
		win := a
		d := win.dilation()
		var op [2]int
		for i := range 2 {
			op[i] = (xs[2+i] + 2*win.Padding[i] - d[i]*(ws[2+i]-1) - 1) % win.Stride[i]
		}
		grads := []Value{r.op(ConvTranspose2dOp, ConvTransposeAttrs{Window: win, OutputPadding: op}, g, w), convWeightGrad(r, x, g, win, ws[2], ws[3])}
		if len(in) > 2 {
			grads = append(grads, r.op(SumOp, ReduceAttrs{Axes: []int{0, 2, 3}}, g))
		}
		return grads
	})
	// conv_transpose2d: gx = conv2d(g, w), gw = convWeightGrad(g, x), gb = Σ g.
	convTransposeRule = rule(func(b Builder, in []Value, _, g Value, a ConvTransposeAttrs) []Value {
		r := rb{b}
		ws, xs := in[1].Shape(), in[0].Shape()
		gx := r.op(Conv2dOp, a.Window, g, in[1])
		// An output padding of the stride or more gives conv2d rows and
		// columns past x's.
		for i := range 2 {
			if gx.Shape()[2+i] != xs[2+i] {
				gx = r.op(SliceOp, SliceAttrs{Axis: 2 + i, Start: 0, Stop: xs[2+i], Step: 1}, gx)
			}
		}
		grads := []Value{gx, convWeightGrad(r, g, in[0], a.Window, ws[2], ws[3])}
		if len(in) > 2 {
			grads = append(grads, r.op(SumOp, ReduceAttrs{Axes: []int{0, 2, 3}}, g))
		}
		return grads
	})
)

// convWeightGrad returns the gradient of conv2d's weight ([O, C/groups,
// kh, kw]) for the input x [N, C, H, W] and the upstream gradient g [N, O,
// OH, OW]: per group, the convolution of x with the batch as channels by
// g as the filters (stride the dilation, dilation the stride), cropped to
// the kernel and permuted.
func convWeightGrad(r rb, x, g Value, win Window, kh, kw int) Value {
	groups := max(win.Groups, 1)
	c, o := x.Shape()[1]/groups, g.Shape()[1]/groups
	d := win.dilation()
	swap := []int{1, 0, 2, 3}
	parts := make([]Value, groups)
	for gi := range groups {
		xg, gg := x, g
		if groups > 1 {
			xg = r.op(SliceOp, SliceAttrs{Axis: 1, Start: gi * c, Stop: (gi + 1) * c, Step: 1}, x)
			gg = r.op(SliceOp, SliceAttrs{Axis: 1, Start: gi * o, Stop: (gi + 1) * o, Step: 1}, g)
		}
		cw := Window{Stride: d, Padding: win.Padding, Dilation: win.Stride}
		full := r.op(Conv2dOp, cw, r.op(PermuteOp, PermuteAttrs{Perm: swap}, xg), r.op(PermuteOp, PermuteAttrs{Perm: swap}, gg)) // [C, O, ≥kh, ≥kw]
		if s := full.Shape(); s[2] != kh || s[3] != kw {
			full = r.op(SliceOp, SliceAttrs{Axis: 2, Start: 0, Stop: kh, Step: 1}, full)
			full = r.op(SliceOp, SliceAttrs{Axis: 3, Start: 0, Stop: kw, Step: 1}, full)
		}
		parts[gi] = r.op(PermuteOp, PermuteAttrs{Perm: swap}, full)
	}
	if groups == 1 {
		return parts[0]
	}
	return r.op(ConcatOp, AxisAttrs{Axis: 0}, parts...)
}

// ConvTransposeAttrs are conv_transpose2d's geometry and the rows and
// columns added at the bottom and right.
type ConvTransposeAttrs struct {
	Window
	OutputPadding [2]int
}

func (ConvTransposeAttrs) isAttrs() {}
