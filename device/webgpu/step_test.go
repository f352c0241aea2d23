//go:build cgo || js

package webgpu_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/device/webgpu"
	"github.com/extensor/extensor/tensor"
)

// stepLengths are the parameters' lengths of TestStepGroups: an empty
// one, lengths that are and are not whole vec4s, and more parameters
// than a dispatch steps.
var stepLengths = []int{1, 3, 4, 5, 0, 257, 8, 17, 1000, 6, 2, 33, 64, 9, 12, 7, 130, 11, 2, 40, 1}

// groupDevices returns two devices of their own: d, as it chooses on
// its adapter, and one that chooses as on GPUs (AsGPU), whose groups of
// tensors in the update family's kernels are larger on CPU adapters.
func groupDevices(t *testing.T) []struct {
	name string
	d    *webgpu.Device
} {
	d, g := fresh(t), fresh(t)
	webgpu.AsGPU(g)
	return []struct {
		name string
		d    *webgpu.Device
	}{{"adapter", d}, {"as gpu", g}}
}

// TestStepGroups runs optimiser steps of many parameters against the CPU
// backend's, which steps them one after another, on the adapter and as
// on GPUs: in groups of as many parameters as the device's storage
// bindings hold (at most webgpu.StepGroup), one dispatch a group; with
// the first parameter listed twice, first and second (stepped twice: its
// first step a group of its own); and under loss scaling.
func TestStepGroups(t *testing.T) {
	for _, gd := range groupDevices(t) {
		d := gd.d
		c := cpu.New()
		adam := device.StepParams{LR: 0.01, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, T: 3}
		ams := adam
		ams.AMSGrad, ams.Decoupled, ams.WeightDecay = true, true, 0.1
		for _, tc := range []struct {
			name   string
			op     device.Optimizer
			h      device.StepParams
			per    int  // buffers a parameter binds
			twice  bool // the first parameter listed again after itself
			scaled bool
		}{
			{"adam", device.Adam, adam, 4, false, false},
			{"adamw amsgrad", device.Adam, ams, 5, false, false},
			{"sgd nesterov", device.SGD, device.StepParams{LR: 0.1, Momentum: 0.9, Nesterov: true, WeightDecay: 0.01}, 3, false, false},
			{"sgd", device.SGD, device.StepParams{LR: 0.3}, 2, false, false},
			{"adam twice", device.Adam, adam, 4, true, false},
			{"scaled adam", device.Adam, adam, 4, false, true},
			{"scaled sgd momentum", device.SGD, device.StepParams{LR: 0.1, Momentum: 0.9, Dampening: 0.5}, 3, false, true},
		} {
			t.Run(gd.name+"/"+tc.name, func(t *testing.T) {
				r := rand.New(rand.NewPCG(5, 6))
				lengths := stepLengths
				values := make([][][]float32, len(lengths)) // each parameter's param, grad and state
				for i, n := range lengths {
					for range tc.per {
						values[i] = append(values[i], normals(r, n))
					}
				}
				// run steps on dev and returns every parameter's values and
				// state, and the kernels it ran.
				run := func(dev device.Device) ([][]float32, int64) {
					var ts []*tensor.Tensor
					var params, grads []device.Buffer
					var state [][]device.Buffer
					for i := range lengths {
						var bufs []device.Buffer
						for _, v := range values[i] {
							x := tensor.Must(tensor.FromFloat32(dev, v, len(v)))
							ts = append(ts, x)
							bufs = append(bufs, x.Buffer())
						}
						grads, params, state = append(grads, bufs[0]), append(params, bufs[1]), append(state, bufs[2:])
					}
					if tc.twice {
						params = append([]device.Buffer{params[0]}, params...)
						grads = append([]device.Buffer{grads[0]}, grads...)
						state = append([][]device.Buffer{state[0]}, state...)
					}
					h := tc.h
					if tc.scaled { // no Inf or NaN found, one step skipped before
						amp := tensor.Must(tensor.FromFloat32(dev, []float32{0, 1, 1}, device.ScaleStateLen))
						skipped := tensor.Must(tensor.FromFloat32(dev, []float32{1}, 1))
						h.Scaling, h.Skipped = amp.Buffer(), skipped.Buffer()
					}
					kernels := counted(dev, func() { dev.Step(tc.op, params, grads, state, h) })
					return readAll(t, ts), kernels
				}
				got, kernels := run(d)
				want, _ := run(c)
				for i := range want {
					for j := range want[i] {
						if e := math.Abs(float64(got[i][j] - want[i][j])); e > 1e-6*(1+math.Abs(float64(want[i][j]))) {
							t.Fatalf("parameter %d (of %d), buffer %d, element %d: %v, want %v", i/tc.per, lengths[i/tc.per], i%tc.per, j, got[i][j], want[i][j])
						}
					}
				}
				extra := 0
				if tc.scaled {
					extra = 2
				}
				room := min(webgpu.StepGroup(d), (min(int(d.Limits().MaxStorageBuffersPerShaderStage)-2, 32)-extra)/tc.per)
				stepped := len(lengths) - 1 // but the empty one
				groups := (stepped + room - 1) / room
				if tc.twice { // the first parameter's first step alone
					groups++
				}
				if kernels != int64(groups) {
					t.Errorf("%d parameters, %d storage buffers a kernel, %d a parameter: %d kernels; want %d", stepped+btoi(tc.twice), d.Limits().MaxStorageBuffersPerShaderStage, tc.per, kernels, groups)
				}
			})
		}
	}
}

