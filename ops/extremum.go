package ops

import "github.com/extensor/extensor/tensor"

// The elementwise extrema: each op's functions, table entry and
// second-order rule.

// The entries of extrema. Each var is an op's handle, by which autograd.Apply
// and the rules reach it.
var (
	MaximumOp = binaryOp("maximum", "the larger of a and b, broadcasting, NaN if either is; gradient to the larger, halved between ties, whole to both at NaN (PyTorch's).", maximum, MaximumBackward,
		binaryCases(anyReal, anyReal, finiteSpecials, false, ties()))
	MinimumOp = binaryOp("minimum", "as maximum, the smaller.", minimum, MinimumBackward,
		binaryCases(anyReal, anyReal, finiteSpecials, false, ties()))
)

// extrema are maximum and minimum, in the coverage table's order.
var extrema = []*Op{
	MaximumOp.with(slopeRule2(MaximumBackward)),
	MinimumOp.with(slopeRule2(MinimumBackward)),
}

// ties is a case of equal operands, whose gradient each gets half of.
func ties() Case {
	v := Domain{Values: []float64{-1, 0, 0.5, 2, -3}}
	return Case{Name: "ties", Inputs: []Input{{Shape: sh(5), Domain: v}, {Shape: sh(5), Domain: v}}, NoFD: true}
}

// slopeRule2 is the rule of a piecewise-linear binary op: its gradients
// are g times constant slopes, which bwd gives for g = 1, summed to each
// input's shape.
func slopeRule2(bwd func(a, b, g *tensor.Tensor) (*tensor.Tensor, *tensor.Tensor)) Rule {
	return binaryRule(func(r rb, x, y, g Value) (Value, Value) {
		a, b, gt := r.b.Tensor(x), r.b.Tensor(y), r.b.Tensor(g)
		one := tensor.Must(tensor.Ones(gt.Device(), gt.DType(), gt.Shape()...))
		defer one.Release()
		// The slopes shaped like the output, before the sums to the inputs.
		sa, sb := bwdFull(bwd, a, b, one)
		return r.mul(g, r.b.Const(sa)), r.mul(g, r.b.Const(sb))
	})
}

// bwdFull returns bwd's gradients before they are summed to the inputs'
// shapes: of a and b broadcast to g's shape.
func bwdFull(bwd func(a, b, g *tensor.Tensor) (*tensor.Tensor, *tensor.Tensor), a, b, g *tensor.Tensor) (ga, gb *tensor.Tensor) {
	ab, bb := broadcastTo(a, g.Shape()), broadcastTo(b, g.Shape())
	defer ab.Release()
	defer bb.Release()
	return bwd(ab, bb, g)
}

// Maximum returns the elementwise larger of a and b, broadcasting as NumPy;
// NaN where either is NaN, as PyTorch's maximum.
func Maximum[V Operand[E], E any](a, b V) V { return call(MaximumOp, nil, a, b) }

func maximum(a, b *tensor.Tensor) *tensor.Tensor { return binary("ops.Maximum", "maximum", a, b) }

// MaximumBackward returns the gradients of Maximum: g where the operand is
// the larger, g/2 at a tie, 0 where it is the smaller, and g to both at
// NaN (PyTorch's), each summed to its operand's shape.
func MaximumBackward(a, b, g *tensor.Tensor) (ga, gb *tensor.Tensor) {
	return binaryBackward("ops.MaximumBackward", "maximum", a, b, g)
}

// Minimum returns the elementwise smaller of a and b, as Maximum.
func Minimum[V Operand[E], E any](a, b V) V { return call(MinimumOp, nil, a, b) }

func minimum(a, b *tensor.Tensor) *tensor.Tensor { return binary("ops.Minimum", "minimum", a, b) }

// MinimumBackward returns the gradients of Minimum, as MaximumBackward's.
func MinimumBackward(a, b, g *tensor.Tensor) (ga, gb *tensor.Tensor) {
	return binaryBackward("ops.MinimumBackward", "minimum", a, b, g)
}
