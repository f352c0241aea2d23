package parity_test

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/device/webgpu"
	"github.com/extensor/extensor/internal/fuzzin"
	"github.com/extensor/extensor/internal/gputest"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/tensor"
)

// hostileInts are the integers an argument is given besides small ones:
// huge, negative and overflowing.
var hostileInts = []int{0, -1, 1, 2, 3, -2, 7, 1 << 31, 1<<31 - 1, 1 << 40, math.MaxInt, math.MaxInt - 1, math.MinInt, -(1 << 40)}

// hostileFloats are the scalars an argument is given besides the case's:
// NaN, infinite, negative, zero. Finite ones stay moderate: the CPU
// backend computes float32 ops in float64 and rounds once, so a huge
// learning rate or exponent overflows (or underflows) float32
// intermediates on a GPU only, a difference of precision, not of special
// values.
var hostileFloats = []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), -1, 1, 0.5, 2.5, 3}

// specialValues are the elements drawn into inputs: IEEE's specials and
// small numbers, so that sums cannot overflow and the backends must agree
// on every NaN and ±Inf. No value comes near the subnormals, which WGSL
// lets a GPU flush to zero (a CPU keeps them).
var specialValues = []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 1, -1, 0.5, -2, 3}

// outcome is what an op did on one backend.
type outcome struct {
	panicked error // a *tensor.Error
	shape    []int
	dtype    device.DType
	vals     []float64
	readErr  error
	grads    []outcome
	inputs   [][]float64 // the inputs' values, for the messages
	upstream []float64   // the upstream gradient's
}

// FuzzAPI drives every op of the table, forward and backward, on the CPU
// and WebGPU backends with hostile arguments (huge, negative and
// overflowing integers, NaN and infinite scalars, wrong dtypes, nil
// tensors, tensors of another device) and inputs full of NaN, ±Inf and
// signed zeros. Each backend must answer alike: the same programmer
// error (a *tensor.Error of the same kind; any other panic fails), a
// runtime error at the readback on both, or results of one shape whose
// NaNs and infinities sit in the same places and whose finite values
// agree. Allocations past a backend's memory are errors whose limits
// differ by design, and end the comparison. make test runs 2,000 inputs,
// make fuzz for 10 minutes.
func FuzzAPI(f *testing.F) {
	for _, seed := range [][]byte{
		{0, 0, 0, 0}, {8, 1, 0, 9, 9}, {30, 3, 0, 200, 4, 1}, {45, 0, 1, 17, 3, 3, 3}, {50, 0, 9, 1, 2, 3},
		{59, 1, 0, 5, 6, 250}, {63, 2, 0, 1, 255, 7}, {42, 0, 2, 3, 0, 9, 1}, {61, 0, 0, 11, 11, 11},
	} {
		f.Add(seed)
	}
	gpu, host := fuzzDevices(f)
	if gpu != nil {
		defer gpu.Close()
		if coordinating() {
			warmUp(f, gpu)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) { fuzzAPI(t, host, gpu, data) })
}

// fuzzDevices returns the devices FuzzAPI compares: a CPU device whose
// memory limit is fuzzMemory and fuzzGPU's. The caller closes gpu.
func fuzzDevices(tb testing.TB) (gpu device.Device, host *cpu.Device) {
	tb.Helper()
	host = cpu.New()
	host.SetMemoryLimit(fuzzMemory)
	return fuzzGPU(tb), host
}

// fuzzGPU opens, where an adapter exists (always under CI), a WebGPU
// device of FuzzAPI's own, on im2col: llvmpipe takes seconds to compile
// each geometry's direct convolution kernels, and go's fuzzing takes an
// input that runs 10 s for a deadlock. (The parity suite checks the
// direct kernels.) It returns nil without an adapter.
func fuzzGPU(tb testing.TB) device.Device {
	tb.Helper()
	if gputest.OrNil(tb) == nil {
		return nil
	}
	gpu, err := openWebGPU([2]string{webgpu.EnvConv, "im2col"})
	if err != nil {
		tb.Fatal(err)
	}
	return gpu
}

// coordinating reports whether this process coordinates go test's
// fuzzing (-test.fuzz, not -test.fuzzworker): it warms Mesa's disk cache
// before any worker starts, and the workers then load each kernel from it
// in milliseconds. Replaying the seed corpus as a test counts no input as
// a deadlock and needs no warm-up.
func coordinating() bool {
	f, w := flag.Lookup("test.fuzz"), flag.Lookup("test.fuzzworker")
	return f != nil && f.Value.String() != "" && (w == nil || w.Value.String() != "true")
}

