package ops_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/tensor"
)

// TestConv2dDirect checks Conv2d and its gradients, in float64 on the CPU
// backend, against the convolution's definition summed term by term: no
// im2col, no matrix products. Parity compares the backends and finite
// differences check the gradients against the forward; this pins the
// forward itself, for batches whose images the products lay side by side,
// in chunks (3, 3 and 1 images; 3 and 1) and with groups. It checks both
// ways backward gets the columns: computed again (Conv2dBackward) and
// kept by the table's Save, read twice (a retained graph) and left as
// they were.
func TestConv2dDirect(t *testing.T) {
	for _, c := range []struct {
		x, w []int
		win  ops.Window
	}{
		{[]int{3, 4, 9, 8}, []int{6, 2, 3, 2}, ops.Window{Stride: [2]int{2, 1}, Padding: [2]int{1, 2}, Dilation: [2]int{1, 2}, Groups: 2}},
		{[]int{2, 3, 6, 6}, []int{5, 3, 3, 3}, ops.Window{Stride: [2]int{1, 1}, Padding: [2]int{1, 1}}},
		{[]int{7, 4, 130, 130}, []int{2, 4, 3, 3}, ops.Window{Stride: [2]int{1, 1}}},
		{[]int{4, 4, 130, 130}, []int{4, 2, 3, 3}, ops.Window{Stride: [2]int{1, 1}, Groups: 2}},
	} {
		t.Run(fmt.Sprint(c.x, c.w, c.win), func(t *testing.T) {
			e := newEnv(t)
			x, w, b := e.uniform(-1, 1, 1, c.x...), e.uniform(-1, 1, 2, c.w...), e.uniform(-1, 1, 3, c.w[0])
			y := e.keep(ops.Conv2d(x, w, b, c.win))
			g := e.uniform(-1, 1, 4, y.Shape()...)
			gx, gw, gb := ops.Conv2dBackward(x, w, b, g, c.win)
			for _, r := range []interface{ Release() }{gx, gw, gb} {
				t.Cleanup(r.Release)
			}
			op, in := ops.Conv2dOp, []*tensor.Tensor{x, w, b}
			yk, saved := op.Save(in, c.win)
			if saved.Len() == 0 {
				t.Fatal("Save kept no columns")
			}
			t.Cleanup(saved.Release)
			e.keep(yk)
			gs1 := op.Backward(in, g, ops.Backprop{Attrs: c.win, Saved: saved})
			gs2 := op.Backward(in, g, ops.Backprop{Attrs: c.win, Saved: saved})
			for _, r := range append(gs1, gs2...) {
				t.Cleanup(r.Release)
			}

			xs, ys := c.x, y.Shape()
			xv, wv, bv, gv := values(t, x), values(t, w), values(t, b), values(t, g)
			want := make([]float64, len(gv))
			wantX, wantW, wantB := make([]float64, len(xv)), make([]float64, len(wv)), make([]float64, len(bv))
			groups := max(c.win.Groups, 1)
			d := c.win.Dilation
			if d == [2]int{} {
				d = [2]int{1, 1}
			}
			cg, og := xs[1]/groups, c.w[0]/groups
			for n := range ys[0] {
				for o := range ys[1] {
					for i := range ys[2] {
						for j := range ys[3] {
							out := ((n*ys[1]+o)*ys[2]+i)*ys[3] + j
							s := bv[o]
							wantB[o] += gv[out]
							for ci := range cg {
								ch := o/og*cg + ci
								for a := range c.w[2] {
									for bb := range c.w[3] {
										py := i*c.win.Stride[0] - c.win.Padding[0] + a*d[0]
										px := j*c.win.Stride[1] - c.win.Padding[1] + bb*d[1]
										if py < 0 || py >= xs[2] || px < 0 || px >= xs[3] {
											continue
										}
										xi := ((n*xs[1]+ch)*xs[2]+py)*xs[3] + px
										wi := ((o*cg+ci)*c.w[2]+a)*c.w[3] + bb
										s += xv[xi] * wv[wi]
										wantX[xi] += gv[out] * wv[wi]
										wantW[wi] += gv[out] * xv[xi]
									}
								}
							}
							want[out] = s
						}
					}
				}
			}
			for _, r := range []struct {
				name      string
				got, want []float64
			}{{"y", values(t, y), want}, {"gx", values(t, gx), wantX}, {"gw", values(t, gw), wantW}, {"gb", values(t, gb), wantB},
				{"y (Save)", values(t, yk), want}, {"gx (saved)", values(t, gs1[0]), wantX}, {"gw (saved)", values(t, gs1[1]), wantW}, {"gb (saved)", values(t, gs1[2]), wantB},
				{"gx (saved, again)", values(t, gs2[0]), wantX}, {"gw (saved, again)", values(t, gs2[1]), wantW}, {"gb (saved, again)", values(t, gs2[2]), wantB}} {
				if len(r.got) != len(r.want) {
					t.Fatalf("%s: %d values, want %d", r.name, len(r.got), len(r.want))
				}
				for i := range r.want {
					if math.Abs(r.got[i]-r.want[i]) > 1e-9*math.Max(1, math.Abs(r.want[i])) {
						t.Fatalf("%s[%d] = %v, want %v", r.name, i, r.got[i], r.want[i])
					}
				}
			}
		})
	}
}

