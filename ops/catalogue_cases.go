package ops

import (
	"fmt"
	"math"
	"strings"

	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/tensor"
)

// The parity cases of the catalogue's ops that take more than a line
// (cases.go has the builders they share): their shapes, values and
// attributes, and the references some compare against.
func powScalarCases() []Case {
	cs := unaryCases(Domain{Lo: 0.1, Hi: 3}, specials, PowScalarAttrs{Exponent: 2.5}, false)
	for _, e := range []float64{3, -2, 0.5, 0, 1} {
		dom := Domain{Lo: -2, Hi: 2, Kinks: []float64{0}, Gap: 0.1}
		if e != math.Trunc(e) {
			dom = Domain{Lo: 0.1, Hi: 2} // a non-integer exponent needs a positive base
		}
		cs = append(cs,
			Case{Name: fmt.Sprintf("(4,5) e=%v", e), Inputs: []Input{{Shape: sh(4, 5), Domain: dom}}, Attrs: PowScalarAttrs{Exponent: e}},
			Case{Name: fmt.Sprintf("special values e=%v", e), Inputs: []Input{{Shape: sh(len(specials)), Domain: Domain{Values: specials}}}, Attrs: PowScalarAttrs{Exponent: e}, NoFD: true})
	}
	return cs
}

func crossEntropyCases() []Case {
	cs := classCases(logits, false)
	for _, r := range []Reduction{MeanReduction, NoReduction} {
		cs = append(cs,
			Case{Name: "(7,10) ±100 " + r.String(), Inputs: []Input{{Shape: sh(7, 10), Domain: bigLogits}, {Shape: sh(7), Int: true, Domain: Domain{Classes: 10}}},
				Attrs: CrossEntropyAttrs{Reduction: r}, FDATol: 1e-6},
			Case{Name: "(0,5) " + r.String(), Inputs: []Input{{Shape: sh(0, 5), Domain: logits}, {Shape: sh(0), Int: true, Domain: Domain{Classes: 5}}},
				Attrs: CrossEntropyAttrs{Reduction: r}})
	}
	for _, c := range classCases(logits, true) {
		c.Name = "probabilities " + c.Name
		cs = append(cs, c)
	}
	return append(cs,
		Case{Name: "probabilities (7,10) ±100", Inputs: []Input{{Shape: sh(7, 10), Domain: bigLogits}, {Shape: sh(7, 10), Domain: unit}}, FDATol: 1e-6},
		Case{Name: "special values (3,4) none", Inputs: []Input{
			{Shape: sh(3, 4), Domain: Domain{Values: []float64{1e30, -1e30, 0, 1, nan, 1, 2, 3, 100, -100, 50, 0}}},
			{Shape: sh(3), Int: true, Domain: Domain{Values: []float64{1, 2, 3}}}},
			Attrs: CrossEntropyAttrs{Reduction: NoReduction}, NoFD: true},
	)
}

