package parity_test

import (
	"errors"
	"testing"

	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/nn"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/optim"
	"github.com/extensor/extensor/tensor"
)

// TestNilElements gives the entries that take slices of tensors, of
// variables or of layers a nil element, and a nil where a variable is
// due: each must panic with a *tensor.Error of kind ErrArgument, never
// dereference nil.
func TestNilElements(t *testing.T) {
	dev := cpu.New()
	x := tensor.Must(tensor.Zeros(dev, device.Float32, 2, 3))
	v := autograd.Leaf(x, true)
	probes := map[string]func(){
		"Concat":         func() { ops.Concat([]*tensor.Tensor{x, nil}, 0) },
		"Stack":          func() { ops.Stack([]*tensor.Tensor{nil, x}, 0) },
		"ConcatBackward": func() { ops.ConcatBackward([]*tensor.Tensor{x, nil}, x, 0) },
		"StackBackward":  func() { ops.StackBackward([]*tensor.Tensor{x, nil}, x, 0) },
		"ClipGradValue":  func() { ops.ClipGradValue([]*tensor.Tensor{x, nil}, 1) },
		"ClipGradNorm":   func() { ops.ClipGradNorm([]*tensor.Tensor{nil}, 1) },
		"Step state nil": func() { ops.Step(device.Adam, x, x, []*tensor.Tensor{nil, nil}, device.StepParams{LR: 1, T: 1}) },
		"UpdateScale": func() {
			ops.UpdateScale(tensor.Must(tensor.Ones(dev, device.Float32, 1)), tensor.Must(tensor.Zeros(dev, device.Float32, device.ScaleStateLen)), []*tensor.Tensor{nil}, device.ScaleParams{Growth: 2, Backoff: 0.5, Interval: 2})
		},
		"optim.SGD":      func() { optim.SGD([]*autograd.Var{v, nil}, 0.1, device.StepParams{}).Step() },
		"optim.Adam":     func() { optim.Adam([]*autograd.Var{nil}, 0.1) },
		"optim.Clip":     func() { optim.ClipGradNorm([]*autograd.Var{nil}, 1) },
		"Grad wrt nil":   func() { autograd.Grad(ops.Sum(v), []*autograd.Var{nil}, false) },
		"Grad y nil":     func() { autograd.Grad(nil, []*autograd.Var{v}, false) },
		"Sequential nil": func() { nn.Sequential{nil}.Forward(v) },
	}
	for name, f := range probes {
		func() {
			defer func() {
				r := recover()
				if e, ok := r.(*tensor.Error); !ok || !errors.Is(e, tensor.ErrArgument) {
					t.Errorf("%s: %v (%T); want a *tensor.Error of kind ErrArgument", name, r, r)
				}
			}()
			f()
		}()
	}
}