// loaded returns tensors of values on dev and their buffers, taken
// from the pool after buffers of their sizes held Infs past their
// lengths where padding.
func loaded(t *testing.T, dev device.Device, values [][]float32, padding bool) ([]*tensor.Tensor, []device.Buffer) {
	t.Helper()
	if padding {
		var held []*tensor.Tensor
		for _, v := range values {
			held = append(held, tensor.Must(tensor.Full(dev, device.Float32, math.Inf(1), (len(v)+3)/4*4)))
		}
		if err := dev.Sync(); err != nil {
			t.Fatal(err)
		}
		for _, h := range held {
			h.Release()
		}
	}
	var ts []*tensor.Tensor
	var bufs []device.Buffer
	for _, v := range values {
		x := tensor.Must(tensor.FromFloat32(dev, v, len(v)))
		ts, bufs = append(ts, x), append(bufs, x.Buffer())
	}
	return ts, bufs
}

// counted runs f and returns the kernels it ran on dev (0 where dev
// counts none).
func counted(dev device.Device, f func()) int64 {
	counter, counts := dev.(device.Counter)
	var before int64
	if counts {
		before = counter.Kernels()
	}
	f()
	if !counts {
		return 0
	}
	return counter.Kernels() - before
}

// readAll returns the values of ts.
func readAll(t *testing.T, ts []*tensor.Tensor) [][]float32 {
	t.Helper()
	var out [][]float32
	for _, x := range ts {
		v, err := x.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

// btoi is 1 for true.
func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestStepGroupFailure fails the compile of a full group's kernel: the
// parameters it steps fail, with the compile's error at their readback,
// and the last group's, of another size, step.
func TestStepGroupFailure(t *testing.T) {
	for _, gd := range groupDevices(t) {
		d := gd.d
		t.Run(gd.name, func(t *testing.T) {
			room := min(webgpu.StepGroup(d), (min(int(d.Limits().MaxStorageBuffersPerShaderStage)-2, 32))/2)
			if room < 2 {
				t.Fatalf("%d storage buffers a kernel; want room for two parameters", d.Limits().MaxStorageBuffersPerShaderStage)
			}
			n := room + 1
			webgpu.FailCompiles(d, fmt.Sprintf("update/sgd/vec4<f32>/group=%d", room))
			var params []*tensor.Tensor
			var pb, gb []device.Buffer
			for range n {
				p := tensor.Must(tensor.Full(d, device.Float32, 1, 5))
				g := tensor.Must(tensor.Full(d, device.Float32, 2, 5))
				params = append(params, p, g)
				pb, gb = append(pb, p.Buffer()), append(gb, g.Buffer())
			}
			d.Step(device.SGD, pb, gb, make([][]device.Buffer, n), device.StepParams{LR: 0.25})
			for i := range n {
				v, err := params[2*i].Float32s()
				if i < room {
					if err == nil || !strings.Contains(err.Error(), "a compile failed by the test") {
						t.Errorf("parameter %d, in the failed group: %v, %v; want the compile's error", i, v, err)
					}
					continue
				}
				if err != nil || v[0] != 0.5 {
					t.Errorf("parameter %d, alone after the failed group: %v, %v; want 0.5s", i, v, err)
				}
			}
		})
	}
}

// TestUnscaleGroups unscales many gradients against the CPU backend, on
// the adapter and as on GPUs: in groups of up to webgpu.StepGroup, one
// dispatch a group; with an Inf in one gradient, which both flag; and
// with Infs in the padding after the last elements of gradients of
// lengths not multiples of 4 (buffers from the pool that held them),
// which a group's kernel must not flag.
func TestUnscaleGroups(t *testing.T) {
	for _, gd := range groupDevices(t) {
		d := gd.d
		c := cpu.New()
		for _, tc := range []struct {
			name    string
			inf     int // the gradient holding an Inf (−1: none)
			padding bool
		}{
			{"finite", -1, false},
			{"an Inf", 10, false},
			{"Infs in the padding", -1, true},
		} {
			t.Run(gd.name+"/"+tc.name, func(t *testing.T) {
				r := rand.New(rand.NewPCG(7, 8))
				values := make([][]float32, len(stepLengths))
				for i, n := range stepLengths {
					values[i] = normals(r, n)
					if i == tc.inf {
						values[i][n/2] = float32(math.Inf(1))
					}
				}
				// run unscales on dev and returns the gradients and the
				// scaler's state, and the kernels it ran.
				run := func(dev device.Device) ([][]float32, int64) {
					ts, grads := loaded(t, dev, values, tc.padding)
					scale := tensor.Must(tensor.FromFloat32(dev, []float32{1024}, 1))
					state := tensor.Must(tensor.Zeros(dev, device.Float32, device.ScaleStateLen))
					kernels := counted(dev, func() { dev.Unscale(grads, scale.Buffer(), state.Buffer()) })
					return readAll(t, append(ts, state)), kernels
				}
				got, kernels := run(d)
				want, _ := run(c)
				for i := range want {
					for j := range want[i] {
						if got[i][j] != want[i][j] && !(math.IsNaN(float64(got[i][j])) && math.IsNaN(float64(want[i][j]))) {
							t.Fatalf("buffer %d of %d (the last the scaler's state), element %d: %v, want %v", i, len(want), j, got[i][j], want[i][j])
						}
					}
				}
				if found := want[len(want)-1][device.ScaleFound]; found != float32(btoi(tc.inf >= 0)) {
					t.Errorf("the CPU backend's ScaleFound %v", found)
				}
				room := min(webgpu.StepGroup(d), min(int(d.Limits().MaxStorageBuffersPerShaderStage)-2, 32)-2)
				unscaled := len(stepLengths) - 1 // but the empty one
				if groups := (unscaled + room - 1) / room; kernels != int64(groups) {
					t.Errorf("%d gradients, %d storage buffers a kernel: %d kernels; want %d", unscaled, d.Limits().MaxStorageBuffersPerShaderStage, kernels, groups)
				}
			})
		}
	}
}

// TestClipGroups runs clipping's kernels, SquaredNorm and Scale, over
// many tensors against the CPU backend, on the adapter and as on GPUs:
// in groups of up to webgpu.StepGroup, a dispatch a group (and one sum
// of the squares' partial sums), with Infs in the padding after the
// tensors of lengths not multiples of 4 (buffers from the pool that held
// them), which the sum must leave out.
func TestClipGroups(t *testing.T) {
	for _, gd := range groupDevices(t) {
		d := gd.d
		t.Run(gd.name, func(t *testing.T) {
			c := cpu.New()
			r := rand.New(rand.NewPCG(9, 10))
			values := make([][]float32, len(stepLengths))
			for i, n := range stepLengths {
				values[i] = normals(r, n)
			}
			// run returns the sum of squares, the scaled tensors and the kernels
			// each took on dev.
			run := func(dev device.Device) (float64, [][]float32, [2]int64) {
				ts, xs := loaded(t, dev, values, true)
				sq := tensor.Must(tensor.Zeros(dev, device.Float32))
				s := tensor.Must(tensor.FromFloat32(dev, []float32{0.25}, 1))
				var kernels [2]int64
				kernels[0] = counted(dev, func() { dev.SquaredNorm(sq.Buffer(), xs) })
				kernels[1] = counted(dev, func() { dev.Scale(xs, s.Buffer()) })
				got, err := sq.Float64s()
				if err != nil {
					t.Fatal(err)
				}
				return got[0], readAll(t, ts), kernels
			}
			sq, scaled, kernels := run(d)
			wantSq, wantScaled, _ := run(c)
			if math.Abs(sq-wantSq) > 1e-5*wantSq {
				t.Errorf("sum of squares %v; want %v", sq, wantSq)
			}
			for i := range wantScaled {
				for j := range wantScaled[i] {
					if scaled[i][j] != wantScaled[i][j] {
						t.Fatalf("tensor %d (of %d), element %d scaled: %v, want %v", i, stepLengths[i], j, scaled[i][j], wantScaled[i][j])
					}
				}
			}
			room := min(webgpu.StepGroup(d), min(int(d.Limits().MaxStorageBuffersPerShaderStage)-2, 32)-1)
			groups := int64((len(stepLengths) - 2 + room) / room) // but the empty one
			if want := [2]int64{groups + 1, groups}; kernels != want {
				t.Errorf("%d tensors, %d storage buffers a kernel: %v kernels (the squares' sums, the scaling); want %v", len(stepLengths)-1, d.Limits().MaxStorageBuffersPerShaderStage, kernels, want)
			}
		})
	}
}
