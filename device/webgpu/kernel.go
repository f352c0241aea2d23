//go:build cgo || js

package webgpu

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/shaders"
	"github.com/oliverbestmann/webgpu/wgpu"
)

// maxGroups is WebGPU's limit of workgroups per dimension.
const maxGroups = 65535

// zeroSlot pads a dispatch's parameters to their 256-byte slot.
var zeroSlot [paramSlot]byte

// kernel is a compiled compute pipeline with its bind group layout.
type kernel struct {
	name     string       // specName of its specialisation
	params   reflect.Type // its parameter struct
	module   *wgpu.ShaderModule
	layout   *wgpu.BindGroupLayout
	playout  *wgpu.PipelineLayout
	pipeline *wgpu.ComputePipeline
	kinds    []bindKind // its data bindings' (1, 2, …)
}

// writes reports whether k writes its data binding b.
func (k *kernel) writes(b uint32) bool {
	return b >= 1 && int(b) <= len(k.kinds) && k.kinds[b-1] == storageRW
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

// encoded are a kernel's parameters encoded as words (runItems's chunks).
type encoded []uint32

// words returns a dispatch's parameters as words: params, the kernel's
// parameter struct, encoded (shaders.Words), or encoded already.
// Parameters of another type than the kernel's are a programmer's error,
// and panic.
func (k *kernel) words(params any) []uint32 {
	if w, ok := params.(encoded); ok {
		return w
	}
	if t := reflect.TypeOf(params); t != k.params {
		panic(fmt.Sprintf("webgpu: kernel %s given parameters of type %v; it reads %v", k.name, t, k.params))
	}
	return shaders.Words(params)
}

// kernel returns the pipeline of s's family specialised with s.
// writable tells, for each data binding (1, 2, …), whether the kernel
// writes it. It returns nil after recording a failure.
func (d *Device) kernel(s spec, writable ...bool) *kernel {
	kinds := make([]bindKind, len(writable))
	for i, w := range writable {
		if w {
			kinds[i] = storageRW
		}
	}
	return d.kernelOf(s, kinds...)
}

// bindKind is what a kernel binds at a binding after the parameters.
type bindKind uint8

const (
	storageRO  bindKind = iota // a read-only storage buffer
	storageRW                  // a read-write storage buffer
	textureIn                  // a float texture read with textureLoad
	textureOut                 // an rgba32float storage texture, written
)

// maxBindings bounds a kernel's data bindings (WebGPU's default limits
// allow 8 storage buffers a stage; adapters offer more, which an
// optimiser's step of many parameters binds).
const maxBindings = 32

// kernelKey is a pipeline's key in the device's cache: its
// specialisation and the kinds of its n bindings, all derived from what
// the kernel is compiled from.
type kernelKey struct {
	spec  spec
	kinds [maxBindings]bindKind
	n     int
}

// kernelOf is kernel with the kinds of its bindings (1, 2, …).
func (d *Device) kernelOf(s spec, kinds ...bindKind) *kernel {
	key := kernelKey{spec: s, n: len(kinds)}
	if copy(key.kinds[:], kinds) < len(kinds) {
		panic(fmt.Sprintf("webgpu: kernel %s: %d bindings; at most %d", specName(s), len(kinds), maxBindings))
	}
	if k, ok := d.kernels[key]; ok {
		return k
	}
	if !d.ok() {
		return nil
	}
	name := specName(s)
	k, err := d.compile(name, s, kinds)
	if err != nil {
		if k != nil {
			k.release()
		}
		d.refuse(fmt.Errorf("webgpu: kernel %s: %v", name, err))
		return nil
	}
	d.kernels[key] = k
	return k
}

func (d *Device) compile(key string, s spec, kinds []bindKind) (*kernel, error) {
	if d.compileFault != nil {
		if err := d.compileFault(key); err != nil {
			return nil, err
		}
	}
	params := s.params()
	src, err := shaders.Source(s.family(), s, params)
	if err != nil {
		return nil, err
	}
	if d.enableSubgroups && strings.Contains(src, "subgroup") {
		src = "enable subgroups;\n" + src // WebGPU's feature (browsers); wgpu's native one takes no line
	}
	k := &kernel{name: key, params: reflect.TypeOf(params), kinds: slices.Clone(kinds)}
	k.module, err = d.dev.TryCreateShaderModule(&wgpu.ShaderModuleDescriptor{
		Label:      key,
		WGSLSource: &wgpu.ShaderSourceWGSL{Code: src},
	})
	if err != nil {
		return k, fmt.Errorf("compiling WGSL: %v", err)
	}
	entries := []wgpu.BindGroupLayoutEntry{{
		Binding:    0,
		Visibility: wgpu.ShaderStageCompute,
		Buffer:     wgpu.BufferBindingLayout{Type: wgpu.BufferBindingTypeReadOnlyStorage, HasDynamicOffset: true},
	}}
	for i, kind := range kinds {
		e := wgpu.BindGroupLayoutEntry{Binding: uint32(i + 1), Visibility: wgpu.ShaderStageCompute}
		switch kind {
		case storageRO:
			e.Buffer = wgpu.BufferBindingLayout{Type: wgpu.BufferBindingTypeReadOnlyStorage}
		case storageRW:
			e.Buffer = wgpu.BufferBindingLayout{Type: wgpu.BufferBindingTypeStorage}
		case textureIn:
			e.Texture = wgpu.TextureBindingLayout{SampleType: wgpu.TextureSampleTypeUnfilterableFloat, ViewDimension: wgpu.TextureViewDimension2D}
		case textureOut:
			e.StorageTexture = wgpu.StorageTextureBindingLayout{Access: wgpu.StorageTextureAccessWriteOnly, Format: wgpu.TextureFormatRGBA32Float, ViewDimension: wgpu.TextureViewDimension2D}
		}
		entries = append(entries, e)
	}
	if limit := d.limits.MaxStorageBuffersPerShaderStage; uint32(len(entries)) > limit {
		return k, fmt.Errorf("needs %d storage buffers; the device allows %d", len(entries), limit)
	}
	k.layout, err = d.dev.TryCreateBindGroupLayout(&wgpu.BindGroupLayoutDescriptor{Label: key, Entries: entries})
	if err != nil {
		return k, fmt.Errorf("bind group layout: %v", err)
	}
	k.playout, err = d.dev.TryCreatePipelineLayout(&wgpu.PipelineLayoutDescriptor{Label: key, BindGroupLayouts: []*wgpu.BindGroupLayout{k.layout}})
	if err != nil {
		return k, fmt.Errorf("pipeline layout: %v", err)
	}
	k.pipeline, err = d.dev.TryCreateComputePipeline(computePipeline(key, k.playout, k.module))
	if err != nil {
		return k, fmt.Errorf("compute pipeline: %v", err)
	}
	return k, nil
}

// encoderFor returns the open batch's command encoder for a command other
// than a dispatch, ending the open compute pass, creating the encoder;
// nil after recording a failure.
func (d *Device) encoderFor() *wgpu.CommandEncoder {
	d.flushChain()
	if !d.endPass() {
		d.flush() // drops the invalid batch
	}
	return d.openEncoder()
}

// openEncoder returns the open batch's command encoder, creating it; nil
// after recording a failure.
func (d *Device) openEncoder() *wgpu.CommandEncoder {
	if d.encoder == nil {
		enc, err := d.dev.TryCreateCommandEncoder(nil)
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
func (d *Device) run(k *kernel, groups int, params any, bufs ...*buffer) {
	if k == nil || groups == 0 {
		return
	}
	x, y, err := grid(groups)
	if err != nil {
		d.refuse(fmt.Errorf("webgpu: kernel %s: %v", k.name, err))
		return
	}
	d.dispatch(k, x, y, params, bufs...)
}

// runItems records an elementwise kernel over items of itemBytes bytes
// each, as many as its parameters' first field (or word) counts, the same item i of every buffer, perInv items an
// invocation. Buffers larger than the binding limit are bound a chunk
// at a time, at offsets, one dispatch per chunk.
func (d *Device) runItems(k *kernel, perInv, itemBytes int, params any, bufs ...*buffer) {
	d.runItemsWhole(k, perInv, itemBytes, params, 0, bufs...)
}

// runItemsWhole is runItems where the last whole of bufs are not indexed
// by item (a scalar's buffer): bound whole in every chunk.
func (d *Device) runItemsWhole(k *kernel, perInv, itemBytes int, params any, whole int, bufs ...*buffer) {
	d.runChunks(k, perInv, itemBytes, params, whole, -1, bufs...)
}

// runChunks is runItemsWhole where, with first ≥ 0, the parameters' word
// first holds the index of the dispatch's first item (0 unless chunked;
// a kernel whose values depend on the item's index, as arange's, adds it).
func (d *Device) runChunks(k *kernel, perInv, itemBytes int, params any, whole, first int, bufs ...*buffer) {
	if k == nil || d.tainted(bufs...) {
		return
	}
	words := k.words(params)
	items := int(words[0])
	limit := d.limits.MaxStorageBufferBindingSize
	large := false
	for _, b := range bufs {
		large = large || b.bindSize() > limit
	}
	if !large {
		d.run(k, groupsOf(groupsOf(items, perInv), 256), encoded(words), bufs...)
		return
	}
	// Chunks start at offsets aligned for storage bindings, and at
	// multiples of perInv items.
	align := max(uint64(d.limits.MinStorageBufferOffsetAlignment), 256)
	chunk := int(limit/align*align) / itemBytes / perInv * perInv
	p := slices.Clone(words)
	for start := 0; start < items; start += chunk {
		count := min(chunk, items-start)
		p[0] = uint32(count) // the first field counts the items
		if first >= 0 {
			p[first] = uint32(start)
		}
		off := uint64(start) * uint64(itemBytes)
		entries := make([]wgpu.BindGroupEntry, len(bufs))
		for i, b := range bufs {
			if i >= len(bufs)-whole {
				entries[i] = wgpu.BindGroupEntry{Binding: uint32(i + 1), Buffer: b.b, Size: b.size}
				continue
			}
			size := min(uint64(count)*uint64(itemBytes), b.bindSize()-off)
			entries[i] = wgpu.BindGroupEntry{Binding: uint32(i + 1), Buffer: b.b, Offset: off, Size: min(max(size, 16), b.size-off)}
		}
		x, y, err := grid(groupsOf(groupsOf(count, perInv), 256))
		if err != nil {
			d.refuse(fmt.Errorf("webgpu: kernel %s: %v", k.name, err))
			return
		}
		d.dispatchEntries(k, x, y, 1, encoded(p), entries)
	}
}

// paramSlot returns the offset in the parameter buffer of a slot holding
// params: one written before, or a new one, written when the batch is
// submitted. When the buffer is full, the open batch is submitted and the
// slots are reused: a write to the buffer reaches it after the work
// submitted before.
func (d *Device) paramSlot(params []uint32) uint32 {
	key := d.paramKey[:0]
	for _, w := range params {
		key = binary.LittleEndian.AppendUint32(key, w)
	}
	d.paramKey = key
	if off, ok := d.slots[string(key)]; ok {
		return off
	}
	if int(d.paramFrom)+len(d.params) == paramSlots*paramSlot {
		// The submission records the open chain, whose dispatch reuses
		// d.paramKey: a kernel recorded ahead of the chain keeps its own.
		key = slices.Clone(key)
		d.flush()
		clear(d.slots)
		d.params, d.paramFrom = d.params[:0], 0
	}
	off := d.paramFrom + uint32(len(d.params))
	d.params = append(d.params, zeroSlot[:]...)
	copy(d.params[len(d.params)-paramSlot:], key)
	d.slots[string(key)] = off
	return off
}

// dispatch records one dispatch of k over an x×y grid of workgroups, with
// its parameters in the batch's parameter buffer.
func (d *Device) dispatch(k *kernel, x, y uint32, params any, bufs ...*buffer) {
	d.dispatch3(k, x, y, 1, params, bufs...)
}

// dispatch3 is dispatch over a grid of x×y×z workgroups.
func (d *Device) dispatch3(k *kernel, x, y, z uint32, params any, bufs ...*buffer) {
	if k == nil || x == 0 || y == 0 || z == 0 || !d.ok() || d.tainted(bufs...) {
		return
	}
	var room [maxBound]wgpu.BindGroupEntry // no allocation for the usual counts
	entries := room[:0]
	for i, b := range bufs {
		entries = append(entries, wgpu.BindGroupEntry{Binding: uint32(i + 1), Buffer: b.b, Size: b.bindSize()})
	}
	d.dispatchEntries(k, x, y, z, params, entries)
}

// dispatchEntries is dispatch3 with the bindings after the parameters
// given as entries (buffers or texture views).
func (d *Device) dispatchEntries(k *kernel, x, y, z uint32, ps any, bound []wgpu.BindGroupEntry) {
	if d.chain != nil && d.chain.bindsAny(bound) {
		d.flushChain() // before what follows it
	}
	if k == nil || x == 0 || y == 0 || z == 0 || !d.ok() {
		return
	}
	params := k.words(ps)
	if len(params) > paramWords {
		panic(fmt.Sprintf("webgpu: kernel %s: %d parameter words; at most %d", k.name, len(params), paramWords))
	}
	for j, e := range bound {
		if e.Buffer == nil && e.TextureView == nil && e.Sampler == nil {
			d.refuse(errFreed(k.name))
			return
		}
		if i := slices.IndexFunc(bound[:j], func(f wgpu.BindGroupEntry) bool { return f.Buffer != nil && f.Buffer == e.Buffer }); i >= 0 && (k.writes(e.Binding) || k.writes(bound[i].Binding)) {
			// wgpu-native lets it pass; WebGPU in browsers refuses it (a
			// validation error, the dispatch not run, as here).
			d.fail(fmt.Errorf("webgpu: kernel %s binds one buffer at bindings %d and %d, one of them written: WebGPU forbids a written binding aliasing another", k.name, bound[i].Binding, e.Binding))
			return
		}
		if e.Buffer != nil && e.Size > d.limits.MaxStorageBufferBindingSize {
			d.refuse(fmt.Errorf("webgpu: kernel %s: an operand of %d bytes exceeds the maximum storage buffer binding size of %s, %d bytes (elementwise ops take tensors up to the maximum buffer size, %d bytes): %w",
				k.name, e.Size, d.info, d.limits.MaxStorageBufferBindingSize, d.limits.MaxBufferSize, device.ErrOutOfMemory))
			return
		}
	}
	// Profiled by the GPU's timestamps, each dispatch is a stamped pass of
	// its own (ended below, so none is open here); else by the host's
	// clock, waited for alone.
	stamped := d.prof.stamps()
	if d.prof != nil && !stamped {
		d.wait() // what came before, untimed
		defer d.timed(k.name, time.Now())
	}
	off := d.paramSlot(params) // before the bind group: it may end the pass
	bg, err := d.bindGroup(k, bound)
	if err != nil {
		d.refuse(fmt.Errorf("webgpu: kernel %s: binding buffers: %v", k.name, err))
		return
	}
	pass := d.passFor()
	if pass == nil {
		return
	}
	pass.SetPipeline(k.pipeline)
	pass.SetBindGroup(0, bg, []uint32{off})
	pass.DispatchWorkgroups(x, y, z)
	if stamped {
		d.prof.pending = append(d.prof.pending, k.name)
		d.endPass()
	}
	d.dispatches++
	d.ran++
	d.labels = append(d.labels, k.name)
	if d.dispatches >= BatchSize {
		d.flush()
	}
}

// errFreed is the failure of a kernel or copy given a buffer freed before
// it was recorded: a tensor released on another goroutine while an op on
// it ran.
func errFreed(kernel string) error {
	return fmt.Errorf("webgpu: %s: an operand was freed before the work was recorded (released while an op used it)", kernel)
}
