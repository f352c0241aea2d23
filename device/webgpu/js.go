//go:build js

package webgpu

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"syscall/js"
	"unsafe"

	"github.com/extensor/extensor/device"
	"github.com/oliverbestmann/webgpu/jsx"
	"github.com/oliverbestmann/webgpu/wgpu"
)

// What differs in the browser's WebGPU (GOOS=js) from wgpu-native
// (native.go): the binding's descriptors and encoders there lack a few
// fields and methods.

// newInstance returns the browser's WebGPU (navigator.gpu), or an error
// wrapping device.ErrUnavailable where the JavaScript runtime has none
// (Node.js, a browser without WebGPU).
func newInstance() (*wgpu.Instance, error) {
	nav := js.Global().Get("navigator")
	if !nav.Truthy() || !nav.Get("gpu").Truthy() {
		return nil, fmt.Errorf("webgpu: this JavaScript runtime has no WebGPU (navigator.gpu): %w", device.ErrUnavailable)
	}
	return wgpu.CreateInstance(nil), nil
}

// watchErrors records the device's uncaptured errors (its
// "uncapturederror" events), which asyncErrors returns: in the browser,
// validation errors (a shader that does not compile, a pipeline or bind
// group that is invalid) arrive asynchronously, after the binding's Try
// functions have reported success, and a read of the work they spoilt
// gives zeros.
func (d *Device) watchErrors() error {
	dev, ok := jsValue(d.dev)
	if !ok {
		return fmt.Errorf("webgpu: the browser binding's device hides its GPUDevice: its errors could not be watched: %w", device.ErrUnavailable)
	}
	d.jsErrs = &jsErrors{}
	d.jsErrs.fn = js.FuncOf(func(_ js.Value, args []js.Value) any {
		msg := "an uncaptured WebGPU error"
		if len(args) > 0 && args[0].Get("error").Truthy() {
			msg = args[0].Get("error").Get("message").String()
		}
		d.jsErrs.mu.Lock()
		d.jsErrs.msgs = append(d.jsErrs.msgs, strings.TrimSpace(msg))
		d.jsErrs.mu.Unlock()
		return nil
	})
	dev.Call("addEventListener", "uncapturederror", d.jsErrs.fn)
	return nil
}

// unwatchErrors removes watchErrors' listener and releases its function
// (Close).
func (d *Device) unwatchErrors() {
	if d.jsErrs == nil {
		return
	}
	if dev, ok := jsValue(d.dev); ok {
		dev.Call("removeEventListener", "uncapturederror", d.jsErrs.fn)
	}
	d.jsErrs.fn.Release()
	d.jsErrs = nil
}

// platform is what a device in the browser holds besides: its
// asynchronous errors.
type platform struct{ jsErrs *jsErrors }

// jsErrors are the error messages of a device in the browser, appended by
// its event listener fn (on the browser's event loop, while the device's
// goroutine may hold d.mu: hence a lock of their own).
type jsErrors struct {
	mu       sync.Mutex
	msgs     []string
	fn       js.Func
	reported bool // an error was reported: later echoes of it are not new
}

// echo marks the browser's messages that repeat an earlier failure ("…
// is invalid due to a previous error"), such as a Submit of a command
// buffer whose encoding failed, which may arrive a batch later.
const echo = "due to a previous error"

// asyncErrors returns the errors the browser has reported since the last
// call, joined; nil if none. Called once the queue has finished the
// batch, by which time the browser has delivered its errors.
func (d *Device) asyncErrors() error {
	e := d.jsErrs
	e.mu.Lock()
	defer e.mu.Unlock()
	msgs := e.msgs
	e.msgs = nil
	var fresh []string
	for _, m := range msgs {
		if !strings.Contains(m, echo) {
			fresh = append(fresh, m)
		}
	}
	switch {
	case len(fresh) > 0:
		msgs = fresh
	case e.reported || len(msgs) == 0:
		return nil
	}
	e.reported = true
	return errors.New(strings.Join(msgs, "; "))
}

// jsValue returns the JavaScript object behind a binding's object (its
// unexported jsValue), and whether it has one.
func jsValue(p any) (js.Value, bool) {
	v := reflect.ValueOf(p)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return js.Value{}, false
	}
	f := v.Elem().FieldByName("jsValue")
	if !f.IsValid() || f.Type() != reflect.TypeOf(js.Value{}) {
		return js.Value{}, false
	}
	return *(*js.Value)(unsafe.Pointer(f.UnsafeAddr())), true
}