func matmulCases() []Case {
	c := func(a, b []int) Case {
		return Case{Name: ShapeName(a) + "@" + ShapeName(b), Inputs: []Input{{Shape: a}, {Shape: b}}}
	}
	var cs []Case
	for _, mkn := range [][3]int{{1, 1, 1}, {7, 7, 7}, {257, 7, 3}, {3, 257, 5}, {8, 12, 16}, {70, 33, 66}, {64, 64, 64}, {5, 0, 3}} {
		m, k, n := mkn[0], mkn[1], mkn[2]
		cs = append(cs, c(sh(m, k), sh(k, n)))
	}
	cs = append(cs,
		// Vectors.
		c(sh(3), sh(3, 2)), c(sh(2, 3), sh(3)), c(sh(5), sh(5)), c(sh(4), sh(2, 4, 3)), c(sh(2, 3, 4), sh(4)),
		// Batches: whole, broadcast, folded into rows, shared a, empty.
		c(sh(2, 3, 4), sh(2, 4, 5)), c(sh(2, 1, 4, 3), sh(3, 3, 2)), c(sh(5, 3, 4), sh(4, 2)), c(sh(4, 3), sh(5, 3, 2)),
		c(sh(1, 2, 3), sh(4, 3, 5)), c(sh(3, 1, 2, 4), sh(1, 2, 4, 8)), c(sh(0, 2, 3), sh(3, 4)), c(sh(2, 0, 3), sh(2, 3, 4)),
		// More terms than one loop of a lavapipe invocation runs: the sum is split.
		Case{Name: "(2,40000)@(40000,3)", Inputs: []Input{{Shape: sh(2, 40000)}, {Shape: sh(40000, 3)}}, NoFD: true},
		Case{Name: "(64,60,70)@(64,70,50)", Inputs: []Input{{Shape: sh(64, 60, 70)}, {Shape: sh(64, 70, 50)}}, NoFD: true},
		// Few blocks of the product and long k: split over k on CPU
		// adapters of two threads or more. float32 rounding over 3000
		// terms (Σ|a||b| ≈ 750) exceeds the default atol near zero sums,
		// on the CPU backend too.
		Case{Name: "(40,3000)@(3000,12)", Inputs: []Input{{Shape: sh(40, 3000)}, {Shape: sh(3000, 12)}}, ATol: 1e-4, NoFD: true},
		// Products large enough for the texture kernel on CPU adapters
		// (edges not multiples of its tiles; gradients transposed), alone,
		// folded, and batched with shared and own operands.
		Case{Name: "(250,170)@(170,290)", Inputs: []Input{{Shape: sh(250, 170)}, {Shape: sh(170, 290)}}, NoFD: true},
		Case{Name: "(2,130,250)@(250,260)", Inputs: []Input{{Shape: sh(2, 130, 250)}, {Shape: sh(250, 260)}}, NoFD: true},
		Case{Name: "(130,250)@(2,250,260)", Inputs: []Input{{Shape: sh(130, 250)}, {Shape: sh(2, 250, 260)}}, NoFD: true},
		Case{Name: "(2,130,250)@(2,250,260)", Inputs: []Input{{Shape: sh(2, 130, 250)}, {Shape: sh(2, 250, 260)}}, NoFD: true},
		// NaN, ∞·0, ∞ and 1e30 in sums whose order cannot change the result.
		Case{Name: "special values (3,3)@(3,2)", Inputs: []Input{
			{Shape: sh(3, 3), Domain: Domain{Values: []float64{nan, 1, 2, inf, 0, 1, 1e30, 1, -1e-30}}},
			{Shape: sh(3, 2), Domain: Domain{Values: []float64{1, 0, 2, 1, math.Copysign(0, -1), 3}}}}, NoFD: true},
		Case{Name: "special values (2,1,3)@(2,3,1)", Inputs: []Input{
			{Shape: sh(2, 1, 3), Domain: Domain{Values: []float64{nan, 1, 2, inf, 0, 1}}},
			{Shape: sh(2, 3, 1), Domain: Domain{Values: []float64{1, 0, 2, 1, 3, -1}}}}, NoFD: true},
		// Zeros times ∞ and NaN on either side: NaN, never skipped (a
		// BLAS may skip the terms of a zero factor).
		Case{Name: "0·∞ and 0·NaN (2,3)@(3,2)", Inputs: []Input{
			{Shape: sh(2, 3), Domain: Domain{Values: []float64{0, 1, 0, 2, 0, 1}}},
			{Shape: sh(3, 2), Domain: Domain{Values: []float64{inf, 1, 1, nan, -inf, 0}}}}, NoFD: true},
		Case{Name: "0·∞ and 0·NaN (2,2,2)@(2,2,1)", Inputs: []Input{
			{Shape: sh(2, 2, 2), Domain: Domain{Values: []float64{0, 1, 1, 0, nan, 0, 0, 2}}},
			{Shape: sh(2, 2, 1), Domain: Domain{Values: []float64{inf, 0, 1, 0}}}}, NoFD: true})
	return cs
}

// vectorCases are the cases of dot, or outer: vectors of n elements and
// of other(n).
func vectorCases(other func(n int) []int) []Case {
	var cs []Case
	for _, n := range []int{1, 7, 257, 0} {
		cs = append(cs, Case{Name: ShapeName(sh(n)) + "," + ShapeName(other(n)), Inputs: []Input{{Shape: sh(n)}, {Shape: other(n)}}})
	}
	return append(cs, Case{Name: "special values", Inputs: []Input{
		{Shape: sh(3), Domain: Domain{Values: []float64{nan, 1, inf}}},
		{Shape: other(3), Domain: Domain{Values: []float64{1, 2, 0, -1, 1e30}}}}, NoFD: true})
}

// broadcastCases are the cases of broadcast_to, or (sum) of sum_to, its
// adjoint, which goes the other way.
func broadcastCases(sum bool) []Case {
	var cs []Case
	for _, p := range [][2][]int{{sh(3, 1, 5), sh(3, 4, 5)}, {sh(), sh(4, 3)}, {sh(5), sh(2, 5)}} {
		from, to := p[0], p[1]
		if sum {
			from, to = to, from
		}
		cs = append(cs, Case{Name: ShapeName(from) + "->" + ShapeName(to), Inputs: []Input{{Shape: from}}, Attrs: ShapeAttrs{Shape: to}})
	}
	from, to := sh(3, 1), sh(3, 4)
	vals := []float64{nan, inf, math.Copysign(0, -1)}
	if sum { // columns of ∞ + 1e30, −∞ + 1e30, NaN + 1
		from, to = sh(2, 3), sh(3)
		vals = []float64{inf, -inf, nan, 1e30, 1e30, 1}
	}
	return append(cs, Case{Name: "special values " + ShapeName(from) + "->" + ShapeName(to), Inputs: []Input{{Shape: from, Domain: Domain{Values: vals}}}, Attrs: ShapeAttrs{Shape: to}, NoFD: true})
}

