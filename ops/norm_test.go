package ops_test

import (
	"errors"
	"testing"

	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/tensor"
)

// TestNormBackwardAllocationFailure checks that where the device has room
// for x's gradient but not for w's or b's beside it (one kernel writes
// every gradient), every gradient fails with ErrOutOfMemory: none is left
// unwritten as if computed, and the device works on.
func TestNormBackwardAllocationFailure(t *testing.T) {
	e := newEnv(t)
	x, w, b := e.uniform(-1, 1, 1, 4, 8), e.uniform(-1, 1, 2, 8), e.uniform(-1, 1, 3, 8)
	g := e.uniform(-1, 1, 4, 4, 8)
	dev := e.dev.(*cpu.Device)
	for _, c := range []struct {
		center bool
		room   int64 // float64s
	}{
		{true, 32},  // gx, not gw
		{true, 40},  // gx and gw, not gb
		{false, 32}, // gx, not gw
	} {
		center := c.center
		dev.SetMemoryLimit(dev.MemoryInUse() + 8*c.room)
		grads := map[string]*tensor.Tensor{}
		if center {
			grads["gx"], grads["gw"], grads["gb"] = ops.LayerNormBackward(x, []int{8}, w, b, g, 1e-5)
		} else {
			grads["gx"], grads["gw"] = ops.RMSNormBackward(x, []int{8}, w, g, 1e-5)
		}
		dev.SetMemoryLimit(cpu.DefaultMemoryLimit())
		for name, r := range grads {
			if err := r.Err(); !errors.Is(err, device.ErrOutOfMemory) {
				t.Errorf("center %v, room for %d: %s: %v; want ErrOutOfMemory", center, c.room, name, err)
			}
			r.Release()
		}
	}
	y := e.keep(ops.LayerNorm(x, []int{8}, w, b, 1e-5))
	if _, err := y.Float64s(); err != nil {
		t.Errorf("layer_norm within the limit again: %v", err)
	}
}
