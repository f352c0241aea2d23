package ops

import (
	"fmt"
	"strings"

	"github.com/extensor/extensor/tensor"
)

// This file builds the parity cases of the catalogue: the shapes, domains
// and special values that each family of ops is checked on.

// LargeLen is the length of the large-tensor cases: more than 65535×256
// elements, so a kernel of one invocation per element needs a dispatch
// spread over x and y.
const LargeLen = 65535*256 + 1031

// ShapeName formats a shape as the parity cases name it: (3,4), (5,), ().
func ShapeName(s []int) string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = fmt.Sprint(d)
	}
	if len(s) == 1 {
		return "(" + parts[0] + ",)"
	}
	return "(" + strings.Join(parts, ",") + ")"
}

// sh returns a shape, never nil: sh() is 0-D.
func sh(d ...int) []int { return append([]int{}, d...) }

type (
	// T abbreviates the tensor type in the adapters below.
	T = tensor.Tensor
)

// Adapters from the ops' functions to the table's signatures.
// Adapters from the ops' functions to the table's signatures. The
// forward ones serve ops that take no attributes and reject any
// (noAttrs); the backward ones also serve ops whose backward reads none
// of its attributes (reshape's), checked by the forward.
func fwd1(f func(x *T) *T) func([]*T, Attrs) *T {
	return func(in []*T, a Attrs) *T { noAttrs(a); return f(in[0]) }
}

func bwd1(f func(x, g *T) *T) func([]*T, *T, Attrs) []*T {
	return func(in []*T, g *T, _ Attrs) []*T { return []*T{f(in[0], g)} }
}

func fwd2(f func(a, b *T) *T) func([]*T, Attrs) *T {
	return func(in []*T, a Attrs) *T { noAttrs(a); return f(in[0], in[1]) }
}

func bwd2(f func(a, b, g *T) (*T, *T)) func([]*T, *T, Attrs) []*T {
	return func(in []*T, g *T, _ Attrs) []*T {
		ga, gb := f(in[0], in[1], g)
		return []*T{ga, gb}
	}
}

// elementShapes are the shapes every elementwise op is checked on: odd and
// vec4-sized lengths, 0-D, and empty tensors.
var elementShapes = [][]int{sh(1), sh(7), sh(257), sh(3, 4, 5), sh(), sh(0), sh(3, 0)}

// unaryCases checks a unary op with attributes a on dom, on the special
// values, and (if large) on a tensor of LargeLen elements.
func unaryCases(dom Domain, special []float64, a Attrs, large bool, extra ...Case) []Case {
	var cs []Case
	for _, s := range elementShapes {
		cs = append(cs, Case{Name: ShapeName(s), Inputs: []Input{{Shape: s, Domain: dom}}, Attrs: a})
	}
	cs = append(cs, Case{Name: "special values", Inputs: []Input{{Shape: sh(len(special)), Domain: Domain{Values: special}}}, Attrs: a, NoFD: true})
	if large {
		cs = append(cs, Case{Name: ShapeName(sh(LargeLen)), Inputs: []Input{{Shape: sh(LargeLen), Domain: dom}}, Attrs: a, NoFD: true})
	}
	return append(cs, extra...)
}

// values is a case on exactly the given values.
func values(name string, v []float64, noFD bool) Case {
	return Case{Name: name, Inputs: []Input{{Shape: sh(len(v)), Domain: Domain{Values: v}}}, NoFD: noFD}
}

// nearZero checks an odd function's relative accuracy near 0, where it
// is about x·f′(0): a tanh computed from e^−2|x| loses every digit there,
// which the default absolute tolerance would not see. Its absolute
// tolerance is nil; the relative one the default.
func nearZero() Case {
	c := values("near 0, relative", []float64{1e-30, -1e-30, 1e-20, -1e-20, 1e-8, -1e-8, 1e-6, -1e-6, 1e-4, 1e-3, -1e-3, 0.1, -0.3, 0}, false)
	c.ATol = 1e-300
	return c
}

// wide checks a periodic function over hundreds of periods, where its
// argument reduction can lose digits.
func wide() Case {
	return Case{Name: "(257,) in [-1000, 1000]", Inputs: []Input{{Shape: sh(257), Domain: Domain{Lo: -1000, Hi: 1000}}}}
}

