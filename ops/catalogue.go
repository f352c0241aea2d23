package ops

import (
	"slices"

	"github.com/extensor/extensor/device"
)

// The domains of the catalogue's cases.
var (
	anyReal   = Domain{}               // [−1, 1)
	positive  = Domain{Lo: 0.1, Hi: 5} // logarithms, square roots
	moderate  = Domain{Lo: -5, Hi: 5}  // exp, activations
	offZero   = Domain{Lo: -1, Hi: 1, Kinks: []float64{0}, Gap: 0.01}
	divisor   = Domain{Lo: -2, Hi: 2, Kinks: []float64{0}, Gap: 0.5}
	integral  = Domain{Lo: -3, Hi: 3, Kinks: []float64{-3, -2, -1, 0, 1, 2, 3}, Gap: 0.01}
	halves    = Domain{Lo: -3, Hi: 3, Kinks: []float64{-2.5, -1.5, -0.5, 0.5, 1.5, 2.5}, Gap: 0.01}
	logits    = Domain{Lo: -3, Hi: 3}
	bigLogits = Domain{Lo: -100, Hi: 100}
	prob      = Domain{Lo: 0.02, Hi: 0.98}
	unit      = Domain{Lo: 0, Hi: 1}
)

// catalogue is the table of every op, in the coverage table's order;
// Table returns it. Each group of ops is defined with its functions.
var catalogue = slices.Concat(elementwise, extrema, activations, others, divergences, conv1ds, statistics, scans, norms, channelNorms, selections, indexing, attentions, resamplings, axisGathers, transposedConvs)

