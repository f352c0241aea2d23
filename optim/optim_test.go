package optim_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/internal/gputest"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/optim"
	"github.com/extensor/extensor/tensor"
)

// TestStepsInGroups checks Adam steps over ten parameters on WebGPU:
// the second runs fewer kernels than parameters (device/webgpu's
// TestStepGroups counts them), and each parameter ends where stepping it
// alone with ops.Step, from the same gradients, puts it.
func TestStepsInGroups(t *testing.T) {
	dev := gputest.Open(t)
	counter, ok := dev.(device.Counter)
	if !ok {
		t.Fatalf("%s counts no kernels", dev)
	}
	shapes := [][]int{{3, 4}, {4}, {257}, {1}, {2, 3}, {5}, {64}, {7, 9}, {16}, {3}}
	var params []*autograd.Var
	var alone []*tensor.Tensor
	var states [][]*tensor.Tensor
	for i, s := range shapes {
		w := tensor.Must(tensor.Uniform(dev, device.Float32, -1, 1, uint64(i), s...))
		params = append(params, autograd.Leaf(ops.Clone(w), true))
		alone = append(alone, w)
		states = append(states, []*tensor.Tensor{tensor.Must(tensor.Zeros(dev, device.Float32, s...)), tensor.Must(tensor.Zeros(dev, device.Float32, s...))})
	}
	o := optim.Adam(params, 1e-2)
	defer o.Release()
	for step := 1; step <= 2; step++ {
		var l *autograd.Var
		for _, p := range params {
			s := ops.Sum(ops.Mul(p, p))
			if l == nil {
				l = s
			} else {
				l = ops.Add(l, s)
			}
		}
		if err := l.Backward(); err != nil {
			t.Fatal(err)
		}
		var grads []*tensor.Tensor
		for _, p := range params {
			grads = append(grads, ops.Clone(p.Grad()))
		}
		before := counter.Kernels()
		o.Step()
		// The first step also fills the state with zeros.
		if n := counter.Kernels() - before; step == 2 && (n < 1 || n >= int64(len(params))) {
			t.Errorf("step %d: an Adam step over %d parameters ran %d kernels; want at least one and fewer than one each", step, len(params), n)
		}
		o.ZeroGrad()
		h := o.Hyper
		h.T = step
		for i, w := range alone {
			ops.Step(device.Adam, w, grads[i], states[i], h)
			grads[i].Release()
		}
	}
	for i, p := range params {
		got, err1 := p.Value().Float64s()
		want, err2 := alone[i].Float64s()
		if err := errors.Join(err1, err2); err != nil {
			t.Fatal(err)
		}
		for k := range got {
			if math.Abs(got[k]-want[k]) > 1e-6*math.Abs(want[k]) {
				t.Fatalf("parameter %d %v, element %d: %v stepped in a group; %v alone", i, shapes[i], k, got[k], want[k])
			}
		}
	}
}

// TestTrainsAQuadratic checks that each optimiser drives ‖p − 3‖² down on
// the CPU backend, and that schedules give PyTorch's rates.
func TestTrainsAQuadratic(t *testing.T) {
	dev := cpu.New()
	for _, tt := range []struct {
		name string
		make func(ps []*autograd.Var) *optim.Optimizer
	}{
		{"sgd", func(ps []*autograd.Var) *optim.Optimizer { return optim.SGD(ps, 0.1, device.StepParams{}) }},
		{"sgd nesterov", func(ps []*autograd.Var) *optim.Optimizer {
			return optim.SGD(ps, 0.05, device.StepParams{Momentum: 0.9, Nesterov: true})
		}},
		{"adam", func(ps []*autograd.Var) *optim.Optimizer { return optim.Adam(ps, 0.1) }},
		{"adamw", func(ps []*autograd.Var) *optim.Optimizer { return optim.AdamW(ps, 0.1, 0.01) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := autograd.Leaf(tensor.Must(tensor.FromFloat64(dev, []float64{0, 10, -4})), true)
			target := autograd.Leaf(tensor.Must(tensor.Full(dev, device.Float64, 3, 3)), false)
			o := tt.make([]*autograd.Var{p})
			for range 300 {
				o.ZeroGrad()
				d := ops.Sub(p, target)
				if err := ops.Sum(ops.Mul(d, d)).Backward(); err != nil {
					t.Fatal(err)
				}
				o.Step()
			}
			v, err := p.Value().Float64s()
			if err != nil {
				t.Fatal(err)
			}
			for _, x := range v {
				if math.Abs(x-3) > 0.1 { // AdamW's decay pulls p a little towards 0
					t.Fatalf("after 300 steps p = %v; want about 3", v)
				}
			}
		})
	}
	if lr := optim.StepLR(0.1, 10, 0.5)(25); math.Abs(lr-0.025) > 1e-15 {
		t.Errorf("StepLR at 25: %v; want 0.025", lr)
	}
	if lr := optim.Cosine(1, 0, 100)(50); math.Abs(lr-0.5) > 1e-12 {
		t.Errorf("Cosine at half: %v; want 0.5", lr)
	}
	if lr := optim.Warmup(optim.StepLR(1, 100, 1), 4)(1); lr != 0.5 {
		t.Errorf("Warmup at step 1 of 4: %v; want 0.5", lr)
	}
}

