package ops

import (
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/tensor"
)

// Losses take a Reduction: MeanReduction (the default, the zero value),
// SumReduction, or NoReduction for the per-element (per-row, for the
// class losses) values. Their backward functions take the upstream
// gradient of the reduced loss: 0-D, or shaped like the per-element
// losses for NoReduction.

func checkReduction(op string, r Reduction) {
	if r > NoReduction {
		tensor.Panicf(op, tensor.ErrArgument, "reduction %d; want MeanReduction, SumReduction or NoReduction", r)
	}
}

// reduceLoss reduces the per-element losses per, releasing them.
func reduceLoss(op string, per *tensor.Tensor, r Reduction) *tensor.Tensor {
	switch r {
	case NoReduction:
		return per
	case SumReduction:
		defer per.Release()
		return reduction(op, device.Sum, per, nil, false)
	}
	defer per.Release()
	return reduction(op, device.Mean, per, nil, false)
}

// lossUpstream checks the upstream gradient g of a loss whose per-element
// losses have the given shape and returns it spread over them.
func lossUpstream(op string, g *tensor.Tensor, shape []int, r Reduction) *tensor.Tensor {
	checkReduction(op, r)
	if r == NoReduction {
		sameShape(op, "upstream gradient", g, shape)
		return g.Reshape(shape...)
	}
	sameShape(op, "upstream gradient", g, nil)
	scale := 1.0
	if r == MeanReduction {
		scale = 1 / float64(device.Numel(shape))
	}
	return scaledBroadcast(op, g, shape, scale)
}

// elementLoss checks that prediction and target are floats of one shape.
func elementLoss(op string, pred, target *tensor.Tensor, r Reduction) {
	operands(op, pred, target)
	floats(op, pred, target)
	checkReduction(op, r)
	sameShape(op, "target", target, pred.Shape())
}

func elementwiseLoss(op string, kind device.BinaryOp, pred, target *tensor.Tensor, r Reduction) *tensor.Tensor {
	elementLoss(op, pred, target, r)
	return reduceLoss(op, binary(op, kind, pred, target), r)
}

func elementwiseLossBackward(op string, kind device.BinaryOp, pred, target, g *tensor.Tensor, r Reduction) (gp, gt *tensor.Tensor) {
	elementLoss(op, pred, target, r)
	operands(op, pred, g)
	floats(op, pred, g)
	ge := lossUpstream(op, g, pred.Shape(), r)
	defer ge.Release()
	return binaryBackward(op, kind, pred, target, ge)
}

// MSELoss returns the squared error (pred − target)², reduced by r; pred
// and target have one shape.
func MSELoss[V Operand[E], E any](pred, target V, r Reduction) V {
	return call(MSEOp, LossAttrs{Reduction: r}, pred, target)
}

func mseLoss(pred, target *tensor.Tensor, r Reduction) *tensor.Tensor {
	return elementwiseLoss("ops.MSELoss", device.SquaredDiff, pred, target, r)
}

// MSELossBackward returns the gradients of MSELoss: 2(pred − target)·g
// for pred (divided by the element count for MeanReduction) and its
// negation for target.
func MSELossBackward(pred, target, g *tensor.Tensor, r Reduction) (gpred, gtarget *tensor.Tensor) {
	return elementwiseLossBackward("ops.MSELossBackward", device.SquaredDiff, pred, target, g, r)
}

// BCELoss returns the binary cross-entropy −(y·ln p + (1 − y)·ln(1 − p))
// of probabilities p against targets y of the same shape, reduced by r.
// p is clamped to [ε, 1 − ε] with ε = device.BCEClamp = 2⁻²⁴ (the
// smallest ε for which 1 − ε is exact in float32), so the loss stays
// finite at p = 0 and p = 1 (PyTorch instead clamps the logarithms at −100).
func BCELoss[V Operand[E], E any](p, y V, r Reduction) V {
	return call(BCEOp, LossAttrs{Reduction: r}, p, y)
}

func bceLoss(p, y *tensor.Tensor, r Reduction) *tensor.Tensor {
	return elementwiseLoss("ops.BCELoss", device.BCE, p, y, r)
}

// BCELossBackward returns the gradients of BCELoss: the exact
// (p − y)/(p(1 − p))·g for p, and (ln(1 − p) − ln p)·g for y, both at the
// clamped p.
func BCELossBackward(p, y, g *tensor.Tensor, r Reduction) (gp, gy *tensor.Tensor) {
	return elementwiseLossBackward("ops.BCELossBackward", device.BCE, p, y, g, r)
}

