package ops

import (
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/tensor"
)

// The robust and divergence losses: each op's functions, table entry and
// second-order rule, composed of the elementwise, selection and reduction
// kernels; on float16 they compute in float32 and round once.

// The entries of divergences. Each var is an op's handle, by which autograd.Apply
// and the rules reach it.
var (
	HuberOp = &Op{Name: "huber", Family: "binary, where", Doc: "½d² where |d| < delta, delta·(|d| − ½delta) elsewhere, d = p − t, reduced; delta ≥ 0 (1: PyTorch's default).",
		Forward: fwd(func(in []*T, a HuberAttrs) *T { return huber(in[0], in[1], a.Delta, a.Reduction) }),
		Backward: bwd(func(in []*T, g *T, a HuberAttrs) []*T {
			gp, gt := HuberLossBackward(in[0], in[1], g, a.Delta, a.Reduction)
			return []*T{gp, gt}
		}),
		Cases: robustCases()}
	SmoothL1Op = &Op{Name: "smooth_l1", Family: "binary, where", Doc: "huber divided by delta (PyTorch's beta), |d| for delta 0.",
		Forward: fwd(func(in []*T, a HuberAttrs) *T { return smoothL1Loss(in[0], in[1], a.Delta, a.Reduction) }),
		Backward: bwd(func(in []*T, g *T, a HuberAttrs) []*T {
			gp, gt := SmoothL1LossBackward(in[0], in[1], g, a.Delta, a.Reduction)
			return []*T{gp, gt}
		}),
		Cases: append(robustCases(), Case{Name: "(7,) delta=0", Inputs: []Input{{Shape: sh(7), Domain: offZero}, {Shape: sh(7), Domain: Domain{Values: []float64{0}}}}, Attrs: HuberAttrs{Delta: 0, Reduction: SumReduction}})}
	KLDivOp = &Op{Name: "kl_div", Family: "binary, where", Doc: "t·ln t − t·x for log-probabilities x and probabilities t, t·ln t = 0 at t = 0 (PyTorch's xlogy), or e^t·(t − x) for log-probabilities t (LogTarget, PyTorch's log_target); reduced (mean over elements; PyTorch's batchmean is the sum over N).",
		Forward: fwd(func(in []*T, a KLDivAttrs) *T { return klDivLoss(in[0], in[1], a) }),
		Backward: bwd(func(in []*T, g *T, a KLDivAttrs) []*T {
			gx, gt := KLDivLossWithBackward(in[0], in[1], g, a)
			return []*T{gx, gt}
		}),
		Cases: klDivCases()}
)

// KLDivAttrs are kl_div's reduction and whether its target holds
// log-probabilities (PyTorch's log_target).
type KLDivAttrs struct {
	Reduction Reduction
	LogTarget bool
}

func (KLDivAttrs) isAttrs() {}

func klDivCases() []Case {
	cs := lossCases(Domain{Lo: -3, Hi: 0}, Domain{Lo: 0.05, Hi: 1}, []float64{nan, inf, -inf, 0, -1, -2})
	for i := range cs {
		cs[i].Attrs = KLDivAttrs{Reduction: cs[i].Attrs.(LossAttrs).Reduction}
	}
	logt := func(s []int, r Reduction) Case {
		return Case{Name: ShapeName(s) + " log_target " + r.String(), Inputs: []Input{{Shape: s, Domain: Domain{Lo: -3, Hi: 0}}, {Shape: s, Domain: Domain{Lo: -4, Hi: 0}}},
			Attrs: KLDivAttrs{Reduction: r, LogTarget: true}}
	}
	return append(cs,
		Case{Name: "zero targets", Inputs: []Input{{Shape: sh(4)}, {Shape: sh(4), Domain: Domain{Values: []float64{0, 0.5, 0, 0.25}}}}, Attrs: KLDivAttrs{Reduction: SumReduction}, NoFD: true},
		logt(sh(7), MeanReduction), logt(sh(4, 5), SumReduction), logt(sh(3, 4), NoReduction), logt(sh(0), MeanReduction),
		Case{Name: "special values log_target none", Inputs: []Input{{Shape: sh(7), Domain: Domain{Values: []float64{nan, inf, -inf, 0, -1, -2, -30}}},
			{Shape: sh(7), Domain: Domain{Values: []float64{-1, -2, -inf, -inf, 0, nan, -0.5}}}}, Attrs: KLDivAttrs{Reduction: NoReduction, LogTarget: true}, NoFD: true},
	)
}

