package parity_test

import (
	"fmt"

	"testing"

	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/internal/fuzzin"
	"github.com/extensor/extensor/nn"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/tensor"
)

// FuzzLayers is FuzzAPI for the layers of package nn (the layer coverage
// table's): each is built in float32 or float16 and given a hostile input
// (a dimension changed, an axis added or dropped, another dtype, nil,
// another device's tensor, indices out of range, values full of NaN, ±Inf
// and signed zeros), in training or evaluation mode; its output is read
// and backpropagated. The CPU and WebGPU backends must answer alike, as
// in FuzzAPI: the same kind of programmer error, a runtime error at the
// readback on both, or the same shape, special values and close finite
// values, for the output and every gradient (the input's and the
// parameters').
func FuzzLayers(f *testing.F) {
	cases := layerCases()
	for i := range cases {
		// The layer as the table runs it, then in float16 with a
		// changed dimension, and nil in evaluation mode.
		f.Add([]byte{byte(i)})
		f.Add([]byte{byte(i), 1, 1, 0, 4, 9})
		f.Add([]byte{byte(i), 0, 5, 1, 3})
	}
	gpu, host := fuzzDevices(f)
	if gpu != nil {
		defer gpu.Close()
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		in := fuzzin.Bytes(data)
		c := cases[in.Next(0, len(cases)-1)]
		dt := fuzzin.Pick(&in, device.Float32, device.Float16)
		input := ops.Input{Shape: c.in, Int: c.ints > 0, Domain: ops.Domain{Classes: c.ints}}
		spec := hostileInputs(&in, []ops.Input{input})[0]
		eval := in.Next(0, 1) == 1
		seed := uint64(in.Next(0, 255))
		want := runHostileLayer(t, c, host, dt, spec, eval, seed)
		if gpu == nil {
			return
		}
		got := runHostileLayer(t, c, gpu, dt, spec, eval, seed)
		compare(t, fmt.Sprintf("%s in %v, input %v, evaluation %v (values %v, upstream gradient %v)", c.name, dt, spec, eval, want.inputs, want.upstream), want, got)
	})
}

// runHostileLayer builds c's layer on dev in dt, in evaluation mode if
// eval, and runs it forward on the input spec makes and backward from an
// upstream gradient drawn as makeInputs draws (seed + 1).
func runHostileLayer(t *testing.T, c layerCase, dev device.Device, dt device.DType, spec inputSpec, eval bool, seed uint64) outcome {
	var o outcome
	var l nn.Layer
	if o.panicked = tensor.Maybe(func() {
		var err error
		if l, err = c.build(dev, dt); err != nil {
			panic(err)
		}
	}); o.panicked != nil {
		return o
	}
	defer release(l)
	if m, ok := l.(nn.Trainer); ok && eval {
		m.Train(false)
	}
	var xs []*tensor.Tensor
	if o.panicked = tensor.Maybe(func() { xs = makeInputs(dev, []inputSpec{spec}, seed) }); o.panicked != nil {
		return o
	}
	x := xs[0]
	var xv *autograd.Var
	if x != nil {
		defer x.Release()
		v, _ := x.Float64s()
		o.inputs = [][]float64{v}
		xv = autograd.Leaf(x, x.DType().IsFloat())
	}
	var y *autograd.Var
	if o.panicked = tensor.Maybe(func() { y = l.Forward(xv) }); o.panicked != nil {
		return o
	}
	if y == nil {
		t.Fatalf("%s on %v: Forward returned nil and did not panic", c.name, dev)
	}
	o.read(y.Value())
	if o.readErr != nil || !y.Value().DType().IsFloat() {
		return o
	}
	vars := l.Params()
	if xv != nil && xv.RequiresGrad() {
		vars = append([]*autograd.Var{xv}, vars...)
	}
	if len(vars) == 0 {
		return o
	}
	err := tensor.Maybe(func() {
		g := makeInputs(dev, []inputSpec{{Shape: y.Value().Shape(), DType: y.Value().DType()}}, seed+1)[0]
		defer g.Release()
		o.upstream, _ = g.Float64s()
		loss := ops.Sum(ops.Mul(y, autograd.Leaf(g, false)))
		if err := loss.Backward(); err != nil {
			panic(err)
		}
	})
	if err != nil {
		o.grads = []outcome{{readErr: err}}
		return o
	}
	for _, v := range vars {
		var og outcome
		if g := v.Grad(); g != nil {
			og.read(g)
		}
		o.grads = append(o.grads, og)
	}
	return o
}

// release frees l's parameters.
func release(l nn.Layer) {
	for _, v := range l.Params() {
		v.Value().Release()
	}
}