// warmUp runs every small parity case of every op, forward and backward,
// on float32 and float16, on dev and on a second device configured as dev
// (the ops split between them: llvmpipe compiles a device's kernels on
// one thread), so that the kernels the fuzzer will run are compiled (and
// in Mesa's disk cache for every worker) before it starts: go's fuzzing
// counts an input that runs 10 s as a deadlock, and llvmpipe compiles a
// large kernel in seconds.
func warmUp(f *testing.F, dev device.Device) {
	start := time.Now()
	devs := []device.Device{dev}
	if second := fuzzGPU(f); second != nil {
		defer second.Close()
		devs = append(devs, second)
	}
	table := ops.Table()
	var wg sync.WaitGroup
	for k, d := range devs {
		wg.Go(func() {
			for j := k; j < len(table); j += len(devs) {
				warmOp(table[j], d)
			}
			if err := d.Sync(); err != nil {
				f.Logf("warm-up: %v", err)
			}
		})
	}
	wg.Wait()
	f.Logf("warm-up: %v on %d devices", time.Since(start), len(devs))
}

// warmOp runs op's small cases on dev, on float32 and float16.
func warmOp(op *ops.Op, dev device.Device) {
	for i, c := range op.Cases {
		spec := hostileInputs(new(fuzzin.Bytes), c.Inputs) // unchanged: no bytes
		if slices.ContainsFunc(c.Inputs, func(in ops.Input) bool { return device.Numel(in.Shape) > 4096 }) {
			continue
		}
		_ = tensor.Maybe(func() { run(op, dev, spec, c.Attrs, uint64(i)) })
		// And on float16, whose kernels are specialisations of their own.
		half := slices.Clone(spec)
		for j := range half {
			if half[j].DType == device.Float32 {
				half[j].DType = device.Float16
			}
		}
		_ = tensor.Maybe(func() { run(op, dev, half, c.Attrs, uint64(i)) })
	}
}

// fuzzAPI runs one input of FuzzAPI.
func fuzzAPI(t *testing.T, host, gpu device.Device, data []byte) {
	table := ops.Table()
	in := fuzzin.Bytes(data)
	op := table[in.Next(0, len(table)-1)]
	c := op.Cases[in.Next(0, len(op.Cases)-1)]
	a := hostileAttrs(&in, c.Attrs)
	spec := hostileInputs(&in, c.Inputs)
	seed := uint64(in.Next(0, 255))
	want := run(op, host, spec, a, seed)
	if gpu == nil {
		return
	}
	got := run(op, gpu, spec, a, seed)
	compare(t, fmt.Sprintf("%s (case %q, inputs %v, attrs %+v; values %v, upstream gradient %v)", op.Name, c.Name, spec, a, want.inputs, want.upstream), want, got)
}

// fuzzMemory is the memory limit of the fuzzer's CPU devices: a hostile
// pad or shape may ask for gigabytes, which the CPU backend would
// otherwise allocate and fill (its limit is most of the machine's).
const fuzzMemory = 1 << 28

// inputSpec is one input as the fuzzer made it.
type inputSpec struct {
	Shape   []int
	DType   device.DType
	Nil     bool // pass nil
	Foreign bool // put it on another device
	Classes int  // int32 indices in [−1, Classes+1)
}

func (s inputSpec) String() string {
	switch {
	case s.Nil:
		return "nil"
	case s.Foreign:
		return fmt.Sprintf("%v %v on another device", s.Shape, s.DType)
	}
	return fmt.Sprintf("%v %v", s.Shape, s.DType)
}

// hostileInputs mostly keeps the case's inputs, and sometimes changes a
// dimension, the rank or the dtype, or gives nil or another device's
// tensor. Inputs stay small: the arguments are hostile, not the memory.
func hostileInputs(in *fuzzin.Bytes, case_ []ops.Input) []inputSpec {
	spec := make([]inputSpec, len(case_))
	for i, c := range case_ {
		s := inputSpec{Shape: slices.Clone(c.Shape), DType: device.Float32, Classes: max(c.Domain.Classes, 1)}
		if c.Int {
			s.DType = device.Int32
		}
		if device.Numel(s.Shape) > 4096 {
			s.Shape = []int{7} // the large cases, made small
		}
		switch in.Next(0, 20) { // 0 (and no bytes left): the case's input
		case 1:
			if len(s.Shape) > 0 {
				s.Shape[in.Next(0, len(s.Shape)-1)] = in.Next(0, 5)
			}
		case 2:
			s.Shape = append(s.Shape, in.Next(0, 3))
		case 3:
			if len(s.Shape) > 0 {
				s.Shape = s.Shape[1:]
			}
		case 4:
			s.DType = fuzzin.Pick(in, device.Float16, device.Int32, device.Float32)
		case 5:
			s.Nil = true
		case 6:
			s.Foreign = true
		case 7: // a huge dimension beside an empty one: no elements
			s.Shape = []int{0, 1 << 40, 3}
		}
		spec[i] = s
	}
	return spec
}

