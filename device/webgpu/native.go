//go:build cgo && !js

package webgpu

import (
	"fmt"
	"sync/atomic"

	"github.com/oliverbestmann/webgpu/wgpu"
)

// What differs between wgpu-native and the browser's WebGPU (js.go).

// primaryBackends are wgpu's primary backends (Vulkan, Metal, D3D12 and
// a browser's WebGPU): wgpu's GL backend aborted the process on machines
// with EGL but no display.
const primaryBackends = wgpu.InstanceBackend(1<<0 | 1<<2 | 1<<3 | 1<<5)

// newInstance creates a WebGPU instance of the primary backends.
func newInstance() (*wgpu.Instance, error) {
	return wgpu.CreateInstance(&wgpu.InstanceDescriptor{Backends: primaryBackends}), nil
}

// watchErrors does nothing: wgpu-native reports validation errors at the
// call (the binding's Try functions), and the device loss by callback.
func (d *Device) watchErrors() error { return nil }

// platform holds nothing natively (js.go: the browser's device errors).
//
//lint:ignore U1000 see Device.platform
type platform struct{}

// unwatchErrors does nothing: see watchErrors.
func (d *Device) unwatchErrors() {}

// asyncErrors returns nil: see watchErrors.
func (d *Device) asyncErrors() error { return nil }

// browser is false: this is wgpu-native (js.go: the browser's WebGPU).
const browser = false

// adapterInfo returns what wgpu-native tells of a.
func adapterInfo(a *wgpu.Adapter) wgpu.AdapterInfo { return a.GetInfo() }

// preferredFormat returns false: the surface's first format is its
// preferred one.
func preferredFormat() (wgpu.TextureFormat, bool) { return 0, false }

// mapRead maps staging's first size bytes for reading. MapAsync hands C
// a pointer to a Go handle: poll at once, on this goroutine. The queue is
// idle, so this blocking poll returns at once.
func (d *Device) mapRead(staging *wgpu.Buffer, size uint64) error {
	var status atomic.Int32 // set by the callback, which may run on wgpu's thread
	status.Store(-1)
	err := staging.TryMapAsync(wgpu.MapModeRead, 0, size, func(s wgpu.MapAsyncStatus) { status.Store(int32(s)) })
	d.dev.Poll(true, nil)
	if err != nil || status.Load() != int32(wgpu.MapAsyncStatusSuccess) {
		return fmt.Errorf("status %v: %v", wgpu.MapAsyncStatus(status.Load()), err)
	}
	return nil
}

// computePipeline describes a compute pipeline of module's main, labelled.
func computePipeline(label string, layout *wgpu.PipelineLayout, module *wgpu.ShaderModule) *wgpu.ComputePipelineDescriptor {
	return &wgpu.ComputePipelineDescriptor{Label: label, Layout: layout,
		Compute: wgpu.ProgrammableStageDescriptor{Module: module, EntryPoint: "main"}}
}

// featureNames lists the adapter's features.
func featureNames(a *wgpu.Adapter) []string {
	var names []string
	for _, f := range a.GetFeatures() {
		names = append(names, f.String())
	}
	return names
}

// setViewport sets the render pass's viewport, depths 0 to 1.
func setViewport(pass *wgpu.RenderPassEncoder, x, y, w, h float32) {
	pass.SetViewport(x, y, w, h, 0, 1)
}
