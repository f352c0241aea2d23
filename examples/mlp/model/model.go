package model

import (
	"math"

	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/dataset/fashionmnist"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/optim"
	"github.com/extensor/extensor/tensor"
)

// MLP is a two-layer perceptron: logits = relu(x·W1 + b1)·W2 + b2.
type MLP struct {
	W1, B1, W2, B2 *tensor.Tensor
	one            *tensor.Tensor  // the upstream gradient of the loss
	params         []*autograd.Var // the weights as tape leaves, made once
}

// New returns an MLP with He-initialised weights (N(0, 2/fan_in), drawn
// with seed) and zero biases, on dev in float32.
func New(dev device.Device, in, hidden, out int, seed uint64) (*MLP, error) {
	m := &MLP{}
	var err error
	if m.W1, err = tensor.Normal(dev, device.Float32, 0, math.Sqrt(2/float64(in)), seed, in, hidden); err != nil {
		return nil, err
	}
	if m.B1, err = tensor.Zeros(dev, device.Float32, hidden); err != nil {
		return nil, err
	}
	if m.W2, err = tensor.Normal(dev, device.Float32, 0, math.Sqrt(2/float64(hidden)), seed+1, hidden, out); err != nil {
		return nil, err
	}
	if m.B2, err = tensor.Zeros(dev, device.Float32, out); err != nil {
		return nil, err
	}
	if m.one, err = tensor.Scalar(dev, device.Float32, 1); err != nil {
		return nil, err
	}
	return m, nil
}

// Release frees the parameters.
func (m *MLP) Release() {
	for _, t := range []*tensor.Tensor{m.W1, m.B1, m.W2, m.B2, m.one} {
		t.Release()
	}
}

// activations are the forward pass's intermediate tensors.
type activations struct {
	z1, h1, a1, z2, logits *tensor.Tensor
}

func (a *activations) release() {
	for _, t := range []*tensor.Tensor{a.z1, a.h1, a.a1, a.z2, a.logits} {
		t.Release()
	}
}

func (m *MLP) forward(x *tensor.Tensor) *activations {
	a := &activations{}
	a.z1 = ops.MatMul(x, m.W1)
	a.h1 = ops.Add(a.z1, m.B1)
	a.a1 = ops.Relu(a.h1)
	a.z2 = ops.MatMul(a.a1, m.W2)
	a.logits = ops.Add(a.z2, m.B2)
	return a
}

// Logits returns the network's output for the N×in batch x.
func (m *MLP) Logits(x *tensor.Tensor) *tensor.Tensor {
	a := m.forward(x)
	logits := a.logits
	a.logits = nil
	a.release()
	return logits
}

// Predict returns the class the network predicts for each row of x: the
// index of its largest logit.
func (m *MLP) Predict(x *tensor.Tensor) ([]int32, error) {
	logits := m.Logits(x)
	am := ops.ArgMaxAxis(logits, 1, false)
	logits.Release()
	defer am.Release()
	return am.Int32s()
}

// Accuracy returns the fraction of set the network classifies right,
// evaluated in batches of 1000 on the device of its weights.
func (m *MLP) Accuracy(set *fashionmnist.Set) (float64, error) {
	const batch = 1000
	feat := set.Features()
	xb := make([]float32, batch*feat)
	yb := make([]int32, batch)
	right := 0
	for lo := 0; lo < set.N; lo += batch {
		n := set.Batch(lo, batch, xb, yb)
		x, err := tensor.FromFloat32(m.W1.Device(), xb[:n*feat], n, feat)
		if err != nil {
			return 0, err
		}
		pred, err := m.Predict(x)
		x.Release()
		if err != nil {
			return 0, err
		}
		for i, p := range pred {
			if p == yb[i] {
				right++
			}
		}
	}
	return float64(right) / float64(set.N), nil
}

// Step runs one SGD step with learning rate lr on the batch x with int32
// labels y, and returns the batch's mean cross-entropy loss (0-D).
func (m *MLP) Step(x, y *tensor.Tensor, lr float64) (loss *tensor.Tensor) {
	a := m.forward(x)
	defer a.release()
	loss = ops.SoftmaxCrossEntropy(a.logits, y)
	dlogits := ops.SoftmaxCrossEntropyBackward(a.logits, y, m.one)
	dz2, db2 := ops.AddBackward(a.z2, m.B2, dlogits)
	da1, dw2 := ops.MatMulBackward(a.a1, m.W2, dz2)
	dh1 := ops.ReluBackward(a.h1, da1)
	dz1, db1 := ops.AddBackward(a.z1, m.B1, dh1)
	dw1 := ops.MatMulBackwardB(x, m.W1, dz1) // the input needs no gradient
	ops.SGD(m.W1, dw1, lr)
	ops.SGD(m.B1, db1, lr)
	ops.SGD(m.W2, dw2, lr)
	ops.SGD(m.B2, db2, lr)
	for _, t := range []*tensor.Tensor{dlogits, dz2, db2, da1, dw2, dh1, dz1, db1, dw1} {
		t.Release()
	}
	return loss
}

// Params returns W1, B1, W2 and B2 as leaves of the tape that share the
// model's tensors, so that an optimiser over them updates the model.
func (m *MLP) Params() []*autograd.Var {
	if m.params == nil {
		for _, t := range []*tensor.Tensor{m.W1, m.B1, m.W2, m.B2} {
			m.params = append(m.params, autograd.Leaf(t, true))
		}
	}
	return m.params
}

// TapeStep is Step through the tape: the forward pass recorded, Backward,
// and one step of opt (which must be over Params). It returns the loss.
func (m *MLP) TapeStep(x, y *tensor.Tensor, opt *optim.Optimizer) *tensor.Tensor {
	p := m.Params()
	h := ops.Relu(ops.Add(ops.MatMul(autograd.Leaf(x, false), p[0]), p[1]))
	logits := ops.Add(ops.MatMul(h, p[2]), p[3])
	loss := ops.CrossEntropyLoss(logits, autograd.Leaf(y, false), ops.MeanReduction)
	if err := loss.Backward(); err != nil {
		// Only misuse reaches here (the graph is fresh and the loss 0-D).
		panic(err)
	}
	opt.Step()
	opt.ZeroGrad()
	return loss.Value()
}
