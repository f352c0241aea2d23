//go:build cgo

package main

import (
	"fmt"
	"io"
	"time"

	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/device/webgpu"
)

// printProfile prints the kernels that took most of dev's time, when dev
// is a WebGPU device opened with webgpu.EnvProfile set.
func printProfile(w io.Writer, dev device.Device) {
	p, ok := dev.(interface{ Profile() []webgpu.KernelTime })
	if !ok {
		return
	}
	ks := p.Profile()
	if len(ks) == 0 {
		return
	}
	var total time.Duration
	for _, k := range ks {
		total += k.Time
	}
	clock := "the host's clock around each dispatch"
	if c, ok := dev.(interface{ ProfileClock() string }); ok && c.ProfileClock() == "gpu" {
		clock = "the GPU's timestamps"
	}
	fmt.Fprintf(w, "device time by kernel (%s=1, by %s; %.2f s in all):\n", webgpu.EnvProfile, clock, total.Seconds())
	for _, k := range ks[:min(len(ks), 20)] {
		fmt.Fprintf(w, "  %5.1f%%  %8.1f ms  %6d dispatches  %s\n", 100*k.Time.Seconds()/total.Seconds(), k.Time.Seconds()*1e3, k.Dispatches, k.Kernel)
	}
}