// attrKinds is how many kinds of attribute change hostileAttrs makes:
// one per kind of field (ints, floats, bools, int slices, pairs of ints,
// strings, dtypes and reductions), and another attribute type altogether.
const attrKinds = 8

// foreignAttrs are attributes hostileAttrs hands an op instead of its
// own: a type the op does not take must fail naming both types.
var foreignAttrs = []ops.Attrs{nil, ops.FillAttrs{Value: 1}, ops.AxisAttrs{Axis: 0}, ops.Window{Stride: [2]int{1, 1}}, ops.ReduceAttrs{}}

// hostileAttrs mostly keeps the case's attributes and changes one or two
// of their fields to hostile values, or gives the op attributes of
// another type. Each change takes the same bytes whatever the
// attributes: a count, then per change an int, a float, the kind, the
// field and one further choice.
func hostileAttrs(in *fuzzin.Bytes, a ops.Attrs) ops.Attrs {
	for range in.Next(0, 2) {
		h := fuzzin.Pick(in, hostileInts...)
		v := fuzzin.Pick(in, hostileFloats...)
		kind := in.Next(0, attrKinds-1)
		field := in.Next(0, 255)
		extra := in.Next(0, 255)
		if kind == attrKinds-1 {
			a = foreignAttrs[extra%len(foreignAttrs)]
			continue
		}
		if a == nil {
			continue
		}
		rv := reflect.New(reflect.TypeOf(a)).Elem()
		rv.Set(reflect.ValueOf(a))
		var leaves []reflect.Value
		attrLeaves(rv, kind, &leaves)
		if len(leaves) == 0 {
			continue
		}
		f := leaves[field%len(leaves)]
		switch kind {
		case 0:
			f.SetInt(int64(h))
		case 1:
			f.SetFloat(v)
		case 2:
			f.SetBool(!f.Bool())
		case 3: // a copy: the case's slice is shared
			f.Set(reflect.ValueOf(append(slices.Clone(f.Interface().([]int)), h)))
		case 4:
			ps := append(slices.Clone(f.Interface().([][2]int)), [2]int{h, hostileInts[extra%len(hostileInts)]})
			f.Set(reflect.ValueOf(ps[max(0, len(ps)-2):]))
		case 5:
			f.SetString([]string{"", "nearest", "bilinear", "bicubic", "adaptive"}[extra%5])
		case 6:
			if f.Type() == reflect.TypeOf(device.DType(0)) {
				// Not float64, which only the CPU backend holds.
				f.Set(reflect.ValueOf([]device.DType{0, device.Float32, device.Int32, device.Float16, 5, 6}[extra%6]))
			} else {
				f.SetUint(uint64(extra % 5))
			}
		}
		a = rv.Interface().(ops.Attrs)
	}
	return a
}

// attrLeaves appends the settable fields of v, within structs and
// arrays, that a change of kind k (hostileAttrs) sets.
func attrLeaves(v reflect.Value, k int, out *[]reflect.Value) {
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			attrLeaves(v.Field(i), k, out)
		}
	case reflect.Array:
		for i := range v.Len() {
			attrLeaves(v.Index(i), k, out)
		}
	default:
		if leafKind(v) == k {
			*out = append(*out, v)
		}
	}
}

// leafKind returns the kind of change (hostileAttrs) that sets a field
// like v, or -1 for none.
func leafKind(v reflect.Value) int {
	switch v.Kind() {
	case reflect.Int:
		return 0
	case reflect.Float64:
		return 1
	case reflect.Bool:
		return 2
	case reflect.Slice:
		switch v.Type().Elem().Kind() {
		case reflect.Int:
			return 3
		case reflect.Array:
			return 4
		}
	case reflect.String:
		return 5
	case reflect.Uint8: // dtypes and reductions; an optimiser's kind stays
		if v.Type() != reflect.TypeOf(device.Optimizer(0)) {
			return 6
		}
	}
	return -1
}

