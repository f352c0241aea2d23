//go:build cgo || js

package webgpu

import (
	"fmt"
	"math"
	"slices"

	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/shaders"
	"github.com/oliverbestmann/webgpu/wgpu"
)

// OpenSurface creates a device on an adapter that can present to the
// window sd describes (one adapter, one device: the one that trains draws
// and presents), with a swap chain of width×height pixels.
func OpenSurface(sd *wgpu.SurfaceDescriptor, width, height int) (*Device, error) {
	d, err := open(sd)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	caps := d.surface.GetCapabilities(d.adapter)
	if len(caps.Formats) == 0 {
		d.mu.Unlock()
		d.Close()
		d.mu.Lock()
		return nil, fmt.Errorf("webgpu: %s cannot present to the window (the surface offers no format)", d.info)
	}
	d.screen = &screen{format: caps.Formats[0], alpha: wgpu.CompositeAlphaModeAuto}
	if f, ok := preferredFormat(); ok && slices.Contains(caps.Formats, f) {
		d.screen.format = f // a browser's own, which spares it a copy a frame
	}
	if len(caps.AlphaModes) > 0 {
		d.screen.alpha = caps.AlphaModes[0] // a browser's canvas knows no "auto"
	}
	if err := d.screen.init(d); err != nil {
		d.mu.Unlock()
		d.Close()
		d.mu.Lock()
		return nil, err
	}
	if err := d.resize(width, height); err != nil {
		d.mu.Unlock()
		d.Close()
		d.mu.Lock()
		return nil, err
	}
	return d, nil
}

// screen presents canvases on the device's surface: a canvas buffer is
// copied into a texture and drawn, scaled to fit, by a render pipeline.
type screen struct {
	format     wgpu.TextureFormat
	alpha      wgpu.CompositeAlphaMode
	configured bool // the surface is configured, w×h
	w, h       int
	tex        *wgpu.Texture
	view       *wgpu.TextureView
	tw, th     int
	sampler    *wgpu.Sampler
	module     *wgpu.ShaderModule
	pipeline   *wgpu.RenderPipeline
	group      *wgpu.BindGroup
}

// srgb reports whether the surface encodes sRGB: the canvas texture then
// decodes it, so that its pixels reach the screen unchanged.
func (s *screen) srgb() bool {
	return s.format == wgpu.TextureFormatBGRA8UnormSrgb || s.format == wgpu.TextureFormatRGBA8UnormSrgb
}

func (s *screen) init(d *Device) error {
	src, err := shaders.Source("present", nil, nil)
	if err != nil {
		return err
	}
	if s.module, err = d.dev.TryCreateShaderModule(&wgpu.ShaderModuleDescriptor{Label: "present", WGSLSource: &wgpu.ShaderSourceWGSL{Code: src}}); err != nil {
		return fmt.Errorf("webgpu: present shader: %v", err)
	}
	s.pipeline, err = d.dev.TryCreateRenderPipeline(&wgpu.RenderPipelineDescriptor{
		Label:       "present",
		Vertex:      wgpu.VertexState{Module: s.module, EntryPoint: "vs"},
		Fragment:    &wgpu.FragmentState{Module: s.module, EntryPoint: "fs", Targets: []wgpu.ColorTargetState{{Format: s.format, Blend: &wgpu.BlendStateReplace, WriteMask: wgpu.ColorWriteMaskAll}}},
		Primitive:   wgpu.PrimitiveState{Topology: wgpu.PrimitiveTopologyTriangleList, FrontFace: wgpu.FrontFaceCCW},
		Multisample: wgpu.MultisampleState{Count: 1, Mask: 0xffffffff},
	})
	if err != nil {
		return fmt.Errorf("webgpu: present pipeline: %v", err)
	}
	s.sampler, err = d.dev.TryCreateSampler(&wgpu.SamplerDescriptor{Label: "present", AddressModeU: wgpu.AddressModeClampToEdge, AddressModeV: wgpu.AddressModeClampToEdge,
		AddressModeW: wgpu.AddressModeClampToEdge, MagFilter: wgpu.FilterModeLinear, MinFilter: wgpu.FilterModeLinear, MipmapFilter: wgpu.MipmapFilterModeNearest,
		LodMaxClamp: 32, MaxAnisotropy: 1})
	if err != nil {
		return fmt.Errorf("webgpu: present sampler: %v", err)
	}
	return nil
}

