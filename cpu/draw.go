package cpu

import (
	"math"

	"github.com/extensor/extensor/device"
)

// Draw paints into the canvas (see device.DrawOp). It works forward, from
// each image pixel, value or glyph to the canvas pixels it covers, in
// float32 as the GPU does; the WGSL kernels work backward from each canvas
// pixel.
func (d *Device) Draw(op device.DrawOp, canvas, src, aux device.Buffer, p device.Paint) {
	c := buf(canvas).i32
	put := func(x, y int, col uint32) {
		if x >= p.X && x < p.X+p.RW && y >= p.Y && y < p.Y+p.RH && x >= 0 && x < p.W && y >= 0 && y < p.H {
			c[y*p.W+x] = int32(col)
		}
	}
	switch op {
	case device.DrawRect:
		for y := p.Y; y < p.Y+p.RH; y++ {
			for x := p.X; x < p.X+p.RW; x++ {
				put(x, y, p.Color)
			}
		}
	case device.DrawImages:
		img, frame := buf(src), buf(aux).i32
		cw, ch := p.IW*p.Zoom+2*p.Border, p.IH*p.Zoom+2*p.Border
		for k := range p.N {
			x0, y0 := p.X+(k%p.Cols)*cw, p.Y+(k/p.Cols)*ch
			if col := uint32(frame[k]); col != 0 {
				for y := y0; y < y0+ch; y++ {
					for x := x0; x < x0+cw; x++ {
						put(x, y, col)
					}
				}
			}
			for i := range p.IH {
				for j := range p.IW {
					col := grey(float32(img.at((k*p.IH+i)*p.IW+j)), float32(p.Lo), float32(p.Hi))
					for dy := range p.Zoom {
						for dx := range p.Zoom {
							put(x0+p.Border+j*p.Zoom+dx, y0+p.Border+i*p.Zoom+dy, col)
						}
					}
				}
			}
		}
	case device.DrawCurve:
		v := buf(src)
		for x := range p.RW {
			lo, hi, ok := curveSpan(v, p, x)
			if !ok {
				continue
			}
			half := (p.Thick - 1) / 2
			for y := curveRow(hi, p) - half; y <= curveRow(lo, p)+half; y++ {
				put(p.X+x, p.Y+y, p.Color)
			}
		}
	case device.DrawText:
		codes, font := buf(src).i32, buf(aux).i32
		for k, code := range codes[:p.N] {
			if code < 32 || code > 126 {
				continue
			}
			for r := range p.GH {
				bits := font[int(code-32)*p.GH+r]
				for col := range p.GW {
					if bits>>col&1 == 0 {
						continue
					}
					for dy := range p.Zoom {
						for dx := range p.Zoom {
							put(p.X+(k*p.GW+col)*p.Zoom+dx, p.Y+r*p.Zoom+dy, p.Color)
						}
					}
				}
			}
		}
	}
}

// grey maps v in [lo, hi] to a grey pixel, NaN to red.
func grey(v, lo, hi float32) uint32 {
	if v != v {
		return device.Pack(255, 0, 0, 255)
	}
	t := min(max((v-lo)/(hi-lo), 0), 1)
	g := uint8(t*255 + 0.5)
	return device.Pack(g, g, g, 255)
}

// curveSpan returns the largest and smallest of the curve's values over
// column x: its ends, interpolated, and the values between; NaNs left out.
func curveSpan(v *buffer, p device.Paint, x int) (lo, hi float32, ok bool) {
	scale := float32(p.N-1) / float32(max(p.RW-1, 1))
	f0, f1 := float32(x)*scale, float32(min(x+1, p.RW-1))*scale
	lo, hi = float32(math.Inf(1)), float32(math.Inf(-1))
	add := func(u float32) {
		if u == u {
			lo, hi, ok = min(lo, u), max(hi, u), true
		}
	}
	at := func(f float32) float32 {
		i := min(int(f), p.N-1)
		j := min(i+1, p.N-1)
		a, b := float32(v.at(i)), float32(v.at(j))
		return a + (b-a)*(f-float32(i))
	}
	add(at(f0))
	add(at(f1))
	for i := int(f0) + 1; float32(i) < f1 && i < p.N; i++ {
		add(float32(v.at(i)))
	}
	return lo, hi, ok
}

// curveRow is the row of the rectangle where value u lies: Lo at the
// bottom, Hi at the top. The larger value has the smaller row.
func curveRow(u float32, p device.Paint) int {
	t := min(max((u-float32(p.Lo))/(float32(p.Hi)-float32(p.Lo)), 0), 1)
	return int((1-t)*float32(p.RH-1) + 0.5)
}

// Convert sets dst to src's values in dst's dtype: float16 through
// github.com/x448/float16 (float64 values are rounded to float32 first).
func (d *Device) Convert(dst, src device.Buffer) {
	o, s := buf(dst), buf(src)
	for i := range o.Len() {
		o.set(i, s.at(i))
	}
}