// shapeCases checks a shape op on each shape, with the attributes attrs
// gives it, and on the special values, whose bits it must move unchanged.
func shapeCases(attrs func(s []int) Attrs, shapes ...[]int) []Case {
	var cs []Case
	for _, s := range shapes {
		cs = append(cs, Case{Name: ShapeName(s), Inputs: []Input{{Shape: s}}, Attrs: attrs(s)})
	}
	s := shapes[0]
	return append(cs, Case{Name: "special values " + ShapeName(s), Inputs: []Input{{Shape: s, Domain: Domain{Values: specials}}}, Attrs: attrs(s), NoFD: true})
}

func permuteCases() []Case {
	c := func(s, p []int) Case {
		return Case{Name: ShapeName(s) + " perm " + ShapeName(p), Inputs: []Input{{Shape: s}}, Attrs: PermuteAttrs{Perm: p}}
	}
	return []Case{
		c(sh(2, 3, 4), sh(2, 0, 1)), c(sh(2, 3, 4), sh(0, 2, 1)), c(sh(2, 3, 4, 5), sh(3, 1, 0, 2)), c(sh(2, 3, 4, 5), sh(-1, -2, 0, 1)),
		c(sh(7), sh(0)), c(sh(), sh()), c(sh(3, 0, 2), sh(1, 2, 0)), c(sh(1, 5, 1), sh(2, 0, 1)),
		c(sh(2, 1, 3, 1, 2, 1, 2, 3), sh(7, 6, 5, 4, 3, 2, 1, 0)),
		{Name: "(4099,4097) perm (1,0)", Inputs: []Input{{Shape: sh(4099, 4097)}}, Attrs: PermuteAttrs{Perm: sh(1, 0)}, NoFD: true},
		{Name: "special values (3,5,2) perm (2,0,1)", Inputs: []Input{{Shape: sh(3, 5, 2), Domain: Domain{Values: specials}}}, Attrs: PermuteAttrs{Perm: sh(2, 0, 1)}, NoFD: true},
	}
}

func sliceCases() []Case {
	c := func(s []int, axis, start, stop, step int) Case {
		return Case{Name: fmt.Sprintf("%s axis %d [%d:%d:%d]", ShapeName(s), axis, start, stop, step), Inputs: []Input{{Shape: s}},
			Attrs: SliceAttrs{Axis: axis, Start: start, Stop: stop, Step: step}}
	}
	cs := []Case{
		c(sh(10), 0, 2, 8, 1), c(sh(10), 0, 1, 10, 3), c(sh(10), 0, -4, 100, 2), c(sh(3, 8, 5), 1, 1, 7, 2),
		c(sh(3, 8, 5), -1, 0, 5, 4), c(sh(3, 8, 5), 0, 2, 1, 1), c(sh(0, 4), 1, 1, 3, 1), c(sh(1), 0, 0, 1, 1),
		// Steps and stops past any length (Python: [1 2 3 4][0:4:huge] is [1]).
		c(sh(4), 0, 0, 4, math.MaxInt), c(sh(2, 4), 1, 1, math.MaxInt, math.MaxInt-1),
		c(sh(LargeLen), 0, 1, LargeLen, 1),
	}
	cs[len(cs)-1].NoFD = true
	sp := c(sh(len(specials)), 0, 1, len(specials), 2)
	sp.Name, sp.Inputs[0].Domain, sp.NoFD = "special values "+sp.Name, Domain{Values: specials}, true
	return append(cs, sp)
}

func padCases() []Case {
	c := func(s []int, pads [][2]int, v float64) Case {
		return Case{Name: fmt.Sprintf("%s pads %v value %v", ShapeName(s), pads, v), Inputs: []Input{{Shape: s}}, Attrs: PadAttrs{Pads: pads, Value: v}}
	}
	sp := c(sh(3, 5), [][2]int{{1, 0}, {2, 2}}, math.Inf(-1))
	sp.Name, sp.Inputs[0].Domain, sp.NoFD = "special values "+sp.Name, Domain{Values: specials}, true
	return []Case{
		c(sh(5), [][2]int{{2, 3}}, 0), c(sh(2, 3, 4), [][2]int{{0, 1}, {1, 1}, {2, 0}}, 1.5), c(sh(2, 3), [][2]int{{0, 0}, {0, 0}}, 0),
		c(sh(), [][2]int{}, 0), c(sh(0, 2), [][2]int{{1, 1}, {0, 1}}, -1), c(sh(1, 1, 28, 28), [][2]int{{0, 0}, {0, 0}, {1, 1}, {1, 1}}, 0),
		sp,
	}
}

