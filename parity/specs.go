package parity

import (
	"fmt"
	"strings"

	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/tensor"
)

// LargeLen is the length of the large-tensor cases: more than 65535×256
// elements, so elementwise kernels need a dispatch spread over x and y.
const LargeLen = 65535*256 + 1031

func shapeName(s []int) string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = fmt.Sprint(d)
	}
	if len(s) == 1 {
		return "(" + parts[0] + ",)"
	}
	return "(" + strings.Join(parts, ",") + ")"
}

func sh(dims ...int) []int {
	if dims == nil {
		return []int{}
	}
	return dims
}

type binaryFns struct {
	name string
	fwd  func(a, b *tensor.Tensor) *tensor.Tensor
	bwd  func(a, b, g *tensor.Tensor) (*tensor.Tensor, *tensor.Tensor)
	genB Gen
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
}

func binaryCases() []Case {
	var cs []Case
	for _, f := range []binaryFns{
		{"add", ops.Add, ops.AddBackward, nil},
		{"sub", ops.Sub, ops.SubBackward, nil},
		{"mul", ops.Mul, ops.MulBackward, nil},
		{"div", ops.Div, ops.DivBackward, AwayFromZero(0.5, 2)},
	} {
		pairs := binaryPairs
		if f.name == "add" || f.name == "mul" {
			pairs = append(pairs, [2][]int{sh(LargeLen), sh(LargeLen)})
		}
		for _, p := range pairs {
			f := f
			cs = append(cs, Case{
				Op:      f.name,
				Name:    shapeName(p[0]) + "," + shapeName(p[1]),
				Inputs:  []Input{{Shape: p[0]}, {Shape: p[1], Gen: f.genB}},
				Forward: func(in []*tensor.Tensor) *tensor.Tensor { return f.fwd(in[0], in[1]) },
				Backward: func(in []*tensor.Tensor, g *tensor.Tensor) []*tensor.Tensor {
					ga, gb := f.bwd(in[0], in[1], g)
					return []*tensor.Tensor{ga, gb}
				},
				NoFD: len(p[0]) == 1 && p[0][0] == LargeLen,
			})
		}
	}
	return cs
}

func matrixCases() []Case {
	var cs []Case
	for _, mkn := range [][3]int{{1, 1, 1}, {7, 7, 7}, {257, 7, 3}, {3, 257, 5}, {8, 12, 16}, {70, 33, 66}, {64, 64, 64}, {5, 0, 3}} {
		m, k, n := mkn[0], mkn[1], mkn[2]
		cs = append(cs, Case{
			Op:      "matmul",
			Name:    fmt.Sprintf("(%d,%d)@(%d,%d)", m, k, k, n),
			Inputs:  []Input{{Shape: sh(m, k)}, {Shape: sh(k, n)}},
			Forward: func(in []*tensor.Tensor) *tensor.Tensor { return ops.MatMul(in[0], in[1]) },
			Backward: func(in []*tensor.Tensor, g *tensor.Tensor) []*tensor.Tensor {
				ga, gb := ops.MatMulBackward(in[0], in[1], g)
				return []*tensor.Tensor{ga, gb}
			},
		})
	}
	for _, s := range [][]int{sh(1, 1), sh(7, 3), sh(257, 7)} {
		cs = append(cs, Case{
			Op:       "transpose",
			Name:     shapeName(s),
			Inputs:   []Input{{Shape: s}},
			Forward:  func(in []*tensor.Tensor) *tensor.Tensor { return ops.Transpose(in[0]) },
			Backward: unary(ops.TransposeBackward),
		})
	}
	return cs
}

// unary adapts a backward function of one input.
func unary(bwd func(x, g *tensor.Tensor) *tensor.Tensor) func([]*tensor.Tensor, *tensor.Tensor) []*tensor.Tensor {
	return func(in []*tensor.Tensor, g *tensor.Tensor) []*tensor.Tensor {
		return []*tensor.Tensor{bwd(in[0], g)}
	}
}

func elementwiseCases() []Case {
	var cs []Case
	for _, s := range [][]int{sh(1), sh(7), sh(257), sh(3, 4, 5), sh(), sh(LargeLen)} {
		cs = append(cs, Case{
			Op:       "relu",
			Name:     shapeName(s),
			Inputs:   []Input{{Shape: s, Gen: AwayFromZero(0.01, 1)}},
			Forward:  func(in []*tensor.Tensor) *tensor.Tensor { return ops.Relu(in[0]) },
			Backward: unary(ops.ReluBackward),
			NoFD:     len(s) == 1 && s[0] == LargeLen,
		})
	}
	return cs
}

