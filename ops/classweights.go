package ops

import (
	"fmt"
	"math"

	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/tensor"
)

// Class weights and ignored labels for cross_entropy and nll, as
// PyTorch's weight and ignore_index. With class indices y, each row has
// the weight ω_i = w[y_i] (1 without w), 0 where y_i is the ignored
// index; its loss is −(1 − ε)·ω_i·logp[i, y_i] − (ε/C)·Σ_c w_c·logp[i, c]
// (the smoothing term 0 on an ignored row), and the mean divides the sum
// by Σ ω_i (NaN when every row is ignored), as PyTorch's. With
// probabilities, the weights scale each class's term and the mean divides
// by N. They are composed of the gather family's kernels (which skip the
// ignored index), log_softmax and the elementwise and reduction kernels;
// the fused softmax cross-entropy kernels serve the plain losses.

// ClassOptions are the options of cross_entropy and nll beyond the
// reduction, PyTorch's: class weights, an ignored label and (for
// cross_entropy) label smoothing. The zero value is the plain loss.
// Unlike PyTorch, no label is ignored by default (PyTorch ignores −100):
// a label outside [0, C) is an error unless Ignore names it.
type ClassOptions struct {
	Weight         *T // [C] weights of the classes, or nil; it gets no gradient (as in PyTorch)
	labels         *T // the class indices, for the second-order rule
	Ignore         bool
	IgnoreIndex    int     // with Ignore: the label whose rows contribute nothing
	LabelSmoothing float64 // cross_entropy: ε in [0, 1]
}

// plain reports whether o asks for nothing beyond label smoothing.
func (o ClassOptions) plain() bool { return o.Weight == nil && !o.Ignore }

// classOptionsOf returns the table's third input and attributes as
// ClassOptions.
func classOptionsOf(in []*T, a CrossEntropyAttrs) ClassOptions {
	return ClassOptions{Weight: opt(in, 2), labels: in[1], Ignore: a.Ignore, IgnoreIndex: a.IgnoreIndex, LabelSmoothing: a.LabelSmoothing}
}

// weightedArgs checks a weighted class loss's arguments.
func weightedArgs(op string, x, target *T, r Reduction, o ClassOptions) (probs bool, n, c int) {
	probs = target != nil && target.DType().IsFloat()
	_, _, n, c = classLoss(op, x, target, r, probs)
	checkSmoothing(op, o.LabelSmoothing)
	if o.Weight != nil {
		operands(op, x, o.Weight)
		floats(op, x, o.Weight)
		sameShape(op, "class weights", o.Weight, []int{c})
	}
	if o.Ignore && (probs || o.IgnoreIndex != int(int32(o.IgnoreIndex))) {
		tensor.Panicf(op, tensor.ErrArgument, "ignore index %d with a %v target; want an int32 label with class indices", o.IgnoreIndex, target.DType())
	}
	return probs, n, c
}

// take returns the gather of o's labels.
func (o ClassOptions) take(op string, n, c int) device.Take {
	return device.Take{Site: op, N: n, C: c, Scale: 1, Ignoring: o.Ignore, IgnoreIndex: int32(o.IgnoreIndex)}
}

// rowWeights returns each row's class weight ω (w[y], or 1) and its mask
// m (1, or 0 where ignored), both [N].
func rowWeights(op string, y *T, o ClassOptions, like *T, n, c int) (omega, m *T) {
	dev, dt := like.Device(), like.DType()
	table := func(w *T) *T {
		out, ok := output(dev, dt, []int{n}, y, w)
		if ok && n > 0 {
			t := o.take(op, n, c)
			t.Table, t.D = true, 1
			dev.Gather(out.Buffer(), w.Buffer(), y.Buffer(), t)
		}
		return out
	}
	ones := filled(dev, dt, []int{c}, 1, like)
	defer ones.Release()
	m = table(ones)
	if o.Weight == nil {
		return Clone(m), m
	}
	return table(o.Weight), m
}

// classPerRow returns the weighted, ignoring loss of each row of the
// log-probabilities lp [N, C] with labels y, and ω.
func classPerRow(op string, lp, y *T, o ClassOptions, n, c int) (per, omega *T) {
	dev := lp.Device()
	omega, m := rowWeights(op, y, o, lp, n, c)
	defer m.Release()
	pick, ok := output(dev, lp.DType(), []int{n}, lp, y)
	if ok && n > 0 {
		dev.Gather(pick.Buffer(), lp.Buffer(), y.Buffer(), o.take(op, n, c))
	}
	defer pick.Release()
	wp := mul(pick, omega)
	defer wp.Release()
	per = scaleBy(wp, -(1 - o.LabelSmoothing))
	if o.LabelSmoothing == 0 {
		return per, omega
	}
	var s *T
	if o.Weight != nil {
		s = matMul(lp, o.Weight) // Σ_c lp·w, [N]
	} else {
		s = sum(lp, []int{1}, false)
	}
	defer s.Release()
	ss := scaleBy(s, -o.LabelSmoothing/float64(c))
	defer ss.Release()
	zero := scalarOf(ss, 0)
	defer zero.Release()
	sm := where(m, ss, zero)
	defer sm.Release()
	defer per.Release()
	return add(per, sm), omega
}