// The entries of elementwise. Each var is an op's handle, by which autograd.Apply
// and the rules reach it.
var (
	AddOp = binaryOp("add", "a + b.", add, AddBackward, binaryCases(anyReal, anyReal, finiteSpecials, true))
	SubOp = binaryOp("sub", "a − b.", sub, SubBackward, binaryCases(anyReal, anyReal, finiteSpecials, false))
	MulOp = binaryOp("mul", "a·b.", mul, MulBackward, binaryCases(anyReal, anyReal, finiteSpecials, true))
	DivOp = binaryOp("div", "a / b (IEEE at 0); gradients g/b, −g·(a/b)/b (±Inf or NaN at b = 0, as PyTorch).", div, DivBackward,
		binaryCases(anyReal, divisor, finiteSpecials, false))
	PowOp = binaryOp("pow", "aᵇ, real exponents, IEEE pow's special cases; a negative base needs an integer exponent; ∂/∂b = 0 where a ≤ 0.", pow, PowBackward,
		binaryCases(Domain{Lo: 0.2, Hi: 2}, Domain{Lo: -3, Hi: 3}, finiteSpecials, false,
			Case{Name: "negative base, integer exponents", Inputs: []Input{
				{Shape: sh(4, 5), Domain: Domain{Lo: -2, Hi: 2, Kinks: []float64{0}, Gap: 0.1}},
				{Shape: sh(4, 5), Domain: Domain{Lo: -3, Hi: 4, Integers: true}, NoFD: true}}}))
	FloorDivideOp = binaryOp("floor_divide", "⌊a / b⌋; zero gradients.", floorDivide, FloorDivideBackward,
		binaryCases(Domain{Lo: -3, Hi: 3}, divisor, finiteSpecials, false))
	ModOp = binaryOp("mod", "a − b·⌊a/b⌋, the sign of b; gradients g and −g·⌊a/b⌋.", mod, ModBackward,
		binaryCases(Domain{Lo: -3, Hi: 3}, divisor, finiteSpecials, false))
	NegOp = unaryOp("neg", "−x.", neg, NegBackward, unaryCases(anyReal, specials, nil, false))
	ExpOp = unaryOp("exp", "eˣ.", exp, ExpBackward, unaryCases(moderate, specials, nil, true))
	LogOp = unaryOp("log", "ln x: −Inf at 0, NaN below; gradient g/x.", log, LogBackward,
		unaryCases(positive, specials, nil, false))
	Log2Op  = unaryOp("log2", "log₂ x; gradient g/(x·ln 2).", log2, Log2Backward, unaryCases(positive, specials, nil, false))
	Log10Op = unaryOp("log10", "log₁₀ x; gradient g/(x·ln 10).", log10, Log10Backward, unaryCases(positive, specials, nil, false))
	SqrtOp  = unaryOp("sqrt", "√x, NaN below 0; gradient g/(2√x).", sqrt, SqrtBackward, unaryCases(positive, specials, nil, false))
	AbsOp   = unaryOp("abs", "|x|; gradient g·sign(x), 0 at 0.", abs, AbsBackward,
		unaryCases(offZero, specials, nil, false, values("kink at 0", []float64{0, negZero, 1, -1}, true)))
	SignOp = unaryOp("sign", "−1, 0 or 1; NaN at NaN, as NumPy (PyTorch gives 0): every elementwise op maps NaN to NaN, one rule of the unary kernels and their twins; zero gradient.", sign, SignBackward, unaryCases(offZero, specials, nil, false))
	SinOp  = unaryOp("sin", "sin x (NaN at ±Inf).", sin, SinBackward, unaryCases(Domain{Lo: -4, Hi: 4}, finiteSpecials, nil, false, nearZero(), wide()))
	CosOp  = unaryOp("cos", "cos x (NaN at ±Inf).", cos, CosBackward, unaryCases(Domain{Lo: -4, Hi: 4}, finiteSpecials, nil, false, wide()))
	ClipOp = &Op{Name: "clip", Family: "unary", Kernel: "clip", Doc: "x clamped to [lo, hi]; gradient passes where lo ≤ x ≤ hi, bounds inclusive; lo > hi panics.",
		Forward:  fwd(func(in []*T, a ClipAttrs) *T { return clip(in[0], a.Lo, a.Hi) }),
		Backward: clipBwd,
		Cases: unaryCases(Domain{Lo: -1, Hi: 1, Kinks: []float64{-0.5, 0.5}, Gap: 0.01}, specials, ClipAttrs{Lo: -0.5, Hi: 0.5}, false,
			Case{Name: "at the bounds", Inputs: []Input{{Shape: sh(5), Domain: Domain{Values: []float64{-0.5, 0.5, 0, -1, 1}}}}, Attrs: ClipAttrs{Lo: -0.5, Hi: 0.5}, NoFD: true},
			Case{Name: "lo = hi", Inputs: []Input{{Shape: sh(7), Domain: offZero}}, Attrs: ClipAttrs{Lo: 0.25, Hi: 0.25}, NoFD: true})}
	CeilOp  = unaryOp("ceil", "⌈x⌉; zero gradient.", ceil, CeilBackward, unaryCases(integral, specials, nil, false))
	FloorOp = unaryOp("floor", "⌊x⌋; zero gradient.", floor, FloorBackward, unaryCases(integral, specials, nil, false))
	RoundOp = unaryOp("round", "nearest integer, halves to even; zero gradient.", round, RoundBackward,
		unaryCases(halves, specials, nil, false, values("halves", []float64{0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5}, true)))
	TruncOp = unaryOp("trunc", "toward zero; zero gradient.", trunc, TruncBackward, unaryCases(integral, specials, nil, false))
)

// elementwise are the arithmetic and elementwise math.
var elementwise = []*Op{
	// Arithmetic, with NumPy broadcasting.
	AddOp.with(addRule),
	SubOp.with(subRule),
	MulOp.with(mulRule),
	DivOp.with(divRule),
	PowOp.with(powRule),
	FloorDivideOp.with(floorDivideRule),
	ModOp.with(modRule),
	NegOp.with(negRule),

	// Elementwise math.
	ExpOp.with(expRule),
	LogOp.with(logRule),
	Log2Op.with(log2Rule),
	Log10Op.with(log10Rule),
	SqrtOp.with(sqrtRule),
	AbsOp.with(absRule),
	SignOp.with(slopeRule(bwd1(SignBackward), false)),
	SinOp.with(sinRule),
	CosOp.with(cosRule),
	ClipOp.with(slopeRule(clipBwd, false)),
	CeilOp.with(slopeRule(bwd1(CeilBackward), false)),
	FloorOp.with(slopeRule(bwd1(FloorBackward), false)),
	RoundOp.with(slopeRule(bwd1(RoundBackward), false)),
	TruncOp.with(slopeRule(bwd1(TruncBackward), false)),
}

