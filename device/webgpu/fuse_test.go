//go:build cgo || js

package webgpu_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/device/webgpu"
	"github.com/extensor/extensor/internal/gputest"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/tensor"
	"github.com/x448/float16"
)

// A chainStep is one call of a random elementwise program (chainProgram).
type chainStep struct {
	kind      string // "unary", "ugrad", "where", "binary", "bgrad", "cast", "fill", "cumsum", "free"
	op        string
	p         []float64 // a unary op's scalars, a fill's value
	wrt       int
	out       int   // the value written (a new one, or an old one overwritten)
	args      []int // the values read: x (and dy); cond, a, b; a, b (and g)
	bcast     int   // for binary: which operand (1 a, 2 b) is the broadcast input, 0 none
	bshape    []int // the broadcast input's shape (dims of 1 where it broadcasts)
	bvalues   int   // the broadcast input's index among the program's inputs
	broadcast device.Broadcast
}

// chainProgram is a random chain of elementwise calls over values of one
// shape, some of whose operands broadcast: the inputs it writes, the
// calls, and the values it reads back.
type chainProgram struct {
	shape  []int
	inputs [][]float32    // full values 0…len(full)-1, then broadcast inputs
	idts   []device.DType // the inputs' dtypes
	full   int            // how many inputs are full values
	steps  []chainStep
	values int            // how many values the steps make, inputs included
	dts    []device.DType // the values' dtypes
	read   []int
}

// chainUnary are the unary ops the chain fuzzer draws, with parameters.
var chainUnary = []struct {
	op string
	p  []float64
}{
	{"neg", nil}, {"exp", nil}, {"log", nil}, {"sqrt", nil}, {"abs", nil}, {"sin", nil},
	{"relu", nil}, {"leaky_relu", []float64{0.1}}, {"sigmoid", nil}, {"tanh", nil}, {"gelu", nil},
	{"gelu_tanh", nil}, {"silu", nil}, {"softplus", []float64{1, 20}}, {"elu", []float64{1}},
	{"clip", []float64{-1, 2}}, {"pow_scalar", []float64{2}}, {"floor", nil}, {"mish", nil},
}

// chainBinary are the binary ops it draws.
var chainBinary = []string{"add", "sub", "mul", "div", "maximum", "minimum", "prelu", "squared_difference", "pow"}

// specials are the values the inputs draw among ordinary ones; a
// program with float16 values draws float16's subnormals and the values
// about its largest too.
var (
	specials     = []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)), 1e30, -1e-30, 65504, 1}
	halfSpecials = append(slices.Clone(specials), 3e-6, -6e-8, 6.1e-5, 65519, -65520, 2.98e-8)
)

func randomValues(r *rand.Rand, n int, half bool) []float32 {
	sp := specials
	if half {
		sp = halfSpecials
	}
	v := make([]float32, n)
	for i := range v {
		if r.IntN(8) == 0 {
			v[i] = sp[r.IntN(len(sp))]
		} else {
			v[i] = float32(r.NormFloat64() * 2)
		}
	}
	return v
}