// reduceWeighted reduces per-row losses: the mean divides by Σ ω.
func reduceWeighted(op string, per, omega *T, r Reduction) *T {
	if r != MeanReduction {
		return reduceLoss(op, per, r)
	}
	defer per.Release()
	s := sum(per, nil, false)
	defer s.Release()
	w := sum(omega, nil, false)
	defer w.Release()
	return div(s, w)
}

// weightedUpstream returns each row's upstream gradient γ [N] for g.
func weightedUpstream(op string, g, omega *T, n int, r Reduction) *T {
	if r != MeanReduction {
		return lossUpstream(op, g, []int{n}, r)
	}
	sameShape(op, "upstream gradient", g, nil)
	w := sum(omega, nil, false)
	defer w.Release()
	q := div(g, w)
	defer q.Release()
	return broadcastTo(q, []int{n})
}

// classGrad returns the gradient of classPerRow's losses for lp, given
// the rows' upstream gradients γ.
func classGrad(op string, lp, y, gamma, omega *T, o ClassOptions, n, c int) *T {
	dev, dt := lp.Device(), lp.DType()
	a := mul(gamma, omega)
	defer a.Release()
	gl, ok := output(dev, dt, []int{n, c}, lp, y, a)
	if ok && n*c > 0 {
		t := o.take(op, n, c)
		t.Scale = -(1 - o.LabelSmoothing)
		dev.GatherGrad(gl.Buffer(), y.Buffer(), a.Buffer(), t)
	}
	if o.LabelSmoothing == 0 {
		return gl
	}
	defer gl.Release()
	_, m := rowWeights(op, y, o, lp, n, c)
	defer m.Release()
	b := mul(gamma, m)
	defer b.Release()
	bs := scaleBy(b, -o.LabelSmoothing/float64(c))
	defer bs.Release()
	col := bs.Reshape(n, 1)
	defer col.Release()
	w := o.Weight
	if w == nil {
		w = filled(dev, dt, []int{c}, 1, lp)
		defer w.Release()
	}
	row := w.Reshape(1, c)
	defer row.Release()
	outer := mul(col, row)
	defer outer.Release()
	return add(gl, outer)
}

// CrossEntropyLossWith returns CrossEntropyLoss with class weights (weight
// [C], or nil; it gets no gradient, as in PyTorch), an ignored label and
// label smoothing (a's), as PyTorch's cross_entropy with weight,
// ignore_index and label_smoothing. Unlike PyTorch, no label is ignored
// by default: a label outside [0, C) is an error unless a.Ignore names it.
func CrossEntropyLossWith[V Operand[E], E any](logits, target, weight V, a CrossEntropyAttrs) V {
	return call(CrossEntropyOp, a, inputs("ops.CrossEntropyLossWith", []V{logits, target}, weight)...)
}

func crossEntropyLossWith(logits, target *T, r Reduction, o ClassOptions) *T {
	const op = "ops.CrossEntropyLossWith"
	probs, n, c := weightedArgs(op, logits, target, r, o)
	if o.plain() {
		return as(op, func() *T { return crossEntropyLossSmoothed(logits, target, r, o.LabelSmoothing) })
	}
	if logits.DType() == device.Float16 {
		in, done := wide32(logits, target, o.Weight)
		defer done()
		o.Weight = in[2]
		return narrow16(crossEntropyLossWith(in[0], in[1], r, o))
	}
	if probs {
		t := weightedTarget(target, o, c)
		defer t.Release()
		return crossEntropy(op, logits, t, r)
	}
	lp := logSoftmax(logits, 1)
	defer lp.Release()
	per, omega := classPerRow(op, lp, target, o, n, c)
	defer omega.Release()
	return reduceWeighted(op, per, omega, r)
}

// weightedTarget returns the probabilities target smoothed and times the
// class weights.
func weightedTarget(target *T, o ClassOptions, c int) *T {
	t := Clone(target)
	if o.LabelSmoothing != 0 {
		s := smoothTarget(t, o.LabelSmoothing, c)
		t.Release()
		t = s
	}
	if o.Weight != nil {
		row := o.Weight.Reshape(1, c)
		defer row.Release()
		w := mul(t, row)
		t.Release()
		t = w
	}
	return t
}

