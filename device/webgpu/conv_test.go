//go:build cgo || js

package webgpu_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/device/webgpu"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/tensor"
)

// TestConv2dDirect runs convolutions and their gradients on the direct
// kernels (conv_tex.wgsl) against the CPU backend: examples/cnn's conv2,
// padding, dilation and partial quads of channels and filters, and, with
// the texture side lowered, the dispatches split by images; the filters'
// gradient split by rows of pixels, across images; a texture too small
// to take. The direct kernels are CPU adapters' (GPUs take the matrix
// products): on a GPU the device is made to choose as on a CPU adapter.
func TestConv2dDirect(t *testing.T) {
	d := fresh(t)
	t.Parallel()
	webgpu.AsCPU(d)
	webgpu.DirectConvAtAnySize(d)
	c := cpu.New()
	cases := []struct {
		x, w     []int
		win      ops.Window
		bias     bool
		limit    uint32 // the texture side, if lowered
		splits   int    // the invocations the filters' gradient aims at, if set
		declined bool   // the texture cannot take an image
		half     bool   // float16 operands
		rowsTex  bool   // the forward through the rows' texture (stage rows), the gradients im2col's
	}{
		{[]int{64, 32, 13, 13}, []int{64, 32, 3, 3}, ops.Window{Stride: [2]int{1, 1}}, true, 0, 0, false, false, false},
		{[]int{3, 6, 9, 10}, []int{10, 6, 3, 3}, ops.Window{Stride: [2]int{1, 1}, Padding: [2]int{1, 2}, Dilation: [2]int{1, 2}}, true, 0, 0, false, false, false},
		{[]int{5, 8, 7, 7}, []int{9, 8, 2, 2}, ops.Window{Stride: [2]int{1, 1}}, false, 0, 0, false, false, false},
		// Dispatches of 16 images, the filters' gradient in splits of 2.
		{[]int{68, 8, 13, 13}, []int{64, 8, 3, 3}, ops.Window{Stride: [2]int{1, 1}}, true, 240, 0, false, false, false},
		// One split wanted, of 236 rows of 298 pixels: splits of 54 rows
		// (maxLoop pixels), one across both images.
		{[]int{2, 4, 120, 300}, []int{8, 4, 3, 3}, ops.Window{Stride: [2]int{1, 1}}, true, 0, 3, false, false, false},
		{[]int{4, 32, 13, 13}, []int{64, 32, 3, 3}, ops.Window{Stride: [2]int{1, 1}}, true, 100, 0, true, false, false},
		// Images of fewer than 4 channels (examples/cnn's conv1): the
		// forward through the texture of each row's window entries
		// (channels × the window's columns, 4 a texel), the gradients by
		// the matrix products; with padding, stride and dilation, and a
		// row's entries in a partly filled last texel (2·5), in dispatches
		// of 11 images; float16.
		{[]int{64, 1, 28, 28}, []int{32, 1, 3, 3}, ops.Window{Stride: [2]int{1, 1}}, true, 0, 0, false, false, true},
		{[]int{3, 3, 17, 19}, []int{8, 3, 3, 3}, ops.Window{Stride: [2]int{2, 1}, Padding: [2]int{1, 2}, Dilation: [2]int{2, 1}}, true, 0, 0, false, false, true},
		{[]int{20, 2, 9, 11}, []int{12, 2, 5, 5}, ops.Window{Stride: [2]int{1, 1}, Padding: [2]int{2, 2}}, false, 150, 0, false, false, true},
		{[]int{8, 1, 28, 28}, []int{32, 1, 3, 3}, ops.Window{Stride: [2]int{1, 1}}, true, 0, 0, false, true, true},
		// Stride 2: the input's gradient by the matrix products.
		{[]int{3, 4, 9, 9}, []int{8, 4, 3, 3}, ops.Window{Stride: [2]int{2, 2}}, false, 0, 0, false, false, false},
		// More filters than 4 blocks of 32: workgroups of 8 blocks of
		// filters by 8 of pixels.
		{[]int{2, 8, 9, 9}, []int{130, 8, 3, 3}, ops.Window{Stride: [2]int{1, 1}}, true, 0, 0, false, false, false},
		// float16: the images and filters packed as they are (on float32
		// stand-ins without WGSL's f16), the output and bias on float32
		// stand-ins.
		{[]int{16, 32, 13, 13}, []int{64, 32, 3, 3}, ops.Window{Stride: [2]int{1, 1}}, true, 0, 0, false, true, false},
	}
	for i, tc := range cases {
		t.Run(fmt.Sprintf("%v*%v/limit=%d/half=%v", tc.x, tc.w, tc.limit, tc.half), func(t *testing.T) {
			if tc.limit > 0 {
				lim := d.Limits().MaxTextureDimension2D
				webgpu.SetTextureLimit(d, tc.limit)
				defer webgpu.SetTextureLimit(d, lim)
			}
			if tc.splits > 0 {
				defer webgpu.SetConvSplits(webgpu.SetConvSplits(tc.splits))
			}
			g := device.Window2D{N: tc.x[0], C: tc.x[1], H: tc.x[2], W: tc.x[3], KH: tc.w[2], KW: tc.w[3], SH: tc.win.Stride[0], SW: tc.win.Stride[1],
				PH: tc.win.Padding[0], PW: tc.win.Padding[1], DH: max(tc.win.Dilation[0], 1), DW: max(tc.win.Dilation[1], 1)}
			if fwd, bwd := webgpu.DirectConv(d, g, tc.w[0]); fwd == tc.declined || bwd != (!tc.declined && !tc.rowsTex) {
				t.Fatalf("the direct kernels take the forward: %v, the gradients: %v; want %v, %v", fwd, bwd, !tc.declined, !tc.declined && !tc.rowsTex)
			}
			dt, tol := device.Float32, 1e-5
			if tc.half {
				dt, tol = device.Float16, 2e-3 // a float16 rounding of the result, and of the upstream gradient's products
			}
			run := func(dev device.Device) []*tensor.Tensor {
				x := tensor.Must(tensor.Uniform(dev, dt, -1, 1, uint64(3*i+1), tc.x...))
				w := tensor.Must(tensor.Uniform(dev, dt, -1, 1, uint64(3*i+2), tc.w...))
				var b *tensor.Tensor
				if tc.bias {
					b = tensor.Must(tensor.Uniform(dev, dt, -1, 1, uint64(3*i+3), tc.w[0]))
				}
				y := ops.Conv2d(x, w, b, tc.win)
				gy := tensor.Must(tensor.Uniform(dev, dt, -1, 1, uint64(3*i+4), y.Shape()...))
				gx, gw, gb := ops.Conv2dBackward(x, w, b, gy, tc.win)
				// The filters' and bias's gradients alone, as the tape
				// asks when x needs none.
				in := []*tensor.Tensor{x, w}
				if b != nil {
					in = append(in, b)
				}
				gs := ops.Conv2dOp.Backward(in, gy, ops.Backprop{Attrs: tc.win, Need: []bool{false, true, true}})
				if gs[0] != nil {
					t.Fatal("Backward returned the input's gradient, not asked for")
				}
				gs = append(gs, nil)
				// As the tape runs it: the forward keeping what it may for
				// the gradients (the images' texture, where the direct
				// kernels take both and the forward is one dispatch), read
				// twice.
				yk, saved := ops.Conv2dOp.Save(in, tc.win)
				defer saved.Release()
				if dev == d && !tc.declined { // (im2col keeps its columns)
					if want := !tc.rowsTex && tc.limit == 0 && (!tc.half || webgpu.NativeF16(d)); (saved.Len() == 1) != want {
						t.Errorf("Save kept %d buffers; want the images' texture: %v", saved.Len(), want)
					}
				}
				counter, counting := dev.(device.Counter)
				var k0, k1 int64
				if counting {
					k0 = counter.Kernels()
				}
				gk := ops.Conv2dOp.Backward(in, gy, ops.Backprop{Attrs: tc.win, Saved: saved})
				if counting {
					k1 = counter.Kernels()
				}
				gk2 := ops.Conv2dOp.Backward(in, gy, ops.Backprop{Attrs: tc.win, Saved: saved})
				if counting && saved.Len() == 1 && !tc.declined && webgpu.DirectGradients(d, g, tc.w[0], true) {
					// The images' pack left out: one kernel fewer than unsaved.
					k2 := counter.Kernels()
					ops.Conv2dOp.Backward(in, gy, ops.Backprop{Attrs: tc.win})
					if unsaved, withSaved := counter.Kernels()-k2, k1-k0; withSaved != unsaved-1 {
						t.Errorf("the gradients with the images' texture saved ran %d kernels, without %d; want one fewer", withSaved, unsaved)
					}
				}
				if dev == d && tc.half && webgpu.NativeF16(d) && !tc.declined {
					standIns(t, d, tc.x, tc.w, tc.bias, tc.win, !tc.rowsTex && webgpu.DirectGradients(d, g, tc.w[0], true))
				}
				return []*tensor.Tensor{y, gx, gw, gb, gs[1], gs[2], yk, gk[0], gk[1], gk2[1]}
			}
			want, got := run(c), run(d)
			for j, name := range []string{"output", "input's gradient", "filters' gradient", "bias's gradient", "filters' gradient alone", "bias's gradient alone",
				"output (saved)", "input's gradient (saved)", "filters' gradient (saved)", "filters' gradient (saved, again)"} {
				if want[j] == nil {
					continue
				}
				a, err := want[j].Float32s()
				if err != nil {
					t.Fatal(err)
				}
				b, err := got[j].Float32s()
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				scale := 0.0
				for _, v := range a {
					scale = math.Max(scale, math.Abs(float64(v)))
				}
				bad := 0
				for k := range a {
					if diff := math.Abs(float64(a[k] - b[k])); !(diff <= tol*max(scale, 1)) {
						if bad++; bad <= 3 {
							t.Errorf("%s[%d] = %v; want %v (CPU)", name, k, b[k], a[k])
						}
					}
				}
				if bad > 0 {
					t.Errorf("%s: %d of %d differ", name, bad, len(a))
				}
			}
		})
	}
}

