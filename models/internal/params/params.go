// Package params makes the zero parameters of a model that a checkpoint
// then fills: autograd leaves on one device in one dtype, all freed when
// one of them cannot be made.
package params

import (
	"fmt"

	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/tensor"
)

// Maker makes parameters; after the first failure it makes none.
type Maker struct {
	dev  device.Device
	dt   device.DType
	op   string
	made []*tensor.Tensor
	err  error
}

// New returns a Maker of parameters on dev in dt; op names the model in
// errors.
func New(op string, dev device.Device, dt device.DType) *Maker {
	return &Maker{dev: dev, dt: dt, op: op}
}

// Zeros returns a parameter of shape, zeros, or nil after a failure.
func (m *Maker) Zeros(shape ...int) *autograd.Var {
	if m.err != nil {
		return nil
	}
	t, err := tensor.Zeros(m.dev, m.dt, shape...)
	if err != nil {
		m.err = fmt.Errorf("%s: a parameter %v: %w", m.op, shape, err)
		return nil
	}
	m.made = append(m.made, t)
	return autograd.Leaf(t, true)
}

// Maybe returns Zeros(shape...) when on, else nil (a parameter a
// configuration may leave out).
func (m *Maker) Maybe(on bool, shape ...int) *autograd.Var {
	if !on {
		return nil
	}
	return m.Zeros(shape...)
}

// Err returns the first failure, having freed every parameter made.
func (m *Maker) Err() error {
	if m.err != nil {
		for _, t := range m.made {
			t.Release()
		}
		m.made = nil
	}
	return m.err
}
