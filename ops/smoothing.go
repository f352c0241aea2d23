package ops

import (
	"fmt"
	"math"

	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/tensor"
)

// Label smoothing for cross_entropy: the target mixed with the uniform
// distribution over the C classes, (1 − ε)·target + ε/C, as PyTorch's
// label_smoothing. It is composed of cross_entropy's kernels, logsumexp
// and the elementwise kernels.

func checkSmoothing(op string, eps float64) {
	if !(eps >= 0 && eps <= 1) {
		tensor.Panicf(op, tensor.ErrArgument, "label smoothing %v; want it in [0, 1]", eps)
	}
}

// CrossEntropyLossSmoothed returns CrossEntropyLoss with label smoothing
// eps ∈ [0, 1] (PyTorch's label_smoothing): for class indices,
// (1 − eps)·CE + eps·(logsumexp(x) − mean(x)) per row; for probabilities,
// the CE of (1 − eps)·target + eps/C. eps 0 is CrossEntropyLoss.
func CrossEntropyLossSmoothed[V Operand[E], E any](logits, target V, r Reduction, eps float64) V {
	return callWith(CrossEntropyOp, CrossEntropyAttrs{Reduction: r, LabelSmoothing: eps}, func(in []*T) *T {
		return kForward("ops.CrossEntropyLossSmoothed", in, r, func(in []*T) *T { return crossEntropyLossSmoothed(in[0], in[1], r, eps) })
	}, logits, target)
}

func crossEntropyLossSmoothed(logits, target *T, r Reduction, eps float64) *T {
	const op = "ops.CrossEntropyLossSmoothed"
	checkSmoothing(op, eps)
	if eps == 0 {
		return crossEntropy(op, logits, target, r)
	}
	probs := target != nil && target.DType().IsFloat()
	_, dt, _, c := classLoss(op, logits, target, r, probs)
	if dt == device.Float16 {
		in, done := wide32(logits, target)
		defer done()
		return narrow16(crossEntropyLossSmoothed(in[0], in[1], r, eps))
	}
	if probs {
		t := smoothTarget(target, eps, c)
		defer t.Release()
		return crossEntropy(op, logits, t, r)
	}
	ce := crossEntropy(op, logits, target, NoReduction)
	defer ce.Release()
	lse := logSumExp(logits, []int{1}, false)
	defer lse.Release()
	mx := mean(logits, []int{1}, false)
	defer mx.Release()
	u := sub(lse, mx)
	defer u.Release()
	a := scaleBy(ce, 1-eps)
	defer a.Release()
	b := scaleBy(u, eps)
	defer b.Release()
	return reduceLoss(op, add(a, b), r)
}

// smoothTarget returns (1 − eps)·t + eps/c.
func smoothTarget(t *T, eps float64, c int) *T {
	s := scaleBy(t, 1-eps)
	defer s.Release()
	return shiftBy(s, eps/float64(c))
}

// CrossEntropyLossSmoothedBackward returns the gradients of
// CrossEntropyLossSmoothed: for the logits, (1 − eps) times
// CrossEntropyLossBackward's plus eps·(softmax(x) − 1/C)·g per row (for
// class indices), or CrossEntropyLossBackward's at the smoothed target
// (for probabilities, whose gradient is (1 − eps) times the smoothed
// target's).
func CrossEntropyLossSmoothedBackward(logits, target, g *T, r Reduction, eps float64) (glogits, gtarget *T) {
	const op = "ops.CrossEntropyLossSmoothedBackward"
	checkSmoothing(op, eps)
	if eps == 0 {
		return crossEntropyBackward(op, logits, target, g, r)
	}
	probs := target != nil && target.DType().IsFloat()
	_, dt, n, c := classLoss(op, logits, target, r, probs)
	operands(op, logits, g)
	floats(op, logits, g)
	if dt == device.Float16 {
		in, done := wide32(logits, target, g)
		defer done()
		glogits, gtarget = CrossEntropyLossSmoothedBackward(in[0], in[1], in[2], r, eps)
		return narrow16(glogits), narrow16(gtarget)
	}
	if probs {
		return probsBackward(op, logits, target, g, r, ClassOptions{LabelSmoothing: eps}, c)
	}
	ge := lossUpstream(op, g, []int{n}, r)
	defer ge.Release()
	gce, _ := crossEntropyBackward(op, logits, target, ge, NoReduction)
	defer gce.Release()
	sm := softmaxOf(logits, 1)
	defer sm.Release()
	d := shiftBy(sm, -1/float64(c))
	defer d.Release()
	gk := ge.Reshape(n, 1)
	defer gk.Release()
	dg := mul(d, gk)
	defer dg.Release()
	a := scaleBy(gce, 1-eps)
	defer a.Release()
	b := scaleBy(dg, eps)
	defer b.Release()
	return add(a, b), nil
}

// smoothingCases are cross_entropy's cases with label smoothing.
func smoothingCases() []Case {
	var cs []Case
	for _, r := range []Reduction{MeanReduction, NoReduction} {
		for _, eps := range []float64{0.1, 1} {
			cs = append(cs,
				Case{Name: fmt.Sprintf("(7,10) smoothing=%v %v", eps, r), Inputs: []Input{{Shape: sh(7, 10), Domain: logits}, {Shape: sh(7), Int: true, Domain: Domain{Classes: 10}}},
					Attrs: CrossEntropyAttrs{Reduction: r, LabelSmoothing: eps}},
				Case{Name: fmt.Sprintf("probabilities (4,5) smoothing=%v %v", eps, r), Inputs: []Input{{Shape: sh(4, 5), Domain: logits}, {Shape: sh(4, 5), Domain: unit}},
					Attrs: CrossEntropyAttrs{Reduction: r, LabelSmoothing: eps}})
		}
	}
	return append(cs, Case{Name: "special values smoothing=0.2 none", Inputs: []Input{
		{Shape: sh(3, 4), Domain: Domain{Values: []float64{1e30, -1e30, 0, 1, nan, 1, 2, 3, 100, -100, 50, math.Inf(-1)}}},
		{Shape: sh(3), Int: true, Domain: Domain{Values: []float64{1, 2, 3}}}},
		Attrs: CrossEntropyAttrs{Reduction: NoReduction, LabelSmoothing: 0.2}, NoFD: true})
}