// divergences are huber, smooth_l1 and kl_div, in the coverage table's
// order.
var divergences = []*Op{
	HuberOp.with(huberRule(false)),
	SmoothL1Op.with(huberRule(true)),
	KLDivOp.with(klDivRule),
}

// huberRule is huber's (or smooth_l1's, divided by delta) backward in
// table ops: d where |d| < delta and delta·sign(d) elsewhere (constant
// masks of d), its negation for t.
func huberRule(smooth bool) Rule {
	return rule(func(b Builder, in []Value, _, g Value, a HuberAttrs) []Value {
		r := rb{b}
		gs := r.lossScale(g, device.Numel(in[0].Shape()), a.Reduction, false)
		d := r.sub(in[0], in[1])
		small, sign := huberMasks(b.Tensor(d), a.Delta)
		var gp Value
		switch {
		case smooth && a.Delta == 0:
			gp = b.Const(sign)
		default:
			lin := b.Const(scaleBy(sign, a.Delta))
			gp = r.add(r.mul(d, b.Const(small)), r.mul(lin, b.Const(complement(small))))
			if smooth {
				gp = r.scale(gp, 1/a.Delta)
			}
		}
		gp = r.mul(gp, gs)
		return []Value{gp, r.neg(gp)}
	})
}

// klDivRule is kl_div's backward in table ops: −t for x; ln t + 1 − x for
// t where t > 0, and 0 elsewhere (a constant mask; the rule serves
// finite, positive targets).
var klDivRule = rule(func(b Builder, in []Value, _, g Value, a KLDivAttrs) []Value {
	r := rb{b}
	gs := r.lossScale(g, device.Numel(in[0].Shape()), a.Reduction, false)
	x, t := in[0], in[1]
	if a.LogTarget { // −e^t·g for x; e^t·(t − x + 1)·g for t
		et := r.un(ExpOp, t)
		return []Value{r.mul(r.neg(et), gs), r.mul(r.mul(et, r.add(r.sub(t, x), r.scalar(t, 1))), gs)}
	}
	pos := b.Const(above(b.Tensor(t), 1, 0))
	gt := r.mul(r.add(r.sub(r.un(LogOp, t), x), r.scalar(t, 1)), pos)
	return []Value{r.mul(r.neg(t), gs), r.mul(gt, gs)}
})

// huberMasks returns, for d, 1 where |d| < delta (NaN at NaN) and 0
// elsewhere, and sign(d).
func huberMasks(d *T, delta float64) (small, sgn *T) {
	ad := abs(d)
	defer ad.Release()
	return above(ad, -1, -delta), sign(d)
}

func checkDelta(op string, delta float64) {
	if !(delta >= 0) || delta > 1e30 {
		tensor.Panicf(op, tensor.ErrArgument, "delta %v; want a finite delta ≥ 0", delta)
	}
}

// huberPer returns the per-element huber losses, divided by delta for
// smooth_l1 (|d| for delta 0).
func huberPer(p, t *T, delta float64, smooth bool) *T {
	d := sub(p, t)
	defer d.Release()
	ad := abs(d)
	if smooth && delta == 0 {
		return ad
	}
	defer ad.Release()
	small, sign := huberMasks(d, delta)
	defer small.Release()
	sign.Release()
	sq := mul(d, d)
	defer sq.Release()
	quad := scaleBy(sq, 0.5)
	defer quad.Release()
	shifted := shiftBy(ad, -delta/2)
	defer shifted.Release()
	lin := scaleBy(shifted, delta)
	defer lin.Release()
	per := where(small, quad, lin)
	if !smooth {
		return per
	}
	defer per.Release()
	return scaleBy(per, 1/delta)
}

// HuberLoss returns PyTorch's huber_loss of p against t (one shape):
// ½d² where |d| < delta and delta·(|d| − ½delta) elsewhere, d = p − t,
// reduced by r. delta must be finite and ≥ 0.
func HuberLoss[V Operand[E], E any](p, t V, delta float64, r Reduction) V {
	return call(HuberOp, HuberAttrs{Delta: delta, Reduction: r}, p, t)
}

