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
