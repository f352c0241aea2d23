//go:build cgo

package webgpu

import (
	"encoding/binary"
	"fmt"

	"github.com/extensor/extensor/shaders"
	"github.com/rajveermalviya/go-webgpu/wgpu"
)

// maxGroups is WebGPU's limit of workgroups per dimension.
const maxGroups = 65535

// zeroSlot pads a dispatch's parameters to their 256-byte slot.
var zeroSlot [paramSlot]byte

// kernel is a compiled compute pipeline with its bind group layout.
type kernel struct {
	name     string
	module   *wgpu.ShaderModule
	layout   *wgpu.BindGroupLayout
	playout  *wgpu.PipelineLayout
	pipeline *wgpu.ComputePipeline
}

func (k *kernel) release() {
	if k.pipeline != nil {
		k.pipeline.Release()
	}
	if k.playout != nil {
		k.playout.Release()
	}
	if k.layout != nil {
		k.layout.Release()
	}
	if k.module != nil {
		k.module.Release()
	}
}

// kernel returns the pipeline of shader file specialised with data, cached
// under key. writable tells, for each data binding (1, 2, …), whether the
// kernel writes it. It returns nil after recording a failure.
func (d *Device) kernel(key, file string, data any, writable ...bool) *kernel {
	kinds := make([]bindKind, len(writable))
	for i, w := range writable {
		if w {
			kinds[i] = storageRW
		}
	}
	return d.kernelOf(key, file, data, kinds...)
}

// bindKind is what a kernel binds at a binding after the parameters.
type bindKind uint8

const (
	storageRO  bindKind = iota // a read-only storage buffer
	storageRW                  // a read-write storage buffer
	textureIn                  // a float texture read with textureLoad
	textureOut                 // an rgba32float storage texture, written
)

// kernelOf is kernel with the kinds of its bindings (1, 2, …).
func (d *Device) kernelOf(key, file string, data any, kinds ...bindKind) *kernel {
	if k, ok := d.kernels[key]; ok {
		return k
	}
	if !d.ok() {
		return nil
	}
	k, err := d.compile(key, file, data, kinds)
	if err != nil {
		if k != nil {
			k.release()
		}
		d.fail(fmt.Errorf("webgpu: kernel %s: %v", key, err))
		return nil
	}
	d.kernels[key] = k
	return k
}

func (d *Device) compile(key, file string, data any, kinds []bindKind) (*kernel, error) {
	src, err := shaders.Source(file, data)
	if err != nil {
		return nil, err
	}
	k := &kernel{name: key}
	k.module, err = d.dev.CreateShaderModule(&wgpu.ShaderModuleDescriptor{
		Label:          key,
		WGSLDescriptor: &wgpu.ShaderModuleWGSLDescriptor{Code: src},
	})
	if err != nil {
		return k, fmt.Errorf("compiling WGSL: %v", err)
	}
	entries := []wgpu.BindGroupLayoutEntry{{
		Binding:    0,
		Visibility: wgpu.ShaderStage_Compute,
		Buffer:     wgpu.BufferBindingLayout{Type: wgpu.BufferBindingType_ReadOnlyStorage, HasDynamicOffset: true},
	}}
	for i, kind := range kinds {
		e := wgpu.BindGroupLayoutEntry{Binding: uint32(i + 1), Visibility: wgpu.ShaderStage_Compute}
		switch kind {
		case storageRO:
			e.Buffer = wgpu.BufferBindingLayout{Type: wgpu.BufferBindingType_ReadOnlyStorage}
		case storageRW:
			e.Buffer = wgpu.BufferBindingLayout{Type: wgpu.BufferBindingType_Storage}
		case textureIn:
			e.Texture = wgpu.TextureBindingLayout{SampleType: wgpu.TextureSampleType_UnfilterableFloat, ViewDimension: wgpu.TextureViewDimension_2D}
		case textureOut:
			e.StorageTexture = wgpu.StorageTextureBindingLayout{Access: wgpu.StorageTextureAccess_WriteOnly, Format: wgpu.TextureFormat_RGBA32Float, ViewDimension: wgpu.TextureViewDimension_2D}
		}
		entries = append(entries, e)
	}
	if limit := d.limits.MaxStorageBuffersPerShaderStage; uint32(len(entries)) > limit {
		return k, fmt.Errorf("needs %d storage buffers; the device allows %d", len(entries), limit)
	}
	k.layout, err = d.dev.CreateBindGroupLayout(&wgpu.BindGroupLayoutDescriptor{Label: key, Entries: entries})
	if err != nil {
		return k, fmt.Errorf("bind group layout: %v", err)
	}
	k.playout, err = d.dev.CreatePipelineLayout(&wgpu.PipelineLayoutDescriptor{Label: key, BindGroupLayouts: []*wgpu.BindGroupLayout{k.layout}})
	if err != nil {
		return k, fmt.Errorf("pipeline layout: %v", err)
	}
	k.pipeline, err = d.dev.CreateComputePipeline(&wgpu.ComputePipelineDescriptor{
		Label:   key,
		Layout:  k.playout,
		Compute: wgpu.ProgrammableStageDescriptor{Module: k.module, EntryPoint: "main"},
	})
	if err != nil {
		return k, fmt.Errorf("compute pipeline: %v", err)
	}
	return k, nil
}