// The entries of others. Each var is an op's handle, by which autograd.Apply
// and the rules reach it.
var (
	PowScalarOp = &Op{Name: "pow_scalar", Family: "unary", Kernel: "pow_scalar", Doc: "xᵉ for a scalar real exponent e, as pow; x⁰ = 1 with gradient 0, NaN included.",
		Forward:  fwd(func(in []*T, a PowScalarAttrs) *T { return powScalar(in[0], a.Exponent) }),
		Backward: bwd(func(in []*T, g *T, a PowScalarAttrs) []*T { return []*T{PowScalarBackward(in[0], g, a.Exponent)} }),
		Cases:    powScalarCases()}
	SoftmaxOp    = softmaxOp("softmax", "along any axis, stable (max subtracted); gradient y·(g − Σg·y), O(n) per row.", softmaxOf, SoftmaxBackward)
	LogSoftmaxOp = softmaxOp("log_softmax", "x − logsumexp(x) along any axis; gradient g − softmax·Σg.", logSoftmax, LogSoftmaxBackward)
	SumOp        = reduceOp("sum", "over every axis, one or a set (negative axes), keepdims; 0 when empty.", sum, SumBackward, reduceCases(true, true))
	MeanOp       = reduceOp("mean", "as sum; NaN when empty.", mean, MeanBackward, reduceCases(true, false))
	MaxOp        = reduceOp("max", "as sum, NaN-propagating; gradient split equally among ties; empty panics.", maxOf, MaxBackward, reduceCases(false, true))
	MinOp        = reduceOp("min", "as max.", minOf, MinBackward, reduceCases(false, false))
	ArgmaxOp     = argOp("argmax", "int32 index, first among ties, NaN counts as largest; no gradient.", argMax, argCases(true))
	ArgminOp     = argOp("argmin", "int32 index, first among ties, NaN counts as smallest; no gradient.", argMin, argCases(false))
	MSEOp        = lossOp("mse", "(p − t)², reduced (mean, sum, none).", mseLoss, MSELossBackward,
		lossCases(anyReal, anyReal, []float64{nan, inf, -inf, 1e30, -1e30, 0, 1, -1}))
	BCEOp = lossOp("bce", "−(y·ln p + (1−y)·ln(1−p)), p clamped to [2⁻²⁴, 1−2⁻²⁴]; exact gradient (p−y)/(p(1−p)).", bceLoss, BCELossBackward,
		lossCases(prob, unit, []float64{nan, 0, 1, -1, 2, 1e-30, 0.5, 0.999, inf, -inf}))
	BCEWithLogitsOp = lossOp("bce_with_logits", "BCE of sigmoid(x), stable: (1−y)·x + softplus(−x), as PyTorch (x = +∞ gives +∞ for y < 1, x = −∞ NaN).", bceWithLogitsLoss, BCEWithLogitsLossBackward,
		lossCases(moderate, unit, []float64{nan, 1e30, -1e30, 100, -100, 0, 30, -30, inf, -inf}))
	CrossEntropyOp = &Op{Name: "cross_entropy", Family: "softmax, gather", Doc: "from logits (N×C, or N×C×d1×… as PyTorch's K-dimensional form, targets N×d1×…), int32 class indices or probabilities; via logsumexp; label smoothing ε mixes the target with the uniform distribution; class weights [C] (3rd input, no gradient) and an ignored label as PyTorch's (its mean divides by the rows' weights).",
		Forward: fwd(func(in []*T, a CrossEntropyAttrs) *T {
			return kForward("ops.CrossEntropyLossWith", in, a.Reduction, func(in []*T) *T {
				return crossEntropyLossWith(in[0], in[1], a.Reduction, classOptionsOf(in, a))
			})
		}),
		Backward: bwd(func(in []*T, g *T, a CrossEntropyAttrs) []*T {
			return kBackward("ops.CrossEntropyLossWithBackward", in, g, a.Reduction, func(in []*T, g *T) []*T {
				gx, gt := CrossEntropyLossWithBackward(in[0], in[1], g, a.Reduction, classOptionsOf(in, a))
				return []*T{gx, gt, nil}[:len(in)]
			})
		}),
		Cases: slices.Concat(crossEntropyCases(), smoothingCases(), weightedCases(true))}
	NLLOp = &Op{Name: "nll", Family: "gather", Doc: "−logp[i, y_i] with int32 class indices (N×C, or N×C×d1×… with indices N×d1×…); class weights [C] (3rd input, no gradient) and an ignored label as PyTorch's.",
		Forward: fwd(func(in []*T, a CrossEntropyAttrs) *T {
			return kForward("ops.NLLLossWith", in, a.Reduction, func(in []*T) *T {
				return nllLossWith(in[0], in[1], a.Reduction, classOptionsOf(in, a))
			})
		}),
		Backward: bwd(func(in []*T, g *T, a CrossEntropyAttrs) []*T {
			return kBackward("ops.NLLLossWithBackward", in, g, a.Reduction, func(in []*T, g *T) []*T {
				return []*T{NLLLossWithBackward(in[0], in[1], g, a.Reduction, classOptionsOf(in, a)), nil, nil}[:len(in)]
			})
		}),
		Cases: append(classCases(Domain{Lo: -5, Hi: 0}, false), weightedCases(false)...)}
	MatmulOp = &Op{Name: "matmul", Family: "matmul", Doc: "NumPy's matmul: 1-D operands as a row (a) or column (b) vector, N-D as batches with broadcast batch axes; gradients summed over broadcast batch axes.",
		Forward: fwd2(matMul),
		Backward: func(in []*T, g *T, a Attrs) []*T {
			gs := make([]*T, 2)
			if backprop(a).needs(0) {
				gs[0] = MatMulBackwardA(in[0], in[1], g)
			}
			if backprop(a).needs(1) {
				gs[1] = MatMulBackwardB(in[0], in[1], g)
			}
			return gs
		},
		Cases: matmulCases()}
	DotOp = &Op{Name: "dot", Family: "matmul", Doc: "Σ aᵢbᵢ of two vectors, 0-D.", Forward: fwd2(dot), Backward: bwd2(DotBackward),
		Cases: vectorCases(func(n int) []int { return sh(n) })}
	OuterOp = &Op{Name: "outer", Family: "matmul", Doc: "aᵢbⱼ of an m- and an n-vector, m×n.", Forward: fwd2(outer), Backward: bwd2(OuterBackward),
		Cases: vectorCases(func(n int) []int { return sh(n + 2) })}
	TransposeOp = &Op{Name: "transpose", Family: "strided", Doc: "axes reversed (NumPy's x.T); a copy.", Forward: fwd1(transpose), Backward: bwd1(TransposeBackward),
		Cases: shapeCases(func(s []int) Attrs { return nil }, sh(1, 1), sh(7, 3), sh(257, 7), sh(2, 3, 4), sh(5), sh(), sh(0, 3))}
	PermuteOp = &Op{Name: "permute", Family: "strided", Doc: "axis k of the result is axis perm[k] of x; a copy.",
		Forward:  fwd(func(in []*T, a PermuteAttrs) *T { return permuteOf(in[0], a.Perm) }),
		Backward: bwd(func(in []*T, g *T, a PermuteAttrs) []*T { return []*T{PermuteBackward(in[0], g, a.Perm)} }),
		Cases:    permuteCases()}
	SliceOp = &Op{Name: "slice", Family: "strided", Doc: "x[start:stop:step] along an axis, Python's bounds (negative from the end, clamped), step ≥ 1; gradient scattered into zeros.",
		Forward: fwd(func(in []*T, a SliceAttrs) *T { return slice(in[0], a.Axis, a.Start, a.Stop, a.Step) }),
		Backward: bwd(func(in []*T, g *T, a SliceAttrs) []*T {
			return []*T{SliceBackward(in[0], g, a.Axis, a.Start, a.Stop, a.Step)}
		}),
		Cases: sliceCases()}
	PadOp = &Op{Name: "pad", Family: "strided", Doc: "constant padding, {before, after} per axis, not negative; gradient the part over x.",
		Forward:  fwd(func(in []*T, a PadAttrs) *T { return pad(in[0], a.Pads, a.Value) }),
		Backward: bwd(func(in []*T, g *T, a PadAttrs) []*T { return []*T{PadBackward(in[0], g, a.Pads)} }),
		Cases:    padCases()}
	ConcatOp = &Op{Name: "concat", Family: "strided", Doc: "tensors joined along an existing axis; gradient split back.",
		Forward:  fwd(func(in []*T, a AxisAttrs) *T { return concat(in, a.Axis) }),
		Backward: bwd(func(in []*T, g *T, a AxisAttrs) []*T { return ConcatBackward(in, g, a.Axis) }),
		Cases:    joinCases(false)}
	StackOp = &Op{Name: "stack", Family: "strided", Doc: "tensors of one shape joined along a new axis; gradient split back.",
		Forward:  fwd(func(in []*T, a AxisAttrs) *T { return stack(in, a.Axis) }),
		Backward: bwd(func(in []*T, g *T, a AxisAttrs) []*T { return StackBackward(in, g, a.Axis) }),
		Cases:    joinCases(true)}
	ReshapeOp = &Op{Name: "reshape", Family: "view", Doc: "a view with a new shape of as many elements (one −1 inferred); no kernel.",
		Forward:  fwd(func(in []*T, a ShapeAttrs) *T { return reshape(in[0], a.Shape...) }),
		Backward: bwd1(ReshapeBackward),
		Cases:    shapeCases(func(s []int) Attrs { return ShapeAttrs{Shape: []int{-1}} }, sh(3, 4, 5), sh(), sh(0, 3), sh(7))}
	SqueezeOp = &Op{Name: "squeeze", Family: "view", Doc: "a view without the given axes of size 1 (without axes: every one); no kernel.",
		Forward:  fwd(func(in []*T, a AxesAttrs) *T { return squeeze(in[0], a.Axes...) }),
		Backward: bwd1(ReshapeBackward),
		Cases: append(shapeCases(func(s []int) Attrs { return nil }, sh(3, 1, 5, 1), sh(1), sh(1, 0)),
			Case{Name: "axis -1 of (3,1,5,1)", Inputs: []Input{{Shape: sh(3, 1, 5, 1)}}, Attrs: AxesAttrs{Axes: []int{-1}}})}
	UnsqueezeOp = &Op{Name: "unsqueeze", Family: "view", Doc: "a view with a new axis of size 1 at an axis in [−rank−1, rank]; no kernel.",
		Forward:  fwd(func(in []*T, a AxisAttrs) *T { return unsqueeze(in[0], a.Axis) }),
		Backward: bwd1(ReshapeBackward),
		Cases: append(shapeCases(func(s []int) Attrs { return AxisAttrs{Axis: -1} }, sh(3, 5), sh(), sh(0)),
			Case{Name: "axis 1 of (3,5)", Inputs: []Input{{Shape: sh(3, 5)}}, Attrs: AxisAttrs{Axis: 1}})}
	FlattenOp = &Op{Name: "flatten", Family: "view", Doc: "a view with axes start…end (inclusive) merged; no kernel.",
		Forward:  fwd(func(in []*T, a FlattenAttrs) *T { return flatten(in[0], a.Start, a.End) }),
		Backward: bwd1(ReshapeBackward),
		Cases: append(shapeCases(func(s []int) Attrs { return FlattenAttrs{Start: 0, End: -1} }, sh(2, 3, 4), sh(), sh(2, 0, 3)),
			Case{Name: "axes 1…2 of (2,3,4,5)", Inputs: []Input{{Shape: sh(2, 3, 4, 5)}}, Attrs: FlattenAttrs{Start: 1, End: 2}})}
	BroadcastToOp = &Op{Name: "broadcast_to", Family: "binary", Doc: "NumPy broadcasting to a shape; gradient summed back.",
		Forward:  fwd(func(in []*T, a ShapeAttrs) *T { return broadcastTo(in[0], a.Shape) }),
		Backward: bwd1(BroadcastToBackward), Cases: broadcastCases(false)}
	SumToOp = &Op{Name: "sum_to", Family: "reduce", Doc: "sum over broadcast axes to a shape, the adjoint of broadcast_to.",
		Forward:  fwd(func(in []*T, a ShapeAttrs) *T { return sumTo(in[0], a.Shape) }),
		Backward: bwd1(SumToBackward), Cases: broadcastCases(true)}
	CastOp = &Op{Name: "cast", Family: "cast", Doc: "to float16 (round to nearest even, ±Inf past 65504, subnormals and NaN kept, bit for bit on every device) or from it (exact); gradient cast back (straight through).",
		Forward:  fwd(func(in []*T, a CastAttrs) *T { return cast(in[0], a.DType) }),
		Backward: bwd1(CastBackward),
		Cases:    castCases()}
	LinearOp = &Op{Name: "linear", Family: "matmul", Doc: "x·Wᵀ + b, W [out, in], x of any leading shape, b [out] or none.",
		Forward: func(in []*T, a Attrs) *T { noAttrs(a); return linear(in[0], in[1], bias(in)) },
		Backward: func(in []*T, g *T, a Attrs) []*T {
			gx, gw, gb := linearBackward(in[0], in[1], bias(in), g, backprop(a).needs(0))
			if len(in) < 3 {
				return []*T{gx, gw}
			}
			return []*T{gx, gw, gb}
		},
		Cases: linearCases()}
	Conv2dOp = &Op{Name: "conv2d", Family: "window, conv_tex", Doc: "NCHW cross-correlation, weight [out, in/groups, KH, KW], stride, zero padding, dilation, groups; lowered by the device (device.Convolver): im2col and the batched matmul, or the WebGPU backend's direct kernels on CPU adapters.",
		Forward: fwd(func(in []*T, a Window) *T { return conv2dOf(in[0], in[1], bias(in), a) }),
		Save: func(in []*T, a Attrs) (*T, *Saved) {
			return conv2dSave(in[0], in[1], bias(in), attrsAs[Window](a))
		},
		Backward: func(in []*T, g *T, a Attrs) []*T {
			bp := backprop(a)
			gx, gw, gb := conv2dBackward(in[0], in[1], bias(in), g, attrsAs[Window](a), bp.needs(0), bp.Saved)
			if len(in) < 3 {
				return []*T{gx, gw}
			}
			return []*T{gx, gw, gb}
		},
		Cases: convCases()}
	EmbeddingOp = &Op{Name: "embedding", Family: "gather", Doc: "rows of a table [rows, features] named by int32 indices of any shape; gradient accumulates repeated indices.",
		Forward:  fwd2(embeddingOf),
		Backward: func(in []*T, g *T, _ Attrs) []*T { return []*T{nil, EmbeddingBackward(in[0], in[1], g)} },
		Cases:    embeddingCases()}
	MaxPool2dOp = &Op{Name: "max_pool2d", Family: "window", Doc: "window maxima; padding (≤ half the kernel) never chosen, a window wholly in it (dilated) −Inf; gradient to each window's first maximum.",
		Forward:  fwd(func(in []*T, w Window) *T { return maxPool2d(in[0], w) }),
		Backward: bwd(func(in []*T, g *T, w Window) []*T { return []*T{MaxPool2dBackward(in[0], g, w)} }),
		Cases:    poolCases(true)}
	AvgPool2dOp = &Op{Name: "avg_pool2d", Family: "window", Doc: "window means over KH·KW, padding counted as zeros (count_include_pad).",
		Forward:  fwd(func(in []*T, w Window) *T { return avgPool2d(in[0], w) }),
		Backward: bwd(func(in []*T, g *T, w Window) []*T { return []*T{AvgPool2dBackward(in[0], g, w)} }),
		Cases:    poolCases(false)}
	ClipGradValueOp = &Op{Name: "clip_grad_value", Family: "unary", Kernel: "clip", Doc: "each element clamped to [−limit, limit] in place.",
		Forward: fwd(func(in []*T, a LimitAttrs) *T {
			cs := clones(in)
			ClipGradValue(cs, a.Limit)
			return joined(nil, cs)
		}),
		Cases: clipCases(false)}
	ClipGradNormOp = &Op{Name: "clip_grad_norm", Family: "reduce", Doc: "scaled in place by min(1, max/(‖all‖₂ + 1e-6)); returns the norm, computed on the device.",
		Forward: fwd(func(in []*T, a LimitAttrs) *T {
			cs := clones(in)
			norm := ClipGradNorm(cs, a.Limit)
			return joined(norm, cs)
		}),
		Cases: clipCases(true)}
	SGDMomentumOp = &Op{Name: "sgd_momentum", Family: "update", Doc: "PyTorch's SGD: weight decay, momentum, dampening, Nesterov; the table's forward runs 10 steps on ½‖p − y‖² and returns the trajectory.",
		Forward: fwd(trajectory), Cases: optimCases(device.SGD)}
	AdamOp = &Op{Name: "adam", Family: "update", Doc: "PyTorch's Adam and AdamW (decoupled weight decay), bias-corrected, AMSGrad optional; the table's forward runs 10 steps as sgd_momentum's.",
		Forward: fwd(trajectory), Cases: optimCases(device.Adam)}
	LossScalingOp = &Op{Name: "loss_scaling", Family: "update", Doc: "dynamic loss scaling on the device (unscale, a step skipped on Inf or NaN, the scale's update), as PyTorch's GradScaler with a fused optimiser; the table's forward runs 6 scaled steps, 2 of them overflowing, and returns the trajectory, the scale and the scaler's state.",
		Forward: fwd(scaledTrajectory), Cases: scalingCases()}
	SGDOp = &Op{Name: "sgd", Family: "update", Doc: "w ← w − lr·g in place; no gradient.",
		Forward: fwd(func(in []*T, a SGDAttrs) *T {
			w := Clone(in[0])
			SGD(w, in[1], a.LR)
			return w
		}),
		Cases: sgdCases()}
)