// joinCases are the cases of concat, or (stack) of stack.
func joinCases(stack bool) []Case {
	c := func(axis int, shapes ...[]int) Case {
		names := make([]string, len(shapes))
		in := make([]Input, len(shapes))
		for i, s := range shapes {
			names[i], in[i] = ShapeName(s), Input{Shape: s}
		}
		return Case{Name: strings.Join(names, "+") + fmt.Sprintf(" axis %d", axis), Inputs: in, Attrs: AxisAttrs{Axis: axis}}
	}
	var cs []Case
	if stack {
		cs = []Case{c(0, sh(3, 4), sh(3, 4)), c(1, sh(3, 4), sh(3, 4), sh(3, 4)), c(-1, sh(2, 3), sh(2, 3)), c(0, sh(), sh(), sh()), c(1, sh(0, 2), sh(0, 2)), c(0, sh(5))}
	} else {
		cs = []Case{c(0, sh(3, 4), sh(2, 4)), c(1, sh(3, 4), sh(3, 1), sh(3, 5)), c(-1, sh(2, 3, 2), sh(2, 3, 0), sh(2, 3, 3)), c(0, sh(7)), c(0, sh(0), sh(0))}
	}
	sp := c(0, sh(len(specials)), sh(len(specials)))
	sp.Name, sp.NoFD = "special values "+sp.Name, true
	for i := range sp.Inputs {
		sp.Inputs[i].Domain = Domain{Values: specials}
	}
	return append(cs, sp)
}

// bias returns a layer's optional third input.
func bias(in []*T) *T {
	if len(in) > 2 {
		return in[2]
	}
	return nil
}

func linearCases() []Case {
	c := func(x []int, out int, b bool) Case {
		in := []Input{{Shape: x}, {Shape: sh(out, x[len(x)-1])}}
		name := ShapeName(x) + fmt.Sprintf(" → %d", out)
		if b {
			in = append(in, Input{Shape: sh(out)})
		} else {
			name += " no bias"
		}
		return Case{Name: name, Inputs: in}
	}
	sp := c(sh(3, 4), 2, true)
	sp.Name, sp.NoFD = "special values "+sp.Name, true
	sp.Inputs[0].Domain = Domain{Values: []float64{nan, 1, 2, 3, inf, 0, 1, 2, -1, 0.5, 1e30, 2}}
	// examples/cnn's first linear layer: on CPU adapters its product is
	// split over k; float32 rounding over 1600 terms exceeds the default
	// atol near zero sums.
	cnn := c(sh(64, 1600), 128, true)
	cnn.ATol, cnn.NoFD = 1e-4, true
	return []Case{
		c(sh(5, 4), 3, true), c(sh(5, 4), 3, false), c(sh(2, 3, 4), 5, true), c(sh(4), 3, true), c(sh(0, 4), 3, true),
		c(sh(3, 0), 2, true), c(sh(70, 33), 65, true), sp, cnn,
	}
}

// pair is an {h, w} pair of a window's geometry.
func pair(h, w int) [2]int { return [2]int{h, w} }

func convCases() []Case {
	c := func(x, w []int, bias bool, win Window) Case {
		in := []Input{{Shape: x}, {Shape: w}}
		name := fmt.Sprintf("%s*%s s%v p%v", ShapeName(x), ShapeName(w), win.Stride, win.Padding)
		if win.Dilation != [2]int{} {
			name += fmt.Sprintf(" d%v", win.Dilation)
		}
		if win.Groups > 1 {
			name += fmt.Sprintf(" g%d", win.Groups)
		}
		if bias {
			in = append(in, Input{Shape: sh(w[0])})
		} else {
			name += " no bias"
		}
		return Case{Name: name, Inputs: in, Attrs: win}
	}
	s1 := Window{Stride: pair(1, 1)}
	large := c(sh(64, 1, 28, 28), sh(32, 1, 3, 3), true, s1)
	// The weight's gradient sums 43,264 products in float32.
	large.NoFD, large.ATol = true, 1e-3
	// Columns of more than im2col.ColsBudget elements: products in chunks of 3
	// images (3, 3 and 1; 3 and 1 with groups, whose bias is not fused).
	chunks := c(sh(7, 4, 130, 130), sh(2, 4, 3, 3), true, s1)
	chunks.Name, chunks.NoFD, chunks.ATol = "chunks "+chunks.Name, true, 1e-3
	grouped := c(sh(4, 4, 130, 130), sh(4, 2, 3, 3), true, Window{Stride: pair(1, 1), Groups: 2})
	grouped.Name, grouped.NoFD, grouped.ATol = "chunks "+grouped.Name, true, 1e-3
	// Convolutions that the WebGPU backend's direct kernels take (at least 4 channels
	// and 8 filters): examples/cnn's conv2, whose filters' gradient is
	// summed over 22 splits of the batch, the last of 1 image; partial
	// quads of channels and filters, padding and dilation; stride 2 and
	// padding past the window's reach, which its backward declines.
	cnn := c(sh(64, 32, 13, 13), sh(64, 32, 3, 3), true, s1)
	cnn.Name, cnn.NoFD, cnn.ATol = "direct "+cnn.Name, true, 1e-3
	quads := c(sh(1, 5, 4, 5), sh(9, 5, 2, 3), true, Window{Stride: pair(1, 1), Padding: pair(1, 2), Dilation: pair(1, 2)})
	strided := c(sh(1, 4, 5, 5), sh(8, 4, 2, 2), false, Window{Stride: pair(2, 2), Padding: pair(1, 1)})
	wide := c(sh(1, 4, 3, 3), sh(8, 4, 1, 1), true, Window{Stride: pair(1, 1), Padding: pair(1, 1)})
	sp := c(sh(1, 1, 3, 4), sh(1, 1, 2, 2), true, s1)
	sp.Name, sp.NoFD = "special values "+sp.Name, true
	sp.Inputs[0].Domain = Domain{Values: []float64{nan, 1, 2, 3, 4, inf, 0, 1, 1e30, 2, 3, -1}}
	return []Case{
		c(sh(2, 3, 7, 7), sh(4, 3, 3, 3), true, s1),
		c(sh(2, 3, 7, 7), sh(4, 3, 3, 3), true, Window{Stride: pair(2, 2), Padding: pair(1, 1)}),
		c(sh(1, 2, 9, 8), sh(3, 2, 3, 2), true, Window{Stride: pair(1, 2), Padding: pair(2, 1), Dilation: pair(2, 1)}),
		c(sh(2, 4, 6, 6), sh(6, 2, 3, 3), true, Window{Stride: pair(1, 1), Groups: 2}),
		c(sh(2, 3, 5, 5), sh(3, 1, 3, 3), false, Window{Stride: pair(1, 1), Padding: pair(1, 1), Groups: 3}),
		c(sh(2, 5, 4, 4), sh(3, 5, 1, 1), true, s1),
		c(sh(1, 1, 3, 3), sh(2, 1, 3, 3), true, s1),
		c(sh(0, 3, 5, 5), sh(2, 3, 3, 3), true, s1),
		c(sh(2, 3, 5, 5), sh(0, 3, 3, 3), false, s1),
		large, chunks, grouped, sp, cnn, quads, strided, wide,
	}
}

