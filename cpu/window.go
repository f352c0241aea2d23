package cpu

import (
	"math"

	"github.com/extensor/extensor/device"
	"github.com/x448/float16"
)

// Window runs a window kernel. Unlike the WGSL, which computes each
// output element by gathering, the gradients and Col2Im here scatter:
// they walk the windows and add each entry of the upstream gradient (or
// column) to the pixel it came from.
func (d *Device) Window(op device.WindowOp, dst, x, g device.Buffer, w device.Window2D) {
	o := buf(dst)
	oh, ow := w.Out()
	// visit calls f for every tap of every window: the window (n, c, i, j),
	// the tap (a, b), and the pixel (y, x) it reads, which may lie in the
	// padding.
	visit := func(f func(n, c, i, j, a, b, y, x int)) {
		for n := range w.N {
			for c := range w.C {
				for i := range oh {
					for j := range ow {
						for a := range w.KH {
							for b := range w.KW {
								f(n, c, i, j, a, b, i*w.SH-w.PH+a*w.DH, j*w.SW-w.PW+b*w.DW)
							}
						}
					}
				}
			}
		}
	}
	inside := func(y, x int) bool { return y >= 0 && y < w.H && x >= 0 && x < w.W }
	pixel := func(n, c, y, x int) int { return ((n*w.C+c)*w.H+y)*w.W + x }
	win := func(n, c, i, j int) int { return ((n*w.C+c)*oh+i)*ow + j }
	col := func(n, c, a, b, i, j int) int { return ((n*w.C+c)*w.KH*w.KW+a*w.KW+b)*w.RowLen() + i*ow + j }
	switch op {
	case device.Im2Col:
		// The hot path of conv2d: typed rows rather than visit.
		switch o.dt {
		case device.Float32:
			columns(o.f32, buf(x).f32, w, oh, ow, 1)
		case device.Float16: // copies of bits, and zero bits are 0
			columns(o.f16, buf(x).f16, w, oh, ow, float16.Fromfloat32(1).Bits())
		default:
			columns(o.f64, buf(x).f64, w, oh, ow, 1)
		}
	case device.Col2Im:
		in := buf(x)
		acc := make([]float64, w.N*w.C*w.H*w.W)
		visit(func(n, c, i, j, a, b, y, xx int) {
			if inside(y, xx) {
				acc[pixel(n, c, y, xx)] += in.at(col(n, c, a, b, i, j))
			}
		})
		base := pixel(w.N0, 0, 0, 0)
		for k, v := range acc {
			o.set(base+k, v)
		}
	case device.AvgPool:
		in := buf(x)
		acc := make([]float64, w.N*w.C*oh*ow)
		visit(func(n, c, i, j, a, b, y, xx int) {
			if inside(y, xx) {
				acc[win(n, c, i, j)] += in.at(pixel(n, c, y, xx))
			}
		})
		for k, v := range acc {
			o.set(k, v/float64(w.KH*w.KW))
		}
	case device.AvgPoolGrad:
		gr := buf(g)
		acc := make([]float64, w.N*w.C*w.H*w.W)
		visit(func(n, c, i, j, a, b, y, xx int) {
			if inside(y, xx) {
				acc[pixel(n, c, y, xx)] += gr.at(win(n, c, i, j)) / float64(w.KH*w.KW)
			}
		})
		for k, v := range acc {
			o.set(k, v)
		}
	case device.MaxPool, device.MaxPoolGrad:
		in := buf(x)
		// The first maximum of each window, NaN above every number.
		best := make([]int, w.N*w.C*oh*ow)
		for k := range best {
			best[k] = -1
		}
		visit(func(n, c, i, j, a, b, y, xx int) {
			if !inside(y, xx) {
				return
			}
			k, p := win(n, c, i, j), pixel(n, c, y, xx)
			if best[k] < 0 {
				best[k] = p
				return
			}
			v, m := in.at(p), in.at(best[k])
			if !math.IsNaN(m) && (math.IsNaN(v) || v > m) {
				best[k] = p
			}
		})
		// A window wholly in the padding (dilated) holds −Inf, PyTorch's
		// start, and passes no gradient.
		if op == device.MaxPool {
			for k, p := range best {
				if p < 0 {
					o.set(k, math.Inf(-1))
					continue
				}
				o.set(k, in.at(p))
			}
			return
		}
		gr := buf(g)
		acc := make([]float64, w.N*w.C*w.H*w.W)
		for k, p := range best {
			if p >= 0 {
				acc[p] += gr.at(k)
			}
		}
		for k, v := range acc {
			o.set(k, v)
		}
	}
}

// columns writes the columns of images N0… of x into dst, a row of the
// output pixels at a time, and with w.Ones each image's row of ones;
// each row padded with zeros to w.RowLen().
func columns[F float32 | float64 | uint16](dst, x []F, w device.Window2D, oh, ow int, one F) {
	k, pitch := 0, w.RowLen()
	for n := range w.N {
		for c := range w.C {
			plane := x[((n+w.N0)*w.C+c)*w.H*w.W:][:w.H*w.W]
			for a := range w.KH {
				for b := range w.KW {
					for i := range oh {
						y := i*w.SH - w.PH + a*w.DH
						row := dst[k+i*ow:][:ow]
						if y < 0 || y >= w.H {
							clear(row)
							continue
						}
						src := plane[y*w.W : (y+1)*w.W]
						for j := range row {
							xx := j*w.SW - w.PW + b*w.DW
							if xx >= 0 && xx < w.W {
								row[j] = src[xx]
							} else {
								row[j] = 0
							}
						}
					}
					clear(dst[k+oh*ow : k+pitch])
					k += pitch
				}
			}
		}
		if w.Ones {
			row := dst[k : k+pitch]
			for j := range oh * ow {
				row[j] = one
			}
			clear(row[oh*ow:])
			k += pitch
		}
	}
}