func unaryOp(name, doc string, f func(x *T) *T, df func(x, g *T) *T, cases []Case) *Op {
	return &Op{Name: name, Family: "unary", Kernel: name, Doc: doc, Forward: fwd1(f), Backward: bwd1(df), Cases: cases}
}

// binaryPairs are the shape pairs every broadcasting binary op is checked on.
var binaryPairs = [][2][]int{
	{sh(1), sh(1)},
	{sh(7), sh(7)},
	{sh(257), sh(257)},
	{sh(3, 1, 5), sh(3, 4, 5)},
	{sh(5), sh(3, 4, 5)},
	{sh(), sh(3, 4)},
	{sh(4, 1), sh(1, 6)},
	{sh(), sh()},
	{sh(2, 3, 4), sh(2, 3, 4)},
	{sh(0), sh(0)},
	{sh(3, 1), sh(3, 0)},
}

// binaryCases checks a binary op on the broadcasting pairs with a drawn
// from da and b from db, on every pair of special values, and (if large)
// on two tensors of LargeLen elements.
func binaryCases(da, db Domain, special []float64, large bool, extra ...Case) []Case {
	var cs []Case
	pairs := binaryPairs
	if large {
		pairs = append(pairs, [2][]int{sh(LargeLen), sh(LargeLen)})
	}
	for _, p := range pairs {
		cs = append(cs, Case{
			Name:   ShapeName(p[0]) + "," + ShapeName(p[1]),
			Inputs: []Input{{Shape: p[0], Domain: da}, {Shape: p[1], Domain: db}},
			NoFD:   len(p[0]) == 1 && p[0][0] == LargeLen,
		})
	}
	n := len(special)
	cs = append(cs, Case{
		Name:   "special values, every pair",
		Inputs: []Input{{Shape: sh(n, 1), Domain: Domain{Values: special}}, {Shape: sh(1, n), Domain: Domain{Values: special}}},
		NoFD:   true,
	})
	return append(cs, extra...)
}

func binaryOp(name, doc string, f func(a, b *T) *T, df func(a, b, g *T) (*T, *T), cases []Case) *Op {
	return &Op{Name: name, Family: "binary", Doc: doc, Forward: fwd2(f), Backward: bwd2(df), Cases: cases}
}