// randomChain draws a program of 2 to 12 calls on float32 values, or,
// if half, on float16 ones (inputs 0 and 1), float32 ones (input 2) and
// casts between them; if foreign, some calls are kernels of other
// families, fills and cumulative sums, which a chain does not take.
func randomChain(r *rand.Rand, half, foreign bool) chainProgram {
	var p chainProgram
	rank := 1 + r.IntN(4)
	p.shape = make([]int, rank)
	for k := range p.shape {
		p.shape[k] = []int{1, 2, 3, 4, 5, 7, 8, 12}[r.IntN(8)]
	}
	n := device.Numel(p.shape)
	p.full, p.idts = 2, []device.DType{device.Float32, device.Float32}
	if half {
		p.full, p.idts = 3, []device.DType{device.Float16, device.Float16, device.Float32}
	}
	for range p.full {
		p.inputs = append(p.inputs, randomValues(r, n, half))
	}
	p.values, p.dts = p.full, slices.Clone(p.idts)
	live := []int{0, 1}
	if half {
		live = append(live, 2)
	}
	pick := func() int { return live[r.IntN(len(live))] }
	// pickOf picks a value of dt (as pick, where every value is of dt).
	pickOf := func(dt device.DType) int {
		of := slices.DeleteFunc(slices.Clone(live), func(v int) bool { return p.dts[v] != dt })
		return of[r.IntN(len(of))]
	}
	steps := 2 + r.IntN(11)
	for len(p.steps) < steps {
		s := chainStep{out: p.values}
		if r.IntN(6) == 0 { // overwrite a value
			s.out = pick()
		}
		var dt device.DType // the step's output's
		if foreign && r.IntN(4) == 0 {
			if r.IntN(2) == 0 {
				s.kind, s.p = "fill", []float64{float64(specials[r.IntN(len(specials))])}
				dt = p.dts[pick()]
			} else {
				s.kind, s.args = "cumsum", []int{pick()}
				dt = p.dts[s.args[0]]
			}
		} else if half && r.IntN(4) == 0 {
			s.kind, s.args = "cast", []int{pick()}
			dt = device.Float16
			if p.dts[s.args[0]] == device.Float16 {
				dt = device.Float32
			}
		} else {
			switch k := r.IntN(11); {
			case k < 3:
				u := chainUnary[r.IntN(len(chainUnary))]
				s.kind, s.op, s.p, s.args = "unary", u.op, u.p, []int{pick()}
			case k < 4:
				u := chainUnary[r.IntN(len(chainUnary))]
				s.kind, s.op, s.p, s.args = "ugrad", u.op, u.p, []int{pick()}
				s.args = append(s.args, pickOf(p.dts[s.args[0]]))
			case k < 5:
				s.kind, s.args = "where", []int{pick()}
				of := p.dts[s.args[0]]
				s.args = append(s.args, pickOf(of), pickOf(of))
			default:
				s.kind, s.op = "binary", chainBinary[r.IntN(len(chainBinary))]
				s.args = []int{pick()}
				of := p.dts[s.args[0]]
				s.args = append(s.args, pickOf(of))
				if k >= 9 {
					s.kind, s.wrt = "bgrad", r.IntN(2)
					s.args = append(s.args, pickOf(of))
				}
				full := device.RowMajor(p.shape)
				s.broadcast = device.Broadcast{Shape: p.shape, AStrides: full, BStrides: full}
				if r.IntN(2) == 0 { // one operand broadcast, or one element
					s.bcast = 1 + r.IntN(2)
					s.bshape = make([]int, rank)
					for k := range s.bshape {
						s.bshape[k] = p.shape[k]
						if r.IntN(2) == 0 || r.IntN(4) == 0 && k > 0 {
							s.bshape[k] = 1
						}
					}
					st := device.RowMajor(s.bshape)
					for k := range st {
						if s.bshape[k] == 1 {
							st[k] = 0
						}
					}
					if s.bcast == 1 {
						s.broadcast.AStrides = st
					} else {
						s.broadcast.BStrides = st
					}
					s.bvalues = len(p.inputs)
					p.inputs = append(p.inputs, randomValues(r, device.Numel(s.bshape), half))
					p.idts = append(p.idts, p.dts[s.args[0]])
				}
			}
			dt = p.dts[s.args[0]]
		}
		// A kernel's output is none of its operands, and of its dtype.
		if slices.Contains(s.args, s.out) || s.out < p.values && p.dts[s.out] != dt {
			s.out = p.values
		}
		p.steps = append(p.steps, s)
		if s.out == p.values {
			p.values++
			p.dts = append(p.dts, dt)
			live = append(live, s.out)
		}
		if len(live) > 2 && r.IntN(5) == 0 { // free a value never read again
			i := r.IntN(len(live))
			p.steps = append(p.steps, chainStep{kind: "free", out: live[i]})
			live = append(live[:i], live[i+1:]...)
		}
	}
	p.read = live
	return p
}

