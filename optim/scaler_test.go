package optim_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/internal/gputest"
	"github.com/extensor/extensor/nn"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/optim"
	"github.com/extensor/extensor/tensor"
)

// bothDevices returns the CPU device and, where there is one, WebGPU.
func bothDevices(t *testing.T) []device.Device {
	devs := []device.Device{cpu.New()}
	if g := gputest.OrNil(t); g != nil {
		devs = append(devs, g)
	}
	return devs
}

// TestMixedPrecisionTraining trains a small classifier on separable
// synthetic data in float32 and in mixed precision (float16 activations
// and gradients, float32 master weights, dynamic loss scaling) from the
// same initial weights, on both backends: both learn, and their losses
// stay within float16's reach of each other.
func TestMixedPrecisionTraining(t *testing.T) {
	const n, in, classes, steps = 64, 8, 4, 60
	rng := rand.New(rand.NewPCG(3, 4))
	xs := make([]float32, n*in)
	ys := make([]int32, n)
	for i := range n {
		ys[i] = int32(i % classes)
		for j := range in {
			xs[i*in+j] = float32(rng.NormFloat64()*0.5) + float32(btoi(j%classes == int(ys[i])))
		}
	}
	for _, dev := range bothDevices(t) {
		t.Run(dev.Name(), func(t *testing.T) {
			x := tensor.Must(tensor.FromFloat32(dev, xs, n, in))
			y := tensor.Must(tensor.FromInt32(dev, ys))
			train := func(amp bool) (first, last float64, s *optim.Scaler) {
				l1 := must(nn.Linear(dev, device.Float32, in, 16, 1))
				l2 := must(nn.Linear(dev, device.Float32, 16, classes, 2))
				net := nn.Sequential{l1, nn.Relu, l2}
				opt := optim.Adam(net.Params(), 1e-2)
				defer opt.Release()
				s = optim.NewScaler()
				for i := range steps {
					input := autograd.Leaf(x, false)
					if amp {
						input = ops.Cast(input, device.Float16)
					}
					logits := net.Forward(input)
					if amp {
						if logits.Value().DType() != device.Float16 {
							t.Fatalf("mixed-precision logits are %v; want float16", logits.Value().DType())
						}
						logits = ops.Cast(logits, device.Float32)
					}
					loss := ops.CrossEntropyLoss(logits, autograd.Leaf(y, false), ops.MeanReduction)
					v, err := loss.Value().Float64s()
					if err != nil {
						t.Fatal(err)
					}
					if i == 0 {
						first = v[0]
					}
					last = v[0]
					if amp {
						if err := s.ScaleLoss(loss).Backward(); err != nil {
							t.Fatal(err)
						}
						for _, p := range net.Params() {
							if p.Grad().DType() != device.Float32 {
								t.Fatalf("master weight gradient is %v; want float32", p.Grad().DType())
							}
						}
						if err := s.Step(opt); err != nil {
							t.Fatal(err)
						}
					} else {
						if err := loss.Backward(); err != nil {
							t.Fatal(err)
						}
						opt.Step()
					}
					opt.ZeroGrad()
				}
				return first, last, s
			}
			f32first, f32last, _ := train(false)
			f16first, f16last, s := train(true)
			scale, skipped, err := s.Stats()
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("loss float32 %.6f → %.6f, mixed %.6f → %.6f (scale %v, %d skipped)", f32first, f32last, f16first, f16last, scale, skipped)
			if !(f32last < f32first/2) || !(f16last < f16first/2) {
				t.Errorf("did not learn: float32 %v → %v, mixed %v → %v", f32first, f32last, f16first, f16last)
			}
			if math.Abs(f16last-f32last) > 0.05 {
				t.Errorf("final losses: mixed %v, float32 %v; want within 0.05", f16last, f32last)
			}
		})
	}
}

