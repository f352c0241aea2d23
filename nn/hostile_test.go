package nn_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/nn"
	"github.com/extensor/extensor/tensor"
)

// hostileSizes are the sizes a layer's constructor is given in place of
// each of its own: empty, negative, huge and overflowing.
var hostileSizes = []int{0, -1, -(1 << 40), 1 << 33, 1 << 40, math.MaxInt, math.MinInt}

// hostileFloats are the probabilities and scalars a layer is given.
var hostileFloats = []float64{math.NaN(), math.Inf(1), math.Inf(-1), -1, 1, 2}

// layerCase builds a layer from sizes (its own: base) and feeds it
// inputs of shape input.
type layerCase struct {
	name  string
	base  []int
	make  func(dev device.Device, dt device.DType, s []int, p float64) (nn.Layer, error)
	input []int
	ints  bool // the input holds indices below base[0]
}

var layerCases = []layerCase{
	{"Linear", []int{3, 2}, func(d device.Device, dt device.DType, s []int, _ float64) (nn.Layer, error) {
		return nn.Linear(d, dt, s[0], s[1], 1)
	}, []int{4, 3}, false},
	{"Conv2d", []int{2, 3, 3}, func(d device.Device, dt device.DType, s []int, _ float64) (nn.Layer, error) {
		return nn.Conv2d(d, dt, s[0], s[1], s[2], 1)
	}, []int{1, 2, 5, 5}, false},
	{"Conv1d", []int{2, 3, 3}, func(d device.Device, dt device.DType, s []int, _ float64) (nn.Layer, error) {
		return nn.Conv1d(d, dt, s[0], s[1], s[2], 1)
	}, []int{1, 2, 6}, false},
	{"ConvTranspose2d", []int{2, 3, 3, 2}, func(d device.Device, dt device.DType, s []int, _ float64) (nn.Layer, error) {
		return nn.ConvTranspose2d(d, dt, s[0], s[1], s[2], s[3], 1)
	}, []int{1, 2, 3, 3}, false},
	{"Embedding", []int{5, 3}, func(d device.Device, dt device.DType, s []int, _ float64) (nn.Layer, error) {
		return nn.Embedding(d, dt, s[0], s[1], 1)
	}, []int{2, 4}, true},
	{"MultiheadAttention", []int{8, 2}, func(d device.Device, dt device.DType, s []int, _ float64) (nn.Layer, error) {
		return nn.MultiheadAttention(d, dt, s[0], s[1], 1)
	}, []int{1, 3, 8}, false},
	{"Transformer", []int{8, 2, 16}, func(d device.Device, dt device.DType, s []int, p float64) (nn.Layer, error) {
		return nn.Transformer(d, dt, s[0], s[1], s[2], p, 1)
	}, []int{1, 3, 8}, false},
	{"GroupNorm", []int{2, 4}, func(d device.Device, dt device.DType, s []int, _ float64) (nn.Layer, error) {
		return nn.GroupNorm(d, dt, s[0], s[1])
	}, []int{2, 4, 3}, false},
	{"LayerNorm", []int{4}, func(d device.Device, dt device.DType, s []int, _ float64) (nn.Layer, error) {
		return nn.LayerNorm(d, dt, s...)
	}, []int{2, 4}, false},
	{"RMSNorm", []int{4}, func(d device.Device, dt device.DType, s []int, _ float64) (nn.Layer, error) {
		return nn.RMSNorm(d, dt, s...)
	}, []int{2, 4}, false},
	{"BatchNorm", []int{3}, func(d device.Device, dt device.DType, s []int, _ float64) (nn.Layer, error) {
		return nn.BatchNorm(d, dt, s[0])
	}, []int{4, 3}, false},
}

// settle runs f and returns what it did: nil, or an error returned or a
// *tensor.Error panicked. Any other panic fails t.
func settle(t *testing.T, what string, f func() error) error {
	t.Helper()
	var err error
	perr := tensor.Maybe(func() {
		defer func() {
			if r := recover(); r != nil {
				var te *tensor.Error
				if e, ok := r.(error); ok && errors.As(e, &te) {
					panic(r)
				}
				t.Errorf("%s: panicked with %v (%T); want an error or a *tensor.Error", what, r, r)
			}
		}()
		err = f()
	})
	if perr != nil {
		return perr
	}
	return err
}

