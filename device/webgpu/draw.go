//go:build cgo || js

package webgpu

import (
	"github.com/extensor/extensor/device"
)

// drawNames are the draw kernels' names in draw.wgsl.
var drawNames = map[device.DrawOp]string{device.DrawRect: "rect", device.DrawImages: "images", device.DrawCurve: "curve", device.DrawText: "text"}

// Draw paints into canvas, one invocation per pixel of the rectangle.
func (d *Device) Draw(op device.DrawOp, canvas, src, aux device.Buffer, p device.Paint) {
	d.writing(canvas)
	defer d.written()
	name := drawNames[op]
	k := d.kernel(drawSpec{Op: name}, flags(2, 1)...)
	params := drawParams{W: uint32(p.W), H: uint32(p.H), X: uint32(p.X), Y: uint32(p.Y), RW: uint32(p.RW), RH: uint32(p.RH), Color: p.Color,
		N: uint32(p.N), IH: uint32(p.IH), IW: uint32(p.IW), Cols: uint32(p.Cols), Border: uint32(p.Border), Zoom: uint32(max(p.Zoom, 1)),
		Lo: float32(p.Lo), Hi: float32(p.Hi), Thick: uint32(max(p.Thick, 1)), GW: uint32(p.GW), GH: uint32(p.GH)}
	d.run(k, groupsOf(p.RW*p.RH, 256), params, d.buf(src), d.buf(aux), d.buf(canvas))
}

// drawParams are the draw family's parameters (shaders/draw.wgsl):
// device.Paint's fields, Zoom and Thick at least 1.
type drawParams struct {
	W, H, X, Y, RW, RH, Color     uint32
	N, IH, IW, Cols, Border, Zoom uint32
	Lo, Hi                        float32
	Thick, GW, GH                 uint32
}

func (drawSpec) params() any { return drawParams{} }