// probsBackward returns the gradients of cross_entropy with a
// probabilities target, smoothed and weighted as o says: those of the
// plain loss at the weighted target, the target's times (1 − ε)·w.
func probsBackward(op string, logits, target, g *T, r Reduction, o ClassOptions, c int) (glogits, gtarget *T) {
	t := weightedTarget(target, o, c)
	defer t.Release()
	gl, gt := crossEntropyBackward(op, logits, t, g, r)
	defer gt.Release()
	scaled := scaleBy(gt, 1-o.LabelSmoothing)
	if o.Weight == nil {
		return gl, scaled
	}
	defer scaled.Release()
	row := o.Weight.Reshape(1, c)
	defer row.Release()
	return gl, mul(scaled, row)
}

// CrossEntropyLossWithBackward returns the gradients of
// CrossEntropyLossWith for the logits and the target (nil for class
// indices); the weights get none.
func CrossEntropyLossWithBackward(logits, target, g *T, r Reduction, o ClassOptions) (glogits, gtarget *T) {
	const op = "ops.CrossEntropyLossWithBackward"
	probs, n, c := weightedArgs(op, logits, target, r, o)
	operands(op, logits, g)
	floats(op, logits, g)
	if o.plain() {
		return CrossEntropyLossSmoothedBackward(logits, target, g, r, o.LabelSmoothing)
	}
	if logits.DType() == device.Float16 {
		in, done := wide32(logits, target, g, o.Weight)
		defer done()
		o.Weight = in[3]
		glogits, gtarget = CrossEntropyLossWithBackward(in[0], in[1], in[2], r, o)
		return narrow16(glogits), narrow16(gtarget)
	}
	if probs {
		return probsBackward(op, logits, target, g, r, o, c)
	}
	lp := logSoftmax(logits, 1)
	defer lp.Release()
	omega, m := rowWeights(op, target, o, lp, n, c)
	m.Release()
	defer omega.Release()
	gamma := weightedUpstream(op, g, omega, n, r)
	defer gamma.Release()
	gl := classGrad(op, lp, target, gamma, omega, o, n, c)
	defer gl.Release()
	return LogSoftmaxBackward(logits, gl, 1), nil
}

// NLLLossWith returns NLLLoss with class weights (weight [C], or nil; no
// gradient) and an ignored label (a's LabelSmoothing must be 0), as
// PyTorch's nll_loss.
func NLLLossWith[V Operand[E], E any](logp, target, weight V, a CrossEntropyAttrs) V {
	return call(NLLOp, a, inputs("ops.NLLLossWith", []V{logp, target}, weight)...)
}

func nllLossWith(logp, target *T, r Reduction, o ClassOptions) *T {
	const op = "ops.NLLLossWith"
	_, n, c := nllArgs(op, logp, target, r, o)
	if o.plain() {
		return as(op, func() *T { return nllLoss(logp, target, r) })
	}
	if logp.DType() == device.Float16 {
		in, done := wide32(logp, o.Weight)
		defer done()
		o.Weight = in[1]
		return narrow16(nllLossWith(in[0], target, r, o))
	}
	per, omega := classPerRow(op, logp, target, o, n, c)
	defer omega.Release()
	return reduceWeighted(op, per, omega, r)
}

// nllArgs checks nll's arguments: class indices, no smoothing.
func nllArgs(op string, logp, target *T, r Reduction, o ClassOptions) (bool, int, int) {
	if o.LabelSmoothing != 0 {
		tensor.Panicf(op, tensor.ErrArgument, "label smoothing %v; nll takes none (cross_entropy does)", o.LabelSmoothing)
	}
	probs, n, c := weightedArgs(op, logp, target, r, o)
	if probs {
		tensor.Panicf(op, tensor.ErrDType, "target is %v; want int32 class indices", target.DType())
	}
	return probs, n, c
}

// NLLLossWithBackward returns the gradient of NLLLossWith for logp.
func NLLLossWithBackward(logp, target, g *T, r Reduction, o ClassOptions) *T {
	const op = "ops.NLLLossWithBackward"
	_, n, c := nllArgs(op, logp, target, r, o)
	operands(op, logp, g)
	floats(op, logp, g)
	if o.plain() {
		return NLLLossBackward(logp, target, g, r)
	}
	if logp.DType() == device.Float16 {
		in, done := wide32(logp, g, o.Weight)
		defer done()
		o.Weight = in[2]
		return narrow16(NLLLossWithBackward(in[0], target, in[1], r, o))
	}
	omega, m := rowWeights(op, target, o, logp, n, c)
	m.Release()
	defer omega.Release()
	gamma := weightedUpstream(op, g, omega, n, r)
	defer gamma.Release()
	return classGrad(op, logp, target, gamma, omega, o, n, c)
}

