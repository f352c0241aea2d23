package ops

import (
	"fmt"
	"math"
	"slices"

	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/tensor"
)

// The resamplings: interpolate (nearest, bilinear) and
// adaptive_avg_pool2d. Each is linear and separable: along each of the
// last two axes, output i is Σₜ wₜ·x[idxₜ] over its taps (one for
// nearest, PyTorch's two for bilinear, a window's for the pooling),
// gathered with index_select and weighed with the elementwise kernels, so
// a NaN or an infinity reaches exactly the outputs whose taps read it, as
// in PyTorch. The gradient applies the transposed taps, and the
// second-order rule is the backward itself (the op is linear). Adaptive
// pooling whose windows tile the input evenly is a mean over blocks.

// The entries of resamplings. Each var is an op's handle, by which autograd.Apply
// and the rules reach it.
var (
	InterpolateOp = &Op{Name: "interpolate", Family: "gather, binary, where", Doc: "x [..., H, W] resized to Shape [OH, OW] as PyTorch's interpolate(size=…): Mode nearest (the default: source ⌊i·H/OH⌋, in float32) or bilinear (AlignCorners: corners on corners; else half-pixel centres, clamped at 0).",
		Forward: fwd(func(in []*T, a InterpolateAttrs) *T { return interpolate(in[0], a.Shape, a.Mode, a.AlignCorners) }),
		Backward: bwd(func(in []*T, g *T, a InterpolateAttrs) []*T {
			return []*T{InterpolateBackward(in[0], g, a.Shape, a.Mode, a.AlignCorners)}
		}),
		Cases: interpolateCases()}
	AdaptiveAvgPool2dOp = &Op{Name: "adaptive_avg_pool2d", Family: "gather, binary, where, reduce", Doc: "the means of x [..., H, W] over Shape [OH, OW] windows, window i of rows ⌊i·H/OH⌋ to ⌈(i+1)·H/OH⌉ − 1 (PyTorch's), columns alike.",
		Forward:  fwd(func(in []*T, a ShapeAttrs) *T { return adaptiveAvgPool2d(in[0], a.Shape) }),
		Backward: bwd(func(in []*T, g *T, a ShapeAttrs) []*T { return []*T{AdaptiveAvgPool2dBackward(in[0], g, a.Shape)} }),
		Cases:    adaptiveCases()}
)

// resamplings are interpolate and adaptive_avg_pool2d, in the coverage
// table's order.
var resamplings = []*Op{
	InterpolateOp.with(resampleRule(false)),
	AdaptiveAvgPool2dOp.with(resampleRule(true)),
}

// resampleRule is a resampling's backward in table ops: the transposed
// taps applied to g.
func resampleRule(adaptive bool) Rule {
	return unaryRule(func(r rb, x, y, g Value, at Attrs) Value {
		if adaptive {
			return resample(r, g, x.Shape(), attrsAs[ShapeAttrs](at).Shape, "adaptive", false, true)
		}
		a := attrsAs[InterpolateAttrs](at)
		return resample(r, g, x.Shape(), a.Shape, a.Mode, a.AlignCorners, true)
	})
}

// taps is a 1-D resampling from in to out entries: output i is
// Σₜ w[t][i]·x[idx[t][i]] over the taps t where on[t][i].
type taps struct {
	idx [][]int32
	w   [][]float64
	on  [][]bool
}

// tapsOf returns the taps of mode ("nearest", "bilinear" or "adaptive")
// from in to out entries.
func tapsOf(mode string, in, out int, align bool) taps {
	lists := make([][]tap, out)
	for i := range out {
		switch mode {
		case "nearest":
			// PyTorch's nearest_idx, in float32.
			src := i
			switch {
			case out == 2*in:
				src = i >> 1
			case out != in:
				src = min(int(math.Floor(float64(float32(i)*(float32(in)/float32(out))))), in-1)
			}
			lists[i] = []tap{{src, 1}}
		case "bilinear":
			// PyTorch's area_pixel_compute_source_index.
			var src float64
			switch {
			case align && out > 1:
				src = float64(i) * float64(in-1) / float64(out-1)
			case !align:
				src = max((float64(i)+0.5)*float64(in)/float64(out)-0.5, 0)
			}
			i0 := min(int(src), in-1)
			l1 := src - float64(i0)
			lists[i] = []tap{{i0, 1 - l1}, {min(i0+1, in-1), l1}}
		default: // adaptive average pooling
			lo, hi := i*in/out, ((i+1)*in+out-1)/out
			for j := lo; j < hi; j++ {
				lists[i] = append(lists[i], tap{j, 1 / float64(hi-lo)})
			}
		}
	}
	return tapsFrom(lists)
}

