//go:build cgo && !js

package webgpu

import "github.com/oliverbestmann/webgpu/wgpu"

// What differs between wgpu-native and the browser's WebGPU (js.go).

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