// browser is true: this is the browser's WebGPU.
const browser = true

// adapterInfo returns what the browser tells of a (GPUAdapter.info; the
// binding's GetInfo returns nothing): its type is CPU where it is a
// fallback adapter or SwiftShader, which Chromium offers where there is no
// GPU.
func adapterInfo(a *wgpu.Adapter) wgpu.AdapterInfo {
	info := wgpu.AdapterInfo{BackendType: wgpu.BackendTypeWebGPU, AdapterType: wgpu.AdapterTypeUnknown}
	v, ok := jsValue(a)
	if !ok || !v.Get("info").Truthy() {
		return info
	}
	in := v.Get("info")
	str := func(k string) string {
		if s := in.Get(k); s.Type() == js.TypeString {
			return s.String()
		}
		return ""
	}
	info.Vendor, info.Architecture, info.Device, info.Description = str("vendor"), str("architecture"), str("device"), str("description")
	if in.Get("isFallbackAdapter").Truthy() || strings.Contains(strings.ToLower(info.Architecture+info.Description), "swiftshader") {
		info.AdapterType = wgpu.AdapterTypeCPU
	}
	if info.Device == "" {
		info.Device = strings.TrimSpace(info.Vendor + " " + info.Architecture)
	}
	return info
}

// preferredFormat returns the browser's preferred canvas format
// (navigator.gpu.getPreferredCanvasFormat); the binding lists the formats
// a canvas takes, BGRA first.
func preferredFormat() (wgpu.TextureFormat, bool) {
	gpu := js.Global().Get("navigator").Get("gpu")
	if !gpu.Truthy() || gpu.Get("getPreferredCanvasFormat").Type() != js.TypeFunction {
		return 0, false
	}
	switch gpu.Call("getPreferredCanvasFormat").String() {
	case "rgba8unorm":
		return wgpu.TextureFormatRGBA8Unorm, true
	case "bgra8unorm":
		return wgpu.TextureFormatBGRA8Unorm, true
	}
	return 0, false
}

// mapRead maps staging's first size bytes for reading: it waits for the
// browser's mapAsync (the event loop runs meanwhile) and returns its
// rejection's message, which the binding's TryMapAsync drops.
func (d *Device) mapRead(staging *wgpu.Buffer, size uint64) error {
	b, ok := jsValue(staging)
	if !ok {
		return errors.New("the browser binding's buffer hides its GPUBuffer")
	}
	res, ok := jsx.Await(b.Call("mapAsync", uint32(wgpu.MapModeRead), 0, size))
	if !ok {
		msg := res.String()
		if res.Type() == js.TypeObject && res.Get("message").Truthy() {
			msg = res.Get("name").String() + ": " + res.Get("message").String()
		}
		if err := d.asyncErrors(); err != nil {
			msg += " (after: " + err.Error() + ")"
		}
		return errors.New(msg)
	}
	return nil
}

// computePipeline describes a compute pipeline of module's main (the
// browser binding's descriptor has no label).
func computePipeline(_ string, layout *wgpu.PipelineLayout, module *wgpu.ShaderModule) *wgpu.ComputePipelineDescriptor {
	return &wgpu.ComputePipelineDescriptor{Layout: layout,
		Compute: wgpu.ProgrammableStageDescriptor{Module: module, EntryPoint: "main"}}
}

// browserFeatures are the features featureNames asks the browser's adapter
// about: those extensor uses, and a few others worth listing.
var browserFeatures = []wgpu.FeatureName{wgpu.FeatureNameShaderF16, wgpu.FeatureNameSubgroups, wgpu.FeatureNameTimestampQuery,
	wgpu.FeatureNameFloat32Filterable, wgpu.FeatureNameBGRA8UnormStorage}

// featureNames lists the adapter's features among browserFeatures (the
// browser binding cannot enumerate them).
func featureNames(a *wgpu.Adapter) []string {
	var names []string
	for _, f := range browserFeatures {
		if a.HasFeature(f) {
			names = append(names, f.String())
		}
	}
	return names
}

// setViewport leaves the viewport whole: the browser binding's render
// pass cannot set it.
func setViewport(*wgpu.RenderPassEncoder, float32, float32, float32, float32) {}