// reduceCases are the cases of sum, mean, max and min: every axis, one
// axis, sets of axes, keepdims, negative axes, the chunked path of long
// rows, empty tensors (when empty is set), and special values.
func reduceCases(empty, large bool) []Case {
	type rc struct {
		shape    []int
		axes     []int
		keepdims bool
	}
	list := []rc{
		{sh(1), nil, false}, {sh(7), nil, false}, {sh(257), nil, false}, {sh(7, 257), nil, false},
		{sh(), nil, false}, {sh(3, 2000), nil, false}, {sh(3, 4, 5), nil, true},
		{sh(7, 257), []int{0}, false}, {sh(7, 257), []int{0}, true}, {sh(7, 257), []int{1}, false},
		{sh(7, 257), []int{-1}, true}, {sh(3, 4, 5), []int{1}, true}, {sh(3, 4, 5), []int{1}, false},
		{sh(3, 4, 5), []int{0, 2}, false}, {sh(3, 4, 5), []int{-1, 0}, true}, {sh(1), []int{0}, false},
		{sh(2, 3000), []int{1}, false}, {sh(128, 16), []int{0}, false}, {sh(2, 3, 4, 5), []int{1, 2}, false},
		{sh(0, 4), []int{1}, false},
	}
	if empty {
		list = append(list, rc{sh(0), nil, false}, rc{sh(3, 0), []int{1}, false}, rc{sh(0, 4), []int{0}, true})
	}
	var cs []Case
	for _, r := range list {
		name := ShapeName(r.shape)
		if r.axes != nil {
			name += fmt.Sprintf(" axes=%v", r.axes)
		}
		if r.keepdims {
			name += " keepdims"
		}
		cs = append(cs, Case{Name: name, Inputs: []Input{{Shape: r.shape}}, Attrs: ReduceAttrs{Axes: r.axes, Keepdims: r.keepdims}})
	}
	cs = append(cs,
		Case{Name: "ties (integers) axes=[1]", Inputs: []Input{{Shape: sh(3, 4, 5), Domain: Domain{Lo: -2, Hi: 2, Integers: true}}}, Attrs: ReduceAttrs{Axes: []int{1}}, NoFD: true},
		Case{Name: "special values axes=[1]", Inputs: []Input{{Shape: sh(4, 5), Domain: Domain{Values: []float64{
			1, nan, 3, -inf, 2,
			inf, 1, -1, 0, 5,
			-inf, -inf, 7, 1e30, -1e30,
			0, negZero, nan, nan, inf}}}}, Attrs: ReduceAttrs{Axes: []int{1}}, NoFD: true},
		// Partial sums past float32's range, of finite sums: rows of
		// one invocation and of chunks, the vec4 path and the strided
		// one.
		Case{Name: "overflowing partial sums axes=[1]", Inputs: []Input{{Shape: sh(3, 4), Domain: Domain{Values: []float64{
			3e38, 3e38, -3e38, -3e38,
			3e38, 3e38, 3e38, -3e38,
			-3e38, -3e38, -3e38, 1}}}}, Attrs: ReduceAttrs{Axes: []int{1}}, NoFD: true},
		Case{Name: "overflowing partial sums (2,3000) axes=[1]", Inputs: []Input{{Shape: sh(2, 3000), Domain: Domain{Values: []float64{3e38, 3e38, -3e38, -3e38, 3e38, 2e38}}}}, Attrs: ReduceAttrs{Axes: []int{1}}, NoFD: true},
		Case{Name: "overflowing partial sums (3001,2) axes=[0]", Inputs: []Input{{Shape: sh(3001, 2), Domain: Domain{Values: []float64{3e38, -3e38, 3e38, -3e38, -3e38, 3e38}}}}, Attrs: ReduceAttrs{Axes: []int{0}}, NoFD: true},
	)
	if large {
		cs = append(cs, Case{Name: ShapeName(sh(LargeLen)), Inputs: []Input{{Shape: sh(LargeLen)}}, NoFD: true})
	}
	return cs
}

func reduceOp(name, doc string, f func(x *T, axes []int, keepdims bool) *T, df func(x, g *T, axes []int, keepdims bool) *T, cases []Case) *Op {
	return &Op{Name: name, Family: "reduce", Doc: doc,
		Forward:  fwd(func(in []*T, a ReduceAttrs) *T { return f(in[0], a.Axes, a.Keepdims) }),
		Backward: reduceBwd(df),
		Cases:    cases,
	}
}

func reduceBwd(df func(x, g *T, axes []int, keepdims bool) *T) func([]*T, *T, Attrs) []*T {
	return bwd(func(in []*T, g *T, a ReduceAttrs) []*T { return []*T{df(in[0], g, a.Axes, a.Keepdims)} })
}

// argCases are the cases of argmax and argmin.
func argCases(large bool) []Case {
	all := func(s []int, dom Domain) Case {
		return Case{Name: ShapeName(s) + " flattened", Inputs: []Input{{Shape: s, Domain: dom}}, Attrs: ArgAttrs{All: true}}
	}
	axis := func(s []int, ax int, keep bool, dom Domain) Case {
		name := fmt.Sprintf("%s axis=%d", ShapeName(s), ax)
		if keep {
			name += " keepdims"
		}
		return Case{Name: name, Inputs: []Input{{Shape: s, Domain: dom}}, Attrs: ArgAttrs{Axis: ax, Keepdims: keep}}
	}
	ints := Domain{Lo: -2, Hi: 2, Integers: true}
	cs := []Case{
		all(sh(7), Domain{}), all(sh(257), Domain{}), all(sh(), Domain{}), all(sh(3, 4, 5), Domain{}),
		axis(sh(3, 4, 5), 1, false, Domain{}), axis(sh(3, 4, 5), 1, true, Domain{}), axis(sh(3, 4, 5), -1, false, Domain{}),
		axis(sh(5, 6), 0, false, ints), axis(sh(2, 3000), 1, false, Domain{}), axis(sh(3, 40000), -1, false, Domain{}),
		all(sh(4), Domain{Values: []float64{1, 3, 2, 3}}),
		named("special values flattened", all(sh(6), Domain{Values: []float64{1, nan, 3, inf, nan, -inf}})),
		named("special values axis=1", axis(sh(3, 4), 1, false, Domain{Values: []float64{-inf, -inf, -inf, -inf, 2, inf, inf, 1, 0, negZero, 0, nan}})),
	}
	if large {
		cs = append(cs, all(sh(LargeLen), Domain{}))
	}
	return cs
}

