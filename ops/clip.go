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
// on the device: nothing is read back. A NaN or infinite norm makes the
// gradients NaN, as in PyTorch. maxNorm must be positive and finite.
//
// The gradients are taken in groups of up to clipGroup elements, each
// group's copied into one flat tensor (copies, not kernels, on WebGPU):
// a product and a reduction a group for the norm, and a product a group
// for the scaling, rather than a few kernels a gradient; the group's
// flat tensors, at most clipGroup elements, are what it holds beyond
// the gradients.
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
	groups := clipGroups(grads)
	var sq *tensor.Tensor
	for _, grp := range groups {
		flat := flatGroup(grp)
		g2 := mul(flat, flat)
		flat.Release()
		s := sum(g2, nil, false)
		g2.Release()
		if sq == nil {
			sq = s
			continue
		}
		t := add(sq, s)
		sq.Release()
		s.Release()
		sq = t
	}
	norm := sqrt(sq)
	sq.Release()
	dev := grads[0].Device()
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
	for _, grp := range groups {
		if len(grp) == 1 {
			assign(grp[0], mul(grp[0], coef))
			continue
		}
		flat := flatGroup(grp)
		scaled := mul(flat, coef)
		flat.Release()
		if err := scaled.Err(); err != nil {
			for _, g := range grp {
				g.SetErr(err)
			}
		} else {
			at := 0
			for _, g := range grp {
				n := g.Len()
				copyInto(dev, g, scaled, device.Strided{Shape: []int{n}, SrcStrides: []int{1}, DstStrides: []int{1}, SrcOffset: at})
				at += n
			}
		}
		scaled.Release()
	}
	coef.Release()
	return norm
}

// clipGroup bounds the elements of a group of gradients that
// ClipGradNorm copies into one flat tensor (a gradient larger than it is
// a group of its own, and is not copied).
var clipGroup = 1 << 22

// clipGroups splits grads, in order, into groups of at most clipGroup
// elements, or of one gradient.
func clipGroups(grads []*tensor.Tensor) [][]*tensor.Tensor {
	var groups [][]*tensor.Tensor
	n := 0
	for _, g := range grads {
		if len(groups) == 0 || n+g.Len() > clipGroup {
			groups, n = append(groups, nil), 0
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], g)
		n += g.Len()
	}
	return groups
}

// flatGroup returns the elements of a group's gradients, one after
// another, as a 1-D tensor: a view of a lone gradient, else a copy.
func flatGroup(grp []*tensor.Tensor) *tensor.Tensor {
	if len(grp) == 1 {
		return grp[0].Reshape(grp[0].Len())
	}
	flat := make([]*tensor.Tensor, len(grp))
	for i, g := range grp {
		flat[i] = g.Reshape(g.Len())
	}
	defer func() {
		for _, v := range flat {
			v.Release()
		}
	}()
	return concat(flat, 0)
}
