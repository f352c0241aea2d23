//go:build !cgo

package main

import (
	"io"

	"github.com/extensor/extensor/device"
)

// printProfile prints nothing: without cgo there is no WebGPU device to
// profile.
func printProfile(io.Writer, device.Device) {}