// named returns c renamed.
func named(name string, c Case) Case {
	c.Name = name
	return c
}

func argOp(name, doc string, f func(x *T, a ArgAttrs) *T, cases []Case) *Op {
	return &Op{Name: name, Family: "reduce", Doc: doc,
		Forward: fwd(func(in []*T, a ArgAttrs) *T { return f(in[0], a) }),
		Cases:   cases,
	}
}

// specialRows returns 4 rows of n ordinary values (i mod period, centred)
// holding NaN, +Inf, −Inf and 1e30, one a row, at the given columns.
func specialRows(n, period int, at [4]int) []float64 {
	v := make([]float64, 4*n)
	for i := range v {
		v[i] = float64(i%period - period/2)
	}
	for r, x := range []float64{nan, inf, -inf, 1e30} {
		v[r*n+at[r]] = x
	}
	return v
}

// rows32 are rows that WebGPU's two-pass softmax reads 16 at a time;
// rows1000 rows that its one-pass kernel reads, a workgroup a row, the
// last vec4s of an invocation partly past the row's end.
var (
	rows32   = specialRows(32, 7, [4]int{5, 17, 30, 3})
	rows1000 = specialRows(1000, 11, [4]int{200, 17, 999, 994})
)

// softmaxCases are the cases of softmax and log_softmax.
func softmaxCases() []Case {
	c := func(s []int, axis int, dom Domain, noFD bool) Case {
		return Case{Name: fmt.Sprintf("%s axis=%d", ShapeName(s), axis), Inputs: []Input{{Shape: s, Domain: dom}}, Attrs: AxisAttrs{Axis: axis}, NoFD: noFD}
	}
	big := Domain{Lo: -100, Hi: 100}
	cs := []Case{
		c(sh(1), 0, Domain{}, false), c(sh(7), 0, Domain{}, false), c(sh(4, 10), 1, Domain{}, false),
		c(sh(4, 10), 0, Domain{}, false), c(sh(3, 4, 5), 1, Domain{}, false), c(sh(3, 4, 5), -1, Domain{}, false),
		c(sh(), 0, Domain{}, false), c(sh(2, 3, 0), -1, Domain{}, false), c(sh(0, 3), 1, Domain{}, false),
		c(sh(16, 1024), -1, Domain{}, false), c(sh(4, 1000), -1, big, false),
		{Name: "special values axis=1", Inputs: []Input{{Shape: sh(4, 4), Domain: Domain{Values: []float64{
			1, nan, 2, 3,
			inf, 1, 2, 3,
			-inf, 1, 2, 3,
			1e30, -1e30, 100, -100}}}}, Attrs: AxisAttrs{Axis: 1}, NoFD: true},
		// A +∞, or only −∞, makes x − max NaN, and the row NaN (PyTorch's
		// answer), in every kernel: rows of 2 and 4, and rows down an axis.
		{Name: "∞ rows axis=1", Inputs: []Input{{Shape: sh(3, 2), Domain: Domain{Values: []float64{inf, 1, 2, inf, -inf, -inf}}}}, Attrs: AxisAttrs{Axis: 1}, NoFD: true},
		{Name: "∞ rows axis=0", Inputs: []Input{{Shape: sh(4, 3), Domain: Domain{Values: []float64{inf, 1, -inf, 2, 2, -inf, 3, inf, -inf, 4, 0, -inf}}}}, Attrs: AxisAttrs{Axis: 0}, NoFD: true},
		c(sh(LargeLen, 1), 1, Domain{}, true),
		{Name: "special values in rows of 32", Inputs: []Input{{Shape: sh(4, 32), Domain: Domain{Values: rows32}}}, Attrs: AxisAttrs{Axis: 1}, NoFD: true},
		{Name: "special values in rows of 1000", Inputs: []Input{{Shape: sh(4, 1000), Domain: Domain{Values: rows1000}}}, Attrs: AxisAttrs{Axis: 1}, NoFD: true},
		// The one-pass kernel's longest rows on CPU adapters (64 vec4s an
		// invocation, the last partly past the row), and rows that take
		// two passes on every adapter: folding 16 values a step and
		// loading the statistics once for 8 vec4s (8320), or neither (8196).
		c(sh(2, 2044), -1, Domain{}, true), c(sh(2, 8320), -1, Domain{}, true), c(sh(2, 8196), -1, Domain{}, true),
	}
	cs[10].FDATol = 1e-8 * 100 // values O(100): rounding error of central differences
	return cs
}

