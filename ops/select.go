package ops

import (
	"fmt"

	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/tensor"
)

// The selections: each op's functions, table entry and second-order rule.
// A condition or mask is a floating-point tensor of its operands' dtype,
// true where it is not 0 (NaN counts as true); extensor has no boolean
// dtype. It gets a zero gradient.

// The entries of selections. Each var is an op's handle, by which autograd.Apply
// and the rules reach it.
var (
	WhereOp = &Op{Name: "where", Family: "where", Doc: "a where cond ≠ 0, else b, the three broadcast as NumPy; gradients g where each was chosen, summed to its shape; zero for cond.",
		Forward: func(in []*T, a Attrs) *T { noAttrs(a); return where(in[0], in[1], in[2]) },
		Backward: func(in []*T, g *T, _ Attrs) []*T {
			gc, ga, gb := WhereBackward(in[0], in[1], in[2], g)
			return []*T{gc, ga, gb}
		},
		Cases: whereCases()}
	MaskedFillOp = &Op{Name: "masked_fill", Family: "where", Doc: "x with value where mask ≠ 0, mask broadcast to x's shape; gradient g elsewhere; zero for mask.",
		Forward: fwd(func(in []*T, a FillAttrs) *T { return maskedFill(in[0], in[1], a.Value) }),
		Backward: func(in []*T, g *T, _ Attrs) []*T {
			gx, gm := MaskedFillBackward(in[0], in[1], g)
			return []*T{gx, gm}
		},
		Cases: maskedFillCases()}
	TrilOp = &Op{Name: "tril", Family: "where", Doc: "the lower triangle of the last two axes, elements with column − row ≤ diagonal, the rest 0; gradient g there.",
		Forward:  fwd(func(in []*T, a DiagonalAttrs) *T { return tril(in[0], a.Diagonal) }),
		Backward: bwd(func(in []*T, g *T, a DiagonalAttrs) []*T { return []*T{TrilBackward(in[0], g, a.Diagonal)} }),
		Cases:    triangleCases()}
	TriuOp = &Op{Name: "triu", Family: "where", Doc: "the upper triangle, column − row ≥ diagonal, as tril.",
		Forward:  fwd(func(in []*T, a DiagonalAttrs) *T { return triu(in[0], a.Diagonal) }),
		Backward: bwd(func(in []*T, g *T, a DiagonalAttrs) []*T { return []*T{TriuBackward(in[0], g, a.Diagonal)} }),
		Cases:    triangleCases()}
)

// selections are where and masked_fill, in the coverage table's order.
var selections = []*Op{
	WhereOp.with(whereRule),
	MaskedFillOp.with(maskedFillRule),
	TrilOp.with(triangleRule(true)),
	TriuOp.with(triangleRule(false)),
}

// triangleRule is tril's (lower) or triu's backward: g in the triangle.
func triangleRule(lower bool) Rule {
	return unaryRule(func(r rb, x, y, g Value, a DiagonalAttrs) Value {
		if device.Numel(x.Shape()) == 0 {
			return g
		}
		m := triangle("ops.Tril", r.b.Tensor(x), a.Diagonal, lower)
		return r.op(WhereOp, nil, r.b.Const(m), g, r.scalar(g, 0))
	})
}

// triangle returns the 0/1 mask, of x's last two axes, of tril (lower)
// or triu with the given diagonal, uploaded to x's device (a failed
// tensor, its error reported at the readback, where that fails).
func triangle(op string, x *T, diagonal int, lower bool) *T {
	operands(op, x)
	dt := floats(op, x)
	if x.Rank() < 2 {
		tensor.Panicf(op, tensor.ErrShape, "x of shape %v; want at least 2 axes (rows and columns)", x.Shape())
	}
	s := x.Shape()
	rows, cols := s[len(s)-2], s[len(s)-1]
	m := make([]float64, rows*cols)
	for i := range rows {
		for j := range cols {
			if d := j - i; lower && d <= diagonal || !lower && d >= diagonal {
				m[i*cols+j] = 1
			}
		}
	}
	t, err := tensor.FromValues(x.Device(), dt, m, rows, cols)
	if err != nil {
		return tensor.Failed(x.Device(), dt, err, rows, cols)
	}
	return t
}

// keepTriangle returns t where the triangle of x's shape is, 0 elsewhere.
func keepTriangle(op string, x, t *T, diagonal int, lower bool) *T {
	operands(op, x, t)
	floats(op, x, t)
	if x.Rank() >= 2 && x.Len() == 0 {
		// Nothing to mask, and rows×cols may be huge beside an empty axis.
		out, _ := output(t.Device(), t.DType(), t.Shape(), t)
		return out
	}
	m := triangle(op, x, diagonal, lower)
	defer m.Release()
	zero := scalarOf(t, 0)
	defer zero.Release()
	return where(m, t, zero)
}

