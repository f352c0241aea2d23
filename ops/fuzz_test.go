package ops_test

import (
	"slices"
	"testing"

	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/internal/fuzzin"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/tensor"
)

// fuzzShape draws a shape of rank 0–5, dimensions −1…5.
func fuzzShape(f *fuzzin.Bytes) []int {
	s := make([]int, f.Next(0, 5))
	for i := range s {
		s[i] = f.Next(-1, 5)
	}
	return s
}

// broadcastShape is NumPy's rule, written here independently of ops.
func broadcastShape(a, b []int) ([]int, bool) {
	n := max(len(a), len(b))
	out := make([]int, n)
	for i := range n {
		da, db := 1, 1
		if j := len(a) - n + i; j >= 0 {
			da = a[j]
		}
		if j := len(b) - n + i; j >= 0 {
			db = b[j]
		}
		switch {
		case da == db || db == 1:
			out[i] = da
		case da == 1:
			out[i] = db
		default:
			return nil, false
		}
	}
	return out, true
}

// FuzzShapes feeds shapes, broadcasting pairs, axes and reshapes to the
// shape-handling ops on the CPU. Bad input must panic with a *tensor.Error
// (tensor.Maybe recovers those; any other panic fails the fuzz), and good
// input must give results of the right shape. make fuzz runs it for 10
// minutes; make test runs its corpus and a few seconds of it.
func FuzzShapes(f *testing.F) {
	for _, seed := range [][]byte{
		{2, 3, 4, 2, 1, 4, 1, 0, 1},
		{3, 2, 1, 3, 1, 3, 2, 255, 0, 6, 2},
		{0, 0, 1, 1, 1},
		{4, 1, 2, 0, 3, 2, 2, 1, 2, 0, 3, 2, 4},
		{1, 0, 1, 0, 2, 0, 1},
	} {
		f.Add(seed)
	}
	dev := cpu.New()
	f.Fuzz(func(t *testing.T, data []byte) {
		in := fuzzin.Bytes(data)
		sa, sb := fuzzShape(&in), fuzzShape(&in)
		axes := make([]int, in.Next(0, 3))
		for i := range axes {
			axes[i] = in.Next(-6, 6)
		}
		keepdims := in.Next(0, 1) == 1
		reshape := fuzzShape(&in)
		if len(reshape) > 0 && in.Next(0, 1) == 1 {
			reshape[in.Next(0, len(reshape)-1)] = -1
		}
		err := tensor.Maybe(func() {
			a := tensor.Must(tensor.Uniform(dev, device.Float32, -1, 1, 1, sa...))
			b := tensor.Must(tensor.Uniform(dev, device.Float32, -1, 1, 2, sb...))
			fuzzMatMul(t, a, b)
			_ = tensor.Maybe(func() {
				if p := ops.Permute(a, axes...); !slices.Equal(ops.PermuteBackward(a, p, axes).Shape(), sa) {
					t.Fatalf("PermuteBackward(%v, %v) is not shaped like its input", sa, axes)
				}
			})
			_ = tensor.Maybe(func() {
				ax := 0
				if len(axes) > 0 {
					ax = axes[0]
				}
				c := ops.Concat([]*tensor.Tensor{a, b}, ax)
				gs := ops.ConcatBackward([]*tensor.Tensor{a, b}, c, ax)
				if !slices.Equal(gs[0].Shape(), sa) || !slices.Equal(gs[1].Shape(), sb) {
					t.Fatalf("ConcatBackward(%v, %v, %d): gradients %v, %v", sa, sb, ax, gs[0].Shape(), gs[1].Shape())
				}
			})
			want, ok := broadcastShape(sa, sb)
			if !ok {
				if err := tensor.Maybe(func() { ops.Add(a, b) }); err == nil {
					t.Fatalf("Add(%v, %v): no error for shapes that do not broadcast", sa, sb)
				}
				return
			}
			sum := ops.Add(a, b)
			if !slices.Equal(sum.Shape(), want) {
				t.Fatalf("Add(%v, %v) has shape %v; want %v", sa, sb, sum.Shape(), want)
			}
			ga, gb := ops.AddBackward(a, b, sum)
			if !slices.Equal(ga.Shape(), sa) || !slices.Equal(gb.Shape(), sb) {
				t.Fatalf("AddBackward(%v, %v): gradients %v, %v", sa, sb, ga.Shape(), gb.Shape())
			}
			if bt := ops.BroadcastTo(a, want); !slices.Equal(bt.Shape(), want) {
				t.Fatalf("BroadcastTo(%v, %v) has shape %v", sa, want, bt.Shape())
			}
			_ = tensor.Maybe(func() {
				r := ops.Sum(sum, axes...)
				if keepdims {
					r = ops.SumKeepdims(sum, axes...)
				}
				if keepdims && r.Rank() != sum.Rank() {
					t.Fatalf("SumAxes(%v, %v, keepdims) has rank %d", want, axes, r.Rank())
				}
				if _, err := r.Float32s(); err != nil {
					t.Fatal(err)
				}
				m := ops.Max(sum, axes...)
				if keepdims {
					m = ops.MaxKeepdims(sum, axes...)
				}
				ops.MaxBackward(sum, m, axes, keepdims)
			})
			if len(axes) > 0 {
				_ = tensor.Maybe(func() { ops.Softmax(sum, axes[0]) })
			}
			_ = tensor.Maybe(func() {
				v := sum.Reshape(reshape...)
				if v.Len() != sum.Len() {
					t.Fatalf("Reshape(%v → %v) has %d elements; want %d", want, reshape, v.Len(), sum.Len())
				}
			})
		})
		_ = err // a *tensor.Error is the expected answer to bad input
	})
}

// fuzzMatMul checks MatMul's result shape against NumPy's matmul rule,
// written here independently, and its gradients' shapes.
func fuzzMatMul(t *testing.T, a, b *tensor.Tensor) {
	sa, sb := a.Shape(), b.Shape()
	var want []int
	ok := len(sa) > 0 && len(sb) > 0
	if ok {
		ma, mb := sa, sb
		if len(ma) == 1 {
			ma = []int{1, ma[0]}
		}
		if len(mb) == 1 {
			mb = []int{mb[0], 1}
		}
		batch, bok := broadcastShape(ma[:len(ma)-2], mb[:len(mb)-2])
		ok = bok && ma[len(ma)-1] == mb[len(mb)-2]
		want = batch
		if len(sa) > 1 {
			want = append(want, ma[len(ma)-2])
		}
		if len(sb) > 1 {
			want = append(want, mb[len(mb)-1])
		}
	}
	var c *tensor.Tensor
	err := tensor.Maybe(func() { c = ops.MatMul(a, b) })
	switch {
	case !ok && err == nil:
		t.Fatalf("MatMul(%v, %v): no error, shape %v", sa, sb, c.Shape())
	case ok && err != nil:
		t.Fatalf("MatMul(%v, %v): %v; want shape %v", sa, sb, err, want)
	case ok && !slices.Equal(c.Shape(), want):
		t.Fatalf("MatMul(%v, %v) has shape %v; want %v", sa, sb, c.Shape(), want)
	case ok:
		ga, gb := ops.MatMulBackward(a, b, c)
		if !slices.Equal(ga.Shape(), sa) || !slices.Equal(gb.Shape(), sb) {
			t.Fatalf("MatMulBackward(%v, %v): gradients %v, %v", sa, sb, ga.Shape(), gb.Shape())
		}
		if _, err := gb.Float32s(); err != nil {
			t.Fatal(err)
		}
	}
}
