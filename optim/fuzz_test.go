package optim_test

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/checkpoint"
	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/internal/fuzzin"
	"github.com/extensor/extensor/internal/gputest"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/optim"
	"github.com/extensor/extensor/tensor"
	"github.com/x448/float16"
)

// stateValues are the values a hostile optimiser state holds.
var stateValues = []float64{0, 1, -1, 0.5, 3, math.NaN(), math.Inf(1), math.Inf(-1), -2}

// stateOutcome is what one backend made of a fuzz input: the errors of
// StateDict, LoadInto and SetSteps, then the parameters after a step.
type stateOutcome struct {
	dict, load, steps string
	params            [][]float64
}

// FuzzOptimizerState resumes each optimiser (SGD with and without
// momentum, Adam, AdamW, AMSGrad) from a hostile state dict: names that are
// missing, repeated, empty or not valid UTF-8; state tensors dropped,
// renamed, added, of another shape or dtype, full of NaN and ±Inf; step
// counts negative or huge. StateDict and LoadInto must return the errors
// their contracts name (LoadInto copying nothing then, and every value
// rounded to the state's dtype otherwise), SetSteps refuse a negative
// count with ErrArgument, and the next step run without any other panic.
// The CPU and WebGPU backends must agree on every error, and on the
// parameters after the step (the same NaNs and infinities, close finite
// values).
func FuzzOptimizerState(f *testing.F) {
	for _, seed := range [][]byte{
		// optimiser, two shapes, names, then per state tensor: what to
		// do and its values; an extra tensor (0), the step count.
		{}, {2, 3, 2, 0, 0, 0, 4, 1, 0, 5, 0, 6, 1, 2}, {1, 4, 2, 0, 0, 3, 0, 5, 3, 5},
		{4, 3, 3, 0, 0, 1, 0, 2, 4, 3, 0, 4, 0, 5, 0, 6, 2, 6}, {0, 2, 2, 0, 1, 1}, {3, 1, 1, 0, 0, 7, 0, 8, 0, 0, 0, 1, 3, 4},
		{2, 3, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2}, {0, 1, 1, 0, 0, 0, 0}, {1, 4, 2, 0, 0, 0, 0, 1, 0, 0, 5},
		{3, 2, 2, 1, 0}, {2, 2, 1, 2, 0}, {4, 3, 3, 0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0, 7},
		{2, 2, 2, 0, 0, 5, 0, 6, 0, 7, 0, 0, 0, 0, 0, 0, 3}, {1, 2, 2, 0, 2, 0, 0, 3, 0, 0, 4}, {4, 1, 1, 5, 0},
		{3, 3, 2, 0, 0, 4, 0, 4, 0, 4, 0, 4, 0, 8}, {2, 1, 1, 0, 6, 0, 0, 0, 0, 0, 0, 6},
	} {
		f.Add(seed)
	}
	host := cpu.New()
	gpu := gputest.OrNil(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		want := resumeState(t, host, data)
		if gpu == nil {
			return
		}
		got := resumeState(t, gpu, data)
		if want.dict != got.dict || want.load != got.load || want.steps != got.steps {
			t.Fatalf("cpu: %q, %q, %q; webgpu: %q, %q, %q", want.dict, want.load, want.steps, got.dict, got.load, got.steps)
		}
		for i := range want.params {
			for j, w := range want.params[i] {
				g := got.params[i][j]
				if math.IsNaN(w) != math.IsNaN(g) || math.IsInf(w, 0) && w != g || !math.IsInf(w, 0) && !math.IsNaN(w) && math.Abs(w-g) > 1e-4*(1+math.Abs(w)) {
					t.Fatalf("parameter %d element %d after the step: cpu %v, webgpu %v", i, j, w, g)
				}
			}
		}
	})
}