// Tril returns the lower triangle of x's last two axes, as PyTorch's
// tril: the elements with column − row ≤ diagonal (0: the main diagonal
// and below), the others 0 (NaN and ±Inf too).
func Tril[V Operand[E], E any](x V, diagonal int) V {
	return call(TrilOp, DiagonalAttrs{Diagonal: diagonal}, x)
}

func tril(x *T, diagonal int) *T { return keepTriangle("ops.Tril", x, x, diagonal, true) }

// TrilBackward returns the gradient of Tril: g in the triangle, 0 outside.
func TrilBackward(x, g *T, diagonal int) *T {
	operands("ops.TrilBackward", x, g)
	sameShape("ops.TrilBackward", "upstream gradient", g, x.Shape())
	return keepTriangle("ops.TrilBackward", x, g, diagonal, true)
}

// Triu returns the upper triangle of x's last two axes, as PyTorch's
// triu: the elements with column − row ≥ diagonal, the others 0.
func Triu[V Operand[E], E any](x V, diagonal int) V {
	return call(TriuOp, DiagonalAttrs{Diagonal: diagonal}, x)
}

func triu(x *T, diagonal int) *T { return keepTriangle("ops.Triu", x, x, diagonal, false) }

// TriuBackward returns the gradient of Triu: g in the triangle, 0 outside.
func TriuBackward(x, g *T, diagonal int) *T {
	operands("ops.TriuBackward", x, g)
	sameShape("ops.TriuBackward", "upstream gradient", g, x.Shape())
	return keepTriangle("ops.TriuBackward", x, g, diagonal, false)
}

func triangleCases() []Case {
	c := func(s []int, diagonal int) Case {
		return Case{Name: fmt.Sprintf("%s diagonal=%d", ShapeName(s), diagonal), Inputs: []Input{{Shape: s}}, Attrs: DiagonalAttrs{Diagonal: diagonal}}
	}
	special := c(sh(3, 5), 0)
	special.Name, special.NoFD = "special values (3,5)", true
	special.Inputs[0].Domain = Domain{Values: finiteSpecials}
	return []Case{c(sh(4, 4), 0), c(sh(3, 5), 1), c(sh(5, 3), -1), c(sh(2, 3, 4), 0), c(sh(3, 3), 5), c(sh(3, 3), -5), c(sh(0, 3), 0), c(sh(2, 0, 3), 1), special}
}

var (
	// g where each operand was chosen, 0 elsewhere.
	whereRule = func(b Builder, in []Value, _, g Value, _ Attrs) []Value {
		r := rb{b}
		zero := r.scalar(g, 0)
		return []Value{zerosLike(b, in[0]),
			r.sumTo(r.op(WhereOp, nil, in[0], g, zero), in[1].Shape()),
			r.sumTo(r.op(WhereOp, nil, in[0], zero, g), in[2].Shape())}
	}
	maskedFillRule = func(b Builder, in []Value, _, g Value, _ Attrs) []Value {
		r := rb{b}
		return []Value{r.op(WhereOp, nil, in[1], r.scalar(g, 0), g), zerosLike(b, in[1])}
	}
)

// expand returns t broadcast to shape, or t itself when it has that shape,
// and whether it is a copy to release.
func expand(t *T, shape []int) (*T, bool) {
	if equal(t.Shape(), shape) {
		return t, false
	}
	return broadcastTo(t, shape), true
}

// Where returns a where cond ≠ 0 (NaN counts as true) and b elsewhere, as
// PyTorch's where; cond, a and b broadcast as NumPy and share a
// floating-point dtype.
func Where[V Operand[E], E any](cond, a, b V) V { return call(WhereOp, nil, cond, a, b) }

func where(cond, a, b *T) *T {
	const op = "ops.Where"
	dev := operands(op, cond, a, b)
	dt := floats(op, cond, a, b)
	ab, ok := BroadcastShapes(a.Shape(), b.Shape())
	shape, ok2 := BroadcastShapes(cond.Shape(), ab)
	if !ok || !ok2 {
		tensor.Panicf(op, tensor.ErrShape, "cond %v, a %v and b %v do not broadcast together", cond.Shape(), a.Shape(), b.Shape())
	}
	ts := make([]*T, 3)
	for i, t := range []*T{cond, a, b} {
		e, copied := expand(t, shape)
		if copied {
			defer e.Release()
		}
		ts[i] = e
	}
	out, ok := output(dev, dt, shape, ts...)
	if ok && out.Len() > 0 {
		dev.Where(out.Buffer(), ts[0].Buffer(), ts[1].Buffer(), ts[2].Buffer())
	}
	return out
}

