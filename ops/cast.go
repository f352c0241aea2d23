package ops

import (
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/tensor"
)

// Cast returns x converted to dtype dt: float32 (or float64) to float16
// rounds to nearest even, overflows past 65504 to ±Inf, keeps subnormals
// and NaN, the same bits on every device; float16 to float32 is exact. A
// cast to x's own dtype is a copy. float16 is a storage format: the other
// ops take float32, so a float16 tensor is cast to float32 before them. On
// the CPU device float64 values are rounded to float32 first.
func Cast(x *tensor.Tensor, dt device.DType) *tensor.Tensor {
	const op = "ops.Cast"
	if x == nil {
		tensor.Panicf(op, tensor.ErrArgument, "operand 0 is nil")
	}
	if x.Released() {
		tensor.Panicf(op, tensor.ErrReleased, "operand 0 (%v %v) was released", x.Shape(), x.DType())
	}
	dev := x.Device()
	if !x.DType().IsFloat() || !dt.IsFloat() {
		tensor.Panicf(op, tensor.ErrDType, "cast from %v to %v; want floating-point dtypes", x.DType(), dt)
	}
	if !dev.Supports(dt) {
		tensor.Panicf(op, tensor.ErrDType, "cast from %v to %v on %s, which has no %v tensors", x.DType(), dt, dev, dt)
	}
	if dt != x.DType() && dt != device.Float16 && x.DType() != device.Float16 {
		tensor.Panicf(op, tensor.ErrDType, "cast from %v to %v; casts convert to and from float16", x.DType(), dt)
	}
	out, ok := output(dev, dt, x.Shape(), x)
	if ok && out.Len() > 0 {
		if dt == x.DType() {
			dev.Copy(out.Buffer(), x.Buffer())
		} else {
			dev.Convert(out.Buffer(), x.Buffer())
		}
		keep(out, x)
	}
	return out
}

// CastBackward returns the gradient of Cast: g cast back to x's dtype (the
// straight-through gradient, as PyTorch's).
func CastBackward(x, g *tensor.Tensor) *tensor.Tensor {
	return Cast(g, x.DType())
}
