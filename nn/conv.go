package nn

import (
	"fmt"
	"math"

	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/ops"
)

// Conv1dLayer is PyTorch's Conv1d: an NCL convolution with bias, W [out,
// in, K].
type Conv1dLayer struct {
	W, B   *autograd.Var
	Window ops.Window // the first entries: stride, padding, dilation
}

// Conv1d returns a convolution of in→out channels with a kernel of k
// taps, stride 1, no padding (change Window for others), initialised as
// PyTorch does from seed.
func Conv1d(dev device.Device, dt device.DType, in, out, k int, seed uint64) (*Conv1dLayer, error) {
	bound := 1 / math.Sqrt(float64(max(in*k, 1)))
	w, err := uniform(dev, dt, bound, seed, out, in, k)
	if err != nil {
		return nil, err
	}
	b, err := uniform(dev, dt, bound, seed+1, out)
	if err != nil {
		return nil, err
	}
	return &Conv1dLayer{W: w, B: b, Window: ops.Window{Stride: [2]int{1, 1}}}, nil
}

// Forward convolves x (N, C, L).
func (c *Conv1dLayer) Forward(x *autograd.Var) *autograd.Var {
	return ops.Conv1d(x, like(c.W, x), like(c.B, x), c.Window)
}

// Params returns W and B.
func (c *Conv1dLayer) Params() []*autograd.Var { return []*autograd.Var{c.W, c.B} }

// ParamNames returns "weight" and "bias".
func (c *Conv1dLayer) ParamNames() []string { return []string{"weight", "bias"} }

// ConvTranspose2dLayer is PyTorch's ConvTranspose2d: W [in, out, KH, KW],
// bias [out], the geometry in Window and OutputPadding.
type ConvTranspose2dLayer struct {
	W, B          *autograd.Var
	Window        ops.Window
	OutputPadding [2]int
}

// ConvTranspose2d returns a transposed convolution of in→out channels
// with a k×k kernel and the given stride, padding 0 (change Window and
// OutputPadding for others), initialised as PyTorch does (bounds from
// the weight's second dimension times the taps) from seed.
func ConvTranspose2d(dev device.Device, dt device.DType, in, out, k, stride int, seed uint64) (*ConvTranspose2dLayer, error) {
	if stride < 1 || stride > 1<<24 {
		return nil, fmt.Errorf("nn.ConvTranspose2d: stride %d; want a stride in [1, 2²⁴]", stride)
	}
	bound := 1 / math.Sqrt(float64(max(out*k*k, 1)))
	w, err := uniform(dev, dt, bound, seed, in, out, k, k)
	if err != nil {
		return nil, err
	}
	b, err := uniform(dev, dt, bound, seed+1, out)
	if err != nil {
		return nil, err
	}
	return &ConvTranspose2dLayer{W: w, B: b, Window: ops.Window{Stride: [2]int{stride, stride}}}, nil
}

// Forward returns the transposed convolution of x (N, C, H, W).
func (c *ConvTranspose2dLayer) Forward(x *autograd.Var) *autograd.Var {
	return ops.ConvTranspose2d(x, like(c.W, x), like(c.B, x), c.Window, c.OutputPadding)
}

// Params returns W and B.
func (c *ConvTranspose2dLayer) Params() []*autograd.Var { return []*autograd.Var{c.W, c.B} }

// ParamNames returns "weight" and "bias".
func (c *ConvTranspose2dLayer) ParamNames() []string { return []string{"weight", "bias"} }
