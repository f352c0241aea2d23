package ops

import (
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/tensor"
)

// Cast returns x converted to dtype dt: float32 (or float64) to float16
// rounds to nearest even, overflows past 65504 to ±Inf, keeps subnormals
// and NaN, the same bits on every device; float16 to float32 is exact. A
// cast to x's own dtype is a copy. On the CPU device float64 values are rounded to float32 first.
//
// Every op takes float16 tensors (all of one op's floating-point operands
// float16), computes in float32 and stores float16; an op built of other
// ops (linear, conv2d, the gradient norm) computes on float32 copies and
// rounds once at the end.
func Cast[V Operand[E], E any](x V, dt device.DType) V { return call(CastOp, CastAttrs{DType: dt}, x) }

func cast(x *tensor.Tensor, dt device.DType) *tensor.Tensor {
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
	}
	return out
}

// CastBackward returns the gradient of Cast: g cast back to x's dtype (the
// straight-through gradient, as PyTorch's).
func CastBackward(x, g *tensor.Tensor) *tensor.Tensor {
	return cast(g, x.DType())
}

// wide32 returns ts with each float16 tensor replaced by a float32 copy
// (nil stays nil), and a function releasing the copies: composite ops on
// float16 compute through it, rounding once (narrow16) at the end.
func wide32(ts ...*tensor.Tensor) ([]*tensor.Tensor, func()) {
	out := make([]*tensor.Tensor, len(ts))
	var copies []*tensor.Tensor
	for i, t := range ts {
		out[i] = t
		if t != nil && t.DType() == device.Float16 {
			out[i] = cast(t, device.Float32)
			copies = append(copies, out[i])
		}
	}
	return out, func() {
		for _, c := range copies {
			c.Release()
		}
	}
}

// narrow16 returns t (nil stays nil) cast to float16, releasing t.
func narrow16(t *tensor.Tensor) *tensor.Tensor {
	if t == nil {
		return nil
	}
	h := cast(t, device.Float16)
	t.Release()
	return h
}