func huber(p, t *T, delta float64, r Reduction) *T {
	return huberLoss("ops.HuberLoss", p, t, delta, r, false)
}

// SmoothL1Loss returns PyTorch's smooth_l1_loss with beta = delta: the
// huber loss divided by delta, |p − t| for delta 0.
func SmoothL1Loss[V Operand[E], E any](p, t V, delta float64, r Reduction) V {
	return call(SmoothL1Op, HuberAttrs{Delta: delta, Reduction: r}, p, t)
}

func smoothL1Loss(p, t *T, delta float64, r Reduction) *T {
	return huberLoss("ops.SmoothL1Loss", p, t, delta, r, true)
}

// huberLoss is HuberLoss (SmoothL1Loss).
func huberLoss(op string, p, t *T, delta float64, r Reduction, smooth bool) *T {
	elementLoss(op, p, t, r)
	checkDelta(op, delta)
	if p.DType() == device.Float16 {
		in, done := wide32(p, t)
		defer done()
		return narrow16(huberLoss(op, in[0], in[1], delta, r, smooth))
	}
	return reduceLoss(op, huberPer(p, t, delta, smooth), r)
}

// huberBackward returns the gradients of HuberLoss (SmoothL1Loss).
func huberBackward(op string, p, t, g *T, delta float64, r Reduction, smooth bool) (gp, gt *T) {
	elementLoss(op, p, t, r)
	checkDelta(op, delta)
	if p.DType() == device.Float16 {
		in, done := wide32(p, t, g)
		defer done()
		gp, gt = huberBackward(op, in[0], in[1], in[2], delta, r, smooth)
		return narrow16(gp), narrow16(gt)
	}
	ge := lossUpstream(op, g, p.Shape(), r)
	defer ge.Release()
	d := sub(p, t)
	defer d.Release()
	small, sign := huberMasks(d, delta)
	defer small.Release()
	defer sign.Release()
	var slope *T
	if smooth && delta == 0 {
		slope = scaleBy(sign, 1)
	} else {
		lin := scaleBy(sign, delta)
		defer lin.Release()
		slope = where(small, d, lin)
		if smooth {
			s := scaleBy(slope, 1/delta)
			slope.Release()
			slope = s
		}
	}
	defer slope.Release()
	gp = mul(slope, ge)
	return gp, neg(gp)
}

// HuberLossBackward returns the gradients of HuberLoss: d where |d| <
// delta and delta·sign(d) elsewhere, times the upstream gradient, for p,
// and its negation for t.
func HuberLossBackward(p, t, g *T, delta float64, r Reduction) (gp, gt *T) {
	return huberBackward("ops.HuberLossBackward", p, t, g, delta, r, false)
}

// SmoothL1LossBackward returns the gradients of SmoothL1Loss: those of
// HuberLoss divided by delta, sign(d) for delta 0.
func SmoothL1LossBackward(p, t, g *T, delta float64, r Reduction) (gp, gt *T) {
	return huberBackward("ops.SmoothL1LossBackward", p, t, g, delta, r, true)
}

// KLDivLoss returns PyTorch's kl_div of log-probabilities x against
// probabilities t (one shape, log_target false): t·ln t − t·x, with
// t·ln t = 0 at t = 0 (xlogy), reduced by r (PyTorch's batchmean is
// SumReduction divided by the batch size).
func KLDivLoss[V Operand[E], E any](x, t V, r Reduction) V {
	return call(KLDivOp, KLDivAttrs{Reduction: r}, x, t)
}

// KLDivLossWith is KLDivLoss with its attributes: with a.LogTarget, t
// holds log-probabilities and the loss is e^t·(t − x) (PyTorch's
// log_target=True).
func KLDivLossWith[V Operand[E], E any](x, t V, a KLDivAttrs) V {
	return call(KLDivOp, a, x, t)
}