func embeddingCases() []Case {
	c := func(idx []int, v, d int) Case {
		return Case{Name: fmt.Sprintf("%s of (%d,%d)", ShapeName(idx), v, d), Inputs: []Input{{Shape: idx, Int: true, Domain: Domain{Classes: v}}, {Shape: sh(v, d)}}}
	}
	repeated := c(sh(6), 3, 4)
	repeated.Name = "repeated indices " + repeated.Name
	repeated.Inputs[0].Domain = Domain{Values: []float64{2, 0, 2, 2, 1, 0}}
	large := c(sh(20000), 50, 3)
	large.NoFD = true
	sp := c(sh(2), 3, 4)
	sp.Name, sp.NoFD = "special values "+sp.Name, true
	sp.Inputs[1].Domain = Domain{Values: []float64{nan, inf, -inf, 0, 1, -1, 1e30, -1e-30, 2, 3, 4, 5}}
	// A table of many blocks of the WebGPU gradient's rows (64 a block),
	// the last partly filled, in rows of 6 features (the last of an
	// invocation's 4 partly filled); more elements than
	// parity.ReferenceLimit, so checked against the float64 reference.
	blocks := c(sh(300), 700, 6)
	blocks.NoFD = true
	return []Case{c(sh(5), 7, 3), c(sh(2, 3), 4, 5), c(sh(), 3, 2), c(sh(0), 3, 2), c(sh(4), 1, 1), repeated, large, sp, blocks}
}

func poolCases(isMax bool) []Case {
	c := func(x []int, win Window) Case {
		name := fmt.Sprintf("%s k%v s%v p%v", ShapeName(x), win.Kernel, win.Stride, win.Padding)
		if win.Dilation != [2]int{} {
			name += fmt.Sprintf(" d%v", win.Dilation)
		}
		return Case{Name: name, Inputs: []Input{{Shape: x}}, Attrs: win}
	}
	cs := []Case{
		c(sh(2, 3, 6, 6), Window{Kernel: pair(2, 2), Stride: pair(2, 2)}),
		c(sh(1, 2, 7, 7), Window{Kernel: pair(3, 3), Stride: pair(2, 2), Padding: pair(1, 1)}),
		c(sh(1, 1, 5, 5), Window{Kernel: pair(3, 3), Stride: pair(1, 1)}),
		c(sh(1, 2, 5, 7), Window{Kernel: pair(2, 3), Stride: pair(1, 2), Padding: pair(1, 1)}),
		c(sh(0, 2, 4, 4), Window{Kernel: pair(2, 2), Stride: pair(2, 2)}),
		// Strides past the kernel: windows apart, pixels in none.
		c(sh(1, 2, 7, 9), Window{Kernel: pair(2, 3), Stride: pair(3, 4), Padding: pair(1, 1)}),
	}
	if isMax {
		cs = append(cs, c(sh(1, 1, 7, 7), Window{Kernel: pair(2, 3), Stride: pair(1, 1), Dilation: pair(2, 2)}),
			c(sh(1, 1, 8, 7), Window{Kernel: pair(2, 2), Stride: pair(3, 3), Padding: pair(1, 0), Dilation: pair(2, 2)}))
		// A window wholly in the padding (its rows −1 and 1 of one): −Inf.
		empty := c(sh(1, 1, 1, 7), Window{Kernel: pair(2, 2), Stride: pair(3, 3), Padding: pair(1, 0), Dilation: pair(2, 2)})
		empty.Name, empty.NoFD = "a window in the padding "+empty.Name, true
		cs = append(cs, empty)
		ties := c(sh(1, 1, 4, 4), Window{Kernel: pair(2, 2), Stride: pair(1, 1)})
		ties.Name, ties.NoFD = "ties "+ties.Name, true
		ties.Inputs[0].Domain = Domain{Values: []float64{1, 3, 3, 0, 3, 1, 2, 3, 0, 0, 2, 2, 5, 5, 5, 5}}
		// Ties within the vec2 pairs of 2-wide windows (window.wgsl).
		pairTies := c(sh(1, 1, 4, 4), Window{Kernel: pair(2, 2), Stride: pair(2, 2)})
		pairTies.Name, pairTies.NoFD = "ties "+pairTies.Name, true
		pairTies.Inputs[0].Domain = Domain{Values: []float64{3, 3, 1, 0, 2, 3, 3, 3, 5, 5, 0, 0, 5, 5, 0, 0}}
		cs = append(cs, ties, pairTies)
	}
	large := c(sh(64, 32, 26, 26), Window{Kernel: pair(2, 2), Stride: pair(2, 2)})
	large.NoFD = true
	sp := c(sh(1, 2, 3, 4), Window{Kernel: pair(2, 2), Stride: pair(1, 2)})
	sp.Name, sp.NoFD = "special values "+sp.Name, true
	sp.Inputs[0].Domain = Domain{Values: specials}
	return append(cs, large, sp)
}

