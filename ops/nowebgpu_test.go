//go:build !cgo || js

package ops_test

import (
	"testing"

	"github.com/extensor/extensor/device"
)

// webgpuDevices returns none: a build without cgo (make nocgo), or for
// WebAssembly under Node.js (make wasm), has no WebGPU device to test;
// the cgo build's tests run the WebGPU half.
func webgpuDevices(*testing.T) []device.Device { return nil }
