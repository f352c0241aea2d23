//go:build !cgo && !js

package webgpu

import (
	"fmt"

	"github.com/extensor/extensor/device"
)

func init() {
	device.Register("webgpu", device.DriverFunc(func() (device.Device, error) {
		return nil, fmt.Errorf("webgpu: built without cgo (CGO_ENABLED=0); rebuild with cgo to use WebGPU: %w", device.ErrUnavailable)
	}))
}

// Adapter describes an adapter that WebGPU offers.
type Adapter struct {
	Index                       int
	Name, Driver, Type, Backend string
	Chosen                      bool
	MaxBufferSize               uint64
	MaxBindingSize              uint64
}

// Adapters lists none: WebGPU needs cgo.
func Adapters() []Adapter { return nil }