// BCEWithLogitsLoss returns the binary cross-entropy of sigmoid(x)
// against targets y, computed stably from the logits as PyTorch does,
// (1 − y)·x + softplus(−x): finite for logits of any finite size; at
// x = +∞ it is +∞ for y < 1, at x = −∞ NaN (∞ − ∞), as in PyTorch.
func BCEWithLogitsLoss[V Operand[E], E any](x, y V, r Reduction) V {
	return call(BCEWithLogitsOp, LossAttrs{Reduction: r}, x, y)
}

func bceWithLogitsLoss(x, y *tensor.Tensor, r Reduction) *tensor.Tensor {
	return elementwiseLoss("ops.BCEWithLogitsLoss", device.BCELogits, x, y, r)
}

// BCEWithLogitsLossBackward returns the gradients of BCEWithLogitsLoss:
// (sigmoid(x) − y)·g for x and −x·g for y.
func BCEWithLogitsLossBackward(x, y, g *tensor.Tensor, r Reduction) (gx, gy *tensor.Tensor) {
	return elementwiseLossBackward("ops.BCEWithLogitsLossBackward", device.BCELogits, x, y, g, r)
}

// classLoss checks the arguments of a loss over classes: x is N×C and
// target holds N int32 class indices, or (probs) N×C floats.
func classLoss(op string, x, target *tensor.Tensor, r Reduction, probs bool) (dev device.Device, dt device.DType, n, c int) {
	dev = operands(op, x, target)
	dt = floats(op, x)
	checkReduction(op, r)
	n, c = matrix(op, "input", x)
	if c == 0 {
		tensor.Panicf(op, tensor.ErrShape, "input %v has no classes", x.Shape())
	}
	if probs {
		floats(op, x, target)
		sameShape(op, "target probabilities", target, x.Shape())
		return dev, dt, n, c
	}
	if target.DType() != device.Int32 {
		tensor.Panicf(op, tensor.ErrDType, "target is %v of shape %v; want int32 class indices of shape [%d] or %v probabilities of shape %v", target.DType(), target.Shape(), n, dt, x.Shape())
	}
	sameShape(op, "target class indices", target, []int{n})
	return dev, dt, n, c
}

// CrossEntropyLoss returns the cross-entropy between softmax(logits) and
// the target, reduced by r over the N rows of the N×C logits. The target
// is either int32 class indices in [0, C) of shape [N] (an index outside
// gives NaN for its row), or float probabilities of shape [N, C] (as
// PyTorch's cross_entropy; rows need not sum to 1). Logits of PyTorch's
// K-dimensional form (N, C, d1, …) take indices (N, d1, …) or
// probabilities of their shape, a loss at each position (NoReduction:
// of shape (N, d1, …)). It is computed through a log-sum-exp, so it is
// stable for large logits.
func CrossEntropyLoss[V Operand[E], E any](logits, target V, r Reduction) V {
	return callWith(CrossEntropyOp, CrossEntropyAttrs{Reduction: r}, func(in []*T) *T {
		return kForward("ops.CrossEntropyLoss", in, r, func(in []*T) *T { return crossEntropy("ops.CrossEntropyLoss", in[0], in[1], r) })
	}, logits, target)
}

func crossEntropy(op string, logits, target *tensor.Tensor, r Reduction) *tensor.Tensor {
	probs := target != nil && target.DType().IsFloat()
	dev, dt, n, c := classLoss(op, logits, target, r, probs)
	if probs {
		ls := softmax(op, logits, 1, true)
		defer ls.Release()
		prod := binary(op, device.Mul, target, ls)
		defer prod.Release()
		s := reduction(op, device.Sum, prod, []int{1}, false)
		defer s.Release()
		return reduceLoss(op, unary(op, "neg", s), r)
	}
	rows, ok := output(dev, dt, []int{n}, logits, target)
	if ok {
		dev.SoftmaxCrossEntropy(op, rows.Buffer(), logits.Buffer(), target.Buffer(), n, c)
	}
	return reduceLoss(op, rows, r)
}

// CrossEntropyLossBackward returns the gradients of CrossEntropyLoss:
// (softmax(logits) − onehot(target))·g per row for the logits, and nil for
// class indices; for probabilities, (softmax(logits)·Σ target − target)·g
// for the logits and −log_softmax(logits)·g for the target.
func CrossEntropyLossBackward(logits, target, g *tensor.Tensor, r Reduction) (glogits, gtarget *tensor.Tensor) {
	return crossEntropyBackward("ops.CrossEntropyLossBackward", logits, target, g, r)
}