func (s *screen) release() {
	if s == nil {
		return
	}
	s.releaseTexture()
	if s.sampler != nil {
		s.sampler.Release()
	}
	if s.pipeline != nil {
		s.pipeline.Release()
	}
	if s.module != nil {
		s.module.Release()
	}
}

func (s *screen) releaseTexture() {
	if s.group != nil {
		s.group.Release()
		s.group = nil
	}
	if s.view != nil {
		s.view.Release()
		s.view = nil
	}
	if s.tex != nil {
		s.tex.Release()
		s.tex = nil
	}
}

// Resize makes the swap chain width×height pixels (the window's
// framebuffer after a resize). A zero size (a minimised window) is kept
// until the next resize and presents nothing.
func (d *Device) Resize(width, height int) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.resize(width, height)
}

func (d *Device) resize(width, height int) error {
	s := d.screen
	if s == nil {
		return fmt.Errorf("webgpu: %s has no surface (open it with OpenSurface)", d.id)
	}
	s.w, s.h = width, height
	s.configured = false
	if width <= 0 || height <= 0 {
		return nil
	}
	d.surface.Configure(d.dev, &wgpu.SurfaceConfiguration{Usage: wgpu.TextureUsageRenderAttachment, Format: s.format,
		Width: uint32(width), Height: uint32(height), PresentMode: wgpu.PresentModeFifo, AlphaMode: s.alpha})
	s.configured = true
	return nil
}

