package ops

import (
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/tensor"
)

// operands checks that ts are live tensors on one device and returns it.
// float16 tensors are welcome: every op computes in float32 and stores
// float16 (the WebGPU kernels read float16 natively where they are
// elementwise, and otherwise through float32 stand-ins).
func operands(op string, ts ...*tensor.Tensor) device.Device {
	return operandsOf(op, true, ts...)
}

// operands32 is operands for the ops that refuse float16: the optimiser
// steps, whose parameters are float32 master weights.
func operands32(op string, ts ...*tensor.Tensor) device.Device {
	return operandsOf(op, false, ts...)
}

func operandsOf(op string, half bool, ts ...*tensor.Tensor) device.Device {
	for i, t := range ts {
		if t == nil {
			tensor.Panicf(op, tensor.ErrArgument, "operand %d is nil", i)
		}
		if t.Released() {
			tensor.Panicf(op, tensor.ErrReleased, "operand %d (%v %v) was released", i, t.Shape(), t.DType())
		}
		if t.DType() == device.Float16 && !half {
			tensor.Panicf(op, tensor.ErrDType, "operand %d (%v) is float16, which %s does not take (it updates float32 master weights); convert it with ops.Cast(x, device.Float32)", i, t.Shape(), op)
		}
	}
	dev := ts[0].Device()
	for i, t := range ts[1:] {
		if t.Device() != dev {
			tensor.Panicf(op, tensor.ErrDevice, "operand 0 is on %s but operand %d is on %s; move one with Tensor.To", dev, i+1, t.Device())
		}
	}
	return dev
}

// floats checks that ts share one floating-point dtype and returns it.
func floats(op string, ts ...*tensor.Tensor) device.DType { return floatsOf(op, true, ts...) }

// floats32 is floats refusing float16.
func floats32(op string, ts ...*tensor.Tensor) device.DType { return floatsOf(op, false, ts...) }

func floatsOf(op string, half bool, ts ...*tensor.Tensor) device.DType {
	dt := ts[0].DType()
	for i, t := range ts {
		if !t.DType().IsFloat() {
			tensor.Panicf(op, tensor.ErrDType, "operand %d is %v; want float32 or float64", i, t.DType())
		}
		if t.DType() == device.Float16 && !half {
			tensor.Panicf(op, tensor.ErrDType, "operand %d is float16, which %s does not take (it updates float32 master weights); convert it with ops.Cast(x, device.Float32)", i, op)
		}
		if t.DType() != dt {
			tensor.Panicf(op, tensor.ErrDType, "operand 0 is %v but operand %d is %v", dt, i, t.DType())
		}
	}
	return dt
}

// sameShape checks that t has shape want.
func sameShape(op, what string, t *tensor.Tensor, want []int) {
	if !equal(t.Shape(), want) {
		tensor.Panicf(op, tensor.ErrShape, "%s has shape %v; want %v", what, t.Shape(), want)
	}
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// output allocates an op's result on dev, in the scope of its inputs
// (tensor.Join). If an input failed, or the allocation fails, the result
// carries the error and ok is false: the op must then skip its kernel.
func output(dev device.Device, dt device.DType, shape []int, inputs ...*tensor.Tensor) (out *tensor.Tensor, ok bool) {
	for _, in := range inputs {
		if err := in.Err(); err != nil {
			return tensor.Join(tensor.Failed(dev, dt, err, shape...), inputs...), false
		}
	}
	out = tensor.Join(tensor.Empty(dev, dt, shape...), inputs...)
	return out, out.Err() == nil
}

// failedAs releases t and returns a failed tensor of its device, dtype
// and shape carrying err: an output whose kernels could not run.
func failedAs(t *tensor.Tensor, err error) *tensor.Tensor {
	defer t.Release()
	return tensor.Failed(t.Device(), t.DType(), err, t.Shape()...)
}

// normAxis returns axis in [0, rank), accepting negative axes.
func normAxis(op string, axis, rank int) int {
	a := axis
	if a < 0 {
		a += rank
	}
	if a < 0 || a >= rank {
		tensor.Panicf(op, tensor.ErrArgument, "axis %d out of range for rank %d", axis, rank)
	}
	return a
}

// as runs f, reporting a programmer error it panics with as op's: an op
// that delegates its checks (to Tensor.Reshape, say) names itself.
func as[R any](op string, f func() R) R {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(*tensor.Error); ok && e.Op != op {
				panic(&tensor.Error{Op: op, Kind: e.Kind, Msg: e.Msg})
			}
			panic(r)
		}
	}()
	return f()
}