func crossEntropyBackward(op string, logits, target, g *tensor.Tensor, r Reduction) (glogits, gtarget *tensor.Tensor) {
	probs := target != nil && target.DType().IsFloat()
	dev, dt, n, c := classLoss(op, logits, target, r, probs)
	operands(op, logits, g)
	floats(op, logits, g)
	ge := lossUpstream(op, g, []int{n}, r)
	defer ge.Release()
	if !probs {
		out, ok := output(dev, dt, logits.Shape(), logits, target, ge)
		if ok {
			dev.SoftmaxCrossEntropyGrad(op, out.Buffer(), logits.Buffer(), target.Buffer(), ge.Buffer(), n, c)
		}
		return out, nil
	}
	gk := ge.Reshape(n, 1)
	defer gk.Release()
	sm := softmax(op, logits, 1, false)
	defer sm.Release()
	mass := reduction(op, device.Sum, target, []int{1}, true)
	defer mass.Release()
	scaled := binary(op, device.Mul, sm, mass)
	defer scaled.Release()
	diff := binary(op, device.Sub, scaled, target)
	defer diff.Release()
	ls := softmax(op, logits, 1, true)
	defer ls.Release()
	nls := unary(op, "neg", ls)
	defer nls.Release()
	return binary(op, device.Mul, diff, gk), binary(op, device.Mul, nls, gk)
}

// SoftmaxCrossEntropy is CrossEntropyLoss with int32 class labels and the
// mean reduction, as a 0-D tensor.
func SoftmaxCrossEntropy[V Operand[E], E any](logits, labels V) V {
	return callWith(CrossEntropyOp, CrossEntropyAttrs{Reduction: MeanReduction}, func(in []*T) *T {
		return softmaxCrossEntropy(in[0], in[1])
	}, logits, labels)
}

func softmaxCrossEntropy(logits, labels *T) *T {
	const op = "ops.SoftmaxCrossEntropy"
	checkLabels(op, labels)
	return crossEntropy(op, logits, labels, MeanReduction)
}

// SoftmaxCrossEntropyBackward is CrossEntropyLossBackward's gradient for
// the logits, with int32 labels and the mean reduction.
func SoftmaxCrossEntropyBackward(logits, labels, g *tensor.Tensor) *tensor.Tensor {
	const op = "ops.SoftmaxCrossEntropyBackward"
	checkLabels(op, labels)
	gl, _ := crossEntropyBackward(op, logits, labels, g, MeanReduction)
	return gl
}

func checkLabels(op string, labels *tensor.Tensor) {
	if labels != nil && labels.DType() != device.Int32 {
		tensor.Panicf(op, tensor.ErrDType, "labels are %v; want int32 class indices", labels.DType())
	}
}

// NLLLoss returns the negative log-likelihood −logp[i, target[i]] of the
// N×C log-probabilities logp for int32 class indices target of shape [N]
// (an index outside [0, C) gives NaN for its row), reduced by r; or of
// PyTorch's K-dimensional form, logp (N, C, d1, …) and target (N, d1, …).
func NLLLoss[V Operand[E], E any](logp, target V, r Reduction) V {
	return callWith(NLLOp, CrossEntropyAttrs{Reduction: r}, func(in []*T) *T {
		return kForward("ops.NLLLoss", in, r, func(in []*T) *T { return nllLoss(in[0], in[1], r) })
	}, logp, target)
}

func nllLoss(logp, target *T, r Reduction) *T {
	const op = "ops.NLLLoss"
	dev, dt, n, c := classLoss(op, logp, target, r, false)
	rows, ok := output(dev, dt, []int{n}, logp, target)
	if ok {
		dev.Gather(rows.Buffer(), logp.Buffer(), target.Buffer(), device.Take{Site: op, N: n, C: c, Scale: -1})
	}
	return reduceLoss(op, rows, r)
}

// NLLLossBackward returns the gradient of NLLLoss for logp: −g at each
// row's target class and 0 elsewhere. Class indices get no gradient.
func NLLLossBackward(logp, target, g *tensor.Tensor, r Reduction) *tensor.Tensor {
	const op = "ops.NLLLossBackward"
	dev, dt, n, c := classLoss(op, logp, target, r, false)
	operands(op, logp, g)
	floats(op, logp, g)
	ge := lossUpstream(op, g, []int{n}, r)
	defer ge.Release()
	out, ok := output(dev, dt, logp.Shape(), logp, target, ge)
	if ok {
		dev.GatherGrad(out.Buffer(), target.Buffer(), ge.Buffer(), device.Take{Site: op, N: n, C: c, Scale: -1})
	}
	return out
}
