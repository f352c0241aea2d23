package parity

// The checks against central finite differences, and the tolerance
// comparison every check uses.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/device"
	"gonum.org/v1/gonum/diff/fd"
	"gonum.org/v1/gonum/floats/scalar"
)

// finiteDifferences compares the CPU float64 gradients with central
// differences of Σ forward(x)·g.
func (c *Case) finiteDifferences(t testing.TB, vals [][]float64, g []float64, want *run) Status {
	t.Helper()
	host := cpu.New()
	// Central differences of f = Σ out·g carry rounding error of about
	// ε·Σ|out·g|/h ≈ 5e-11·Σ|out·g| (gonum's step h is about 5e-6): the
	// absolute tolerance is at least twice that.
	atol := c.FDATol
	if atol == 0 {
		atol = FDATol
	}
	mag := 0.0
	for j, v := range want.out {
		mag += math.Abs(v * g[j])
	}
	atol = max(atol, 1e-10*mag)
	status := Pass
	for i, in := range c.Inputs {
		if in.Int || in.NoFD || in.NoGrad {
			continue
		}
		var ferr error
		f := func(x []float64) float64 {
			probe := slices.Clone(vals)
			probe[i] = x
			out, _, err := c.forward(host, device.Float64, probe)
			if err != nil {
				ferr = err
				return math.NaN()
			}
			s := 0.0
			for j, v := range out {
				s += v * g[j]
			}
			return s
		}
		what := fmt.Sprintf("%s %s: cpu float64 gradient %d against finite differences", c.Op.Name, c.Case.Name, i)
		var ok bool
		if len(vals[i]) <= FDFull {
			num := fd.Gradient(nil, f, slices.Clone(vals[i]), &fd.Settings{Formula: fd.Central})
			ok = ferr != nil || Close(t, what, want.grads[i], num, FDRTol, atol)
		} else {
			ok = ferr != nil || c.directions(t, what, f, vals[i], want.grads[i], atol)
		}
		if ferr != nil {
			t.Errorf("%s %s: finite differences: %v", c.Op.Name, c.Case.Name, ferr)
			return Fail
		}
		if !ok {
			status = Fail
		}
	}
	return status
}

// FDFull is the largest input whose gradient finite differences check
// element by element (two evaluations an element); a larger one is
// checked along FDDirections random directions instead, as PyTorch's
// gradcheck does in its fast mode.
const (
	FDFull       = 1024
	FDDirections = 8
)

// directions compares the gradient grad of f at x with central
// differences of f along random directions v of ±1 entries: grad·v
// against d/dt f(x + t·v) at 0, within FDRTol of Σ|grad_j·v_j| (the
// projection's scale, which cancellation may dwarf) plus atol times the
// directions' length (the differences' rounding error).
func (c *Case) directions(t testing.TB, what string, f func([]float64) float64, x, grad []float64, atol float64) bool {
	t.Helper()
	r := rand.New(rand.NewPCG(seed(what), 3))
	v, probe := make([]float64, len(x)), make([]float64, len(x))
	for k := range FDDirections {
		proj, scale := 0.0, 0.0
		for j := range v {
			v[j] = float64(2*r.IntN(2) - 1)
			proj += grad[j] * v[j]
			scale += math.Abs(grad[j])
		}
		num := fd.Derivative(func(h float64) float64 {
			for j := range probe {
				probe[j] = x[j] + h*v[j]
			}
			return f(probe)
		}, 0, &fd.Settings{Formula: fd.Central})
		tol := FDRTol*scale + atol*math.Sqrt(float64(len(x)))
		if !(math.Abs(num-proj) <= tol) && !(math.IsNaN(num) && math.IsNaN(proj)) {
			t.Errorf("%s: along random direction %d of %d: finite differences give %.12g, the gradient %.12g (tolerance %.3g)", what, k+1, FDDirections, num, proj, tol)
			return false
		}
	}
	return true
}

// toFloat32 rounds v to float32.
func toFloat32(v []float64) []float64 {
	r := make([]float64, len(v))
	for i, x := range v {
		r[i] = float64(float32(x))
	}
	return r
}

// Close reports whether got and want agree elementwise within atol or rtol,
// reporting the first mismatches on t. Special values must match exactly:
// NaN only NaN, and an infinity only the infinity of the same sign.
func Close(t testing.TB, what string, got, want []float64, rtol, atol float64) bool {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d values; want %d", what, len(got), len(want))
		return false
	}
	bad, worst := 0, 0.0
	var first []string
	for i := range got {
		a, b := got[i], want[i]
		if d := a - b; d <= atol && d >= -atol { // the common case, inline
			continue
		}
		if math.IsNaN(a) && math.IsNaN(b) || scalar.EqualWithinAbsOrRel(a, b, atol, rtol) {
			continue
		}
		bad++
		worst = max(worst, math.Abs(a-b))
		if len(first) < 5 {
			first = append(first, fmt.Sprintf("[%d] got %.9g want %.9g", i, a, b))
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d values differ (rtol %g, atol %g; max abs diff %.3g): %v", what, bad, len(got), rtol, atol, worst, first)
	}
	return bad == 0
}
