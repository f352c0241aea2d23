package autograd_test

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/internal/gputest"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/tensor"
	"gonum.org/v1/gonum/floats/scalar"
)

// hvpCase is a scalar function of x (of shape shape) built from a
// composition of ops, with constants drawn from r.
type hvpCase struct {
	name  string
	shape []int
	f     func(x *autograd.Var, c consts) *autograd.Var
}

// consts makes the constants of a case on the case's device, the same
// values on every device.
type consts struct {
	dev device.Device
	dt  device.DType
	r   *rand.Rand
}

func (c consts) uniform(lo, hi float64, shape ...int) *autograd.Var {
	v := make([]float64, device.Numel(shape))
	for i := range v {
		v[i] = float64(float32(lo + (hi-lo)*c.r.Float64()))
	}
	return autograd.Leaf(tensor.Must(tensor.FromValues(c.dev, c.dt, v, shape...)), false)
}

func (c consts) labels(n, classes int) *autograd.Var {
	v := make([]float64, n)
	for i := range v {
		v[i] = float64(c.r.IntN(classes))
	}
	return autograd.Leaf(tensor.Must(tensor.FromValues(c.dev, device.Int32, v, n)), false)
}

func scaled(x *autograd.Var, c consts) *autograd.Var {
	return ops.Mul(x, c.uniform(0.5, 1.5, x.Shape()...))
}

var hvpCases = []hvpCase{
	{"mul exp", []int{3, 4}, func(x *autograd.Var, c consts) *autograd.Var {
		return ops.Sum(ops.Mul(ops.Exp(scaled(x, c)), x))
	}},
	{"tanh sigmoid", []int{7}, func(x *autograd.Var, c consts) *autograd.Var {
		return ops.Sum(ops.Mul(ops.Tanh(x), ops.Sigmoid(scaled(x, c))))
	}},
	{"softmax", []int{3, 5}, func(x *autograd.Var, c consts) *autograd.Var {
		return ops.Sum(ops.Mul(ops.Softmax(x, -1), c.uniform(-1, 1, 3, 5)))
	}},
	{"matmul tanh matmul", []int{4, 3}, func(x *autograd.Var, c consts) *autograd.Var {
		h := ops.Tanh(ops.MatMul(c.uniform(-1, 1, 5, 4), x))
		return ops.Sum(ops.MatMul(h, c.uniform(-1, 1, 3)))
	}},
	{"linear mse", []int{4, 6}, func(x *autograd.Var, c consts) *autograd.Var {
		y := ops.Sigmoid(ops.Linear(c.uniform(-1, 1, 5, 6), x, c.uniform(-1, 1, 4)))
		return ops.MSELoss(y, c.uniform(0, 1, 5, 4), ops.MeanReduction)
	}},
	{"bce of sigmoid", []int{6}, func(x *autograd.Var, c consts) *autograd.Var {
		return autograd.Apply(ops.BCEOp, nil, ops.Sigmoid(x), c.uniform(0, 1, 6))
	}},
	{"bce with logits, sum", []int{2, 3}, func(x *autograd.Var, c consts) *autograd.Var {
		return autograd.Apply(ops.BCEWithLogitsOp, ops.LossAttrs{Reduction: ops.SumReduction}, ops.Mul(x, x), c.uniform(0, 1, 2, 3))
	}},
	{"cross-entropy of matmul, class indices", []int{4, 5}, func(x *autograd.Var, c consts) *autograd.Var {
		logits := ops.MatMul(c.uniform(-1, 1, 6, 4), x)
		return ops.CrossEntropyLoss(logits, c.labels(6, 5), ops.MeanReduction)
	}},
	{"cross-entropy, probabilities", []int{3, 4}, func(x *autograd.Var, c consts) *autograd.Var {
		return ops.CrossEntropyLoss(ops.Exp(x), c.uniform(0, 1, 3, 4), ops.SumReduction)
	}},
	{"pow of slices, concatenated", []int{6}, func(x *autograd.Var, c consts) *autograd.Var {
		a := autograd.Apply(ops.SliceOp, ops.SliceAttrs{Axis: 0, Start: 0, Stop: 6, Step: 2}, x)
		b := autograd.Apply(ops.SliceOp, ops.SliceAttrs{Axis: 0, Start: 1, Stop: 6, Step: 2}, x)
		p := autograd.Apply(ops.PowOp, nil, ops.Exp(a), ops.Tanh(b))
		j := autograd.Apply(ops.ConcatOp, ops.AxisAttrs{Axis: 0}, p, a)
		return ops.Sum(ops.Mul(j, j))
	}},
	{"nll of log_softmax, per row", []int{5, 3}, func(x *autograd.Var, c consts) *autograd.Var {
		l := autograd.Apply(ops.NLLOp, ops.CrossEntropyAttrs{Reduction: ops.NoReduction}, ops.LogSoftmax(ops.Mul(x, x), 1), c.labels(5, 3))
		return ops.Sum(ops.Mul(l, c.uniform(0, 1, 5)))
	}},
}

