//go:build cgo || js

package webgpu

import (
	"fmt"
	"slices"

	"github.com/extensor/extensor/device"
)

// store is how kernels store floating-point elements of a dtype: "f32",
// "f16" (WGSL's f16: shaders.Source's F16) or "packed" (float16 two to a
// 32-bit word, unpacked and packed by the kernels: a kernel's Half), on
// devices without the shader-f16 feature or with EnvF16 set.
type store string

// storeOf returns how the device's kernels store dt.
func (d *Device) storeOf(dt device.DType) store {
	switch {
	case dt != device.Float16:
		return "f32"
	case d.f16:
		return "f16"
	}
	return "packed"
}

func (s store) packed() bool { return s == "packed" }

func (s store) native() bool { return s == "f16" }

// Convert converts src into dst's dtype (float32 and float16). Where the
// kernels read WGSL's f16, it joins the open elementwise chain (fuse.go).
func (d *Device) Convert(dst, src device.Buffer) {
	d.writing(dst)
	defer d.written()
	d.cast(d.buf(dst), d.buf(src))
}

// cast is Convert with the device's mutex held: the cast joins the open
// chain where it can, else runs on its own.
func (d *Device) cast(o, s *buffer) {
	if o.dt != s.dt && d.join(nodeCast, "cast_"+o.dt.String(), -1, o, nil, device.Broadcast{}, []fuseIn{{b: s}}, []*buffer{s}) {
		return
	}
	d.convert(o, s)
}

func (d *Device) convert(o, s *buffer) {
	switch {
	case o.n == 0:
	case o.dt == s.dt:
		d.fail(fmt.Errorf("webgpu: Convert from %v to %v: use Copy", s.dt, o.dt))
	case o.dt == device.Float16 && s.dt == device.Float32, o.dt == device.Float32 && s.dt == device.Float16:
		half := o.dt == device.Float16
		if o.n%8 == 0 {
			// By vec4s, eight values an invocation: on lavapipe, 16M values
			// cast to float16 at 0.45–0.57 Gelem/s (the scalar kernel:
			// 0.26–0.31) and to float32 at 0.60–0.62 (0.13–0.16).
			k := d.kernel(castSpec{ToHalf: half, Vec: true}, false, true)
			d.run(k, groupsOf(o.n/8, 256), castParams{Count: uint32(o.n / 8)}, s, o)
			return
		}
		k := d.kernel(castSpec{ToHalf: half}, false, true)
		if half {
			words := (o.n + 1) / 2
			d.run(k, groupsOf(words, 256), castParams{Count: uint32(words), Values: uint32(o.n)}, s, o)
			return
		}
		d.run(k, groupsOf(o.n, 256), castParams{Count: uint32(o.n)}, s, o)
	default:
		d.fail(fmt.Errorf("webgpu: Convert from %v to %v: the device converts between float32 and float16", s.dt, o.dt))
	}
}

// native reports whether the kernels of a family written over E (see
// shaders.Source) take bufs as they are: their floating-point buffers are
// all float32, or all float16 on a device with WGSL's f16 (int32 ones,
// indices, are read as they are; nil ones are skipped).
func (d *Device) native(bufs ...device.Buffer) bool {
	dt := device.Int32
	for _, b := range bufs {
		if b == nil {
			continue
		}
		switch t := d.buf(b).dt; {
		case t == device.Int32:
		case dt == device.Int32:
			dt = t
		case t != dt:
			return false
		}
	}
	return dt != device.Float16 || d.f16
}

// widen runs op on float32 stand-ins when any of bufs (the first nOut of
// them op's outputs) is float16, a storage format the op's kernel family
// does not read, and reports whether it did: each float16 buffer is
// converted into a float32 scratch buffer, op runs on those in its place,
// and the outputs are converted back. (Outputs are converted in too, for
// kernels that add to what their output holds.) op takes the device's
// lock itself.
func (d *Device) widen(nOut int, op func(bufs []device.Buffer), bufs ...device.Buffer) bool {
	return d.widenAs(nOut, false, op, bufs...)
}

// widenFresh is widen for an op that writes every element of its
// outputs without reading them: their stand-ins start unset.
func (d *Device) widenFresh(nOut int, op func(bufs []device.Buffer), bufs ...device.Buffer) bool {
	return d.widenAs(nOut, true, op, bufs...)
}

// widenAs is widen, converting the outputs in unless fresh.
func (d *Device) widenAs(nOut int, fresh bool, op func(bufs []device.Buffer), bufs ...device.Buffer) bool {
	wide := slices.Clone(bufs)
	half := false
	for i, b := range bufs {
		if b != nil && d.buf(b).dt == device.Float16 {
			half = true
			wide[i] = nil
		}
	}
	if !half {
		return false
	}
	// A buffer given twice (one buffer holding dq, dk and dv) has one
	// stand-in.
	dup := func(i int) bool { return slices.Index(bufs[:i], bufs[i]) >= 0 }
	d.mu.Lock()
	for i, b := range bufs {
		if wide[i] != nil || b == nil {
			continue
		}
		if dup(i) {
			wide[i] = wide[slices.Index(bufs[:i], b)]
			continue
		}
		h := d.buf(b)
		w, err := d.alloc(device.Float32, h.n)
		if err != nil {
			d.fail(fmt.Errorf("webgpu: widening a float16 operand of %d elements to float32: %v", h.n, err))
			for j := range i { // the stand-ins made so far
				if wide[j] != nil && wide[j] != bufs[j] && !dup(j) {
					d.free(d.buf(wide[j]))
				}
			}
			d.mu.Unlock()
			return true
		}
		if !fresh || i >= nOut {
			d.castFor(w, w, h)
		}
		wide[i] = w
	}
	d.mu.Unlock()
	op(wide)
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, b := range bufs {
		if b == nil || wide[i] == b || dup(i) {
			continue
		}
		if i < nOut {
			d.castFor(d.buf(b), d.buf(b), d.buf(wide[i]))
		}
		d.free(d.buf(wide[i]))
	}
	return true
}

// castFor is cast for widenAs: its stand-ins' casts join chains as
// Convert's do (a product's float32 result cast and the activation after
// it one kernel), and a failure the cast records or meets (a failed
// float16 input) fails user, the cast's output or the float16 output its
// stand-in stands for, as a call would.
func (d *Device) castFor(user, o, s *buffer) {
	outs := d.outs
	d.outs = []*resource{user.resource}
	d.cast(o, s)
	d.outs = outs
}

// castParams are the cast family's parameters (shaders/cast.wgsl): Count
// invocations' items (vec4 pairs, words or values) of Values values.
type castParams struct{ Count, Values uint32 }

func (castSpec) params() any { return castParams{} }