// run runs the program on d, returning the values it reads back, as
// float32.
func (p chainProgram) run(t *testing.T, d *webgpu.Device) [][]float32 {
	t.Helper()
	n := device.Numel(p.shape)
	alloc := func(dt device.DType, n int, v []float32) device.Buffer {
		b, err := d.Alloc(dt, n)
		if err != nil {
			t.Fatal(err)
		}
		if v != nil {
			if err := d.Write(b, host(dt, v)); err != nil {
				t.Fatal(err)
			}
		}
		return b
	}
	vals := make([]device.Buffer, p.values)
	for i := range p.full {
		vals[i] = alloc(p.idts[i], n, p.inputs[i])
	}
	extra := make([]device.Buffer, len(p.inputs))
	for i := p.full; i < len(p.inputs); i++ { // written before the chain, which a write cuts
		extra[i] = alloc(p.idts[i], len(p.inputs[i]), p.inputs[i])
	}
	for _, s := range p.steps {
		if s.kind == "free" {
			d.Free(vals[s.out])
			vals[s.out] = nil
			continue
		}
		if vals[s.out] == nil {
			vals[s.out] = alloc(p.dts[s.out], n, nil)
		}
		out := vals[s.out]
		arg := func(i int) device.Buffer { return vals[s.args[i]] }
		switch s.kind {
		case "unary":
			d.Unary(device.UnaryOp(s.op), out, arg(0), s.p...)
		case "ugrad":
			d.UnaryGrad(device.UnaryOp(s.op), out, arg(0), arg(1), s.p...)
		case "where":
			d.Where(out, arg(0), arg(1), arg(2))
		case "cast":
			d.Convert(out, arg(0))
		case "fill":
			d.Fill(out, s.p[0])
		case "cumsum":
			d.Cumsum(out, arg(0), p.shape, len(p.shape)-1, false)
		case "binary", "bgrad":
			a, b := arg(0), arg(1)
			if s.bcast > 0 {
				bb := extra[s.bvalues]
				if s.bcast == 1 {
					a = bb
				} else {
					b = bb
				}
			}
			if s.kind == "binary" {
				d.Binary(device.BinaryOp(s.op), out, a, b, s.broadcast)
			} else {
				d.BinaryGrad(device.BinaryOp(s.op), s.wrt, out, arg(2), a, b, s.broadcast)
			}
		}
	}
	got := make([][]float32, len(p.read))
	for i, v := range p.read {
		got[i] = readBack(t, d, p.dts[v], vals[v], n)
	}
	for _, b := range append(vals, extra...) {
		if b != nil {
			d.Free(b)
		}
	}
	return got
}

// host returns v as a host slice of dt: itself, or float16 bits.
func host(dt device.DType, v []float32) any {
	if dt != device.Float16 {
		return v
	}
	h := make([]uint16, len(v))
	for i, x := range v {
		h[i] = float16.Fromfloat32(x).Bits()
	}
	return h
}