// others are the ops not yet defined in a file of their group's.
var others = []*Op{
	PowScalarOp.with(powScalarRule),
	SoftmaxOp.with(softmaxRule),
	LogSoftmaxOp.with(logSoftmaxRule),

	// Reductions.
	SumOp.with(sumRule),
	MeanOp.with(meanRule),
	MaxOp.with(slopeRule(reduceBwd(MaxBackward), true)),
	MinOp.with(slopeRule(reduceBwd(MinBackward), true)),
	ArgmaxOp,
	ArgminOp,

	// Losses.
	MSEOp.with(mseRule),
	BCEOp.with(bceRule),
	BCEWithLogitsOp.with(bceLogitsRule),
	CrossEntropyOp.with(kRule(classRule(true))),
	NLLOp.with(kRule(classRule(false))),

	// Matrices and shapes.
	MatmulOp.with(matmulRule),
	DotOp.with(dotRule),
	OuterOp.with(outerRule),
	TransposeOp.with(transposeRule),
	PermuteOp.with(permuteRule),
	SliceOp.with(sliceRule),
	PadOp.with(padRule),
	ConcatOp.with(concatRule),
	StackOp.with(stackRule),
	ReshapeOp.with(reshapeRule),
	SqueezeOp.with(reshapeRule),
	UnsqueezeOp.with(reshapeRule),
	FlattenOp.with(reshapeRule),
	BroadcastToOp.with(broadcastRule),
	SumToOp.with(sumToRule),

	CastOp.with(castRule),

	// Layers.
	LinearOp.with(linearRule),
	Conv2dOp.with(conv2dRule),
	EmbeddingOp.with(embeddingRule),
	MaxPool2dOp.with(maxPoolRule),
	AvgPool2dOp.with(avgPoolRule),

	// Gradient utilities: in place, no gradient. The table's forward
	// clips copies of its inputs and returns them flattened and joined
	// (after the norm, for clip_grad_norm).
	ClipGradValueOp,
	ClipGradNormOp,

	// Optimisers: one fused kernel a step, in place.
	SGDMomentumOp,
	AdamOp,
	LossScalingOp,

	// Updates.
	SGDOp,
}

