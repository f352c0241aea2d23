package autograd_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/internal/gputest"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/tensor"
	"gonum.org/v1/gonum/diff/fd"
	"gonum.org/v1/gonum/floats/scalar"
)

// graph is a random small computation over three leaves of shapes (3,4),
// (4,) and (3,1): each step applies an op to earlier values (leaves are
// reused, values broadcast), and the loss is the sum of the last value.
type graph struct{ steps [][3]int } // op, operand, operand

var leafShapes = [][]int{{3, 4}, {4}, {3, 1}}

const nOps = 9

func randomGraph(r *rand.Rand) graph {
	var g graph
	for range 3 + r.IntN(5) {
		g.steps = append(g.steps, [3]int{r.IntN(nOps), r.IntN(3 + len(g.steps)), r.IntN(3 + len(g.steps))})
	}
	return g
}

// eval runs the graph on leaves of the given values.
func (g graph) eval(dev device.Device, dt device.DType, vals [][]float64) (leaves []*autograd.Var, loss *autograd.Var) {
	var vs []*autograd.Var
	for i, s := range leafShapes {
		t := tensor.Must(tensor.FromValues(dev, dt, vals[i], s...))
		vs = append(vs, autograd.Leaf(t, true))
	}
	leaves = append(leaves, vs...)
	for _, st := range g.steps {
		a, b := vs[st[1]], vs[st[2]]
		var v *autograd.Var
		switch st[0] {
		case 0:
			v = ops.Add(a, b)
		case 1:
			v = ops.Mul(a, b)
		case 2:
			v = ops.Sub(a, b)
		case 3:
			v = ops.Tanh(a)
		case 4:
			v = ops.Sigmoid(a)
		case 5:
			v = ops.Tanh(a)
			if a.Value().Rank() > 0 {
				v = ops.Softmax(a, -1)
			}
		case 6:
			v = ops.Mean(a)
			if a.Value().Rank() > 0 {
				v = ops.Mean(a, 0)
			}
		case 7:
			v = ops.Exp(ops.Mul(a, ops.Sigmoid(b))) // a value used twice via reuse
		default:
			v = ops.Sum(a)
		}
		vs = append(vs, v)
	}
	return leaves, ops.Sum(vs[len(vs)-1])
}

// TestRandomGraphs checks the tape's gradients of random graphs against
// central finite differences (CPU, float64) and the WebGPU tape's against
// the CPU's.
func TestRandomGraphs(t *testing.T) {
	c := cpu.New()
	gpu := gputest.OrNil(t)
	r := rand.New(rand.NewPCG(1, 2))
	for k := range 40 {
		g := randomGraph(r)
		vals := make([][]float64, len(leafShapes))
		for i, s := range leafShapes {
			vals[i] = make([]float64, device.Numel(s))
			for j := range vals[i] {
				vals[i][j] = float64(float32(r.Float64()*2 - 1))
			}
		}
		t.Run(fmt.Sprint(k), func(t *testing.T) {
			leaves, loss := g.eval(c, device.Float64, vals)
			if err := loss.Backward(); err != nil {
				t.Fatal(err)
			}
			want := make([][]float64, len(leaves))
			for i, l := range leaves {
				want[i] = read(t, l.Grad(), device.Numel(leafShapes[i]))
				// Finite differences of the loss in leaf i.
				fdg := fd.Gradient(nil, func(x []float64) float64 {
					v := append([][]float64(nil), vals...)
					v[i] = x
					_, l := g.eval(c, device.Float64, v)
					return read(t, l.Value(), 1)[0]
				}, vals[i], &fd.Settings{Formula: fd.Central})
				for j := range fdg {
					if !scalar.EqualWithinAbsOrRel(want[i][j], fdg[j], 1e-6, 1e-5) {
						t.Fatalf("graph %v: leaf %d gradient [%d] = %v; finite differences %v", g.steps, i, j, want[i][j], fdg[j])
					}
				}
			}
			if gpu == nil {
				return
			}
			gl, gloss := g.eval(gpu, device.Float32, vals)
			if err := gloss.Backward(); err != nil {
				t.Fatal(err)
			}
			for i, l := range gl {
				got := read(t, l.Grad(), len(want[i]))
				for j := range got {
					if !scalar.EqualWithinAbsOrRel(got[j], want[i][j], 1e-5, 1e-4) {
						t.Fatalf("graph %v: webgpu leaf %d gradient [%d] = %v; cpu float64 %v", g.steps, i, j, got[j], want[i][j])
					}
				}
			}
		})
	}
}