// WhereBackward returns the gradients of Where: zeros for cond, and for a
// and b the upstream gradient g where each was chosen, 0 elsewhere, summed
// to its shape.
func WhereBackward(cond, a, b, g *T) (gc, ga, gb *T) {
	const op = "ops.WhereBackward"
	operands(op, cond, a, b, g)
	floats(op, cond, a, b, g)
	zero := scalarOf(g, 0)
	defer zero.Release()
	ta := where(cond, g, zero)
	defer ta.Release()
	tb := where(cond, zero, g)
	defer tb.Release()
	return filled(cond.Device(), cond.DType(), cond.Shape(), 0, cond), sumTo(ta, a.Shape()), sumTo(tb, b.Shape())
}

// maskArgs checks a mask against x: broadcastable to x's shape.
func maskArgs(op string, x, mask *T) device.Device {
	dev := operands(op, x, mask)
	floats(op, x, mask)
	if s, ok := BroadcastShapes(mask.Shape(), x.Shape()); !ok || !equal(s, x.Shape()) {
		tensor.Panicf(op, tensor.ErrShape, "mask of shape %v for x of shape %v; want a mask that broadcasts to x's shape", mask.Shape(), x.Shape())
	}
	return dev
}

// MaskedFill returns x with value where mask ≠ 0 (NaN counts as true), as
// PyTorch's masked_fill; mask broadcasts to x's shape.
func MaskedFill[V Operand[E], E any](x, mask V, value float64) V {
	return call(MaskedFillOp, FillAttrs{Value: value}, x, mask)
}

func maskedFill(x, mask *T, value float64) *T {
	const op = "ops.MaskedFill"
	maskArgs(op, x, mask)
	v := scalarOf(x, value)
	defer v.Release()
	return where(mask, v, x)
}

// MaskedFillBackward returns the gradients of MaskedFill: g where mask is
// 0 and 0 where it is not, for x, and zeros for mask.
func MaskedFillBackward(x, mask, g *T) (gx, gmask *T) {
	const op = "ops.MaskedFillBackward"
	dev := maskArgs(op, x, mask)
	operands(op, x, g)
	floats(op, x, g)
	sameShape(op, "upstream gradient", g, x.Shape())
	zero := scalarOf(g, 0)
	defer zero.Release()
	return where(mask, zero, g), filled(dev, mask.DType(), mask.Shape(), 0, mask)
}

// conds are a condition's values: zeros, ones, other numbers and NaN.
var conds = Domain{Values: []float64{0, 1, 1, 0, 2, 0, -0.5, 0, nan}}

func whereCases() []Case {
	c := func(cs, as, bs []int) Case {
		return Case{Name: ShapeName(cs) + "," + ShapeName(as) + "," + ShapeName(bs),
			Inputs: []Input{{Shape: cs, Domain: conds, NoFD: true}, {Shape: as}, {Shape: bs}}}
	}
	special := c(sh(3, 1), sh(1, len(finiteSpecials)), sh(3, len(finiteSpecials)))
	special.Name, special.NoFD = "special values", true
	special.Inputs[1].Domain = Domain{Values: finiteSpecials}
	special.Inputs[2].Domain = Domain{Values: finiteSpecials}
	big := c(sh(LargeLen), sh(LargeLen), sh(LargeLen))
	big.NoFD = true
	return []Case{c(sh(7), sh(7), sh(7)), c(sh(3, 1, 5), sh(3, 4, 5), sh(5)), c(sh(), sh(2, 3), sh(2, 3)), c(sh(4, 1), sh(1, 6), sh()),
		c(sh(0), sh(0), sh(0)), c(sh(3, 0), sh(3, 1), sh(0)), special, big}
}

func maskedFillCases() []Case {
	c := func(xs, ms []int, v float64) Case {
		return Case{Name: ShapeName(xs) + " mask " + ShapeName(ms), Inputs: []Input{{Shape: xs}, {Shape: ms, Domain: conds, NoFD: true}}, Attrs: FillAttrs{Value: v}}
	}
	special := c(sh(len(finiteSpecials)), sh(len(finiteSpecials)), -1)
	special.Name, special.NoFD = "special values", true
	special.Inputs[0].Domain = Domain{Values: finiteSpecials}
	// An attention mask's fill: finite differences of −Inf are NaN.
	ninf := c(sh(4, 4), sh(4, 4), -inf)
	ninf.Name, ninf.NoFD = "(4,4) mask (4,4) value=-Inf", true
	return []Case{c(sh(7), sh(7), 0), c(sh(3, 4), sh(4), 2.5), c(sh(2, 3, 4), sh(3, 1), -1), c(sh(), sh(), 1), c(sh(0, 3), sh(3), 0), special, ninf}
}

// FillAttrs are masked_fill's value.
type FillAttrs struct{ Value float64 }

func (FillAttrs) isAttrs() {}

// DiagonalAttrs are tril's and triu's diagonal, 0 the main one.
type DiagonalAttrs struct{ Diagonal int }

func (DiagonalAttrs) isAttrs() {}