// TestScalerSkipsOverflow checks that a step whose gradients overflow is
// skipped on the device, the parameters untouched, and the scale backed
// off; that good steps grow it; that a skipped step is not counted in
// Adam's bias corrections; and that settings that cannot work panic,
// naming them.
func TestScalerSkipsOverflow(t *testing.T) {
	for _, dev := range bothDevices(t) {
		t.Run(dev.Name(), func(t *testing.T) {
			stats := func(s *optim.Scaler) (float64, int) {
				scale, skipped, err := s.Stats()
				if err != nil {
					t.Fatal(err)
				}
				return scale, skipped
			}
			w := autograd.Leaf(tensor.Must(tensor.FromFloat32(dev, []float32{1, 2, 3}, 3)), true)
			opt := optim.SGD([]*autograd.Var{w}, 0.1, device.StepParams{})
			defer opt.Release()
			s := &optim.Scaler{Scale: 3e38, Growth: 2, Backoff: 0.5, Interval: 2}
			defer s.Release()
			loss := ops.Sum(ops.Mul(w, w)) // gradient 2w·scale: Inf
			if err := s.ScaleLoss(loss).Backward(); err != nil {
				t.Fatal(err)
			}
			if err := s.Step(opt); err != nil {
				t.Fatal(err)
			}
			if scale, skipped := stats(s); skipped != 1 || scale != float64(float32(1.5e38)) {
				t.Fatalf("overflowing step: skipped %d, scale %v; want skipped once, scale halved", skipped, scale)
			}
			if got, _ := w.Value().Float32s(); got[0] != 1 || got[2] != 3 {
				t.Errorf("a skipped step changed the weights: %v", got)
			}
			opt.ZeroGrad()
			s2 := &optim.Scaler{Scale: 4, Growth: 2, Backoff: 0.5, Interval: 2}
			defer s2.Release()
			for range 2 {
				if err := s2.ScaleLoss(ops.Sum(ops.Mul(w, w))).Backward(); err != nil {
					t.Fatal(err)
				}
				if err := s2.Step(opt); err != nil {
					t.Fatal(err)
				}
				opt.ZeroGrad()
			}
			if scale, skipped := stats(s2); scale != 8 || skipped != 0 {
				t.Errorf("after 2 good steps (interval 2): scale %v, %d skipped; want 8, 0", scale, skipped)
			}
			// w − 0.1·2w, twice: the gradients were unscaled.
			if got, _ := w.Value().Float32s(); math.Abs(float64(got[1])-2*0.8*0.8) > 1e-6 {
				t.Errorf("weights after two unscaled steps: %v; want 0.64·w", got)
			}
			for _, bad := range []*optim.Scaler{{Scale: 0, Growth: 2, Backoff: 0.5, Interval: 1}, {Scale: math.Inf(1), Growth: 2, Backoff: 0.5, Interval: 1}, {Scale: math.NaN(), Growth: 2, Backoff: 0.5, Interval: 1}} {
				err := tensor.Maybe(func() { bad.ScaleLoss(ops.Sum(w)) })
				if !errors.Is(err, tensor.ErrArgument) || !strings.Contains(err.Error(), "loss scale") {
					t.Errorf("scale %v: %v; want ErrArgument naming the loss scale", bad.Scale, err)
				}
			}
			err := tensor.Maybe(func() { (&optim.Scaler{Scale: 1, Growth: 2, Backoff: 1, Interval: 1}).ScaleLoss(ops.Sum(w)) })
			if !errors.Is(err, tensor.ErrArgument) || !strings.Contains(err.Error(), "backoff") {
				t.Errorf("backoff 1: %v; want ErrArgument naming the backoff factor", err)
			}
			err = tensor.Maybe(func() { optim.NewScaler().ScaleLoss(ops.Cast(ops.Sum(w), device.Float16)) })
			if !errors.Is(err, tensor.ErrDType) || !strings.Contains(err.Error(), "optim.Scaler.ScaleLoss") {
				t.Errorf("a float16 loss: %v; want ErrDType naming optim.Scaler.ScaleLoss", err)
			}
		})
	}
}

