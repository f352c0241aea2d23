package nn_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/nn"
	"github.com/extensor/extensor/tensor"
)

// TestPositions counts each left-padded row's positions from its first
// token, as transformers' position_ids; Attend refuses paddings that are
// not one a sequence, before it grows the cache.
func TestPositions(t *testing.T) {
	got := nn.Positions{Start: 2, Pads: []int{0, 3}}.IDs(2, 2)
	if want := []int32{2, 3, 0, 0}; !slices.Equal(got, want) {
		t.Errorf("IDs: %v; want %v", got, want)
	}
	dev := cpu.New()
	q := tensor.Must(tensor.Zeros(dev, device.Float32, 2, 1, 1, 4))
	var c nn.KVCache
	err := tensor.Maybe(func() { c.Attend(autograd.Leaf(q, false), q, q, true, []int{1}, 0) })
	if !errors.Is(err, tensor.ErrArgument) || c.Len() != 0 {
		t.Errorf("Attend with 1 padding for 2 sequences: %v, cache of %d; want ErrArgument and an empty cache", err, c.Len())
	}
}