// clones returns copies of ts.
func clones(ts []*T) []*T {
	cs := make([]*T, len(ts))
	for i, t := range ts {
		cs[i] = Clone(t)
	}
	return cs
}

// joined returns first (if any) and ts, flattened and joined, releasing
// them.
func joined(first *T, ts []*T) *T {
	var flat []*T
	if first != nil {
		ts = append([]*T{first}, ts...)
	}
	for _, t := range ts {
		flat = append(flat, t.Reshape(-1))
		t.Release()
	}
	out := concat(flat, 0)
	for _, f := range flat {
		f.Release()
	}
	return out
}

func clipCases(norm bool) []Case {
	c := func(limit float64, shapes ...[]int) Case {
		in := make([]Input, len(shapes))
		names := make([]string, len(shapes))
		for i, s := range shapes {
			in[i], names[i] = Input{Shape: s, Domain: Domain{Lo: -3, Hi: 3}}, ShapeName(s)
		}
		return Case{Name: strings.Join(names, ",") + fmt.Sprintf(" limit %v", limit), Inputs: in, Attrs: LimitAttrs{Limit: limit}, NoFD: true}
	}
	sp := c(1, sh(len(specials)))
	sp.Name, sp.Inputs[0].Domain = "special values "+sp.Name, Domain{Values: specials}
	finite := c(0.5, sh(5), sh(2))
	finite.Name, finite.Inputs[0].Domain = "huge "+finite.Name, Domain{Values: []float64{1e18, -1e18, 0, 1, -2}} // squares within float32
	return []Case{c(1, sh(7)), c(1, sh(3, 4), sh(5), sh()), c(100, sh(3, 4), sh(5)), c(0.5, sh(0), sh(2, 2)), c(1, sh(LargeLen)), sp, finite}
}

// trajectory runs ten optimiser steps from p = in[0] on the loss
// ½‖p − in[1]‖² (gradient p − in[1]) and returns p after each, stacked
// (only the last for parameters of over 2²⁰ elements, whose ten would
// outgrow a binding). With more inputs, each pair of them is a
// parameter and its target, all stepped at once (StepAll), and the
// parameters' trajectories are returned one after another, flattened.
func trajectory(in []*T, a StepAttrs) *T {
	return steppedTrajectory(in, a, 10, nil)
}

// steppedTrajectory is trajectory over steps steps, each step's
// gradients made by grad (nil: p − target) before the step, which
// scaled (nil: unscaled) runs; it returns the trajectories.
func steppedTrajectory(in []*T, a StepAttrs, steps int, scaled func(t int, ps, gs []*T, state [][]*T, h device.StepParams)) *T {
	n := len(in) / 2
	ps := make([]*T, n)
	state := make([][]*T, n)
	snaps := make([][]*T, n)
	for k := range n {
		p := Clone(in[2*k])
		defer p.Release()
		ps[k] = p
		state[k] = make([]*T, StateLen(a.Optimizer, a.Hyper))
		for i := range state[k] {
			state[k][i] = tensor.Must(tensor.Zeros(p.Device(), p.DType(), p.Shape()...))
			defer state[k][i].Release()
		}
	}
	gs := make([]*T, n)
	for t := 1; t <= steps; t++ {
		for k, p := range ps {
			gs[k] = sub(p, in[2*k+1])
		}
		h := a.Hyper
		h.T, h.FirstStep = t, t == 1
		if scaled != nil {
			scaled(t, ps, gs, state, h)
		} else {
			StepAll(a.Optimizer, ps, gs, state, h)
		}
		for k, p := range ps {
			gs[k].Release()
			if p.Len() <= 1<<20 || t == steps {
				snaps[k] = append(snaps[k], Clone(p))
			}
		}
	}
	outs := make([]*T, n)
	for k := range n {
		outs[k] = stack(snaps[k], 0)
		for _, s := range snaps[k] {
			s.Release()
		}
	}
	if n == 1 {
		return outs[0]
	}
	return joined(nil, outs)
}

