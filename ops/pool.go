package ops

import (
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/tensor"
)

// pool checks a pooling's arguments and returns the device's window.
func pool(op string, x *tensor.Tensor, win Window, max bool) device.Window2D {
	xs := images(op, x)
	if xs[2] == 0 || xs[3] == 0 {
		tensor.Panicf(op, tensor.ErrShape, "x has shape %v: images of %d×%d; want pixels in every image (a window of padding alone has no maximum)", xs, xs[2], xs[3])
	}
	if win.Groups > 1 {
		tensor.Panicf(op, tensor.ErrArgument, "groups %d; pooling has none", win.Groups)
	}
	if !max && win.dilation() != [2]int{1, 1} {
		tensor.Panicf(op, tensor.ErrArgument, "dilation %v; avg_pool2d has none", win.Dilation)
	}
	g := win.geometry(op, xs, win.Kernel[0], win.Kernel[1])
	// As PyTorch: padding at most half the (dilated) kernel, so that every
	// window holds a pixel of the image.
	if 2*g.PH > g.DH*(g.KH-1)+1 || 2*g.PW > g.DW*(g.KW-1)+1 {
		tensor.Panicf(op, tensor.ErrArgument, "padding %v for a %v kernel (dilation %v); want at most half the kernel", win.Padding, win.Kernel, win.dilation())
	}
	return g
}

func poolOut(g device.Window2D) []int {
	oh, ow := g.Out()
	return []int{g.N, g.C, oh, ow}
}

// runPool returns the pooling op of x, or its gradient given g.
func runPool(op string, kind device.WindowOp, x, g *tensor.Tensor, win Window) *tensor.Tensor {
	max := kind == device.MaxPool || kind == device.MaxPoolGrad
	ts := []*tensor.Tensor{x}
	if g != nil {
		ts = append(ts, g)
	}
	dev := operands(op, ts...)
	dt := floats(op, ts...)
	geo := pool(op, x, win, max)
	shape := poolOut(geo)
	var gb device.Buffer
	if g != nil {
		sameShape(op, "upstream gradient", g, shape)
		shape, gb = x.Shape(), g.Buffer()
	}
	out, ok := output(dev, dt, shape, ts...)
	if ok && out.Len() > 0 {
		dev.Window(kind, out.Buffer(), x.Buffer(), gb, geo)
	}
	return out
}

// MaxPool2d returns the maximum of each window of the NCHW images x, as
// PyTorch's max_pool2d: win.Kernel, win.Stride, win.Padding (at most half
// the kernel; never chosen) and win.Dilation. NaN is the maximum of any
// window that holds one.
func MaxPool2d[V Operand[E], E any](x V, win Window) V { return call(MaxPool2dOp, win, x) }

func maxPool2d(x *tensor.Tensor, win Window) *tensor.Tensor {
	return runPool("ops.MaxPool2d", device.MaxPool, x, nil, win)
}

// MaxPool2dBackward returns the gradient of MaxPool2d: each window's
// upstream gradient routed to the first maximum of the window (in
// row-major order; the first NaN if any), as PyTorch does, summed where
// windows overlap.
func MaxPool2dBackward(x, g *tensor.Tensor, win Window) *tensor.Tensor {
	return runPool("ops.MaxPool2dBackward", device.MaxPoolGrad, x, g, win)
}

// AvgPool2d returns the mean of each window of the NCHW images x, as
// PyTorch's avg_pool2d with its defaults: the padding counts as zeros and
// every window divides by KH·KW (count_include_pad).
func AvgPool2d[V Operand[E], E any](x V, win Window) V { return call(AvgPool2dOp, win, x) }

func avgPool2d(x *tensor.Tensor, win Window) *tensor.Tensor {
	return runPool("ops.AvgPool2d", device.AvgPool, x, nil, win)
}

// AvgPool2dBackward returns the gradient of AvgPool2d: g/(KH·KW) spread
// over each window, summed where windows overlap.
func AvgPool2dBackward(x, g *tensor.Tensor, win Window) *tensor.Tensor {
	return runPool("ops.AvgPool2dBackward", device.AvgPoolGrad, x, g, win)
}
