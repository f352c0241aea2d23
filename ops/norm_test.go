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
// for x's gradient but not for the g·x̂ beside it (one kernel writes
// both), every gradient fails with ErrOutOfMemory: none is computed from
// an unwritten buffer, and the device works on.
func TestNormBackwardAllocationFailure(t *testing.T) {
	e := newEnv(t)
	x, w, b := e.uniform(-1, 1, 1, 4, 8), e.uniform(-1, 1, 2, 8), e.uniform(-1, 1, 3, 8)
	g := e.uniform(-1, 1, 4, 4, 8)
	dev := e.dev.(*cpu.Device)
	for _, center := range []bool{true, false} {
		// Room for gx (32 float64), not for gxh besides.
		dev.SetMemoryLimit(dev.MemoryInUse() + 8*32)
		var gx, gw, gb *tensor.Tensor
		if center {
			gx, gw, gb = ops.LayerNormBackward(x, []int{8}, w, b, g, 1e-5)
		} else {
			gx, gw = ops.RMSNormBackward(x, []int{8}, w, g, 1e-5)
		}
		dev.SetMemoryLimit(cpu.DefaultMemoryLimit())
		for name, r := range map[string]*tensor.Tensor{"gx": gx, "gw": gw} {
			if err := r.Err(); !errors.Is(err, device.ErrOutOfMemory) {
				t.Errorf("center %v: %s: %v; want ErrOutOfMemory", center, name, err)
			}
			r.Release()
		}
		if gb != nil {
			if _, err := gb.Float64s(); err != nil {
				t.Errorf("b's gradient (the sum of g, no scratch): %v", err)
			}
			gb.Release()
		}
	}
	y := e.keep(ops.LayerNorm(x, []int{8}, w, b, 1e-5))
	if _, err := y.Float64s(); err != nil {
		t.Errorf("layer_norm within the limit again: %v", err)
	}
}