// standIns checks that a float16 convolution of images xs by filters ws
// (with a bias if bias) on d, which reads WGSL's f16, runs the kernels
// of the float32 one and the casts of the float32 stand-ins its kernels
// write and read: the bias in and the output out, and with grads the
// input's and the filters' gradients out, the outputs' stand-ins never
// cast in (the kernels set every element).
func standIns(t *testing.T, d *webgpu.Device, xs, ws []int, bias bool, win ops.Window, grads bool) {
	t.Helper()
	// kernels counts the kernels f records, its results released after
	// they are recorded (a cast whose result is freed unread is not).
	kernels := func(f func() []*tensor.Tensor) int64 {
		if err := d.Flush(); err != nil { // what made the operands
			t.Fatal(err)
		}
		k0 := d.Kernels()
		rs := f()
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
		k := d.Kernels() - k0
		for _, r := range rs {
			if r != nil {
				r.Release()
			}
		}
		return k
	}
	count := func(dt device.DType) (fwd, bwd int64) {
		x := tensor.Must(tensor.Uniform(d, dt, -1, 1, 1, xs...))
		w := tensor.Must(tensor.Uniform(d, dt, -1, 1, 2, ws...))
		y := ops.Conv2d(x, w, nil, win)
		gy := tensor.Must(tensor.Uniform(d, dt, -1, 1, 3, y.Shape()...))
		y.Release()
		defer func() {
			for _, v := range []*tensor.Tensor{x, w, gy} {
				v.Release()
			}
		}()
		var b *tensor.Tensor
		if bias {
			b = tensor.Must(tensor.Uniform(d, dt, -1, 1, 4, ws[0]))
			defer b.Release()
		}
		fwd = kernels(func() []*tensor.Tensor { return []*tensor.Tensor{ops.Conv2d(x, w, b, win)} })
		bwd = kernels(func() []*tensor.Tensor {
			gx, gw, gb := ops.Conv2dBackward(x, w, b, gy, win)
			return []*tensor.Tensor{gx, gw, gb}
		})
		return fwd, bwd
	}
	f32, b32 := count(device.Float32)
	f16, b16 := count(device.Float16)
	want := f32 + 1
	if bias {
		want++
	}
	if f16 != want {
		t.Errorf("the float16 forward ran %d kernels, the float32 one %d; want %d (the bias's stand-in cast in, the output's out)", f16, f32, want)
	}
	if want := b32 + 2; grads && b16 != want {
		t.Errorf("the float16 gradients ran %d kernels, the float32 ones %d; want %d (the input's and filters' gradients' stand-ins cast out)", b16, b32, want)
	}
}