// TestConv2dSaveBudget checks that Save keeps no columns past its budget
// (2²⁴ elements over the batch), and that backward then computes them.
func TestConv2dSaveBudget(t *testing.T) {
	e := newEnv(t)
	// 29 images of 37 rows (4 channels × 3×3 taps and the ones) of
	// 128·128 pixels: 17.6 M elements.
	x, w, b := e.uniform(-1, 1, 1, 29, 4, 130, 130), e.uniform(-1, 1, 2, 2, 4, 3, 3), e.uniform(-1, 1, 3, 2)
	op, in, a := ops.Conv2dOp, []*tensor.Tensor{x, w, b}, ops.Window{Stride: [2]int{1, 1}}
	y, saved := op.Save(in, a)
	e.keep(y)
	if n := saved.Len(); n != 0 {
		saved.Release()
		t.Fatalf("Save kept %d tensors of columns past its budget; want none", n)
	}
	g := e.uniform(-1, 1, 4, y.Shape()...)
	got := op.Backward(in, g, ops.Backprop{Attrs: a, Saved: saved})
	gx, gw, gb := ops.Conv2dBackward(x, w, b, g, a)
	for i, want := range []*tensor.Tensor{gx, gw, gb} {
		e.keep(got[i])
		e.keep(want)
		if d := maxDiff(values(t, got[i]), values(t, want)); d != 0 {
			t.Errorf("gradient %d differs from Conv2dBackward's by %g", i, d)
		}
	}
}

// maxDiff returns the largest |a[i] − b[i]|, +Inf if the lengths differ.
func maxDiff(a, b []float64) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	d := 0.0
	for i := range a {
		d = math.Max(d, math.Abs(a[i]-b[i]))
	}
	return d
}

// TestConv2dScratchFailure checks that a convolution whose device cannot
// allocate its scratch memory (the CPU backend's im2col columns, past its
// memory limit) gives failed outputs that name the op and wrap
// ErrOutOfMemory, forward and backward, and that the device works on.
func TestConv2dScratchFailure(t *testing.T) {
	e := newEnv(t)
	x, w, b := e.uniform(-1, 1, 1, 2, 3, 8, 8), e.uniform(-1, 1, 2, 4, 3, 3, 3), e.uniform(-1, 1, 3, 4)
	g := e.uniform(-1, 1, 4, 2, 4, 6, 6)
	win := ops.Window{Stride: [2]int{1, 1}}
	dev := e.dev.(*cpu.Device)
	// Room for the outputs (float64 y: 288 elements; gx, gw, gb: 384, 108
	// and 4), not for the columns besides (2·28·36 elements).
	dev.SetMemoryLimit(dev.MemoryInUse() + 8*(288+112))
	y := e.keep(ops.Conv2d(x, w, b, win))
	dev.SetMemoryLimit(dev.MemoryInUse() + 8*(384+108+4))
	gx, gw, gb := ops.Conv2dBackward(x, w, b, g, win)
	dev.SetMemoryLimit(cpu.DefaultMemoryLimit())
	for _, r := range []struct {
		name string
		t    *tensor.Tensor
		op   string
	}{{"y", y, "ops.Conv2d"}, {"gx", gx, "ops.Conv2dBackward"}, {"gw", gw, "ops.Conv2dBackward"}, {"gb", gb, "ops.Conv2dBackward"}} {
		err := r.t.Err()
		if !errors.Is(err, device.ErrOutOfMemory) || !strings.Contains(err.Error(), r.op) {
			t.Errorf("%s: %v; want an ErrOutOfMemory naming %s", r.name, err, r.op)
		}
		r.t.Release()
	}
	if _, err := e.keep(ops.Conv2d(x, w, b, win)).Float32s(); err != nil {
		t.Errorf("conv2d within the limit again: %v", err)
	}
}
