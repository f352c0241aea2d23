// Package model is the CNN of examples/cnn, shared with the benchmarks.
package model

import (
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/nn"
)

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
