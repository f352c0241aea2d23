package ops

import (
	"errors"
	"math"

	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/tensor"
)

// assign sets dst's elements to src's in place (src then released).
func assign(dst, src *tensor.Tensor) {
	if err := src.Err(); err != nil {
		dst.SetErr(err)
	} else if dst.Len() > 0 {
		dst.Device().Copy(dst.Buffer(), src.Buffer())
	}
	src.Release()
}

// gradients checks the tensors of a gradient utility: live, floating
// point, on one device.
func gradients(op string, grads []*tensor.Tensor) {
	if len(grads) == 0 {
		return
	}
	operands(op, grads...)
	for i, g := range grads {
		if !g.DType().IsFloat() {
			tensor.Panicf(op, tensor.ErrDType, "gradient %d is %v; want float32 or float64", i, g.DType())
		}
	}
}

// ClipGradValue clamps every element of each gradient to [−limit, limit]
// in place, as PyTorch's clip_grad_value_. NaN stays NaN; limit must be
// finite and not negative.
func ClipGradValue(grads []*tensor.Tensor, limit float64) {
	const op = "ops.ClipGradValue"
	if !(limit >= 0) || math.IsInf(limit, 0) {
		tensor.Panicf(op, tensor.ErrArgument, "limit %v; want a finite limit ≥ 0", limit)
	}
	gradients(op, grads)
	for _, g := range grads {
		assign(g, clip(g, -limit, limit))
	}
}

// ClipGradNorm scales the gradients in place so that their global L2 norm
// (of all their elements together) is at most maxNorm, as PyTorch's
// clip_grad_norm_: each is multiplied by min(1, maxNorm/(norm + 1e-6)).
// It returns the norm before clipping as a 0-D tensor. Everything runs
// on the device: nothing is read back, nothing copied. A NaN or infinite
// norm makes the gradients NaN, as in PyTorch. maxNorm must be positive
// and finite.
//
// The device sums the squares of all the gradients (device.Stepper's
// SquaredNorm) and scales them (Scale), many in a kernel: on WebGPU a
// dispatch for each group of up to 16 gradients (4 on CPU adapters),
// each way.
func ClipGradNorm(grads []*tensor.Tensor, maxNorm float64) *tensor.Tensor {
	const op = "ops.ClipGradNorm"
	if !(maxNorm > 0) || math.IsInf(maxNorm, 0) {
		tensor.Panicf(op, tensor.ErrArgument, "max norm %v; want a finite norm > 0", maxNorm)
	}
	if len(grads) == 0 {
		tensor.Panicf(op, tensor.ErrArgument, "no gradients")
	}
	gradients(op, grads)
	dt := floats(op, grads...)
	if dt == device.Float16 {
		// The norm in float32 (float16 overflows past 65504), the
		// gradients scaled in float16.
		wide, done := wide32(grads...)
		defer done()
		norm := ClipGradNorm(wide, maxNorm)
		for i, g := range grads {
			assign(g, cast(wide[i], device.Float16))
		}
		return narrow16(norm)
	}
	dev := grads[0].Device()
	sq, ok := output(dev, dt, nil, grads...)
	if !ok {
		for _, g := range grads {
			g.SetErr(sq.Err())
		}
		return sq
	}
	bufs := make([]device.Buffer, len(grads))
	for i, g := range grads {
		bufs[i] = g.Buffer()
	}
	dev.SquaredNorm(sq.Buffer(), bufs)
	norm := sqrt(sq)
	sq.Release()
	num, err1 := tensor.Scalar(dev, dt, maxNorm)
	eps, err2 := tensor.Scalar(dev, dt, 1e-6)
	if err := errors.Join(err1, err2); err != nil {
		num.Release()
		eps.Release()
		for _, g := range grads {
			g.SetErr(err)
		}
		norm.Release()
		return tensor.Failed(dev, dt, err)
	}
	den := add(norm, eps)
	ratio := div(num, den)
	coef := clip(ratio, math.Inf(-1), 1)
	for _, t := range []*tensor.Tensor{num, eps, den, ratio} {
		t.Release()
	}
	if err := coef.Err(); err != nil {
		for _, g := range grads {
			g.SetErr(err)
		}
	} else {
		dev.Scale(bufs, coef.Buffer())
	}
	coef.Release()
	return norm
}