// TestBadParameters: state on another device and a variable without a
// gradient are clear errors.
func TestBadParameters(t *testing.T) {
	a, b := cpu.New(), cpu.New()
	p := autograd.Leaf(tensor.Must(tensor.FromFloat64(a, []float64{1})), true)
	o := optim.Adam([]*autograd.Var{p}, 0.1)
	if err := ops.Sum(ops.Mul(p, p)).Backward(); err != nil {
		t.Fatal(err)
	}
	o.Step()
	st := o.State(0)
	st[0] = tensor.Must(tensor.FromFloat64(b, []float64{0}))
	if err := tensor.Maybe(o.Step); !errors.Is(err, tensor.ErrDevice) {
		t.Errorf("a step with state on another device: %v; want ErrDevice", err)
	}
	if err := tensor.Maybe(func() { optim.Adam([]*autograd.Var{autograd.Leaf(p.Value(), false)}, 0.1) }); !errors.Is(err, tensor.ErrArgument) {
		t.Errorf("an optimiser of a variable without gradient: %v; want ErrArgument", err)
	}
}

// TestBadHyperParameters refuses, when the optimiser is made, the
// settings PyTorch refuses then (a negative or non-finite learning rate,
// β outside [0, 1)), and a negative step count.
func TestBadHyperParameters(t *testing.T) {
	p := autograd.Leaf(tensor.Must(tensor.FromFloat64(cpu.New(), []float64{1})), true)
	ps := []*autograd.Var{p}
	for name, fn := range map[string]func(){
		"Adam lr -1":        func() { optim.Adam(ps, -1) },
		"Adam lr NaN":       func() { optim.Adam(ps, math.NaN()) },
		"AdamW lr +Inf":     func() { optim.AdamW(ps, math.Inf(1), 0.01) },
		"AdamW wd -1":       func() { optim.AdamW(ps, 0.1, -1) },
		"SGD momentum NaN":  func() { optim.SGD(ps, 0.1, device.StepParams{Momentum: math.NaN()}) },
		"SetSteps negative": func() { optim.Adam(ps, 0.1).SetSteps(-7) },
	} {
		if err := tensor.Maybe(fn); !errors.Is(err, tensor.ErrArgument) {
			t.Errorf("%s: %v; want ErrArgument", name, err)
		}
	}
}

// TestClipGradNorm clips the gradients of the parameters that have one to
// a global norm, as ops.ClipGradNorm on those gradients, and refuses a
// set of parameters without any.
func TestClipGradNorm(t *testing.T) {
	dev := cpu.New()
	a := autograd.Leaf(tensor.Must(tensor.FromFloat32(dev, []float32{1, 2}, 2)), true)
	b := autograd.Leaf(tensor.Must(tensor.FromFloat32(dev, []float32{3}, 1)), true)
	idle := autograd.Leaf(tensor.Must(tensor.FromFloat32(dev, []float32{5}, 1)), true)
	loss := ops.Add(ops.Sum(ops.Mul(a, a)), ops.Sum(ops.Mul(b, b))) // gradients 2a, 2b: norm √56
	if err := loss.Backward(); err != nil {
		t.Fatal(err)
	}
	norm, err := optim.ClipGradNorm([]*autograd.Var{a, idle, b}, 1).Float32s()
	if err != nil {
		t.Fatal(err)
	}
	if want := math.Sqrt(56); math.Abs(float64(norm[0])-want) > 1e-5 {
		t.Errorf("norm %v; want %v", norm[0], want)
	}
	ga, _ := a.Grad().Float32s()
	gb, _ := b.Grad().Float32s()
	var sq float64
	for _, v := range append(ga, gb...) {
		sq += float64(v) * float64(v)
	}
	if math.Abs(math.Sqrt(sq)-1) > 1e-5 || idle.Grad() != nil {
		t.Errorf("clipped gradients %v, %v (norm %v), idle's %v; want norm 1 and no gradient", ga, gb, math.Sqrt(sq), idle.Grad())
	}
	err = tensor.Maybe(func() { optim.ClipGradNorm([]*autograd.Var{idle}, 1) })
	if !errors.Is(err, tensor.ErrArgument) || !strings.Contains(err.Error(), "no gradients") {
		t.Errorf("ClipGradNorm without gradients: %v; want an ErrArgument saying there are none", err)
	}
}

// TestStateDictNames refuses names that do not name each parameter once:
// too few, too many, empty or repeated (a map would lose a state).
func TestStateDictNames(t *testing.T) {
	dev := cpu.New()
	p := func() *autograd.Var { return autograd.Leaf(tensor.Must(tensor.Zeros(dev, device.Float32, 2)), true) }
	o := optim.Adam([]*autograd.Var{p(), p()}, 1e-3)
	for _, tt := range []struct {
		names []string
		says  string
	}{
		{nil, "0 names for 2 parameters"},
		{[]string{"a"}, "1 names for 2 parameters"},
		{[]string{"a", "b", "c"}, "3 names for 2 parameters"},
		{[]string{"a", ""}, "parameter 1 has no name"},
		{[]string{"a", "a"}, `two parameters named "a"`},
		{[]string{"a", "b\xff"}, `parameter 1's name "b\xff" is not valid UTF-8`},
	} {
		if _, err := o.StateDict(tt.names); err == nil || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("StateDict(%q): %v; want an error saying %q", tt.names, err, tt.says)
		}
	}
	d, err := o.StateDict([]string{"a", "b"})
	if err != nil || len(d) != 4 || d["b.v"] == nil {
		t.Errorf("StateDict(a, b): %v, %v; want a.m, a.v, b.m, b.v", d, err)
	}
}