// scaledTrajectory runs six steps of dynamic loss scaling from p = in[0]
// on the loss ½‖p − in[1]‖²: the gradient (p − in[1])·scale, made Inf or
// NaN at steps 1 and 4, unscaled, the optimiser's step (skipped at those
// steps), the scale's update (from 2¹⁶, ×2 after 2 good steps, ×½ after
// a skip). It returns p after each step (the last only, for parameters
// of over 2²⁰ elements), the scale, the scaler's state and the
// optimiser's count of skips. With more inputs, pairs of them are
// parameters and targets, as trajectory's, unscaled and stepped at once
// (UnscaleAll, ScaledStepAll), and only the first parameter's gradient
// is made Inf or NaN.
func scaledTrajectory(in []*T, a StepAttrs) *T {
	dev, dt := in[0].Device(), in[0].DType()
	scale := tensor.Must(tensor.Scalar(dev, dt, 1<<16))
	amp := tensor.Must(tensor.Zeros(dev, dt, device.ScaleStateLen))
	skipped := tensor.Must(tensor.Zeros(dev, dt, 1))
	inf := tensor.Must(tensor.Scalar(dev, dt, math.Inf(1)))
	defer inf.Release()
	out := steppedTrajectory(in, a, 6, func(t int, ps, gs []*T, state [][]*T, h device.StepParams) {
		for k, d := range gs {
			g := mul(d, scale)
			d.Release()
			if k == 0 && (t == 1 || t == 4) {
				bad := mul(g, inf)
				g.Release()
				g = bad
			}
			gs[k] = g
		}
		UnscaleAll(gs, scale, amp)
		ScaledStepAll(a.Optimizer, ps, gs, state, h, amp, skipped)
		UpdateScale(scale, amp, []*T{skipped}, device.ScaleParams{Growth: 2, Backoff: 0.5, Interval: 2})
	})
	return joined(out, []*T{scale, amp, skipped})
}

// stepGroup is a case of optimiser op stepping parameters of shapes at
// once (StepAll): each an input and its target beside it.
func stepGroup(name string, op device.Optimizer, h device.StepParams, shapes ...[]int) Case {
	var in []Input
	names := make([]string, len(shapes))
	for i, s := range shapes {
		in, names[i] = append(in, Input{Shape: s}, Input{Shape: s}), ShapeName(s)
	}
	return Case{Name: name + " " + strings.Join(names, ","), Inputs: in, Attrs: StepAttrs{Optimizer: op, Hyper: h}, NoFD: true}
}

// groupShapes are the parameters of the cases stepping many at once:
// more than a WebGPU dispatch steps, one empty, lengths that are and
// are not whole vec4s.
var groupShapes = [][]int{sh(3, 4), sh(4), sh(257), sh(1), sh(0), sh(2, 5), sh(64), sh(7), sh(16), sh(3)}

func scalingCases() []Case {
	c := func(name string, s []int, op device.Optimizer, h device.StepParams) Case {
		return Case{Name: name + " " + ShapeName(s), Inputs: []Input{{Shape: s}, {Shape: s}}, Attrs: StepAttrs{Optimizer: op, Hyper: h}, NoFD: true}
	}
	adam := device.StepParams{LR: 0.01, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}
	ams := adam
	ams.AMSGrad, ams.Decoupled, ams.WeightDecay = true, true, 0.1
	sgd := device.StepParams{LR: 0.1, Momentum: 0.9, Dampening: 0.5}
	sp := c("special values adam", sh(len(specials)), device.Adam, adam)
	sp.Inputs[0].Domain = Domain{Values: specials}
	return []Case{
		c("adam", sh(257), device.Adam, adam), c("adamw amsgrad", sh(3, 4), device.Adam, ams),
		c("sgd momentum dampening", sh(7), device.SGD, sgd), c("sgd", sh(2, 4), device.SGD, device.StepParams{LR: 0.3}),
		c("nesterov", sh(5), device.SGD, device.StepParams{LR: 0.05, Momentum: 0.8, Nesterov: true}),
		c("empty adam", sh(0), device.Adam, adam), c("0-D adam", sh(), device.Adam, adam), c("large adam", sh(LargeLen), device.Adam, adam),
		sp, stepGroup("group adam", device.Adam, adam, groupShapes...), stepGroup("group sgd momentum", device.SGD, sgd, groupShapes...),
	}
}