// weightedCases are the cases of class weights and ignored labels, for
// cross_entropy (smoothing too) or nll.
func weightedCases(ce bool) []Case {
	dx := logits
	if !ce {
		dx = Domain{Lo: -5, Hi: 0}
	}
	labels := Domain{Values: []float64{0, 2, -100, 1, 2, 3, -100}}
	c := func(name string, r Reduction, weight, ignore bool, eps float64) Case {
		in := []Input{{Shape: sh(7, 4), Domain: dx}, {Shape: sh(7), Int: true, Domain: labels}}
		if !ignore {
			in[1].Domain = Domain{Classes: 4}
		}
		if weight {
			in = append(in, Input{Shape: sh(4), Domain: Domain{Lo: 0.2, Hi: 2}, NoGrad: true})
		}
		return Case{Name: name + " " + r.String(), Inputs: in, Attrs: CrossEntropyAttrs{Reduction: r, Ignore: ignore, IgnoreIndex: -100, LabelSmoothing: eps}}
	}
	var cs []Case
	for _, r := range []Reduction{MeanReduction, SumReduction, NoReduction} {
		cs = append(cs, c("(7,4) weight", r, true, false, 0), c("(7,4) ignore_index=-100", r, false, true, 0), c("(7,4) weight ignore_index=-100", r, true, true, 0))
		if ce {
			cs = append(cs, c("(7,4) weight ignore_index=-100 smoothing=0.2", r, true, true, 0.2), c("(7,4) ignore_index=-100 smoothing=0.3", r, false, true, 0.3))
		}
	}
	all := c("every row ignored: NaN", MeanReduction, false, true, 0)
	all.Inputs[1].Domain = Domain{Values: []float64{-100}}
	all.NoFD = true
	cs = append(cs, all)
	if ce {
		p := Case{Name: "probabilities (4,5) weight smoothing=0.1 mean", Inputs: []Input{{Shape: sh(4, 5), Domain: logits}, {Shape: sh(4, 5), Domain: unit},
			{Shape: sh(5), Domain: Domain{Lo: 0.2, Hi: 2}, NoGrad: true}}, Attrs: CrossEntropyAttrs{LabelSmoothing: 0.1}}
		sp := c("special values weight ignore_index=-100", NoReduction, true, true, 0.1)
		sp.Inputs[0].Domain = Domain{Values: []float64{1e30, -1e30, 0, 1, math.NaN(), 1, 2, 3, 100, -100, 50, math.Inf(-1)}}
		sp.NoFD = true
		cs = append(cs, p, sp)
	}
	return append(cs, kDimCases(ce)...)
}

// kDimCases are the class losses' cases of PyTorch's K-dimensional form:
// input (N, C, d1, …), class indices (N, d1, …) or probabilities of the
// input's shape.
func kDimCases(ce bool) []Case {
	dx := logits
	if !ce {
		dx = Domain{Lo: -5, Hi: 0}
	}
	c := func(x, y []int, r Reduction) Case {
		return Case{Name: fmt.Sprintf("K-dim %s labels %s %v", ShapeName(x), ShapeName(y), r), Inputs: []Input{{Shape: x, Domain: dx}, {Shape: y, Int: true, Domain: Domain{Classes: x[1]}}},
			Attrs: CrossEntropyAttrs{Reduction: r}}
	}
	w := c(sh(2, 4, 6), sh(2, 6), MeanReduction)
	w.Name = "K-dim (2,4,6) weight ignore_index=-100 mean"
	w.Inputs[1].Domain = Domain{Values: []float64{0, 2, -100, 1, 3, 3, -100}}
	w.Inputs = append(w.Inputs, Input{Shape: sh(4), Domain: Domain{Lo: 0.2, Hi: 2}, NoGrad: true})
	w.Attrs = CrossEntropyAttrs{Ignore: true, IgnoreIndex: -100}
	cs := []Case{c(sh(2, 4, 3, 5), sh(2, 3, 5), MeanReduction), c(sh(2, 4, 3, 5), sh(2, 3, 5), NoReduction), c(sh(3, 5, 7), sh(3, 7), SumReduction),
		c(sh(2, 3, 2, 2, 2), sh(2, 2, 2, 2), NoReduction), c(sh(0, 4, 3), sh(0, 3), NoReduction), w}
	if ce {
		p := Case{Name: "K-dim probabilities (2,3,4) none", Inputs: []Input{{Shape: sh(2, 3, 4), Domain: logits}, {Shape: sh(2, 3, 4), Domain: unit}}, Attrs: CrossEntropyAttrs{Reduction: NoReduction}}
		s := c(sh(2, 5, 4), sh(2, 4), MeanReduction)
		s.Name, s.Attrs = "K-dim (2,5,4) smoothing=0.2 mean", CrossEntropyAttrs{LabelSmoothing: 0.2}
		cs = append(cs, p, s)
	}
	return cs
}
