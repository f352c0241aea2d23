package cpu

import (
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/device/im2col"
)

// Conv2d runs the convolution as im2col and gonum's BLAS (package
// im2col, on this device's Window and MatMul).
func (d *Device) Conv2d(out, x, w, b device.Buffer, c device.Conv2D, keep bool) ([]device.Buffer, error) {
	return im2col.Conv2d(d, out, x, w, b, c, keep)
}

// Conv2dBackward runs the convolution's gradients as im2col, col2im and
// gonum's BLAS (package im2col).
func (d *Device) Conv2dBackward(gx, gw, gb, x, w, gy device.Buffer, c device.Conv2D, kept []device.Buffer) error {
	return im2col.Conv2dBackward(d, gx, gw, gb, x, w, gy, c, kept)
}
