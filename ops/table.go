package ops

import (
	"math"

	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/tensor"
)

// Op describes one operation, once: its name, the WGSL kernel family that
// runs it, its conventions, its forward and backward functions and the
// cases on which the parity suite checks it. The parity suite, the
// coverage table in docs and autograd all read the table of Ops that
// Table returns; an op missing from it is missing.
//
// Each Op of the table is an exported var named after it, the op's handle
// (ExpOp, SoftplusOp), by which autograd.Apply records it. The table's Ops
// are shared: do not modify them.
type Op struct {
	Name   string // the op's row in the coverage table, e.g. "exp"
	Family string // the WGSL kernel family: a file of package shaders, e.g. "unary" (two, comma-separated, for conv2d)
	Doc    string // the op's conventions, in a sentence or two
	// Kernel names an elementwise op's kernel (a device.UnaryOp): the
	// WGSL function op_KERNEL in shaders/unary.wgsl, its gradient
	// op_KERNEL_grad and its CPU twin in package cpu. A test checks that
	// each exists and that every WGSL function belongs to an op.
	Kernel string

	// Forward computes the op's output from its inputs and attributes.
	Forward func(in []*tensor.Tensor, a Attrs) *tensor.Tensor
	// Backward returns the gradient of each input given the upstream
	// gradient g (nil for an int32 input). A nil Backward means the op has
	// no gradient (argmax, an in-place update).
	Backward func(in []*tensor.Tensor, g *tensor.Tensor, a Attrs) []*tensor.Tensor
	// Save, when set, is Forward that also keeps what Backward would
	// otherwise compute again (conv2d's im2col columns). A tape calls it
	// instead of Forward when it records the op for a gradient, hands
	// what it kept to Backward in a Backprop and releases it once
	// backward has consumed it; Backward must leave it unchanged (a
	// retained graph runs backward again).
	Save func(in []*tensor.Tensor, a Attrs) (*tensor.Tensor, *Saved)
	// Grad is Backward written in ops of the table, which a tape can
	// record to differentiate the gradient again (second-order
	// gradients). nil: the op's gradient cannot be differentiated.
	Grad Rule

	// Cases are the parity cases: inputs, their domains and attributes.
	Cases []Case
}

// Saved holds what an op's Save kept for its Backward: tensors, in the
// op's own order, or a device's buffers (a device.Convolver's). A nil
// *Saved holds nothing.
type Saved struct {
	tensors []*tensor.Tensor
	buffers []device.Buffer
	dev     device.Device // the buffers' device
}

// Len returns the number of tensors and buffers kept.
func (s *Saved) Len() int {
	if s == nil {
		return 0
	}
	return len(s.tensors) + len(s.buffers)
}

// Release releases what was kept (device memory, for determinism: the
// garbage collector would free it too).
func (s *Saved) Release() {
	if s == nil {
		return
	}
	for _, t := range s.tensors {
		t.Release()
	}
	for _, b := range s.buffers {
		s.dev.Free(b)
	}
	s.tensors, s.buffers = nil, nil
}

// Case is one parity check of an op.
type Case struct {
	Name   string // e.g. "(3,1,5),(3,4,5)"
	Inputs []Input
	Attrs  Attrs
	// RTol and ATol override the tolerances against CPU float64; FDATol
	// the absolute tolerance against finite differences.
	RTol, ATol, FDATol float64
	// NoFD skips finite differences: cases too large for them, or at
	// points where the op is not differentiable.
	NoFD bool
}

// Input describes one input of a case.
type Input struct {
	Shape  []int
	Int    bool // an int32 input (class indices): no gradient
	Domain Domain
	// NoFD: this input's gradient is not checked by finite differences
	// (an integer exponent of a negative base, say).
	NoFD bool
	// NoGrad: a float input the op does not differentiate (a loss's class
	// weights): Backward returns nil for it.
	NoGrad bool
}

// Domain tells the parity suite how to draw an input's values.
type Domain struct {
	Lo, Hi   float64   // uniform in [Lo, Hi); both 0: [−1, 1)
	Integers bool      // rounded down to integers (ties, integer exponents)
	Kinks    []float64 // points to stay Gap away from, where the op is not differentiable
	Gap      float64
	Classes  int       // int32 class indices in [0, Classes)
	Values   []float64 // these values, repeated in order (special values, ties)
}

// Reduction says how a loss reduces its per-element values.
type Reduction uint8

// The reductions of a loss. The zero value is MeanReduction, as in PyTorch.
const (
	MeanReduction Reduction = iota // the mean over the elements: a 0-D tensor
	SumReduction                   // the sum: a 0-D tensor
	NoReduction                    // the per-element (or per-row) losses
)

// String returns "mean", "sum" or "none".
func (r Reduction) String() string {
	switch r {
	case MeanReduction:
		return "mean"
	case SumReduction:
		return "sum"
	case NoReduction:
		return "none"
	}
	return "reduction?"
}

// Table returns every op, in the coverage table's order.
func Table() []*Op { return append([]*Op(nil), catalogue...) }

// Lookup returns the op named name, or nil.
func Lookup(name string) *Op {
	for _, op := range catalogue {
		if op.Name == name {
			return op
		}
	}
	return nil
}

// Special values that every elementwise op is checked on: NaN, ±Inf, ±0,
// huge and tiny magnitudes, and ordinary numbers. Subnormals are left out:
// GPUs may flush them to zero.
var (
	nan, inf = math.NaN(), math.Inf(1)
	negZero  = math.Copysign(0, -1)
	// finiteSpecials suit ops whose float32 results cannot follow float64
	// at huge or tiny magnitudes (the range reduction of sin, say).
	finiteSpecials = []float64{nan, inf, -inf, 0, math.Copysign(0, -1), 1, -1, 0.5, -0.5, 2, -2, 3, -3, 100, -100}
	specials       = append([]float64{1e30, -1e30, 1e-30, -1e-30}, finiteSpecials...)
)
