package autograd_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/tensor"
	"gonum.org/v1/gonum/floats/scalar"
)

// TestAttentionMatchesComposed checks the tape's fused attention (its
// forward's saved statistics reused by the backward) against the same
// attention composed of matmul, masking and softmax on the tape, on the
// CPU in float64: output and every gradient, the additive mask's too.
func TestAttentionMatchesComposed(t *testing.T) {
	dev := cpu.New()
	const b, h, lq, lk, d, dv = 2, 3, 5, 6, 4, 3
	leaf := func(seed uint64, shape ...int) *autograd.Var {
		return autograd.Leaf(tensor.Must(tensor.Uniform(dev, device.Float64, -1, 1, seed, shape...)), true)
	}
	for _, causal := range []bool{false, true} {
		t.Run(fmt.Sprintf("causal=%v", causal), func(t *testing.T) {
			q, k, v, m := leaf(1, b, h, lq, d), leaf(2, b, h, lk, d), leaf(3, b, h, lk, dv), leaf(4, b, 1, lq, lk)
			w := tensor.Must(tensor.Uniform(dev, device.Float64, -1, 1, 5, b, h, lq, dv))
			fused := ops.ScaledDotProductAttention(q, k, v, m, ops.AttentionAttrs{Causal: causal})
			want := grads(t, fused, w, q, k, v, m)

			// The same, composed: a causal mask adds −Inf after the diagonal.
			q2, k2, v2, m2 := leaf(1, b, h, lq, d), leaf(2, b, h, lk, d), leaf(3, b, h, lk, dv), leaf(4, b, 1, lq, lk)
			kt := autograd.Apply(ops.PermuteOp, ops.PermuteAttrs{Perm: []int{0, 1, 3, 2}}, k2)
			scale := autograd.Leaf(tensor.Must(tensor.Scalar(dev, device.Float64, 1/math.Sqrt(d))), false)
			s := ops.Add(ops.Mul(ops.MatMul(q2, kt), scale), m2)
			if causal {
				above := make([]float64, lq*lk)
				for i := range lq {
					for j := i + 1; j < lk; j++ {
						above[i*lk+j] = 1
					}
				}
				s = ops.MaskedFill(s, autograd.Leaf(tensor.Must(tensor.FromValues(dev, device.Float64, above, lq, lk)), false), math.Inf(-1))
			}
			composed := ops.MatMul(ops.Softmax(s, -1), v2)
			got := grads(t, composed, w, q2, k2, v2, m2)
			for i := range want {
				for j := range want[i] {
					if !scalar.EqualWithinAbsOrRel(got[i][j], want[i][j], 1e-9, 1e-9) {
						t.Fatalf("value %d (output, then the gradients of q, k, v, mask), element %d: composed %v, fused %v", i, j, got[i][j], want[i][j])
					}
				}
			}
		})
	}
}

// grads returns out's values and the gradients of sum(out·w) for each leaf.
func grads(t *testing.T, out *autograd.Var, w *tensor.Tensor, leaves ...*autograd.Var) [][]float64 {
	t.Helper()
	loss := ops.Sum(ops.Mul(out, autograd.Leaf(w, false)))
	vals := [][]float64{must(out.Value().Float64s())}
	if err := loss.Backward(); err != nil {
		t.Fatal(err)
	}
	for _, l := range leaves {
		vals = append(vals, must(l.Grad().Float64s()))
	}
	return vals
}

func must(v []float64, err error) []float64 {
	if err != nil {
		panic(err)
	}
	return v
}