// hvp returns the Hessian-vector product of the case at x along v, by two
// Grad passes, and the gradient.
func (h hvpCase) hvp(t *testing.T, dev device.Device, dt device.DType, x, v []float64) (hv, grad []float64) {
	t.Helper()
	c := consts{dev: dev, dt: dt, r: rand.New(rand.NewPCG(7, 7))}
	xv := autograd.Leaf(tensor.Must(tensor.FromValues(dev, dt, x, h.shape...)), true)
	vv := autograd.Leaf(tensor.Must(tensor.FromValues(dev, dt, v, h.shape...)), false)
	gs, err := autograd.Grad(h.f(xv, c), []*autograd.Var{xv}, true)
	if err != nil {
		t.Fatal(err)
	}
	hs, err := autograd.Grad(ops.Sum(ops.Mul(gs[0], vv)), []*autograd.Var{xv}, false)
	if err != nil {
		t.Fatal(err)
	}
	return read(t, hs[0].Value(), len(x)), read(t, gs[0].Value(), len(x))
}

// gradAt returns the first-order gradient of the case at x (CPU float64,
// Backward).
func (h hvpCase) gradAt(t *testing.T, x []float64) []float64 {
	t.Helper()
	c := consts{dev: cpu.New(), dt: device.Float64, r: rand.New(rand.NewPCG(7, 7))}
	xv := autograd.Leaf(tensor.Must(tensor.FromValues(c.dev, c.dt, x, h.shape...)), true)
	if err := h.f(xv, c).Backward(); err != nil {
		t.Fatal(err)
	}
	return read(t, xv.Grad(), len(x))
}

// TestHessianVectorProducts checks H·v from two Grad passes (the first
// recording its gradient) against central differences of the gradient,
// (∇f(x + εv) − ∇f(x − εv))/2ε, on the CPU in float64, and the WebGPU
// products against the CPU's.
func TestHessianVectorProducts(t *testing.T) {
	c := cpu.New()
	gpu := gputest.OrNil(t)
	r := rand.New(rand.NewPCG(3, 4))
	for _, h := range hvpCases {
		t.Run(h.name, func(t *testing.T) {
			n := device.Numel(h.shape)
			x, v := make([]float64, n), make([]float64, n)
			for i := range x {
				x[i] = float64(float32(2*r.Float64() - 1))
				v[i] = float64(float32(2*r.Float64() - 1))
			}
			hv, grad := h.hvp(t, c, device.Float64, x, v)
			first := h.gradAt(t, x)
			const eps = 1e-5
			xp, xm := make([]float64, n), make([]float64, n)
			for i := range x {
				xp[i], xm[i] = x[i]+eps*v[i], x[i]-eps*v[i]
			}
			gp, gm := h.gradAt(t, xp), h.gradAt(t, xm)
			for i := range hv {
				if !scalar.EqualWithinAbsOrRel(grad[i], first[i], 1e-12, 1e-12) {
					t.Fatalf("recorded gradient [%d] = %v; Backward gives %v", i, grad[i], first[i])
				}
				if want := (gp[i] - gm[i]) / (2 * eps); !scalar.EqualWithinAbsOrRel(hv[i], want, 1e-7, 1e-6) {
					t.Fatalf("cpu float64 H·v [%d] = %v; finite differences of the gradient %v", i, hv[i], want)
				}
			}
			if gpu == nil {
				return
			}
			got, _ := h.hvp(t, gpu, device.Float32, x, v)
			for i := range got {
				if !scalar.EqualWithinAbsOrRel(got[i], hv[i], 1e-4, 1e-3) {
					t.Fatalf("webgpu H·v [%d] = %v; cpu float64 %v", i, got[i], hv[i])
				}
			}
		})
	}
}