// tap is one input entry and its weight.
type tap struct {
	j int
	w float64
}

// tapsFrom returns the taps of per-output lists, padded to the longest.
func tapsFrom(lists [][]tap) taps {
	k := 0
	for _, l := range lists {
		k = max(k, len(l))
	}
	t := taps{idx: make([][]int32, k), w: make([][]float64, k), on: make([][]bool, k)}
	for n := range k {
		t.idx[n], t.w[n], t.on[n] = make([]int32, len(lists)), make([]float64, len(lists)), make([]bool, len(lists))
		for i, l := range lists {
			if n < len(l) {
				t.idx[n][i], t.w[n][i], t.on[n][i] = int32(l[n].j), l[n].w, true
			}
		}
	}
	return t
}

// transpose returns the taps of the gradient: to each of the in entries,
// every output that read it, with its weight.
func (t taps) transpose(in int) taps {
	lists := make([][]tap, in)
	for n := range t.idx {
		for i, j := range t.idx[n] {
			if t.on[n][i] {
				lists[j] = append(lists[j], tap{i, t.w[n][i]})
			}
		}
	}
	return tapsFrom(lists)
}

// apply returns x resampled along axis by the taps, in table ops.
func (t taps) apply(r rb, x Value, axis int) Value {
	xt := r.b.Tensor(x)
	dev, dt := xt.Device(), xt.DType()
	s := xt.Shape()
	out := len(t.on[0])
	// The weights and masks broadcast along axis: out there, 1 elsewhere.
	along := make([]int, len(s))
	for k := range along {
		along[k] = 1
	}
	along[len(s)+axis] = out
	var acc Value
	for n := range t.idx {
		idx := r.b.Const(tensor.Must(tensor.FromInt32(dev, t.idx[n], out)))
		take := r.op(IndexSelectOp, AxisAttrs{Axis: axis}, x, idx)
		w := r.b.Const(tensor.Must(tensor.FromValues(dev, dt, t.w[n], along...)))
		term := r.mul(take, w)
		if slices.Contains(t.on[n], false) {
			on := make([]float64, out)
			for i, b := range t.on[n] {
				if b {
					on[i] = 1
				}
			}
			term = r.op(WhereOp, nil, r.b.Const(tensor.Must(tensor.FromValues(dev, dt, on, along...))), term, r.scalar(term, 0))
		}
		if acc == nil {
			acc = term
		} else {
			acc = r.add(acc, term)
		}
	}
	return acc
}

// resample returns x [..., H, W] resampled to size [OH, OW] by mode; or,
// with grad, x the upstream gradient of that resampling of an input of
// shape from, the gradient for the input.
func resample(r rb, x Value, from, size []int, mode string, align, grad bool) Value {
	h, w := from[len(from)-2], from[len(from)-1]
	xs := r.b.Tensor(x).Shape()
	to := resampledShape(xs, size[0], size[1])
	if grad {
		to = resampledShape(xs, h, w)
	}
	if _, err := device.CheckNumel(to); err != nil || device.Numel(to) == 0 || device.Numel(xs) == 0 {
		// No taps to build (an axis beside an empty one may be huge).
		t := r.b.Tensor(x)
		return r.b.Const(filled(t.Device(), t.DType(), to, 0, t))
	}
	if mode == "adaptive" && size[0] > 0 && size[1] > 0 && h%size[0] == 0 && w%size[1] == 0 && device.Numel(from) > 0 {
		return evenPool(r, x, from, size, grad)
	}
	th, tw := tapsOf(mode, h, size[0], align), tapsOf(mode, w, size[1], align)
	if grad {
		th, tw = th.transpose(h), tw.transpose(w)
	}
	return tw.apply(r, th.apply(r, x, -2), -1)
}