// encoderFor returns the open batch's command encoder, creating it; nil
// after recording a failure.
func (d *Device) encoderFor() *wgpu.CommandEncoder {
	if d.encoder == nil {
		enc, err := d.dev.CreateCommandEncoder(nil)
		if err != nil {
			d.fail(fmt.Errorf("webgpu: creating a command encoder: %v", err))
			return nil
		}
		d.encoder = enc
	}
	return d.encoder
}

// grid spreads groups workgroups over x and y; kernels guard the excess.
func grid(groups int) (x, y uint32, err error) {
	if groups <= maxGroups {
		return uint32(groups), 1, nil
	}
	gy := (groups + maxGroups - 1) / maxGroups
	if gy > maxGroups {
		return 0, 0, fmt.Errorf("%d workgroups exceed %d×%d", groups, maxGroups, maxGroups)
	}
	return maxGroups, uint32(gy), nil
}

// run records a 1-D dispatch of groups workgroups, spread over x and y.
func (d *Device) run(k *kernel, groups int, params []uint32, bufs ...*buffer) {
	if k == nil || groups == 0 {
		return
	}
	x, y, err := grid(groups)
	if err != nil {
		d.fail(fmt.Errorf("webgpu: kernel %s: %v", k.name, err))
		return
	}
	d.dispatch(k, x, y, params, bufs...)
}

// dispatch records one dispatch of k over an x×y grid of workgroups, with
// its parameters in the batch's parameter buffer.
func (d *Device) dispatch(k *kernel, x, y uint32, params []uint32, bufs ...*buffer) {
	d.dispatch3(k, x, y, 1, params, bufs...)
}

// dispatch3 is dispatch over a grid of x×y×z workgroups.
func (d *Device) dispatch3(k *kernel, x, y, z uint32, params []uint32, bufs ...*buffer) {
	if k == nil || x == 0 || y == 0 || z == 0 || !d.ok() {
		return
	}
	var entries []wgpu.BindGroupEntry
	for i, b := range bufs {
		entries = append(entries, wgpu.BindGroupEntry{Binding: uint32(i + 1), Buffer: b.b, Size: b.bindSize()})
	}
	d.dispatchEntries(k, x, y, z, params, entries)
}

// dispatchEntries is dispatch3 with the bindings after the parameters
// given as entries (buffers or texture views).
func (d *Device) dispatchEntries(k *kernel, x, y, z uint32, params []uint32, bound []wgpu.BindGroupEntry) {
	if k == nil || x == 0 || y == 0 || z == 0 || !d.ok() {
		return
	}
	if len(params) > paramWords {
		panic(fmt.Sprintf("webgpu: kernel %s: %d parameter words; at most %d", k.name, len(params), paramWords))
	}
	enc := d.encoderFor()
	if enc == nil {
		return
	}
	off := len(d.params)
	d.params = append(d.params, zeroSlot[:]...)
	for i, w := range params {
		binary.LittleEndian.PutUint32(d.params[off+4*i:], w)
	}
	entries := append([]wgpu.BindGroupEntry{{Binding: 0, Buffer: d.paramBuf, Size: paramSlot}}, bound...)
	bg, err := d.dev.CreateBindGroup(&wgpu.BindGroupDescriptor{Label: k.name, Layout: k.layout, Entries: entries})
	if err != nil {
		d.fail(fmt.Errorf("webgpu: kernel %s: binding buffers: %v", k.name, err))
		return
	}
	pass := enc.BeginComputePass(nil)
	pass.SetPipeline(k.pipeline)
	pass.SetBindGroup(0, bg, []uint32{uint32(off)})
	pass.DispatchWorkgroups(x, y, z)
	err = pass.End()
	pass.Release()
	bg.Release()
	if err != nil {
		// The encoder is invalid now: submit what it holds (Finish fails
		// and drops the batch), so that later work gets a new one.
		d.fail(fmt.Errorf("webgpu: kernel %s: %v", k.name, err))
		d.labels = append(d.labels, k.name)
		d.flush()
		return
	}
	d.dispatches++
	d.ran++
	d.labels = append(d.labels, k.name)
	if d.dispatches >= BatchSize {
		d.flush()
	}
}