// read returns t's n values, or zeros for a nil gradient (a leaf the loss
// does not depend on).
func read(t *testing.T, x *tensor.Tensor, n int) []float64 {
	t.Helper()
	if x == nil {
		return make([]float64, n)
	}
	v, err := x.Float64s()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestMLPMatchesHandWritten checks, on the CPU backend, that the tape
// gives the same gradients as the hand-written backward of a two-layer
// MLP with a cross-entropy loss, bit for bit.
func TestMLPMatchesHandWritten(t *testing.T) {
	dev := cpu.New()
	u := func(seed uint64, shape ...int) *tensor.Tensor {
		return tensor.Must(tensor.Uniform(dev, device.Float32, -1, 1, seed, shape...))
	}
	x, w1, b1, w2, b2 := u(1, 8, 5), u(2, 6, 5), u(3, 6), u(4, 3, 6), u(5, 3)
	labels := tensor.Must(tensor.FromInt32(dev, []int32{0, 2, 1, 1, 0, 2, 2, 1}))

	// By hand.
	h := ops.Linear(x, w1, b1)
	a := ops.Relu(h)
	z := ops.Linear(a, w2, b2)
	one := tensor.Must(tensor.Scalar(dev, device.Float32, 1))
	gz, _ := ops.CrossEntropyLossBackward(z, labels, one, ops.MeanReduction)
	ga, gw2, gb2 := ops.LinearBackward(a, w2, b2, gz)
	gh := ops.ReluBackward(h, ga)
	_, gw1, gb1 := ops.LinearBackward(x, w1, b1, gh)

	// By the tape.
	vw1, vb1, vw2, vb2 := autograd.Leaf(w1, true), autograd.Leaf(b1, true), autograd.Leaf(w2, true), autograd.Leaf(b2, true)
	hidden := ops.Relu(ops.Linear(autograd.Leaf(x, false), vw1, vb1))
	loss := ops.CrossEntropyLoss(ops.Linear(hidden, vw2, vb2), autograd.Leaf(labels, false), ops.MeanReduction)
	if err := loss.Backward(); err != nil {
		t.Fatal(err)
	}
	for i, p := range []struct {
		v    *autograd.Var
		want *tensor.Tensor
	}{{vw1, gw1}, {vb1, gb1}, {vw2, gw2}, {vb2, gb2}} {
		got, want := read(t, p.v.Grad(), 0), read(t, p.want, 0)
		for j := range want {
			if got[j] != want[j] {
				t.Fatalf("parameter %d [%d]: tape %v, by hand %v", i, j, got[j], want[j])
			}
		}
	}
	if !hidden.Value().Released() {
		t.Errorf("an intermediate value outlived Backward")
	}
	if x.Released() || w1.Released() {
		t.Errorf("Backward released a leaf")
	}
}

// TestNoGradIntermediateReleased checks that an op's result that needs
// no gradient (a batch cast to float16, say) is the graph's once a
// recorded op reads it: Backward releases it, unless retained, and leaves
// the leaf it came from alone.
func TestNoGradIntermediateReleased(t *testing.T) {
	dev := cpu.New()
	for _, retain := range []bool{false, true} {
		x := autograd.Leaf(tensor.Must(tensor.FromFloat32(dev, []float32{1, 2, 3})), false)
		w := autograd.Leaf(tensor.Must(tensor.FromFloat32(dev, []float32{4, 5, 6})), true)
		data := ops.Relu(x)
		if retain {
			data.Retain()
		}
		if err := ops.Sum(ops.Mul(data, w)).Backward(); err != nil {
			t.Fatal(err)
		}
		if got := data.Value().Released(); got == retain {
			t.Errorf("retained %v: relu(batch) released %v; want %v", retain, got, !retain)
		}
		if x.Value().Released() {
			t.Errorf("retained %v: Backward released the leaf", retain)
		}
		if g := read(t, w.Grad(), 0); g[0] != 1 || g[1] != 2 || g[2] != 3 {
			t.Errorf("retained %v: w.Grad() = %v; want [1 2 3]", retain, g)
		}
	}
}

func TestAccumulateAndErrors(t *testing.T) {
	dev := cpu.New()
	x := autograd.Leaf(tensor.Must(tensor.FromFloat64(dev, []float64{1, 2, 3})), true)
	sq := func() *autograd.Var { return ops.Sum(ops.Mul(x, x)) }
	for range 2 {
		if err := sq().Backward(); err != nil {
			t.Fatal(err)
		}
	}
	if got := read(t, x.Grad(), 3); got[0] != 4 || got[1] != 8 || got[2] != 12 {
		t.Errorf("two backward passes of Σx² accumulate to %v; want [4 8 12]", got)
	}
	x.ZeroGrad()
	if x.Grad() != nil {
		t.Errorf("ZeroGrad left a gradient")
	}

	loss := sq()
	if err := loss.Backward(); err != nil {
		t.Fatal(err)
	}
	if err := loss.Backward(); err == nil {
		t.Errorf("a second Backward through a consumed graph: no error")
	}
	if err := ops.Mul(x, x).Backward(); err == nil {
		t.Errorf("Backward of a non-scalar: no error")
	}
	c := autograd.Leaf(tensor.Must(tensor.FromFloat64(dev, []float64{1, 2})), false)
	if err := ops.Sum(c).Backward(); err == nil {
		t.Errorf("Backward of a loss that requires no gradient: no error")
	}
	y := ops.Mul(x, x)
	l := ops.Sum(y)
	y.Value().Release()
	if err := l.Backward(); !errors.Is(err, tensor.ErrReleased) {
		t.Errorf("a gradient through a released tensor: %v; want ErrReleased", err)
	}
	am := autograd.Apply(ops.ArgmaxOp, ops.ArgAttrs{All: true}, x)
	one := tensor.Must(tensor.Scalar(dev, device.Int32, 1))
	if err := am.BackwardWith(one, false); err == nil {
		t.Errorf("a gradient through argmax: no error")
	}
	err := tensor.Maybe(func() { autograd.Apply(nil, nil, x) })
	if !errors.Is(err, tensor.ErrArgument) {
		t.Errorf("Apply of a nil op: %v; want ErrArgument", err)
	}
	err = tensor.Maybe(func() { autograd.Apply(ops.ClipOp, ops.Backprop{Attrs: ops.ClipAttrs{Lo: 0, Hi: 1}}, x) })
	if !errors.Is(err, tensor.ErrArgument) {
		t.Errorf("Apply with an ops.Backprop: %v; want ErrArgument", err)
	}
	err = tensor.Maybe(func() { autograd.Apply(ops.ClipOp, ops.FillAttrs{Value: 1}, x) })
	if !errors.Is(err, tensor.ErrArgument) || !strings.Contains(err.Error(), "autograd.Apply(clip): attributes of type ops.FillAttrs; want ops.ClipAttrs") {
		t.Errorf("Apply of clip with fill's attributes: %v; want ErrArgument naming the op and both types", err)
	}
}

func TestNoGrad(t *testing.T) {
	dev := cpu.New()
	x := autograd.Leaf(tensor.Must(tensor.FromFloat64(dev, []float64{1, 2})), true)
	w := autograd.Leaf(tensor.Must(tensor.FromFloat64(dev, []float64{3, 4})), true)
	for _, tt := range []struct {
		name     string
		v        *autograd.Var
		requires bool
	}{
		{"x·w", ops.Mul(x, w), true},
		{"x.NoGrad()·w", ops.Mul(x.NoGrad(), w), false},
		{"an op on a NoGrad result and w", ops.Add(ops.Exp(x.NoGrad()), w), false},
		{"w·w beside a NoGrad computation", ops.Mul(w, w), true},
	} {
		if tt.v.RequiresGrad() != tt.requires {
			t.Errorf("%s: RequiresGrad() = %v; want %v", tt.name, tt.v.RequiresGrad(), tt.requires)
		}
	}
	if !x.RequiresGrad() {
		t.Error("NoGrad changed the variable it was called on")
	}
	y := ops.Sum(ops.Mul(x.NoGrad(), w))
	if err := y.Backward(); err == nil {
		t.Error("Backward of a NoGrad result: no error")
	}
	if w.Grad() != nil {
		t.Error("Backward of a NoGrad result gave w a gradient")
	}
}

// TestCheckpointOfNoGrad checks that a checkpointed function that reads
// a NoGrad variable fails in Backward, as the same function unchecked
// does, instead of giving no gradient.
func TestCheckpointOfNoGrad(t *testing.T) {
	dev := cpu.New()
	x := autograd.Leaf(tensor.Must(tensor.FromFloat64(dev, []float64{1, 2})), true)
	c := autograd.Leaf(tensor.Must(tensor.FromFloat64(dev, []float64{3, 4})), false).NoGrad()
	fn := func(v *autograd.Var) *autograd.Var { return ops.Mul(v, c) }
	if err := ops.Sum(fn(x)).Backward(); err == nil {
		t.Error("Backward of a loss that reads a NoGrad variable: no error")
	}
	if err := ops.Sum(autograd.Checkpoint(fn, x)).Backward(); err == nil || !strings.Contains(err.Error(), "NoGrad") {
		t.Errorf("Backward through a checkpoint that reads a NoGrad variable: %v; want an error naming NoGrad", err)
	}
	if x.Grad() != nil {
		t.Error("x got a gradient")
	}
}

// TestCheckpoint trains nothing: it compares the gradients of a 16-layer
// MLP with and without checkpointing every 4 layers (bit for bit on the
// CPU, close on WebGPU) and the peak device memory of the two.
func TestCheckpoint(t *testing.T) {
	devs := []device.Device{cpu.New()}
	if g := gputest.OrNil(t); g != nil {
		gd, err := device.Open("webgpu") // its own pool statistics
		if err != nil {
			t.Fatal(err)
		}
		defer gd.Close()
		devs = append(devs, gd)
	}
	const width, batch, layers = 128, 2048, 16
	for _, dev := range devs {
		t.Run(dev.Name(), func(t *testing.T) {
			var ws []*autograd.Var
			for i := range layers {
				ws = append(ws, autograd.Leaf(tensor.Must(tensor.Uniform(dev, device.Float32, -0.15, 0.15, uint64(i), width, width)), true))
			}
			x := autograd.Leaf(tensor.Must(tensor.Uniform(dev, device.Float32, -1, 1, 99, batch, width)), false)
			block := func(lo int) func(*autograd.Var) *autograd.Var {
				return func(h *autograd.Var) *autograd.Var {
					for _, w := range ws[lo : lo+4] {
						h = ops.Tanh(ops.MatMul(h, w))
					}
					return h
				}
			}
			run := func(checkpointed bool) (grads [][]float64, peak uint64) {
				if err := dev.Sync(); err != nil {
					t.Fatal(err)
				}
				resetPeak(dev)
				h := x
				for lo := 0; lo < layers; lo += 4 {
					if checkpointed {
						h = autograd.Checkpoint(block(lo), h)
					} else {
						h = block(lo)(h)
					}
				}
				loss := ops.Mean(h)
				if err := loss.Backward(); err != nil {
					t.Fatal(err)
				}
				loss.Release()
				if err := dev.Sync(); err != nil {
					t.Fatal(err)
				}
				peak = peakOf(dev)
				for _, w := range ws {
					grads = append(grads, read(t, w.Grad(), width*width))
					w.ZeroGrad()
				}
				return grads, peak
			}
			plain, p0 := run(false)
			ck, p1 := run(true)
			exact := dev.Name() == "cpu"
			for i := range plain {
				for j := range plain[i] {
					a, b := plain[i][j], ck[i][j]
					if exact && a != b || !exact && !scalar.EqualWithinAbsOrRel(a, b, 1e-6, 1e-4) {
						t.Fatalf("layer %d gradient [%d]: %v checkpointed, %v not", i, j, b, a)
					}
				}
			}
			drop := 1 - float64(p1)/float64(p0)
			t.Logf("peak device memory: %d KiB plain, %d KiB checkpointed every 4 layers (%.0f%% less)", p0>>10, p1>>10, 100*drop)
			if drop < 0.4 {
				t.Errorf("checkpointing lowered the peak by %.0f%%; want ≥ 40%%", 100*drop)
			}
		})
	}
}

func resetPeak(dev device.Device) {
	switch d := dev.(type) {
	case *cpu.Device:
		d.ResetPeak()
	case device.Pooler:
		d.ResetPeak()
	}
}

func peakOf(dev device.Device) uint64 {
	switch d := dev.(type) {
	case *cpu.Device:
		return uint64(d.MemoryPeak())
	case device.Pooler:
		return d.PoolStats().BytesPeak
	}
	return 0
}

// TestSavedReleased checks that what an op's Save keeps (conv2d's
// columns) lives while the op is recorded, and that Backward releases it
// with the graph's intermediates: the memory in use goes back to what the
// leaves and their gradients hold. With retain it stays, for a second
// pass that gives the same gradients.
func TestSavedReleased(t *testing.T) {
	dev := cpu.New()
	defer dev.Close()
	x := autograd.Leaf(tensor.Must(tensor.Uniform(dev, device.Float32, -1, 1, 1, 4, 3, 10, 10)), false)
	w := autograd.Leaf(tensor.Must(tensor.Uniform(dev, device.Float32, -1, 1, 2, 5, 3, 3, 3)), true)
	b := autograd.Leaf(tensor.Must(tensor.Uniform(dev, device.Float32, -1, 1, 3, 5)), true)
	win := ops.Window{Stride: [2]int{1, 1}}
	// The columns: 4 images of 3·3·3 + 1 rows of 8·8 pixels.
	const cols = 4 * 28 * 64 * 4
	for _, retain := range []bool{false, true} {
		before := dev.MemoryInUse()
		y := ops.Conv2d(x, w, b, win)
		if held := dev.MemoryInUse() - before; held < cols+4*5*64*4 {
			t.Fatalf("retain=%v: the recorded conv2d holds %d bytes; want its output and its columns, %d", retain, held, cols+4*5*64*4)
		}
		loss := ops.Sum(y)
		g := tensor.Must(tensor.Scalar(dev, device.Float32, 1))
		if err := loss.BackwardWith(g, retain); err != nil {
			t.Fatal(err)
		}
		first := read(t, w.Grad(), 5*27)
		if retain {
			w.ZeroGrad()
			if err := loss.BackwardWith(g, false); err != nil {
				t.Fatal(err)
			}
			if again := read(t, w.Grad(), 5*27); !slices.Equal(again, first) {
				t.Fatalf("a second backward through the retained graph gave %v; the first %v", again, first)
			}
		}
		g.Release()
		loss.Release()
		grads := int64(5*27*4 + 5*4)
		if left := dev.MemoryInUse() - before - grads; left != 0 {
			t.Errorf("retain=%v: %d bytes left after backward beyond the gradients", retain, left)
		}
		w.ZeroGrad()
		b.ZeroGrad()
	}
}

// TestSetRequiresGrad freezes a leaf (no gradient, the old one released)
// and thaws it; an op's result refuses.
func TestSetRequiresGrad(t *testing.T) {
	dev := cpu.New()
	w := autograd.Leaf(tensor.Must(tensor.FromFloat64(dev, []float64{1, 2}, 2)), true)
	b := autograd.Leaf(tensor.Must(tensor.FromFloat64(dev, []float64{3, 4}, 2)), true)
	step := func() {
		if err := ops.Sum(ops.Mul(w, b)).Backward(); err != nil {
			t.Fatal(err)
		}
	}
	step()
	if w.Grad() == nil || b.Grad() == nil {
		t.Fatal("no gradients")
	}
	if w.SetRequiresGrad(false) != w || w.Grad() != nil || w.RequiresGrad() {
		t.Fatal("SetRequiresGrad(false) kept the gradient or the flag")
	}
	b.ZeroGrad()
	step()
	if w.Grad() != nil || b.Grad() == nil {
		t.Errorf("frozen w: gradients %v, %v; want none for w", w.Grad(), b.Grad())
	}
	w.SetRequiresGrad(true)
	step()
	if g, err := w.Grad().Float64s(); err != nil || !slices.Equal(g, []float64{3, 4}) {
		t.Errorf("thawed w: gradient %v, %v", g, err)
	}
	y := ops.Mul(w, b)
	if err := tensor.Maybe(func() { y.SetRequiresGrad(false) }); !errors.Is(err, tensor.ErrArgument) || !strings.Contains(err.Error(), "not a leaf") {
		t.Errorf("SetRequiresGrad on an op's result: %v", err)
	}
}