// evenPool is adaptive_avg_pool2d (or, with grad, its gradient) where the
// windows tile x [..., H, W] evenly: kh×kw blocks, a mean over two axes
// of [..., OH, kh, OW, kw] (the gradient: g/(kh·kw) broadcast back).
func evenPool(r rb, x Value, from, size []int, grad bool) Value {
	lead := from[:len(from)-2]
	oh, ow := size[0], size[1]
	kh, kw := from[len(from)-2]/oh, from[len(from)-1]/ow
	blocks := append(append([]int{}, lead...), oh, kh, ow, kw)
	n := len(blocks)
	if grad {
		g := r.reshape(x, append(append([]int{}, lead...), oh, 1, ow, 1))
		return r.reshape(r.scale(r.broadcast(g, blocks), 1/float64(kh*kw)), from)
	}
	return r.op(MeanOp, ReduceAttrs{Axes: []int{n - 3, n - 1}}, r.reshape(x, blocks))
}

// resampledShape returns s with its last two axes set to h and w.
func resampledShape(s []int, h, w int) []int {
	s = append([]int{}, s...)
	s[len(s)-2], s[len(s)-1] = h, w
	return s
}

// resampleArgs checks a resampling's arguments and returns its mode
// ("adaptive" only for adaptive_avg_pool2d).
func resampleArgs(op string, x *T, size []int, mode string, adaptive bool) string {
	operands(op, x)
	floats(op, x)
	if x.Rank() < 2 {
		tensor.Panicf(op, tensor.ErrShape, "x of shape %v; want [..., H, W]", x.Shape())
	}
	if len(size) != 2 || size[0] < 0 || size[1] < 0 || size[0] > 1<<16 || size[1] > 1<<16 {
		tensor.Panicf(op, tensor.ErrArgument, "output size %v; want [OH, OW], each in [0, 2¹⁶]", size)
	}
	switch {
	case adaptive:
	case mode == "":
		mode = "nearest"
	case mode == "nearest", mode == "bilinear":
	default:
		tensor.Panicf(op, tensor.ErrArgument, "mode %q; want \"nearest\" or \"bilinear\"", mode)
	}
	if (x.Dim(-2) == 0 && size[0] > 0) || (x.Dim(-1) == 0 && size[1] > 0) {
		tensor.Panicf(op, tensor.ErrShape, "x of shape %v has no pixels to resample to %v", x.Shape(), size)
	}
	return mode
}

// runResample runs a resampling eagerly, naming op in its errors; on
// float16 computes in float32 and rounds once.
func runResample(op string, x *T, from, size []int, mode string, align, grad bool) *T {
	if x.DType() == device.Float16 {
		in, done := wide32(x)
		defer done()
		return narrow16(runResample(op, in[0], from, size, mode, align, grad))
	}
	return as(op, func() *T { return resample(rb{Eager{}}, x, from, size, mode, align, grad).(*T) })
}

// Interpolate returns x [..., H, W] resized to size [OH, OW] as PyTorch's
// interpolate with size given: mode "nearest" (or "") takes source pixel
// ⌊i·H/OH⌋ (PyTorch's legacy nearest, computed in float32), "bilinear"
// weighs the two nearest rows and columns, with alignCorners mapping the
// corner pixels onto each other, else pixel centres (i + ½)·H/OH − ½,
// clamped at 0.
func Interpolate[V Operand[E], E any](x V, size []int, mode string, alignCorners bool) V {
	return call(InterpolateOp, InterpolateAttrs{Shape: size, Mode: mode, AlignCorners: alignCorners}, x)
}

func interpolate(x *T, size []int, mode string, alignCorners bool) *T {
	const op = "ops.Interpolate"
	mode = resampleArgs(op, x, size, mode, false)
	return runResample(op, x, x.Shape(), size, mode, alignCorners, false)
}

// InterpolateBackward returns the gradient of Interpolate for x.
func InterpolateBackward(x, g *T, size []int, mode string, alignCorners bool) *T {
	const op = "ops.InterpolateBackward"
	mode = resampleArgs(op, x, size, mode, false)
	operands(op, x, g)
	sameShape(op, "upstream gradient", g, resampledShape(x.Shape(), size[0], size[1]))
	return runResample(op, g, x.Shape(), size, mode, alignCorners, true)
}

