//go:build js

package webgpu_test

import (
	"errors"
	"syscall/js"
	"testing"

	_ "github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/device/webgpu"
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