// TestGradErrors checks that Grad names a variable the output does not
// depend on and refuses a non-scalar output. (Every op of the table with a
// backward has a rule, which ops' TestEveryGradientHasARule keeps so;
// create through one without would fail naming it.)
func TestGradErrors(t *testing.T) {
	dev := cpu.New()
	x := autograd.Leaf(tensor.Must(tensor.FromValues(dev, device.Float32, []float64{1, 2, 3, 4}, 1, 1, 2, 2)), true)
	unused := autograd.Leaf(tensor.Must(tensor.FromValues(dev, device.Float32, []float64{1}, 1)), true)
	y := ops.Sum(ops.MaxPool2d(x, ops.Window{Kernel: [2]int{2, 2}, Stride: [2]int{2, 2}}))
	if _, err := autograd.Grad(y, []*autograd.Var{x}, true); err != nil {
		t.Errorf("create through max_pool2d: %v", err)
	}
	if _, err := autograd.Grad(y, []*autograd.Var{x, unused}, false); err == nil || !contains(err.Error(), "variable 1") {
		t.Errorf("unused variable: %v; want an error naming it", err)
	}
	if _, err := autograd.Grad(ops.Exp(x), []*autograd.Var{x}, false); err == nil {
		t.Error("Grad of a non-scalar: no error")
	}
	gs, err := autograd.Grad(y, []*autograd.Var{x}, false)
	if err != nil || gs[0].RequiresGrad() {
		t.Errorf("Grad without create: %v, requires grad %v; want a constant gradient", err, gs[0].RequiresGrad())
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// TestBCESecondDerivative checks binary cross-entropy's second derivative
// in p, (1−y)/(1−p)² + y/p², at confident predictions, where a rule
// through the ε-guarded quotient lost every digit.
func TestBCESecondDerivative(t *testing.T) {
	c := cpu.New()
	ps, ys := []float64{0.9999, 0.999, 0.5, 1e-4}, []float64{1, 1, 0.3, 0}
	p := autograd.Leaf(tensor.Must(tensor.FromFloat64(c, ps, 4)), true)
	y := autograd.Leaf(tensor.Must(tensor.FromFloat64(c, ys, 4)), false)
	loss := autograd.Apply(ops.BCEOp, ops.LossAttrs{Reduction: ops.SumReduction}, p, y)
	g, err := autograd.Grad(loss, []*autograd.Var{p}, true)
	if err != nil {
		t.Fatal(err)
	}
	h, err := autograd.Grad(ops.Sum(g[0]), []*autograd.Var{p}, false)
	if err != nil {
		t.Fatal(err)
	}
	got, err := h[0].Value().Float64s()
	if err != nil {
		t.Fatal(err)
	}
	for i, pi := range ps {
		want := (1-ys[i])/((1-pi)*(1-pi)) + ys[i]/(pi*pi)
		if !scalar.EqualWithinRel(got[i], want, 1e-9) {
			t.Errorf("p = %v, y = %v: d²/dp² = %v; want %v", pi, ys[i], got[i], want)
		}
	}
}

// TestActivationSecondDerivatives checks the second derivatives of silu
// and softplus through their typed functions and rules against closed
// forms: silu″ = σ(1−σ)(2 + x(1−2σ)), softplus″ = β·σ(βx)(1−σ(βx)).
func TestActivationSecondDerivatives(t *testing.T) {
	c := cpu.New()
	xs := []float64{-3, -0.5, 0, 0.25, 2, 6}
	sig := func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }
	const beta = 1.5
	tests := []struct {
		name string
		f    func(*autograd.Var) *autograd.Var
		want func(x float64) float64
	}{
		{"silu", ops.Silu[*autograd.Var], func(x float64) float64 { s := sig(x); return s * (1 - s) * (2 + x*(1-2*s)) }},
		{"softplus", func(v *autograd.Var) *autograd.Var { return ops.Softplus(v, beta, 20) },
			func(x float64) float64 { s := sig(beta * x); return beta * s * (1 - s) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := autograd.Leaf(tensor.Must(tensor.FromFloat64(c, xs, len(xs))), true)
			g, err := autograd.Grad(ops.Sum(tt.f(x)), []*autograd.Var{x}, true)
			if err != nil {
				t.Fatal(err)
			}
			h, err := autograd.Grad(ops.Sum(g[0]), []*autograd.Var{x}, false)
			if err != nil {
				t.Fatal(err)
			}
			got, err := h[0].Value().Float64s()
			if err != nil {
				t.Fatal(err)
			}
			for i, xi := range xs {
				if want := tt.want(xi); !scalar.EqualWithinAbsOrRel(got[i], want, 1e-12, 1e-9) {
					t.Errorf("x = %v: second derivative %v; want %v", xi, got[i], want)
				}
			}
		})
	}
}