// TestHostileLayers gives every layer's constructor each hostile size in
// place of each of its sizes (and the Transformer's dropout each hostile
// probability): it must return an error or panic with a *tensor.Error
// (never another panic, nor an allocation that ends the process). Each
// layer built from its own sizes is then fed inputs of a shape changed in
// each axis, of a dropped or added axis, empty, of another dtype and nil:
// an error of the library's, or an output.
func TestHostileLayers(t *testing.T) {
	dev := cpu.New()
	dt := device.Float32
	for _, lc := range layerCases {
		t.Run(lc.name, func(t *testing.T) {
			for i := range lc.base {
				for _, h := range hostileSizes {
					s := append([]int(nil), lc.base...)
					s[i] = h
					what := fmt.Sprintf("%s(%v)", lc.name, s)
					err := settle(t, what, func() error {
						l, err := lc.make(dev, dt, s, 0)
						if err == nil {
							release(l)
						}
						return err
					})
					if h < 0 && err == nil {
						t.Errorf("%s: no error for a negative size", what)
					}
					if h >= 1<<33 && err == nil {
						t.Errorf("%s: no error for a size of %d", what, h)
					}
				}
			}
			if lc.name == "Transformer" {
				for _, p := range hostileFloats {
					what := fmt.Sprintf("Transformer dropout %v", p)
					if err := settle(t, what, func() error { _, err := lc.make(dev, dt, lc.base, p); return err }); err == nil && !(p >= 0 && p < 1) {
						t.Errorf("%s: no error", what)
					}
				}
			}
			l, err := lc.make(dev, dt, lc.base, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer release(l)
			for _, shape := range hostileShapes(lc.input) {
				for _, kind := range []device.DType{dt, device.Float16, device.Int32, device.Float64} {
					if lc.ints && kind != device.Int32 || !lc.ints && kind == device.Int32 && len(shape) != len(lc.input) {
						continue
					}
					what := fmt.Sprintf("%s.Forward(%v %v)", lc.name, kind, shape)
					settle(t, what, func() error {
						x, err := tensor.Zeros(dev, kind, shape...)
						if err != nil {
							return err
						}
						defer x.Release()
						y := l.Forward(autograd.Leaf(x, false))
						_, err = y.Value().Float64s()
						return err
					})
				}
			}
			settle(t, lc.name+".Forward(nil)", func() error { l.Forward(nil); return nil })
		})
	}
}

// hostileShapes returns shape with each axis 0, 1 and one larger, an
// axis dropped and one added.
func hostileShapes(shape []int) [][]int {
	var out [][]int
	for i := range shape {
		for _, d := range []int{0, 1, shape[i] + 1} {
			s := append([]int(nil), shape...)
			s[i] = d
			out = append(out, s)
		}
	}
	out = append(out, shape[1:], append([]int{1}, shape...), append(append([]int(nil), shape...), 2))
	return out
}

// release frees l's parameters.
func release(l nn.Layer) {
	for _, v := range l.Params() {
		v.Value().Release()
	}
}

// TestNilAndShapeInEvaluation: the layers that may return their input
// unchanged (Dropout in evaluation or at p = 0, an empty Sequential)
// refuse a nil one as the others do, with ErrArgument; BatchNorm in
// evaluation refuses an input without its channels at axis 1, with
// ErrShape, as in training. Train switches BatchNorm and Dropout, alone
// or in a Residual, as a Sequential does.
func TestNilAndShapeInEvaluation(t *testing.T) {
	dev := cpu.New()
	drop := nn.Dropout(0.5, 1)
	idle := nn.Dropout(0, 1)
	drop.Train(false)
	for _, tt := range []struct {
		name string
		l    nn.Layer
	}{{"Dropout in evaluation", drop}, {"Dropout 0", idle}, {"empty Sequential", nn.Sequential{}}} {
		if err := tensor.Maybe(func() { tt.l.Forward(nil) }); !errors.Is(err, tensor.ErrArgument) {
			t.Errorf("%s.Forward(nil): %v; want ErrArgument", tt.name, err)
		}
	}
	bn, err := nn.BatchNorm(dev, device.Float32, 3)
	if err != nil {
		t.Fatal(err)
	}
	res := nn.Residual(bn)
	res.Train(false)
	if bn.Training {
		t.Errorf("Residual(BatchNorm).Train(false) left it training")
	}
	for _, shape := range [][]int{{3}, {4, 2}, {2, 1, 5}} {
		x := autograd.Leaf(tensor.Must(tensor.Zeros(dev, device.Float32, shape...)), false)
		if err := tensor.Maybe(func() { bn.Forward(x) }); !errors.Is(err, tensor.ErrShape) || !strings.Contains(err.Error(), "want (N, 3, …)") {
			t.Errorf("BatchNorm(3) in evaluation of %v: %v; want ErrShape asking for 3 channels", shape, err)
		}
	}
}
