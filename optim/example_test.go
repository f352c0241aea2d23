package optim_test

import (
	"fmt"
	"log"

	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/optim"
	"github.com/extensor/extensor/tensor"
)

func ExampleAdamW() {
	dev := cpu.New()
	// Minimise (w − 3)² from w = 0.
	w := autograd.Leaf(tensor.Must(tensor.FromFloat32(dev, []float32{0})), true)
	three := autograd.Leaf(tensor.Must(tensor.FromFloat32(dev, []float32{3})), false)
	opt := optim.AdamW([]*autograd.Var{w}, 0.1, 0)
	defer opt.Release()
	for range 200 {
		d := ops.Sub(w, three)
		loss := ops.Sum(ops.Mul(d, d))
		if err := loss.Backward(); err != nil {
			log.Fatal(err)
		}
		optim.ClipGradNorm([]*autograd.Var{w}, 10).Release()
		opt.Step()
		opt.ZeroGrad()
	}
	v, err := w.Value().Float32s()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("w = %.2f\n", v[0])
	// Output:
	// w = 3.00
}

func ExampleScaler() {
	dev := cpu.New()
	// Minimise (w − 3)² with dynamic loss scaling: the first step's
	// scaled gradient overflows float32 and is skipped, the scale backed
	// off on the device, and the next steps fit.
	w := autograd.Leaf(tensor.Must(tensor.FromFloat32(dev, []float32{0})), true)
	three := autograd.Leaf(tensor.Must(tensor.FromFloat32(dev, []float32{3})), false)
	opt := optim.Adam([]*autograd.Var{w}, 0.1)
	defer opt.Release()
	scaler := &optim.Scaler{Scale: 1e38, Growth: 2, Backoff: 0.125, Interval: 1000}
	defer scaler.Release()
	for range 200 {
		d := ops.Sub(w, three)
		loss := ops.Sum(ops.Mul(d, d))
		if err := scaler.ScaleLoss(loss).Backward(); err != nil {
			log.Fatal(err)
		}
		scaler.Unscale(opt) // the true gradients, to clip
		optim.ClipGradNorm([]*autograd.Var{w}, 10).Release()
		if err := scaler.Step(opt); err != nil {
			log.Fatal(err)
		}
		opt.ZeroGrad()
	}
	v, err := w.Value().Float32s()
	if err != nil {
		log.Fatal(err)
	}
	scale, skipped, err := scaler.Stats()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("w = %.2f, scale %.3g, %d steps skipped\n", v[0], scale, skipped)
	// Output:
	// w = 3.00, scale 1.25e+37, 1 steps skipped
}
