//go:build js

package webgpu_test

import (
	"errors"
	"strings"
	"syscall/js"
	"testing"

	_ "github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/device/webgpu"
	"github.com/oliverbestmann/webgpu/jsx"
)

// TestOpenWithoutWebGPU checks that where the JavaScript runtime has no
// WebGPU (Node.js: make wasm runs this test there) Open fails with
// ErrUnavailable, naming navigator.gpu, and "auto" opens the CPU.
func TestOpenWithoutWebGPU(t *testing.T) {
	if nav := js.Global().Get("navigator"); nav.Truthy() && nav.Get("gpu").Truthy() {
		t.Skip("this runtime has WebGPU (navigator.gpu): the package's other tests open it")
	}
	if _, err := webgpu.Open(); !errors.Is(err, device.ErrUnavailable) {
		t.Fatalf("Open without navigator.gpu: %v; want ErrUnavailable", err)
	}
	d, err := device.Open("auto")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Name() != "cpu" {
		t.Errorf(`Open("auto") without WebGPU chose %s; want cpu`, d.Name())
	}
}

// TestBrowserAdapter checks that in a browser (make browser) the device
// reads the adapter's GPUAdapter.info, which the binding does not: a
// fallback adapter (Chromium's SwiftShader where there is no GPU) is a CPU
// adapter, and takes the CPU adapters' kernels.
func TestBrowserAdapter(t *testing.T) {
	gpu := js.Global().Get("navigator").Get("gpu")
	if !gpu.Truthy() {
		t.Skip("this runtime has no WebGPU (TestOpenWithoutWebGPU runs here)")
	}
	a, ok := jsx.Await(gpu.Call("requestAdapter"))
	if !ok || !a.Truthy() || !a.Get("info").Truthy() {
		t.Fatalf("requestAdapter: %v", a)
	}
	info := a.Get("info")
	d, err := webgpu.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	s := d.String()
	if arch := info.Get("architecture").String(); arch != "" && !strings.Contains(s, arch) {
		t.Errorf("device %q does not name the adapter's architecture %q", s, arch)
	}
	if fallback := info.Get("isFallbackAdapter").Truthy(); fallback != strings.Contains(s, ", CPU") {
		t.Errorf("device %q; the adapter's isFallbackAdapter is %v: want a CPU adapter exactly then", s, fallback)
	}
}