// resumeState runs one fuzz input on dev.
func resumeState(t *testing.T, dev device.Device, data []byte) stateOutcome {
	in := fuzzin.Bytes(data)
	kind := in.Next(0, 4)
	shapes := [][]int{{in.Next(0, 4)}, {2, in.Next(0, 3)}}
	params := make([]*autograd.Var, 2)
	for i, s := range shapes {
		v := make([]float32, device.Numel(s))
		for j := range v {
			v[j] = float32(j%5) - 1.5
		}
		params[i] = autograd.Leaf(tensor.Must(tensor.FromFloat32(dev, v, s...)), true)
		defer params[i].Value().Release()
	}
	var o *optim.Optimizer
	switch kind {
	case 0:
		o = optim.SGD(params, 0.1, device.StepParams{})
	case 1:
		o = optim.SGD(params, 0.1, device.StepParams{Momentum: 0.9, Nesterov: true})
	case 2:
		o = optim.Adam(params, 0.01)
	case 3:
		o = optim.AdamW(params, 0.01, 0.1)
	default:
		o = optim.Adam(params, 0.01)
		o.Hyper.AMSGrad = true
	}
	defer o.Release()
	step := func() {
		o.ZeroGrad()
		loss := ops.Add(ops.Sum(ops.Mul(params[0], params[0])), ops.Sum(params[1]))
		if err := loss.Backward(); err != nil {
			t.Fatal(err)
		}
		o.Step()
	}
	step()
	var out stateOutcome
	names := fuzzin.Pick(&in, []string{"a", "b"}, []string{"a", "a"}, []string{"a", ""}, []string{"a"}, []string{"a", "b", "c"}, []string{"a\xff", "b"})
	d, err := o.StateDict(names)
	if err != nil {
		out.dict = err.Error()
		if len(names) == 2 && names[0] != names[1] && names[1] != "" && names[0] != "a\xff" {
			t.Fatalf("StateDict(%q): %v", names, err)
		}
	} else {
		out.load = loadHostile(t, &in, dev, d)
	}
	n := fuzzin.Pick(&in, 0, 1, 3, -1, math.MinInt, math.MaxInt, 1<<40)
	if err := tensor.Maybe(func() { o.SetSteps(n) }); err != nil {
		out.steps = err.Error()
		if n >= 0 && n <= optim.MaxSteps || !errors.Is(err, tensor.ErrArgument) {
			t.Fatalf("SetSteps(%d): %v", n, err)
		}
	} else if n < 0 || n > optim.MaxSteps || o.Steps() != n {
		t.Fatalf("SetSteps(%d): no error, %d steps", n, o.Steps())
	}
	step()
	for _, p := range params {
		v, err := p.Value().Float64s()
		if err != nil {
			t.Fatalf("after the step: %v", err)
		}
		out.params = append(out.params, v)
	}
	return out
}

// loadHostile writes a checkpoint of d's tensors changed as in says,
// loads it into d and checks that LoadInto did what its contract says. It
// returns LoadInto's error ("" for none).
func loadHostile(t *testing.T, in *fuzzin.Bytes, dev device.Device, d map[string]*tensor.Tensor) string {
	keys := make([]string, 0, len(d))
	for k := range d {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	before := map[string][]float64{}
	file := map[string]*tensor.Tensor{}
	fileVals := map[string][]float64{}
	fits := true
	for _, k := range keys {
		v, err := d[k].Float64s()
		if err != nil {
			t.Fatal(err)
		}
		before[k] = v
		name, shape, dt := k, d[k].Shape(), device.Float32
		switch in.Next(0, 7) {
		case 1:
			fits = false
			continue // dropped
		case 2:
			name, fits = k+"x", false
		case 3:
			shape, fits = append(slices.Clone(shape), 1), false
		case 4:
			dt = device.Float16
		case 5:
			dt, fits = device.Int32, false
		}
		vals := make([]float64, device.Numel(shape))
		first := in.Next(0, len(stateValues)-1)
		for i := range vals {
			vals[i] = stateValues[(first+i)%len(stateValues)]
			if dt == device.Int32 && (math.IsNaN(vals[i]) || math.IsInf(vals[i], 0)) {
				vals[i] = 7
			}
		}
		x, err := tensor.FromValues(dev, dt, vals, shape...)
		if err != nil {
			t.Fatal(err)
		}
		defer x.Release()
		file[name], fileVals[name] = x, vals
	}
	if in.Next(0, 3) == 0 {
		x := tensor.Must(tensor.Zeros(dev, device.Float32, 1))
		defer x.Release()
		file["extra"], fits = x, false
	}
	path := filepath.Join(t.TempDir(), "state.safetensors")
	if err := checkpoint.Save(path, file, nil); err != nil {
		t.Fatalf("Save: %v", err)
	}
	f, err := checkpoint.Read(path)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	err = f.LoadInto(d)
	var mismatch checkpoint.Mismatch
	switch {
	case fits && err != nil:
		t.Fatalf("LoadInto: %v; want the state loaded", err)
	case !fits && !errors.As(err, &mismatch):
		t.Fatalf("LoadInto: %v; want a Mismatch", err)
	}
	for _, k := range keys {
		got, err := d[k].Float64s()
		if err != nil {
			t.Fatal(err)
		}
		want := before[k]
		if fits {
			want = make([]float64, len(got))
			for i, v := range fileVals[k] {
				want[i] = float64(float32(v))
				if file[k].DType() == device.Float16 {
					want[i] = float64(float16.Fromfloat32(float32(v)).Float32())
				}
			}
		}
		if !sameValues(got, want) {
			t.Fatalf("%s after LoadInto (%v): %v; want %v", k, err, got, want)
		}
	}
	if err != nil {
		return fmt.Sprint(err)
	}
	return ""
}

// sameValues reports whether a and b hold the same values, NaN equal to
// NaN.
func sameValues(a, b []float64) bool {
	return slices.EqualFunc(a, b, func(x, y float64) bool { return x == y || math.IsNaN(x) && math.IsNaN(y) })
}