// AdaptiveAvgPool2d returns PyTorch's adaptive_avg_pool2d of x [..., H, W]
// to size [OH, OW]: output (i, j) is the mean of rows ⌊i·H/OH⌋ to
// ⌈(i+1)·H/OH⌉ − 1 and columns alike.
func AdaptiveAvgPool2d[V Operand[E], E any](x V, size []int) V {
	return call(AdaptiveAvgPool2dOp, ShapeAttrs{Shape: size}, x)
}

func adaptiveAvgPool2d(x *T, size []int) *T {
	const op = "ops.AdaptiveAvgPool2d"
	resampleArgs(op, x, size, "adaptive", true)
	return runResample(op, x, x.Shape(), size, "adaptive", false, false)
}

// AdaptiveAvgPool2dBackward returns the gradient of AdaptiveAvgPool2d.
func AdaptiveAvgPool2dBackward(x, g *T, size []int) *T {
	const op = "ops.AdaptiveAvgPool2dBackward"
	resampleArgs(op, x, size, "adaptive", true)
	operands(op, x, g)
	sameShape(op, "upstream gradient", g, resampledShape(x.Shape(), size[0], size[1]))
	return runResample(op, g, x.Shape(), size, "adaptive", false, true)
}

func interpolateCases() []Case {
	c := func(x []int, size []int, mode string, align bool) Case {
		name := fmt.Sprintf("%s→%v %s", ShapeName(x), size, mode)
		if align {
			name += " align_corners"
		}
		return Case{Name: name, Inputs: []Input{{Shape: x}}, Attrs: InterpolateAttrs{Shape: size, Mode: mode, AlignCorners: align}}
	}
	special := c(sh(1, 1, 3, 5), sh(6, 7), "bilinear", false)
	special.Name, special.NoFD = "special values "+special.Name, true
	special.Inputs[0].Domain = Domain{Values: finiteSpecials}
	big := c(sh(4, 8, 32, 32), sh(64, 48), "bilinear", false)
	big.NoFD = true
	return []Case{
		c(sh(2, 3, 4, 5), sh(8, 10), "nearest", false), c(sh(1, 2, 7, 6), sh(3, 4), "nearest", false), c(sh(1, 1, 5, 5), sh(7, 3), "nearest", false),
		c(sh(2, 2, 4, 5), sh(8, 9), "bilinear", false), c(sh(2, 2, 4, 5), sh(8, 9), "bilinear", true),
		c(sh(1, 3, 7, 6), sh(3, 4), "bilinear", false), c(sh(1, 3, 7, 6), sh(3, 4), "bilinear", true),
		c(sh(1, 1, 3, 4), sh(1, 1), "bilinear", true), c(sh(3, 4), sh(5, 2), "bilinear", false),
		c(sh(0, 2, 3, 3), sh(4, 4), "nearest", false), special, big,
	}
}

func adaptiveCases() []Case {
	c := func(x []int, size []int) Case {
		return Case{Name: fmt.Sprintf("%s→%v", ShapeName(x), size), Inputs: []Input{{Shape: x}}, Attrs: ShapeAttrs{Shape: size}}
	}
	special := c(sh(1, 2, 5, 5), sh(2, 3))
	special.Name, special.NoFD = "special values "+special.Name, true
	special.Inputs[0].Domain = Domain{Values: finiteSpecials}
	big := c(sh(8, 16, 28, 28), sh(7, 7))
	big.NoFD = true
	return []Case{c(sh(2, 3, 7, 9), sh(3, 4)), c(sh(1, 2, 8, 8), sh(1, 1)), c(sh(2, 5, 5), sh(5, 5)), c(sh(1, 1, 3, 4), sh(5, 6)),
		c(sh(2, 3, 6, 6), sh(2, 3)), c(sh(0, 3, 4, 4), sh(2, 2)), special, big}
}

// InterpolateAttrs are interpolate's output size, mode ("nearest", the
// default, or "bilinear") and align_corners.
type InterpolateAttrs struct {
	Shape        []int
	Mode         string
	AlignCorners bool
}

func (InterpolateAttrs) isAttrs() {}
