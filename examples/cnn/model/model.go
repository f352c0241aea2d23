// Package model is the CNN of examples/cnn, shared with the benchmarks.
package model

import (
	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/nn"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/optim"
	"github.com/extensor/extensor/tensor"
)

// Side is the side of the square images the network takes: its first
// linear layer expects the 64×5×5 features of 28×28 images.
const Side = 28

// New builds the network on dev from seed: Conv2d(1→32, 3×3) → ReLU →
// MaxPool(2) → Conv2d(32→64, 3×3) → ReLU → MaxPool(2) → Flatten →
// Linear(1600→128) → ReLU → Dropout(0.25) → Linear(128→10), for 1×28×28
// images.
func New(dev device.Device, seed uint64) (nn.Sequential, error) {
	c1, err := nn.Conv2d(dev, device.Float32, 1, 32, 3, seed)
	if err != nil {
		return nil, err
	}
	c2, err := nn.Conv2d(dev, device.Float32, 32, 64, 3, seed+10)
	if err != nil {
		return nil, err
	}
	l1, err := nn.Linear(dev, device.Float32, 1600, 128, seed+20)
	if err != nil {
		return nil, err
	}
	l2, err := nn.Linear(dev, device.Float32, 128, 10, seed+30)
	if err != nil {
		return nil, err
	}
	return nn.Sequential{c1, nn.Relu, nn.MaxPool2d(2), c2, nn.Relu, nn.MaxPool2d(2), nn.Flatten,
		l1, nn.Relu, nn.Dropout(0.25, seed+40), l2}, nil
}

// Step runs one training step of net on a batch and returns its loss (0-D).
// With a scaler it runs in mixed precision: the batch cast to float16
// unless it is float16 already (the layers then compute with float16
// copies of their weights), the logits cast back to float32 for the
// loss, the loss scaled.
func Step(net nn.Sequential, opt *optim.Optimizer, scaler *optim.Scaler, x, y *tensor.Tensor) (*tensor.Tensor, error) {
	return StepReduced(net, opt, scaler, x, y, nil)
}

// StepReduced is Step with reduce, if not nil, called between the
// backward and the optimiser: the gradients' average across the ranks
// of a data-parallel job (package dist).
func StepReduced(net nn.Sequential, opt *optim.Optimizer, scaler *optim.Scaler, x, y *tensor.Tensor, reduce func() error) (*tensor.Tensor, error) {
	if reduce == nil {
		reduce = func() error { return nil }
	}
	in := autograd.Leaf(x, false)
	if scaler == nil {
		loss := ops.CrossEntropyLoss(net.Forward(in), autograd.Leaf(y, false), ops.MeanReduction)
		if err := loss.Backward(); err != nil {
			return nil, err
		}
		if err := reduce(); err != nil {
			return nil, err
		}
		opt.Step()
		opt.ZeroGrad()
		return loss.Value(), nil
	}
	if x.DType() != device.Float16 { // a batch the loader uploaded as float16 is cast already
		in = ops.Cast(in, device.Float16)
	}
	logits := ops.Cast(net.Forward(in), device.Float32)
	loss := ops.CrossEntropyLoss(logits, autograd.Leaf(y, false), ops.MeanReduction).Retain()
	if err := scaler.ScaleLoss(loss).Backward(); err != nil {
		return nil, err
	}
	if err := reduce(); err != nil {
		return nil, err
	}
	if err := scaler.Step(opt); err != nil {
		return nil, err
	}
	opt.ZeroGrad()
	return loss.Value(), nil
}
