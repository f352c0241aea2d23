package gputest

import (
	"errors"
	"os"
	"sync"
	"testing"

	"github.com/extensor/extensor/device"
	_ "github.com/extensor/extensor/device/webgpu" // registers "webgpu"
)

var (
	once   sync.Once
	shared device.Device
	err    error
)

// CI reports whether the tests run under CI (CI=true), where the WebGPU
// half of every test must run.
func CI() bool { return os.Getenv("CI") == "true" }

// Open returns the process-wide WebGPU device, opening it on first use.
// Without an adapter it fails tb under CI and skips tb elsewhere. The
// device stays open for the life of the test binary.
func Open(tb testing.TB) device.Device {
	tb.Helper()
	d, err := Try()
	if err != nil {
		if CI() || !errors.Is(err, device.ErrUnavailable) {
			tb.Fatalf("WebGPU device required (CI=%s): %v", os.Getenv("CI"), err)
		}
		tb.Skipf("no WebGPU adapter, skipping the WebGPU half: %v", err)
	}
	return d
}

// Try returns the process-wide WebGPU device or the error opening it.
func Try() (device.Device, error) {
	once.Do(func() { shared, err = device.Open("webgpu") })
	return shared, err
}

// OrNil returns the WebGPU device, or nil when there is no adapter and the
// tests do not run under CI (under CI it fails tb instead). Use it where a
// test has a CPU half that must run anyway.
func OrNil(tb testing.TB) device.Device {
	tb.Helper()
	d, err := Try()
	if err == nil {
		return d
	}
	if CI() || !errors.Is(err, device.ErrUnavailable) {
		tb.Fatalf("WebGPU device required (CI=%s): %v", os.Getenv("CI"), err)
	}
	tb.Logf("no WebGPU adapter, the WebGPU half is not run: %v", err)
	return nil
}