// TestScalerAdamCountsStepsTaken checks that Adam under a scaler whose
// first step overflows takes its second as PyTorch's first (its bias
// corrections counting the steps taken), and that Unscale before Step
// lets the gradients be clipped unscaled.
func TestScalerAdamCountsStepsTaken(t *testing.T) {
	for _, dev := range bothDevices(t) {
		t.Run(dev.Name(), func(t *testing.T) {
			w := autograd.Leaf(tensor.Must(tensor.FromFloat32(dev, []float32{1, -2, 3, 0.5}, 4)), true)
			opt := optim.Adam([]*autograd.Var{w}, 0.1)
			defer opt.Release()
			s := &optim.Scaler{Scale: 1e38, Growth: 2, Backoff: 1e-37, Interval: 100}
			defer s.Release()
			for range 2 { // 2w·1e38 overflows; then 2w·10 does not
				if err := s.ScaleLoss(ops.Sum(ops.Mul(w, w))).Backward(); err != nil {
					t.Fatal(err)
				}
				s.Unscale(opt)
				optim.ClipGradNorm(opt.Params(), 1e30).Release()
				if err := s.Step(opt); err != nil {
					t.Fatal(err)
				}
				opt.ZeroGrad()
			}
			// Adam's first step moves each weight by lr·sign(g) (m̂ = g,
			// v̂ = g²), up to ε.
			got, err := w.Value().Float32s()
			if err != nil {
				t.Fatal(err)
			}
			want := []float64{0.9, -1.9, 2.9, 0.4}
			for i := range want {
				if math.Abs(float64(got[i])-want[i]) > 1e-5 {
					t.Fatalf("weights after a skipped and a taken step: %v; want %v (Adam's first step)", got, want)
				}
			}
			if scale, skipped, err := s.Stats(); err != nil || skipped != 1 || math.Abs(scale-10)/10 > 1e-6 {
				t.Errorf("stats: scale %v, %d skipped, %v; want 10, 1", scale, skipped, err)
			}
			if opt.Steps() != 2 {
				t.Errorf("Steps() = %d; want 2, the steps attempted", opt.Steps())
			}
			// An optimiser that joins the scaler after its skip takes its
			// own first step as Adam's first.
			w2 := autograd.Leaf(tensor.Must(tensor.FromFloat32(dev, []float32{2, -1}, 2)), true)
			opt2 := optim.Adam([]*autograd.Var{w2}, 0.1)
			defer opt2.Release()
			if err := s.ScaleLoss(ops.Sum(ops.Mul(w2, w2))).Backward(); err != nil {
				t.Fatal(err)
			}
			if err := s.Step(opt2); err != nil {
				t.Fatal(err)
			}
			got2, err := w2.Value().Float32s()
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(float64(got2[0])-1.9) > 1e-5 || math.Abs(float64(got2[1])+0.9) > 1e-5 {
				t.Errorf("a later optimiser's first step: %v; want [1.9 -0.9] (Adam's first step)", got2)
			}
			// A plain step after a skipped scaled one is Adam's first.
			w3 := autograd.Leaf(tensor.Must(tensor.FromFloat32(dev, []float32{2, -1}, 2)), true)
			opt3 := optim.Adam([]*autograd.Var{w3}, 0.1)
			defer opt3.Release()
			s3 := &optim.Scaler{Scale: 3e38, Growth: 2, Backoff: 0.5, Interval: 100}
			defer s3.Release()
			if err := s3.ScaleLoss(ops.Sum(ops.Mul(w3, w3))).Backward(); err != nil {
				t.Fatal(err)
			}
			if err := s3.Step(opt3); err != nil {
				t.Fatal(err)
			}
			opt3.ZeroGrad()
			if err := ops.Sum(ops.Mul(w3, w3)).Backward(); err != nil {
				t.Fatal(err)
			}
			opt3.Step()
			got3, err := w3.Value().Float32s()
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(float64(got3[0])-1.9) > 1e-5 || math.Abs(float64(got3[1])+0.9) > 1e-5 {
				t.Errorf("a plain step after a skipped scaled one: %v; want [1.9 -0.9] (Adam's first step)", got3)
			}
			err = tensor.Maybe(func() { _ = s3.Step(opt3, opt3) })
			if !errors.Is(err, tensor.ErrArgument) || !strings.Contains(err.Error(), "given twice") {
				t.Errorf("Step(o, o): %v; want ErrArgument", err)
			}
		})
	}
}

// TestScalerSeveralOptimisers checks that optimisers stepped together
// skip together: an Inf among one's gradients skips both.
func TestScalerSeveralOptimisers(t *testing.T) {
	for _, dev := range bothDevices(t) {
		t.Run(dev.Name(), func(t *testing.T) {
			a := autograd.Leaf(tensor.Must(tensor.FromFloat32(dev, []float32{1, 2}, 2)), true)
			b := autograd.Leaf(tensor.Must(tensor.FromFloat32(dev, []float32{3e38, 1}, 2)), true)
			oa := optim.SGD([]*autograd.Var{a}, 0.1, device.StepParams{})
			ob := optim.SGD([]*autograd.Var{b}, 0.1, device.StepParams{})
			defer oa.Release()
			defer ob.Release()
			s := &optim.Scaler{Scale: 4, Growth: 2, Backoff: 0.5, Interval: 10}
			defer s.Release()
			// a's gradient 2a is finite; b's, 1 + 2b, overflows at 3e38.
			loss := ops.Add(ops.Add(ops.Sum(ops.Mul(a, a)), ops.Sum(b)), ops.Sum(ops.Mul(b, b)))
			if err := s.ScaleLoss(loss).Backward(); err != nil {
				t.Fatal(err)
			}
			if err := s.Step(oa, ob); err != nil {
				t.Fatal(err)
			}
			ga, _ := a.Value().Float32s()
			gb, _ := b.Value().Float32s()
			if ga[0] != 1 || ga[1] != 2 || gb[1] != 1 {
				t.Errorf("after a step with an Inf gradient of b: a %v, b %v; want both unchanged", ga, gb)
			}
			if _, skipped, err := s.Stats(); err != nil || skipped != 1 {
				t.Errorf("skipped %d, %v; want 1", skipped, err)
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