// makeInputs makes the inputs on dev (those marked foreign on another
// CPU device), values drawn from specialValues by a generator seeded
// with seed: the same values on every backend.
func makeInputs(dev device.Device, spec []inputSpec, seed uint64) []*tensor.Tensor {
	r := rand.New(rand.NewPCG(seed, 1))
	ts := make([]*tensor.Tensor, len(spec))
	for i, s := range spec {
		n, err := device.CheckNumel(s.Shape)
		if s.Nil || err != nil {
			continue
		}
		v := make([]float64, n)
		for j := range v {
			switch {
			case s.DType == device.Int32:
				v[j] = float64(r.IntN(s.Classes+2) - 1) // one out of range below and above
			case r.IntN(3) == 0:
				v[j] = specialValues[r.IntN(len(specialValues))]
			default: // eighths in [−3, 3]: quotients of two are integers exactly or 1/24 away
				v[j] = float64(r.IntN(49)-24) / 8
			}
		}
		on := dev
		if s.Foreign {
			c := cpu.New()
			c.SetMemoryLimit(fuzzMemory)
			on = c
		}
		ts[i] = tensor.Must(tensor.FromValues(on, s.DType, v, s.Shape...))
	}
	return ts
}

// run runs op forward, and backward from an upstream gradient of ones
// with specials, on dev.
func run(op *ops.Op, dev device.Device, spec []inputSpec, a ops.Attrs, seed uint64) outcome {
	var o outcome
	var ins []*tensor.Tensor // made with the API too: a bad shape panics there
	if o.panicked = tensor.Maybe(func() { ins = makeInputs(dev, spec, seed) }); o.panicked != nil {
		return o
	}
	defer func() {
		for _, x := range ins {
			x.Release()
		}
	}()
	for _, x := range ins {
		var v []float64
		if x != nil {
			v, _ = x.Float64s()
		}
		o.inputs = append(o.inputs, v)
	}
	var out *tensor.Tensor
	if o.panicked = tensor.Maybe(func() { out = op.Forward(ins, a) }); o.panicked != nil {
		return o
	}
	defer out.Release()
	o.read(out)
	if op.Backward == nil || o.readErr != nil || !out.DType().IsFloat() {
		return o
	}
	g := makeInputs(dev, []inputSpec{{Shape: out.Shape(), DType: out.DType()}}, seed+1)[0]
	defer g.Release()
	o.upstream, _ = g.Float64s()
	var grads []*tensor.Tensor
	if err := tensor.Maybe(func() { grads = op.Backward(ins, g, a) }); err != nil {
		o.grads = []outcome{{panicked: err}}
		return o
	}
	for _, gr := range grads {
		var og outcome
		if gr != nil {
			og.read(gr)
			gr.Release()
		}
		o.grads = append(o.grads, og)
	}
	return o
}

// read reads t back into o.
func (o *outcome) read(t *tensor.Tensor) {
	o.shape, o.dtype = t.Shape(), t.DType()
	if t.DType() == device.Int32 {
		v, err := t.Int32s()
		o.readErr = err
		for _, x := range v {
			o.vals = append(o.vals, float64(x))
		}
		return
	}
	o.vals, o.readErr = t.Float64s()
}

// compare fails t unless the two backends' outcomes agree.
func compare(t *testing.T, what string, want, got outcome) {
	t.Helper()
	switch {
	case (want.panicked == nil) != (got.panicked == nil):
		t.Fatalf("%s: cpu panicked with %v, webgpu with %v", what, want.panicked, got.panicked)
	case want.panicked != nil:
		var w, g *tensor.Error
		if !errors.As(want.panicked, &w) || !errors.As(got.panicked, &g) || w.Kind != g.Kind {
			t.Fatalf("%s: cpu panicked with %v, webgpu with %v: different kinds", what, want.panicked, got.panicked)
		}
		return
	case errors.Is(want.readErr, device.ErrOutOfMemory) || errors.Is(got.readErr, device.ErrOutOfMemory):
		return // the backends' memories differ
	case (want.readErr == nil) != (got.readErr == nil):
		t.Fatalf("%s: cpu read %v, webgpu %v", what, want.readErr, got.readErr)
	case want.readErr != nil:
		return
	case !slices.Equal(want.shape, got.shape) || want.dtype != got.dtype:
		t.Fatalf("%s: cpu gave %v %v, webgpu %v %v", what, want.shape, want.dtype, got.shape, got.dtype)
	}
	tol := 1e-3
	if want.dtype == device.Float16 {
		tol = 1e-2
	}
	for i, w := range want.vals {
		g := got.vals[i]
		same := math.IsNaN(w) && math.IsNaN(g) || w == g || !math.IsInf(w, 0) && !math.IsInf(g, 0) && !math.IsNaN(g) && math.Abs(w-g) <= tol*(1+math.Abs(w))
		if !same {
			t.Fatalf("%s: element %d: cpu %v, webgpu %v", what, i, w, g)
		}
	}
	if len(want.grads) != len(got.grads) {
		t.Fatalf("%s: cpu gave %d gradients, webgpu %d", what, len(want.grads), len(got.grads))
	}
	for i := range want.grads {
		compare(t, fmt.Sprintf("%s, gradient %d", what, i), want.grads[i], got.grads[i])
	}
}
