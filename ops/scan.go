package ops

import "fmt"

// The scans: each op's functions, table entry and second-order rule.

// The entries of scans. Each var is an op's handle, by which autograd.Apply
// and the rules reach it.
var (
	CumsumOp = &Op{Name: "cumsum", Family: "scan", Doc: "running sums along an axis (ScanAttrs.Reverse: from the end, its gradient); float32 accumulation.",
		Forward: fwd(func(in []*T, a ScanAttrs) *T { return cumsum("ops.Cumsum", in[0], a.Axis, a.Reverse) }),
		Backward: bwd(func(in []*T, g *T, a ScanAttrs) []*T {
			return []*T{cumsumBackward("ops.CumsumBackward", in[0], g, a.Axis, a.Reverse)}
		}),
		Cases: cumsumCases()}
)

// scans are the cumulative ops, in the coverage table's order.
var scans = []*Op{
	CumsumOp.with(cumsumRule),
}

// The gradient of a running sum is the running sum of g the other way.
var cumsumRule = unaryRule(func(r rb, x, y, g Value, a ScanAttrs) Value {
	return r.op(CumsumOp, ScanAttrs{Axis: a.Axis, Reverse: !a.Reverse}, g)
})

// Cumsum returns the running sums of x along axis, as PyTorch's cumsum
// (a 0-D x is its own sum).
func Cumsum[V Operand[E], E any](x V, axis int) V { return call(CumsumOp, ScanAttrs{Axis: axis}, x) }

// CumsumBackward returns the gradient of Cumsum: the running sums of g
// from the end of the axis.
func CumsumBackward(x, g *T, axis int) *T {
	return cumsumBackward("ops.CumsumBackward", x, g, axis, false)
}

func cumsum(op string, x *T, axis int, reverse bool) *T {
	dev := operands(op, x)
	dt := floats(op, x)
	shape := x.Shape()
	if len(shape) == 0 {
		shape = []int{1}
	}
	ax := normAxis(op, axis, len(shape))
	out, ok := output(dev, dt, x.Shape(), x)
	if ok && x.Len() > 0 {
		dev.Cumsum(out.Buffer(), x.Buffer(), shape, ax, reverse)
	}
	return out
}

func cumsumBackward(op string, x, g *T, axis int, reverse bool) *T {
	operands(op, x, g)
	floats(op, x, g)
	sameShape(op, "upstream gradient", g, x.Shape())
	return cumsum(op, g, axis, !reverse)
}

func cumsumCases() []Case {
	c := func(s []int, axis int, reverse bool) Case {
		name := fmt.Sprintf("%s axis=%d", ShapeName(s), axis)
		if reverse {
			name += " reverse"
		}
		return Case{Name: name, Inputs: []Input{{Shape: s}}, Attrs: ScanAttrs{Axis: axis, Reverse: reverse}}
	}
	big := c(sh(3, 2000), 1, false)
	big.NoFD = true
	special := c(sh(4, len(finiteSpecials)), 1, false)
	special.Name, special.NoFD = "special values "+special.Name, true
	special.Inputs[0].Domain = Domain{Values: finiteSpecials}
	return []Case{c(sh(7), 0, false), c(sh(3, 4), 1, false), c(sh(3, 4), 0, false), c(sh(2, 3, 4), -2, false),
		c(sh(2, 3, 4), 2, true), c(sh(), 0, false), c(sh(0, 3), 1, false), c(sh(3, 0), 0, false), big, special}
}

// ScanAttrs are cumsum's axis and whether it runs from the end (its
// gradient).
type ScanAttrs struct {
	Axis    int
	Reverse bool
}

func (ScanAttrs) isAttrs() {}
