//go:build !cgo && !js

package webgpu_test

import (
	"errors"
	"testing"

	_ "github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/device"
	_ "github.com/extensor/extensor/device/webgpu"
)

func TestWithoutCgo(t *testing.T) {
	if _, err := device.Open("webgpu"); !errors.Is(err, device.ErrUnavailable) {
		t.Errorf(`Open("webgpu") without cgo: %v; want ErrUnavailable`, err)
	}
	t.Setenv(device.EnvDevice, "")
	d, err := device.Open("auto")
	if err != nil || d.Name() != "cpu" {
		t.Errorf(`Open("auto") without cgo: %v, %v; want cpu`, d, err)
	}
}