func klDivLoss(x, t *T, a KLDivAttrs) *T {
	const op = "ops.KLDivLoss"
	r := a.Reduction
	elementLoss(op, x, t, r)
	if x.DType() == device.Float16 {
		in, done := wide32(x, t)
		defer done()
		return narrow16(klDivLoss(in[0], in[1], a))
	}
	if a.LogTarget {
		et := exp(t)
		defer et.Release()
		d := sub(t, x)
		defer d.Release()
		return reduceLoss(op, mul(et, d), r)
	}
	lt := log(t)
	defer lt.Release()
	tlt := mul(t, lt)
	defer tlt.Release()
	xlogy := zeroWhereZero(t, tlt)
	defer xlogy.Release()
	tx := mul(t, x)
	defer tx.Release()
	return reduceLoss(op, sub(xlogy, tx), r)
}

// oneMore returns a − b + 1.
func oneMore(a, b *T) *T {
	d := sub(a, b)
	defer d.Release()
	return shiftBy(d, 1)
}

// zeroWhereZero returns v where t ≠ 0 (NaN included) and 0 where t = 0.
func zeroWhereZero(t, v *T) *T {
	pos, neg := above(t, 1, 0), above(t, -1, 0)
	defer pos.Release()
	defer neg.Release()
	nonzero := add(pos, neg) // 1, or NaN at NaN: true
	defer nonzero.Release()
	zero := scalarOf(t, 0)
	defer zero.Release()
	return where(nonzero, v, zero)
}

// KLDivLossBackward returns the gradients of KLDivLoss: −t·g for x, and
// (ln t + 1 − x)·g for t, 0 where t = 0.
func KLDivLossBackward(x, t, g *T, r Reduction) (gx, gt *T) {
	return KLDivLossWithBackward(x, t, g, KLDivAttrs{Reduction: r})
}

// KLDivLossWithBackward returns the gradients of KLDivLossWith: with
// a.LogTarget, −e^t·g for x and e^t·(t − x + 1)·g for t; else those of
// KLDivLoss.
func KLDivLossWithBackward(x, t, g *T, a KLDivAttrs) (gx, gt *T) {
	const op = "ops.KLDivLossBackward"
	r := a.Reduction
	elementLoss(op, x, t, r)
	if x.DType() == device.Float16 {
		in, done := wide32(x, t, g)
		defer done()
		gx, gt = KLDivLossWithBackward(in[0], in[1], in[2], a)
		return narrow16(gx), narrow16(gt)
	}
	ge := lossUpstream(op, g, x.Shape(), r)
	defer ge.Release()
	if a.LogTarget {
		et := exp(t)
		defer et.Release()
		eg := mul(et, ge)
		defer eg.Release()
		d1 := oneMore(t, x)
		defer d1.Release()
		return neg(eg), mul(eg, d1)
	}
	nt := neg(t)
	defer nt.Release()
	gx = mul(nt, ge)
	lt := log(t)
	defer lt.Release()
	d1 := oneMore(lt, x)
	defer d1.Release()
	sel := zeroWhereZero(t, d1)
	defer sel.Release()
	return gx, mul(sel, ge)
}

func robustCases() []Case {
	cs := lossCases(Domain{Lo: -3, Hi: 3}, anyReal, []float64{nan, inf, -inf, 1e30, -1e30, 0, 1, -1, 0.5})
	for i := range cs {
		cs[i].Attrs = HuberAttrs{Delta: 1, Reduction: cs[i].Attrs.(LossAttrs).Reduction}
	}
	return append(cs,
		Case{Name: "(4,5) delta=0.5", Inputs: []Input{{Shape: sh(4, 5), Domain: Domain{Lo: -3, Hi: 3}}, {Shape: sh(4, 5), Domain: Domain{Values: []float64{0}}}}, Attrs: HuberAttrs{Delta: 0.5}},
		Case{Name: "at |d| = delta", Inputs: []Input{{Shape: sh(4), Domain: Domain{Values: []float64{1, -1, 2, -2}}}, {Shape: sh(4), Domain: Domain{Values: []float64{0, 0, 1, -1}}}}, Attrs: HuberAttrs{Delta: 1, Reduction: NoReduction}, NoFD: true})
}

// HuberAttrs are huber's and smooth_l1's: where the square turns
// linear (smooth_l1's beta) and the reduction.
type HuberAttrs struct {
	Delta     float64
	Reduction Reduction
}

func (HuberAttrs) isAttrs() {}
