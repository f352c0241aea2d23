package ops

import (
	"fmt"

	"github.com/extensor/extensor/tensor"
)

// The 1-D convolution: its functions and table entry. It runs as conv2d
// over images of height 1.

// The entries of conv1ds. Each var is an op's handle, by which autograd.Apply
// and the rules reach it.
var (
	Conv1dOp = &Op{Name: "conv1d", Family: "window, conv_tex", Doc: "NCL cross-correlation, weight [out, in/groups, K], stride, zero padding, dilation (Window's first entries), groups; conv2d over height 1.",
		Forward: fwd(func(in []*T, a Window) *T { return conv1d(in[0], in[1], bias(in), a) }),
		Backward: bwd(func(in []*T, g *T, a Window) []*T {
			gx, gw, gb := Conv1dBackward(in[0], in[1], bias(in), g, a)
			return []*T{gx, gw, gb}[:len(in)]
		}),
		Cases: conv1dCases()}
)

// conv1ds are the 1-D convolutions, in the coverage table's order.
var conv1ds = []*Op{
	Conv1dOp.with(conv1dRule),
}

// planes returns x (N, C, L) and w (F, C/groups, K) as conv2d's images
// and filters of height 1, and win as conv2d's window; the caller
// releases the views.
func planes(op string, x, w *T, win Window) (x4, w4 *T, win2 Window) {
	operands(op, x, w)
	if x.Rank() != 3 || w.Rank() != 3 {
		tensor.Panicf(op, tensor.ErrShape, "x %v and weight %v; want x [N, C, L] and weight [out, C/groups, K]", x.Shape(), w.Shape())
	}
	xs, ws := x.Shape(), w.Shape()
	win2 = Window{Stride: [2]int{1, win.Stride[0]}, Padding: [2]int{0, win.Padding[0]}, Dilation: [2]int{1, win.Dilation[0]}, Groups: win.Groups}
	if win.Dilation[0] == 0 {
		win2.Dilation = [2]int{}
	}
	return x.Reshape(xs[0], xs[1], 1, xs[2]), w.Reshape(ws[0], ws[1], 1, ws[2]), win2
}

// flat returns the 4-D t (N, C, 1, L) as N, C, L, releasing t.
func flat(t *T) *T {
	if t == nil {
		return nil
	}
	s := t.Shape()
	v := t.Reshape(s[0], s[1], s[3])
	t.Release()
	return v
}

// Conv1d returns the 1-D cross-correlation of x (N, C, L) with the filters
// w (F, C/groups, K), plus b (F, or nil), as PyTorch's conv1d; win's first
// entries (Stride[0], Padding[0], Dilation[0]) and Groups describe it.
func Conv1d[V Operand[E], E any](x, w, b V, win Window) V {
	return call(Conv1dOp, win, inputs("ops.Conv1d", []V{x, w}, b)...)
}

func conv1d(x, w, b *T, win Window) *T {
	x4, w4, win2 := planes("ops.Conv1d", x, w, win)
	defer x4.Release()
	defer w4.Release()
	return flat(conv2dOf(x4, w4, b, win2))
}

// Conv1dBackward returns the gradients of Conv1d for x, w and b (nil for
// a nil b).
func Conv1dBackward(x, w, b, g *T, win Window) (gx, gw, gb *T) {
	const op = "ops.Conv1dBackward"
	x4, w4, win2 := planes(op, x, w, win)
	defer x4.Release()
	defer w4.Release()
	if g.Rank() != 3 {
		tensor.Panicf(op, tensor.ErrShape, "upstream gradient %v; want [N, out, L']", g.Shape())
	}
	gs := g.Shape()
	g4 := g.Reshape(gs[0], gs[1], 1, gs[2])
	defer g4.Release()
	gx, gw, gb = Conv2dBackward(x4, w4, b, g4, win2)
	return flat(gx), flat(gw), gb
}

func conv1dCases() []Case {
	c := func(x, w []int, bias bool, stride, pad, dil, groups int) Case {
		in := []Input{{Shape: x}, {Shape: w}}
		name := fmt.Sprintf("%s*%s s%d p%d d%d g%d", ShapeName(x), ShapeName(w), stride, pad, dil, groups)
		if bias {
			in = append(in, Input{Shape: sh(w[0])})
		} else {
			name += " no bias"
		}
		return Case{Name: name, Inputs: in, Attrs: Window{Stride: [2]int{stride}, Padding: [2]int{pad}, Dilation: [2]int{dil}, Groups: groups}}
	}
	special := c(sh(1, 2, 5), sh(3, 2, 2), true, 1, 0, 1, 1)
	special.Name, special.NoFD = "special values "+special.Name, true
	special.Inputs[0].Domain = Domain{Values: finiteSpecials}
	return []Case{c(sh(2, 3, 10), sh(4, 3, 3), true, 1, 0, 1, 1), c(sh(2, 3, 10), sh(4, 3, 3), false, 2, 1, 1, 1),
		c(sh(1, 4, 12), sh(4, 2, 3), true, 1, 2, 2, 2), c(sh(2, 4, 9), sh(4, 1, 5), true, 1, 2, 1, 4), special}
}

// conv1dRule is conv2d's rule over images of height 1.
var conv1dRule = rule(func(b Builder, in []Value, out, g Value, a Window) []Value {
	r := rb{b}
	four := func(v Value) Value {
		s := v.Shape()
		return r.reshape(v, []int{s[0], s[1], 1, s[2]})
	}
	w := a
	win2 := Window{Stride: [2]int{1, w.Stride[0]}, Padding: [2]int{0, w.Padding[0]}, Dilation: [2]int{1, max(w.Dilation[0], 1)}, Groups: w.Groups}
	in4 := append([]Value{four(in[0]), four(in[1])}, in[2:]...)
	grads := conv2dRule(b, in4, nil, four(g), win2)
	for i := range 2 {
		grads[i] = r.reshape(grads[i], in[i].Shape())
	}
	return grads
})