// readBack reads n elements of b, of dt, as float32.
func readBack(t *testing.T, d device.Device, dt device.DType, b device.Buffer, n int) []float32 {
	t.Helper()
	out := make([]float32, n)
	if dt == device.Float16 {
		h := make([]uint16, n)
		if err := d.Read(b, h); err != nil {
			t.Fatal(err)
		}
		for i, x := range h {
			out[i] = float16.Frombits(x).Float32()
		}
		return out
	}
	if err := d.Read(b, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func (p chainProgram) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v %v:", p.idts[:p.full], p.shape)
	for _, s := range p.steps {
		switch s.kind {
		case "free":
			fmt.Fprintf(&b, " free v%d;", s.out)
		default:
			fmt.Fprintf(&b, " v%d = %s %s%v", s.out, s.kind, s.op, s.args)
			switch s.kind {
			case "cast":
				fmt.Fprintf(&b, " to %v", p.dts[s.out])
			case "fill":
				fmt.Fprintf(&b, " %v", s.p[0])
			}
			if s.bcast > 0 {
				fmt.Fprintf(&b, " (operand %d broadcast from %v)", s.bcast, s.bshape)
			}
			b.WriteString(";")
		}
	}
	return b.String()
}

// sameBits reports whether a and b are the same float32, NaNs alike.
func sameBits(a, b float32) bool {
	return a == b || a != a && b != b
}

// FuzzFusedChains runs random chains of 2 to 12 unary, binary and where
// calls and the gradients, on values with special ones, of random shapes
// and broadcasts, float32, or float16 and float32 with casts between
// them, some values overwritten and some freed before the chain runs
// (their buffers taken anew, of either dtype), with kernels of other
// families among them (foreign: recorded before the open chain where
// they bind none of its buffers), fused and unfused, and requires the
// same values from both. (The CPU backend runs every call on its own: fused there is
// unfused.)
func FuzzFusedChains(f *testing.F) {
	for seed := range uint64(24) {
		f.Add(seed, seed%3 == 2, seed%4 >= 2)
	}
	// Found by fuzzing: (∞ − ∞)² folded to 0 (opaque). Seeds live here
	// rather than in testdata/fuzz, which the browser's run cannot list.
	f.Add(uint64(93), false, false)
	// A cast to float16 whose value only the chain reads.
	f.Add(uint64(134), true, false)
	d := gputest.Open(f).(*webgpu.Device)
	f.Fuzz(func(t *testing.T, seed uint64, half, foreign bool) {
		p := randomChain(rand.New(rand.NewPCG(seed, 7)), half, foreign)
		defer d.Fusion(d.Fusion(false))
		before := d.FusedKernels()
		want := p.run(t, d)
		if d.FusedKernels() != before {
			t.Fatal("fusion off, yet a fused kernel ran")
		}
		d.Fusion(true)
		got := p.run(t, d)
		t.Logf("%d fused kernels: %v", d.FusedKernels()-before, p)
		for i := range want {
			for j := range want[i] {
				if !sameBits(got[i][j], want[i][j]) {
					t.Fatalf("%v\nvalue v%d[%d]: fused %v, unfused %v", p, p.read[i], j, got[i][j], want[i][j])
				}
			}
		}
	})
}

// TestChainPastKernels runs a chain whose calls take scalars filled by
// kernels of their own between them, each freed after its call (as ops'
// constants are), and a cumulative sum of another buffer: those kernels
// bind none of the chain's buffers (the pool hands the freed scalars'
// buffers to no other scalar while the chain reads them), so they run
// ahead of it, and the chain is one fused kernel; a cumulative sum of
// the chain's value then records the chain first.
func TestChainPastKernels(t *testing.T) {
	d := fresh(t)
	counter := device.Device(d).(device.Counter)
	n := 1000
	shape := []int{n}
	alloc := func(v []float32) device.Buffer {
		b, err := d.Alloc(device.Float32, len(v))
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Write(b, v); err != nil {
			t.Fatal(err)
		}
		return b
	}
	xs, ws := make([]float32, n), make([]float32, n)
	for i := range xs {
		xs[i], ws[i] = float32(i%7)-3, float32(i%5)
	}
	x, w := alloc(xs), alloc(ws)
	out := func() device.Buffer {
		b, err := d.Alloc(device.Float32, n)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	y, c, cs, z := out(), out(), out(), out()
	k0 := counter.Kernels()
	d.Cumsum(c, w, shape, 0, false)
	sums := counter.Kernels() - k0 // a cumulative sum's dispatches
	splat := device.Broadcast{Shape: shape, AStrides: []int{1}, BStrides: []int{0}}
	k0, f0 := counter.Kernels(), d.FusedKernels()
	d.Unary(device.UnaryOp("relu"), y, x)
	for _, k := range []float64{2, 3, -1} {
		s, err := d.Alloc(device.Float32, 1)
		if err != nil {
			t.Fatal(err)
		}
		d.Fill(s, k)
		next := out()
		d.Binary(device.Mul, next, y, s, splat)
		d.Free(s)
		d.Free(y)
		y = next
	}
	d.Cumsum(c, w, shape, 0, false)
	d.Binary(device.Add, z, y, c, device.Broadcast{Shape: shape, AStrides: []int{1}, BStrides: []int{1}})
	d.Cumsum(cs, z, shape, 0, false)
	got := readBack(t, d, device.Float32, cs, n)
	if k, f := counter.Kernels()-k0, d.FusedKernels()-f0; k != 4+2*sums || f != 1 {
		t.Errorf("%d kernels, %d fused; want %d (3 fills, 2 cumulative sums of %d each, the chain), 1", k, f, 4+2*sums, sums)
	}
	var sumW, sumZ float32
	for i := range n {
		sumW += ws[i]
		sumZ += max(xs[i], 0)*-6 + sumW
		if got[i] != sumZ {
			t.Fatalf("element %d: %v; want %v", i, got[i], sumZ)
		}
	}
}

// TestChainFailureTaints runs a chain whose fused kernel fails to
// compile and a sum of its value recorded after it: the sum fails too,
// read after read, naming the chain's kernel.
func TestChainFailureTaints(t *testing.T) {
	d := fresh(t)
	webgpu.FailCompiles(d, "fused/")
	x := tensor.Must(tensor.FromFloat32(d, []float32{-1, 2, -3, 4}, 4))
	y := ops.Relu(x)
	z := ops.Neg(y)
	s := ops.Sum(z)
	for i := range 2 {
		if _, err := s.Float32s(); err == nil || !strings.Contains(err.Error(), "fused/relu,neg") {
			t.Errorf("read %d of the sum: %v; want the fused kernel's failure", i+1, err)
		}
	}
}