// Present shows canvas, an int32 buffer of h×w packed RGBA pixels (see
// device.DrawOp), in the window, scaled to fit with its aspect kept, after
// the work recorded before it: the copy and the drawing run on the GPU,
// with no round trip through the CPU. The width times 4 must be a multiple
// of 256 bytes (WebGPU's rule for copies into textures).
func (d *Device) Present(canvas device.Buffer, w, h int) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.screen
	if s == nil {
		return fmt.Errorf("webgpu: %s has no surface (open it with OpenSurface)", d.id)
	}
	if w*4%256 != 0 || w <= 0 || h <= 0 {
		return fmt.Errorf("webgpu: Present of a %d×%d canvas; its width must be a positive multiple of 64 pixels", w, h)
	}
	c := d.buf(canvas)
	if c.dt != device.Int32 || c.n != w*h {
		return fmt.Errorf("webgpu: Present of a %v buffer of %d elements as a %d×%d canvas; want int32 pixels", c.dt, c.n, w, h)
	}
	if !s.configured || !d.ok() {
		return d.report()
	}
	if err := s.texture(d, w, h); err != nil {
		return err
	}
	st, err := d.surface.TryGetCurrentTexture()
	frame, ok := st.Get()
	if err != nil || !ok || frame == nil {
		// Outdated or lost after a resize: configure the surface again.
		return d.resize(s.w, s.h)
	}
	view, err := frame.TryCreateView(nil)
	if err != nil {
		return fmt.Errorf("webgpu: a view of the window's texture: %v", err)
	}
	defer view.Release()
	enc := d.encoderFor()
	if enc == nil {
		return d.report()
	}
	if c.b == nil {
		d.fail(errFreed("present"))
		return d.report()
	}
	err = enc.TryCopyBufferToTexture(&wgpu.TexelCopyBufferInfo{Buffer: c.b, Layout: wgpu.TexelCopyBufferLayout{BytesPerRow: uint32(4 * w), RowsPerImage: uint32(h)}},
		&wgpu.TexelCopyTextureInfo{Texture: s.tex, Aspect: wgpu.TextureAspectAll}, &wgpu.Extent3D{Width: uint32(w), Height: uint32(h), DepthOrArrayLayers: 1})
	if err != nil {
		d.fail(fmt.Errorf("webgpu: copying the canvas to the screen: %v", err))
		return d.report()
	}
	// Letterbox: the largest rectangle of the canvas's aspect.
	scale := math.Min(float64(s.w)/float64(w), float64(s.h)/float64(h))
	vw, vh := float64(w)*scale, float64(h)*scale
	bg := wgpu.Color{R: 24.0 / 255, G: 26.0 / 255, B: 33.0 / 255, A: 1}
	if s.srgb() {
		bg = wgpu.Color{R: linear(bg.R), G: linear(bg.G), B: linear(bg.B), A: 1}
	}
	pass, err := enc.TryBeginRenderPass(&wgpu.RenderPassDescriptor{ColorAttachments: []wgpu.RenderPassColorAttachment{{
		View: view, LoadOp: wgpu.LoadOpClear, StoreOp: wgpu.StoreOpStore, ClearValue: bg}}})
	if err != nil {
		d.fail(fmt.Errorf("webgpu: drawing the canvas on the screen: %v", err))
		return d.report()
	}
	setViewport(pass, float32((float64(s.w)-vw)/2), float32((float64(s.h)-vh)/2), float32(vw), float32(vh))
	pass.SetPipeline(s.pipeline)
	pass.SetBindGroup(0, s.group, nil)
	pass.Draw(3, 1, 0, 0)
	err = pass.TryEnd()
	pass.Release()
	if err != nil {
		d.fail(fmt.Errorf("webgpu: drawing the canvas on the screen: %v", err))
	}
	d.labels = append(d.labels, "present")
	d.flush()
	if err := d.report(); err != nil {
		return err
	}
	d.surface.Present()
	return nil
}

// linear converts an sRGB-encoded channel to linear light.
func linear(c float64) float64 {
	if c <= 0.04045 {
		return c / 12.92
	}
	return math.Pow((c+0.055)/1.055, 2.4)
}

// texture makes the canvas texture w×h, with its bind group.
func (s *screen) texture(d *Device, w, h int) error {
	if s.tex != nil && s.tw == w && s.th == h {
		return nil
	}
	s.releaseTexture()
	format := wgpu.TextureFormatRGBA8Unorm
	if s.srgb() {
		format = wgpu.TextureFormatRGBA8UnormSrgb
	}
	var err error
	s.tex, err = d.dev.TryCreateTexture(&wgpu.TextureDescriptor{Label: "canvas", Usage: wgpu.TextureUsageCopyDst | wgpu.TextureUsageTextureBinding,
		Dimension: wgpu.TextureDimension2D, Size: wgpu.Extent3D{Width: uint32(w), Height: uint32(h), DepthOrArrayLayers: 1},
		Format: format, MipLevelCount: 1, SampleCount: 1})
	if err != nil {
		return fmt.Errorf("webgpu: a %d×%d canvas texture: %v", w, h, err)
	}
	if s.view, err = s.tex.TryCreateView(nil); err != nil {
		return fmt.Errorf("webgpu: canvas texture view: %v", err)
	}
	layout := s.pipeline.GetBindGroupLayout(0)
	defer layout.Release()
	s.group, err = d.dev.TryCreateBindGroup(&wgpu.BindGroupDescriptor{Label: "present", Layout: layout, Entries: []wgpu.BindGroupEntry{
		{Binding: 1, TextureView: s.view}, {Binding: 2, Sampler: s.sampler}}})
	if err != nil {
		return fmt.Errorf("webgpu: present bind group: %v", err)
	}
	s.tw, s.th = w, h
	return nil
}