// ClipAttrs are clip's bounds, lo ≤ hi.
type ClipAttrs struct{ Lo, Hi float64 }

func (ClipAttrs) isAttrs() {}

// PowScalarAttrs are pow_scalar's exponent.
type PowScalarAttrs struct{ Exponent float64 }

func (PowScalarAttrs) isAttrs() {}

// AxesAttrs name axes: squeeze's (nil: every axis of size 1).
type AxesAttrs struct{ Axes []int }

func (AxesAttrs) isAttrs() {}

// ArgAttrs are argmax's and argmin's axis, keepdim and whether they
// look over the flattened tensor instead (All).
type ArgAttrs struct {
	Axis          int
	Keepdims, All bool
}

func (ArgAttrs) isAttrs() {}

// CrossEntropyAttrs are cross_entropy's and nll's: the reduction, the
// label smoothing ε (cross_entropy: the target mixed with the uniform
// distribution, (1 − ε)·target + ε/C) and, when Ignore, the class
// index whose rows contribute nothing (PyTorch's ignore_index).
type CrossEntropyAttrs struct {
	Reduction      Reduction
	LabelSmoothing float64
	Ignore         bool
	IgnoreIndex    int
}

func (CrossEntropyAttrs) isAttrs() {}

// PermuteAttrs are permute's order: axis k of the result is axis
// Perm[k].
type PermuteAttrs struct{ Perm []int }

