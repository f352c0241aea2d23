package autograd_test

import (
	"slices"
	"testing"

	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/tensor"
)

// TestGradHook: Backward calls a leaf's hook once a pass, when its
// gradient is complete (every use added, so Grad then is what it is
// after Backward), before the ops the leaf's uses depend on are
// differentiated; with retain too.
func TestGradHook(t *testing.T) {
	dev := cpu.New()
	leaf := func(v ...float32) *autograd.Var {
		return autograd.Leaf(tensor.Must(tensor.FromFloat32(dev, v, len(v))), true)
	}
	for _, retain := range []bool{false, true} {
		x, w, u := leaf(1, 2), leaf(3, 4), leaf(5, 6)
		// loss = sum(w·(u·x)) + sum(w·w): w is read twice, late; x early.
		var order []string
		at := map[string][]float64{}
		for name, v := range map[string]*autograd.Var{"x": x, "w": w, "u": u} {
			v.SetGradHook(func(v *autograd.Var) {
				order = append(order, name)
				at[name], _ = v.Grad().Float64s()
			})
		}
		loss := ops.Add(ops.Sum(ops.Mul(w, ops.Mul(u, x))), ops.Sum(ops.Mul(w, w)))
		g := tensor.Must(tensor.Scalar(dev, loss.Value().DType(), 1))
		if err := loss.BackwardWith(g, retain); err != nil {
			t.Fatal(err)
		}
		if len(order) != 3 || order[0] != "w" {
			t.Errorf("retain %v: hooks called for %v; want each leaf once, w first (its uses are the last ops)", retain, order)
		}
		for name, v := range map[string]*autograd.Var{"x": x, "w": w, "u": u} {
			final, _ := v.Grad().Float64s()
			if !slices.Equal(at[name], final) {
				t.Errorf("retain %v: %s's gradient %v at its hook, %v after Backward", retain, name, at[name], final)
			}
		}
		if want := []float64{5*1 + 2*3, 6*2 + 2*4}; !slices.Equal(at["w"], want) {
			t.Errorf("w's gradient %v; want %v", at["w"], want)
		}
	}
	// Off again; not on an op's result.
	x := leaf(1)
	calls := 0
	x.SetGradHook(func(*autograd.Var) { calls++ }).SetGradHook(nil)
	if err := ops.Sum(ops.Mul(x, x)).Backward(); err != nil || calls != 0 {
		t.Errorf("a removed hook was called %d times (%v)", calls, err)
	}
	if err := tensor.Maybe(func() { ops.Mul(x, x).SetGradHook(func(*autograd.Var) {}) }); err == nil {
		t.Error("SetGradHook on an op's result: no panic")
	}
}

// TestSetGrad: SetGrad replaces the gradient, refusing another shape or
// dtype.
func TestSetGrad(t *testing.T) {
	dev := cpu.New()
	x := autograd.Leaf(tensor.Must(tensor.FromFloat32(dev, []float32{1, 2}, 2)), true)
	g := tensor.Must(tensor.FromFloat32(dev, []float32{5, 6}, 2))
	x.SetGrad(g)
	if v, _ := x.Grad().Float32s(); !slices.Equal(v, []float32{5, 6}) {
		t.Errorf("Grad after SetGrad: %v", v)
	}
	for _, bad := range []*tensor.Tensor{tensor.Must(tensor.FromFloat32(dev, []float32{1, 2, 3}, 3)), tensor.Must(tensor.FromInt32(dev, []int32{1, 2}, 2))} {
		if err := tensor.Maybe(func() { x.SetGrad(bad) }); err == nil {
			t.Errorf("SetGrad of %v %v for a value [2] float32: no panic", bad.Shape(), bad.DType())
		}
	}
	x.SetGrad(nil)
	if x.Grad() != nil || !g.Released() {
		t.Error("SetGrad(nil) kept the gradient")
	}
}
