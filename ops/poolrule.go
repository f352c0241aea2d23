package ops

import (
	"math"

	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/tensor"
)

// The poolings' second-order rules. avg_pool2d is linear: its gradient is
// the transposed convolution of g with a constant kernel of 1/(KH·KW)
// per channel. max_pool2d routes g to each window's first maximum, a
// choice that is constant in x almost everywhere: the positions, found on
// the host, enter as constant indices of a scatter_add.
var (
	avgPoolRule = unaryRule(func(r rb, x, y, g Value, a Window) Value {
		xt := r.b.Tensor(x)
		gw := pool("ops.AvgPool2d", xt, a, false)
		k := make([]float64, gw.C*gw.KH*gw.KW)
		for i := range k {
			k[i] = 1 / float64(gw.KH*gw.KW)
		}
		kernel := r.b.Const(tensor.Must(tensor.FromValues(xt.Device(), xt.DType(), k, gw.C, 1, gw.KH, gw.KW)))
		win := Window{Stride: a.Stride, Padding: a.Padding, Groups: gw.C}
		var op [2]int
		for i, n := range []int{gw.H, gw.W} {
			op[i] = (n + 2*win.Padding[i] - []int{gw.KH, gw.KW}[i]) % win.Stride[i]
		}
		return r.op(ConvTranspose2dOp, ConvTransposeAttrs{Window: win, OutputPadding: op}, g, kernel)
	})
	maxPoolRule = unaryRule(func(r rb, x, y, g Value, a Window) Value {
		xt := r.b.Tensor(x)
		gw := pool("ops.MaxPool2d", xt, a, true)
		oh, ow := gw.Out()
		vals, err := xt.Float64s()
		if err != nil {
			panic(err)
		}
		idx, on := windowArgmax(vals, gw, oh, ow)
		dev, dt := xt.Device(), xt.DType()
		flatG := r.reshape(g, []int{gw.N, gw.C, oh * ow})
		if on != nil { // windows wholly in the padding pass nothing
			flatG = r.op(WhereOp, nil, r.b.Const(tensor.Must(tensor.FromValues(dev, dt, on, gw.N, gw.C, oh*ow))), flatG, r.scalar(flatG, 0))
		}
		zero := r.b.Const(tensor.Must(tensor.Zeros(dev, dt, gw.N, gw.C, gw.H*gw.W)))
		ix := r.b.Const(tensor.Must(tensor.FromInt32(dev, idx, gw.N, gw.C, oh*ow)))
		return r.reshape(r.op(ScatterAddOp, AxisAttrs{Axis: 2}, zero, ix, flatG), xt.Shape())
	})
)

// windowArgmax returns, for each window of the NCHW values x, the flat
// position (in its image) of its first maximum, NaN above every number
// (max_pool2d's choice); and, if some window holds no pixel, a 0/1 mask
// of the windows that do.
func windowArgmax(x []float64, g device.Window2D, oh, ow int) (idx []int32, on []float64) {
	idx = make([]int32, g.N*g.C*oh*ow)
	mask := make([]float64, len(idx))
	empty := false
	for nc := range g.N * g.C {
		img := x[nc*g.H*g.W : (nc+1)*g.H*g.W]
		for oy := range oh {
			for ox := range ow {
				best := -1
				for ky := range g.KH {
					for kx := range g.KW {
						yy, xx := oy*g.SH-g.PH+ky*g.DH, ox*g.SW-g.PW+kx*g.DW
						if yy < 0 || yy >= g.H || xx < 0 || xx >= g.W {
							continue
						}
						p := yy*g.W + xx
						if best < 0 || !math.IsNaN(img[best]) && (math.IsNaN(img[p]) || img[p] > img[best]) {
							best = p
						}
					}
				}
				k := (nc*oh+oy)*ow + ox
				if best >= 0 {
					idx[k], mask[k] = int32(best), 1
				} else {
					empty = true
				}
			}
		}
	}
	if empty {
		on = mask
	}
	return idx, on
}