func reductionCases() []Case {
	var cs []Case
	large := sh(LargeLen)
	for _, s := range [][]int{sh(1), sh(7), sh(257), sh(7, 257), sh(), sh(3, 2000), large} {
		isLarge := len(s) == 1 && s[0] == LargeLen
		cs = append(cs,
			Case{Op: "sum", Name: shapeName(s), Inputs: []Input{{Shape: s}},
				Forward:  func(in []*tensor.Tensor) *tensor.Tensor { return ops.Sum(in[0]) },
				Backward: unary(ops.SumBackward), NoFD: isLarge},
			Case{Op: "mean", Name: shapeName(s), Inputs: []Input{{Shape: s}},
				Forward:  func(in []*tensor.Tensor) *tensor.Tensor { return ops.Mean(in[0]) },
				Backward: unary(ops.MeanBackward), NoFD: isLarge},
		)
	}
	type axisCase struct {
		shape    []int
		axis     int
		keepdims bool
	}
	for _, a := range []axisCase{
		{sh(7, 257), 0, false}, {sh(7, 257), 0, true}, {sh(7, 257), 1, false}, {sh(7, 257), -1, true},
		{sh(3, 4, 5), 1, true}, {sh(3, 4, 5), 1, false}, {sh(1), 0, false}, {sh(2, 3000), 1, false},
		{sh(128, 16), 0, false},
	} {
		a := a
		name := fmt.Sprintf("%s axis=%d keepdims=%v", shapeName(a.shape), a.axis, a.keepdims)
		cs = append(cs,
			Case{Op: "sum_axis", Name: name, Inputs: []Input{{Shape: a.shape}},
				Forward: func(in []*tensor.Tensor) *tensor.Tensor { return ops.SumAxis(in[0], a.axis, a.keepdims) },
				Backward: func(in []*tensor.Tensor, g *tensor.Tensor) []*tensor.Tensor {
					return []*tensor.Tensor{ops.SumAxisBackward(in[0], g, a.axis, a.keepdims)}
				}},
			Case{Op: "mean_axis", Name: name, Inputs: []Input{{Shape: a.shape}},
				Forward: func(in []*tensor.Tensor) *tensor.Tensor { return ops.MeanAxis(in[0], a.axis, a.keepdims) },
				Backward: func(in []*tensor.Tensor, g *tensor.Tensor) []*tensor.Tensor {
					return []*tensor.Tensor{ops.MeanAxisBackward(in[0], g, a.axis, a.keepdims)}
				}},
		)
	}
	for _, p := range [][2][]int{{sh(3, 1, 5), sh(3, 4, 5)}, {sh(), sh(4, 3)}, {sh(5), sh(2, 5)}} {
		p := p
		cs = append(cs,
			Case{Op: "broadcast_to", Name: shapeName(p[0]) + "->" + shapeName(p[1]), Inputs: []Input{{Shape: p[0]}},
				Forward:  func(in []*tensor.Tensor) *tensor.Tensor { return ops.BroadcastTo(in[0], p[1]) },
				Backward: unary(ops.BroadcastToBackward)},
			Case{Op: "sum_to", Name: shapeName(p[1]) + "->" + shapeName(p[0]), Inputs: []Input{{Shape: p[1]}},
				Forward:  func(in []*tensor.Tensor) *tensor.Tensor { return ops.SumTo(in[0], p[0]) },
				Backward: unary(ops.SumToBackward)},
		)
	}
	return cs
}

func lossCases() []Case {
	var cs []Case
	for _, nc := range [][2]int{{1, 10}, {7, 10}, {257, 10}, {7, 3}, {4, 1000}} {
		for _, scale := range []float64{1, 100} {
			n, c := nc[0], nc[1]
			cs = append(cs, Case{
				Op:     "softmax_cross_entropy",
				Name:   fmt.Sprintf("logits (%d,%d) in ±%g", n, c, scale),
				Inputs: []Input{{Shape: sh(n, c), Gen: Uniform(-scale, scale)}, {Shape: sh(n), Int: true, Gen: Classes(c)}},
				Forward: func(in []*tensor.Tensor) *tensor.Tensor {
					return ops.SoftmaxCrossEntropy(in[0], in[1])
				},
				Backward: func(in []*tensor.Tensor, g *tensor.Tensor) []*tensor.Tensor {
					return []*tensor.Tensor{ops.SoftmaxCrossEntropyBackward(in[0], in[1], g), nil}
				},
				// The loss is O(scale); central differences carry rounding
				// error of about eps·|loss|/h.
				FDATol: 1e-8 * scale,
			})
		}
	}
	return cs
}

func updateCases() []Case {
	var cs []Case
	for _, s := range [][]int{sh(1), sh(257), sh(3, 4, 5), sh(LargeLen)} {
		cs = append(cs, Case{
			Op:     "sgd",
			Name:   shapeName(s) + " lr=0.1",
			Inputs: []Input{{Shape: s}, {Shape: s}},
			Forward: func(in []*tensor.Tensor) *tensor.Tensor {
				w := ops.Clone(in[0])
				ops.SGD(w, in[1], 0.1)
				return w
			},
		})
	}
	return cs
}

// Specs returns every parity case, grouped by op in the coverage table's
// order.
func Specs() []Case {
	var cs []Case
	cs = append(cs, binaryCases()...)
	cs = append(cs, matrixCases()...)
	cs = append(cs, elementwiseCases()...)
	cs = append(cs, reductionCases()...)
	cs = append(cs, lossCases()...)
	cs = append(cs, updateCases()...)
	return cs
}