func softmaxOp(name, doc string, f func(x *T, axis int) *T, df func(x, g *T, axis int) *T) *Op {
	return &Op{Name: name, Family: "softmax", Doc: doc,
		Forward:  fwd(func(in []*T, a AxisAttrs) *T { return f(in[0], a.Axis) }),
		Backward: bwd(func(in []*T, g *T, a AxisAttrs) []*T { return []*T{df(in[0], g, a.Axis)} }),
		Cases:    softmaxCases(),
	}
}

// lossCases checks an elementwise loss with pred from dp and target from
// dt, under every reduction, on empty and 0-D inputs, and on special
// values of the prediction.
func lossCases(dp, dt Domain, special []float64) []Case {
	var cs []Case
	for _, s := range [][]int{sh(7), sh(4, 5), sh(), sh(0)} {
		for _, r := range []Reduction{MeanReduction, SumReduction, NoReduction} {
			cs = append(cs, Case{Name: ShapeName(s) + " " + r.String(), Inputs: []Input{{Shape: s, Domain: dp}, {Shape: s, Domain: dt}}, Attrs: LossAttrs{Reduction: r}})
		}
	}
	n := len(special)
	return append(cs, Case{Name: "special values none", Inputs: []Input{{Shape: sh(n), Domain: Domain{Values: special}}, {Shape: sh(n), Domain: dt}}, Attrs: LossAttrs{Reduction: NoReduction}, NoFD: true})
}

func lossOp(name, doc string, f func(p, t *T, r Reduction) *T, df func(p, t, g *T, r Reduction) (*T, *T), cases []Case) *Op {
	return &Op{Name: name, Family: "binary", Doc: doc,
		Forward: fwd(func(in []*T, a LossAttrs) *T { return f(in[0], in[1], a.Reduction) }),
		Backward: bwd(func(in []*T, g *T, a LossAttrs) []*T {
			gp, gt := df(in[0], in[1], g, a.Reduction)
			return []*T{gp, gt}
		}),
		Cases: cases,
	}
}

// classCases are the cases of the losses over classes: logits (or
// log-probabilities) from dx, and int32 labels or (probs) probabilities.
func classCases(dx Domain, probs bool) []Case {
	var cs []Case
	for _, nc := range [][2]int{{1, 10}, {7, 10}, {257, 10}, {7, 3}, {4, 1000}, {5, 1}} {
		for _, r := range []Reduction{MeanReduction, SumReduction, NoReduction} {
			n, c := nc[0], nc[1]
			target := Input{Shape: sh(n), Int: true, Domain: Domain{Classes: c}}
			if probs {
				target = Input{Shape: sh(n, c), Domain: Domain{Lo: 0, Hi: 1}}
			}
			cs = append(cs, Case{
				Name:   fmt.Sprintf("(%d,%d) %v", n, c, r),
				Inputs: []Input{{Shape: sh(n, c), Domain: dx}, target},
				Attrs:  CrossEntropyAttrs{Reduction: r},
				FDATol: 1e-8 * float64(c), // rows of c terms: their log-sum-exp rounds
			})
		}
	}
	if !probs {
		cs = append(cs, Case{Name: "special values none", Inputs: []Input{
			{Shape: sh(4, 3), Domain: Domain{Values: []float64{nan, -1, -2, -inf, 0, -1e30, negZero, -1e-30, -3, 1e30, -inf, nan}}},
			{Shape: sh(4), Int: true, Domain: Domain{Values: []float64{0, 1, 2, 1}}}},
			Attrs: CrossEntropyAttrs{Reduction: NoReduction}, NoFD: true})
	}
	return cs
}