func optimCases(op device.Optimizer) []Case {
	c := func(name string, s []int, h device.StepParams) Case {
		return Case{Name: name + " " + ShapeName(s), Inputs: []Input{{Shape: s}, {Shape: s}}, Attrs: StepAttrs{Optimizer: op, Hyper: h}, NoFD: true}
	}
	sp := func(h device.StepParams) Case {
		cs := c("special values", sh(len(specials)), h)
		cs.Inputs[0].Domain = Domain{Values: specials}
		return cs
	}
	// spGrads: NaN and ±Inf in the gradients (AMSGrad's maximum of the
	// second moments keeps their NaNs), no value whose square overflows
	// float32.
	spGrads := func(h device.StepParams) Case {
		cs := c("amsgrad special gradients", sh(8), h)
		cs.Inputs[1].Domain = Domain{Values: []float64{nan, 1, inf, -0.5, -inf, 0, negZero, 2}}
		return cs
	}
	if op == device.SGD {
		h := device.StepParams{LR: 0.1, Momentum: 0.9}
		return []Case{
			c("lr 0.1 momentum 0.9", sh(257), h),
			c("nesterov weight decay 0.01", sh(3, 4), device.StepParams{LR: 0.05, Momentum: 0.8, Nesterov: true, WeightDecay: 0.01}),
			c("dampening 0.5", sh(7), device.StepParams{LR: 0.1, Momentum: 0.5, Dampening: 0.5}),
			c("no momentum", sh(5), device.StepParams{LR: 0.3}),
			c("empty", sh(0), h), c("0-D", sh(), h), c("large", sh(LargeLen), h),
			sp(h), stepGroup("group", device.SGD, h, groupShapes...), stepGroup("group no momentum", device.SGD, device.StepParams{LR: 0.3, WeightDecay: 0.01}, groupShapes...),
		}
	}
	h := device.StepParams{LR: 0.01, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}
	w := h
	w.Decoupled, w.WeightDecay = true, 0.1
	l2, ams := h, h
	l2.WeightDecay, ams.AMSGrad = 0.05, true
	return []Case{
		c("lr 0.01", sh(257), h), c("adamw weight decay 0.1", sh(3, 4), w), c("L2 weight decay 0.05", sh(7), l2),
		c("amsgrad", sh(2, 5), ams), c("empty", sh(0), h), c("0-D", sh(), h), c("large", sh(LargeLen), h),
		sp(h), spGrads(ams), stepGroup("group", device.Adam, h, groupShapes...), stepGroup("group adamw amsgrad", device.Adam, ams, groupShapes...),
	}
}

func sgdCases() []Case {
	var cs []Case
	for _, s := range [][]int{sh(1), sh(257), sh(3, 4, 5), sh(LargeLen)} {
		cs = append(cs, Case{Name: ShapeName(s) + " lr=0.1", Inputs: []Input{{Shape: s}, {Shape: s}}, Attrs: SGDAttrs{LR: 0.1}, NoFD: true})
	}
	return append(cs, Case{Name: "special values lr=0.1", Inputs: []Input{
		{Shape: sh(5), Domain: Domain{Values: []float64{nan, inf, 1, 0, 1e30}}},
		{Shape: sh(5), Domain: Domain{Values: []float64{1, 1, inf, nan, -1e30}}}}, Attrs: SGDAttrs{LR: 0.1}, NoFD: true})
}

// clipBwd is clip's Backward, which its Rule reuses.
var clipBwd = bwd(func(in []*T, g *T, a ClipAttrs) []*T {
	return []*T{ClipBackward(in[0], g, a.Lo, a.Hi)}
})

// castCases cast to float16: ordinary values, and values at its edges
// (the largest finite, past it, subnormals, ties). Casting is flat almost
// everywhere, so finite differences do not apply.
func castCases() []Case {
	h := CastAttrs{DType: device.Float16}
	edges := []float64{65504, 65519, 65520, 70000, -70000, 1e-5, 6e-8, 3e-8, 2.9e-8, 1.0 / 3, 1 + 1.0/2048, 1 + 3.0/2048, 2049, 2051, 0.1}
	return []Case{
		{Name: "(257,) to float16", Inputs: []Input{{Shape: sh(257), Domain: moderate}}, Attrs: h, NoFD: true},
		{Name: "(3,4,5) to float16", Inputs: []Input{{Shape: sh(3, 4, 5), Domain: Domain{Lo: -1e5, Hi: 1e5}}}, Attrs: h, NoFD: true},
		{Name: "edges to float16", Inputs: []Input{{Shape: sh(len(edges)), Domain: Domain{Values: edges}}}, Attrs: h, NoFD: true},
		{Name: "special values to float16", Inputs: []Input{{Shape: sh(len(specials)), Domain: Domain{Values: specials}}}, Attrs: h, NoFD: true},
		{Name: "(0,) to float16", Inputs: []Input{{Shape: sh(0)}}, Attrs: h, NoFD: true},
		{Name: "() to float16", Inputs: []Input{{Shape: sh()}}, Attrs: h, NoFD: true},
	}
}
