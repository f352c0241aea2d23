//go:build cgo || js

package webgpu

import (
	"fmt"

	"github.com/oliverbestmann/webgpu/wgpu"
)

// The open batch keeps one compute pass open across its dispatches (a pass
// per dispatch cost microseconds each), ended before any other command
// (copies, render passes) and before the batch is submitted. Bind groups
// are cached by kernel and bound buffers, since pooled buffers come back
// in the same roles step after step; a cached bind group is released with
// any buffer it binds.

// maxBindGroups bounds the bind group cache; past it the cache is emptied
// (after ending the pass, which may still use its entries).
const maxBindGroups = 4096

// maxBound is the most bindings a cached bind group has after the
// parameters; kernels with more are bound without the cache.
const maxBound = 8

// bgEntry is one buffer binding of a bind group's key.
type bgEntry struct {
	b         *wgpu.Buffer
	off, size uint64
}

// bgKey identifies a bind group: its kernel and buffer bindings.
type bgKey struct {
	k *kernel
	n int
	e [maxBound]bgEntry
}

// bindGroups is the bind group cache.
type bindGroups struct {
	m     map[bgKey]*wgpu.BindGroup
	byBuf map[*wgpu.Buffer][]bgKey
	// once are the uncached bind groups of the open pass, released when it
	// ends.
	once []*wgpu.BindGroup
}

// bindGroup returns the bind group of k with the parameter slot at binding
// 0 and bound after it, from the cache where it can.
func (d *Device) bindGroup(k *kernel, bound []wgpu.BindGroupEntry) (*wgpu.BindGroup, error) {
	key, cacheable := bgKey{k: k, n: len(bound)}, len(bound) <= maxBound
	for i, e := range bound {
		if e.Buffer == nil || !cacheable {
			cacheable = false
			break
		}
		key.e[i] = bgEntry{e.Buffer, e.Offset, e.Size}
	}
	if cacheable {
		if bg, ok := d.bgs.m[key]; ok {
			return bg, nil
		}
	}
	entries := make([]wgpu.BindGroupEntry, 0, 1+len(bound))
	entries = append(entries, wgpu.BindGroupEntry{Binding: 0, Buffer: d.paramBuf, Size: paramSlot})
	entries = append(entries, bound...)
	bg, err := d.dev.TryCreateBindGroup(&wgpu.BindGroupDescriptor{Label: k.name, Layout: k.layout, Entries: entries})
	if err != nil {
		return nil, err
	}
	if !cacheable {
		d.bgs.once = append(d.bgs.once, bg)
		return bg, nil
	}
	if len(d.bgs.m) >= maxBindGroups {
		d.endPass()
		d.releaseBindGroups()
	}
	if d.bgs.m == nil {
		d.bgs.m = map[bgKey]*wgpu.BindGroup{}
		d.bgs.byBuf = map[*wgpu.Buffer][]bgKey{}
	}
	d.bgs.m[key] = bg
	for _, e := range key.e[:key.n] {
		d.bgs.byBuf[e.b] = append(d.bgs.byBuf[e.b], key)
	}
	return bg, nil
}

// forget releases the cached bind groups that bind b, before b is
// released.
func (d *Device) forget(b *wgpu.Buffer) {
	keys, ok := d.bgs.byBuf[b]
	if !ok {
		return
	}
	delete(d.bgs.byBuf, b)
	for _, key := range keys {
		if bg, ok := d.bgs.m[key]; ok {
			bg.Release()
			delete(d.bgs.m, key)
		}
	}
}

// releaseBindGroups empties the cache.
func (d *Device) releaseBindGroups() {
	for _, bg := range d.bgs.m {
		bg.Release()
	}
	d.bgs.m, d.bgs.byBuf = nil, nil
}

// passFor returns the open batch's compute pass, beginning it (and the
// batch) if need be; nil after recording a failure.
func (d *Device) passFor() *wgpu.ComputePassEncoder {
	if d.pass != nil {
		return d.pass
	}
	enc := d.openEncoder()
	if enc == nil {
		return nil
	}
	var desc *wgpu.ComputePassDescriptor
	if d.prof.stamps() {
		desc = d.prof.passStamps()
	}
	d.pass = enc.BeginComputePass(desc)
	d.passFrom = len(d.labels)
	return d.pass
}

// endPass ends the open compute pass, if any, reporting whether the
// batch is still valid. A validation error in the pass names its
// kernels and leaves the encoder invalid: the next flush drops it.
func (d *Device) endPass() bool {
	if d.pass == nil {
		return true
	}
	err := d.pass.TryEnd()
	d.pass.Release()
	d.pass = nil
	for _, bg := range d.bgs.once {
		bg.Release()
	}
	clear(d.bgs.once)
	d.bgs.once = d.bgs.once[:0]
	if err != nil {
		d.fail(fmt.Errorf("webgpu: %s: %v", d.batchLabels(d.passFrom), err))
		return false
	}
	return true
}
