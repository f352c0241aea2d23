//go:build cgo || js

package webgpu

import (
	"github.com/extensor/extensor/device"
)

// drawNames are the draw kernels' names in draw.wgsl.
var drawNames = map[device.DrawOp]string{device.DrawRect: "rect", device.DrawImages: "images", device.DrawCurve: "curve", device.DrawText: "text"}

// Draw paints into canvas, one invocation per pixel of the rectangle.
func (d *Device) Draw(op device.DrawOp, canvas, src, aux device.Buffer, p device.Paint) {
	d.mu.Lock()
	defer d.mu.Unlock()
	name := drawNames[op]
	k := d.kernel(drawSpec{Op: name}, flags(2, 1)...)
	params := []uint32{uint32(p.W), uint32(p.H), uint32(p.X), uint32(p.Y), uint32(p.RW), uint32(p.RH), p.Color,
		uint32(p.N), uint32(p.IH), uint32(p.IW), uint32(p.Cols), uint32(p.Border), uint32(max(p.Zoom, 1)),
		f32bits(p.Lo), f32bits(p.Hi), uint32(max(p.Thick, 1)), uint32(p.GW), uint32(p.GH)}
	d.run(k, groupsOf(p.RW*p.RH, 256), params, d.buf(src), d.buf(aux), d.buf(canvas))
}
