//go:build cgo && !js

package ops_test

import (
	"testing"

	"github.com/extensor/extensor/device"
	_ "github.com/extensor/extensor/device/webgpu" // the "webgpu" driver
	"github.com/extensor/extensor/internal/gputest"
)

// webgpuDevices returns the WebGPU device, for the tests that compare an
// op composed in ops with PyTorch's values on both backends: none where
// there is no adapter outside CI (under CI that fails t).
func webgpuDevices(t *testing.T) []device.Device {
	if g := gputest.OrNil(t); g != nil {
		return []device.Device{g}
	}
	return nil
}