func (PermuteAttrs) isAttrs() {}

// SliceAttrs are slice's Python bounds x[Start:Stop:Step] along Axis.
type SliceAttrs struct{ Axis, Start, Stop, Step int }

func (SliceAttrs) isAttrs() {}

// FlattenAttrs are the axes flatten merges, Start…End inclusive.
type FlattenAttrs struct{ Start, End int }

func (FlattenAttrs) isAttrs() {}

// PadAttrs are pad's {before, after} per axis and its constant.
type PadAttrs struct {
	Pads  [][2]int
	Value float64
}

func (PadAttrs) isAttrs() {}

// CastAttrs are cast's target dtype.
type CastAttrs struct{ DType device.DType }

func (CastAttrs) isAttrs() {}

// LimitAttrs are clip_grad_value's and clip_grad_norm's limit.
type LimitAttrs struct{ Limit float64 }

func (LimitAttrs) isAttrs() {}

// SGDAttrs are sgd's learning rate.
type SGDAttrs struct{ LR float64 }

func (SGDAttrs) isAttrs() {}

// StepAttrs are an optimiser step's: which optimiser and its
// hyper-parameters (sgd_momentum, adam).
type StepAttrs struct {
	Optimizer device.Optimizer
	Hyper     device.StepParams
}

func (StepAttrs) isAttrs() {}
