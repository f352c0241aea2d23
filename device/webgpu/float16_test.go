//go:build cgo || js

package webgpu_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/device/webgpu"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/tensor"
	"github.com/x448/float16"
)

// everyHalf returns every float16's bits.
func everyHalf() []uint16 {
	all := make([]uint16, 1<<16)
	for i := range all {
		all[i] = uint16(i)
	}
	return all
}

// castValues returns float32s of every kind to cast to float16: edges,
// ties, subnormals, NaNs with payloads, random bits, and values about
// float16's range, where rounding matters.
func castValues() []float32 {
	r := rand.New(rand.NewPCG(1, 2))
	vals := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 65504, 65519.99, 65520, 1e6, -1e6, 6e-8, 2.98e-8, 2.99e-8, 1e-45,
		float32(math.Inf(1)), float32(math.Inf(-1)), math.Float32frombits(0x7fc00000), math.Float32frombits(0xff800001),
		math.Float32frombits(0x7f802000), 1 + 1.0/2048, 1 + 3.0/2048, 2049, 2051, 1.0 / 3}
	for range 200000 {
		vals = append(vals, math.Float32frombits(r.Uint32()))
	}
	for i := range 100000 {
		vals = append(vals, float32(r.NormFloat64())*float32(math.Pow(2, float64(i%40-25))))
	}
	return vals
}

// TestFloat16 converts every float16 to float32, and castValues to
// float16, on the GPU, bit for bit as github.com/x448/float16 does (the
// CPU twin); odd counts use the packed word's first half.
func TestFloat16(t *testing.T) {
	d := fresh(t)
	all := everyHalf()
	// Every float16 (by vec4s), and all but the last (the scalar kernel).
	for _, all := range [][]uint16{all, all[:len(all)-1]} {
		h := tensor.Must(tensor.FromFloat16Bits(d, all, len(all)))
		got, err := ops.Cast(h, device.Float32).Float32s()
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range got {
			if want := float16.Frombits(uint16(i)).Float32(); math.Float32bits(v) != math.Float32bits(want) {
				t.Fatalf("float16 %#04x → float32 %#08x; want %#08x (%d values)", i, math.Float32bits(v), math.Float32bits(want), len(all))
			}
		}
	}
	vals := castValues()
	// An odd count (the scalar kernel) and a multiple of 8 (by vec4s).
	for _, vals := range [][]float32{vals, vals[:len(vals)/8*8]} {
		x := tensor.Must(tensor.FromFloat32(d, vals, len(vals)))
		bits, err := ops.Cast(x, device.Float16).Float16Bits()
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range vals {
			if want := float16.Fromfloat32(v).Bits(); bits[i] != want {
				t.Fatalf("float32 %v (%#08x) → float16 %#04x; want %#04x (%d values)", v, math.Float32bits(v), bits[i], want, len(vals))
			}
		}
	}
	odd := tensor.Must(tensor.FromFloat16Bits(d, []uint16{0x3c00, 0xc000, 0x7bff}, 3))
	if v, err := odd.Float32s(); err != nil || v[0] != 1 || v[1] != -2 || v[2] != 65504 {
		t.Errorf("odd count: %v, %v", v, err)
	}
}

// TestFloat16Fused runs TestFloat16's casts in fused chains, each value
// written: float32 → float16 → float32 of castValues and float16 →
// float32 → float16 of every float16, by vec4s (a count of 4k + 3 too),
// and, in a chain kept off vec4s by a broadcast, every float16 but one
// (as [21845, 3]) to float32 beside a float16 product: bit for bit as
// github.com/x448/float16 converts, NaN payloads and subnormals too (the
// product as unfused), in one fused kernel a chain where the kernels read
// WGSL's f16.
func TestFloat16Fused(t *testing.T) {
	d := fresh(t)
	native := webgpu.NativeF16(d)
	chain := func(name string, f func()) {
		t.Helper()
		before := d.FusedKernels()
		f()
		if got := d.FusedKernels() - before; native && got != 1 {
			t.Errorf("%s: %d fused kernels; want 1", name, got)
		}
	}
	f32bits := func(name string, got []float32, want func(i int) float32) {
		t.Helper()
		for i, v := range got {
			if w := want(i); math.Float32bits(v) != math.Float32bits(w) {
				t.Fatalf("%s: element %d is %#08x; want %#08x", name, i, math.Float32bits(v), math.Float32bits(w))
			}
		}
	}
	f16bits := func(name string, got []uint16, want func(i int) uint16) {
		t.Helper()
		for i, v := range got {
			if w := want(i); v != w {
				t.Fatalf("%s: element %d is %#04x; want %#04x", name, i, v, w)
			}
		}
	}
	vals := castValues()
	for _, vals := range [][]float32{vals[:len(vals)/4*4+3], vals[:len(vals)/8*8]} {
		chain("float32 → float16 → float32", func() {
			x := tensor.Must(tensor.FromFloat32(d, vals, len(vals)))
			h := ops.Cast(x, device.Float16)
			y := ops.Cast(h, device.Float32)
			hb, err := h.Float16Bits()
			if err != nil {
				t.Fatal(err)
			}
			yv, err := y.Float32s()
			if err != nil {
				t.Fatal(err)
			}
			f16bits("float32 → float16", hb, func(i int) uint16 { return float16.Fromfloat32(vals[i]).Bits() })
			f32bits("float16 → float32", yv, func(i int) float32 { return float16.Frombits(hb[i]).Float32() })
		})
	}
	all := everyHalf()
	chain("float16 → float32 → float16", func() {
		h := tensor.Must(tensor.FromFloat16Bits(d, all, len(all)))
		y := ops.Cast(h, device.Float32)
		back := ops.Cast(y, device.Float16)
		yv, err := y.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		bb, err := back.Float16Bits()
		if err != nil {
			t.Fatal(err)
		}
		f32bits("float16 → float32", yv, func(i int) float32 { return float16.Frombits(all[i]).Float32() })
		f16bits("float32 → float16", bb, func(i int) uint16 { return float16.Fromfloat32(yv[i]).Bits() })
	})
	chain("a broadcast product beside float16 → float32", func() {
		odd := all[:len(all)-1]
		h := tensor.Must(tensor.FromFloat16Bits(d, odd, len(odd)/3, 3))
		ones := tensor.Must(tensor.FromFloat16Bits(d, []uint16{0x3c00, 0x3c00, 0x3c00}, 1, 3))
		p := ops.Mul(h, ones)
		y := ops.Cast(h, device.Float32)
		yv, err := y.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		pb, err := p.Float16Bits()
		if err != nil {
			t.Fatal(err)
		}
		f32bits("float16 → float32", yv, func(i int) float32 { return float16.Frombits(odd[i]).Float32() })
		prev := d.Fusion(false)
		unfused, err := ops.Mul(h, ones).Float16Bits()
		d.Fusion(prev)
		if err != nil {
			t.Fatal(err)
		}
		f16bits("the product (against unfused)", pb, func(i int) uint16 { return unfused[i] })
	})
}

// TestFloat16Rounding runs elementwise kernels on float16 tensors (of
// every float16, so by vec4s of words) whose float32 results are exact
// (products of two float16s, negation) or correctly rounded (square
// roots): rounded to float16 they must be github.com/x448/float16's
// rounding bit for bit (ties to even, subnormals, overflow to ±Inf), and
// NaN where it gives NaN.
func TestFloat16Rounding(t *testing.T) {
	d := fresh(t)
	all := make([]uint16, 1<<16)
	ys := make([]uint16, len(all))
	factors := []float32{1 + 1.0/1024, 1537.0 / 2048, 3, 1.0 / 32, 0.5 + 1.0/2048}
	for i := range all {
		all[i] = uint16(i)
		ys[i] = float16.Fromfloat32(factors[i%len(factors)]).Bits()
	}
	x := tensor.Must(tensor.FromFloat16Bits(d, all, len(all)))
	y := tensor.Must(tensor.FromFloat16Bits(d, ys, len(ys)))
	f32 := func(b uint16) float32 { return float16.Frombits(b).Float32() }
	cases := []struct {
		name string
		got  *tensor.Tensor
		want func(i int) float32
	}{
		{"mul", ops.Mul(x, y), func(i int) float32 { return f32(all[i]) * f32(ys[i]) }},
		{"neg", ops.Neg(x), func(i int) float32 { return -f32(all[i]) }},
		{"sqrt", ops.Sqrt(x), func(i int) float32 { return float32(math.Sqrt(float64(f32(all[i])))) }},
	}
	for _, c := range cases {
		bits, err := c.got.Float16Bits()
		if err != nil {
			t.Fatal(err)
		}
		for i, b := range bits {
			v := c.want(i)
			want := float16.Fromfloat32(v)
			if want.IsNaN() && float16.Frombits(b).IsNaN() {
				continue
			}
			if b != want.Bits() {
				t.Fatalf("%s of float16 %#04x: %#04x; want %#04x (float32 %v)", c.name, all[i], b, want.Bits(), v)
			}
		}
	}
}

// TestWindowFloat16 runs every window kernel on float16 tensors (which
// read and write float16) and on float32 tensors of the same values: the
// float16 results are the float32 results rounded, bit for bit, for odd
// sizes (words shared by two rows or images), offsets into a batch, and
// col2im starting mid-word (run on float32 stand-ins), columns with a
// row of ones and padded rows (Pitch); and the float32 results are the
// CPU backend's.
func TestWindowFloat16(t *testing.T) {
	d := fresh(t)
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	geoms := []device.Window2D{
		{N: 3, C: 3, H: 7, W: 5, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1},
		{N: 2, N0: 1, C: 2, H: 9, W: 7, KH: 2, KW: 3, SH: 2, SW: 1, PH: 0, PW: 1, DH: 1, DW: 2},
		{N: 2, N0: 2, C: 1, H: 6, W: 6, KH: 2, KW: 2, SH: 2, SW: 2, DH: 1, DW: 1},
		{N: 1, N0: 1, C: 3, H: 5, W: 5, KH: 3, KW: 3, SH: 1, SW: 1, DH: 1, DW: 1},
		{N: 2, N0: 1, C: 2, H: 7, W: 5, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, Pitch: 37},
		{N: 3, C: 2, H: 6, W: 6, KH: 3, KW: 3, SH: 1, SW: 1, DH: 1, DW: 1, Ones: true, Pitch: 20},
		// Windows that do not overlap, padded, leaving pixels in no window.
		{N: 2, C: 2, H: 7, W: 8, KH: 2, KW: 2, SH: 3, SW: 2, PH: 1, PW: 1, DH: 1, DW: 1},
		{N: 1, C: 3, H: 9, W: 10, KH: 2, KW: 2, SH: 3, SW: 3, DH: 2, DW: 2},
		// The same whose cells' rows are whole float16 words (SW, PW and W
		// even): max_pool_grad's invocation per cell on float16 too.
		{N: 2, C: 2, H: 7, W: 8, KH: 2, KW: 4, SH: 3, SW: 4, PH: 1, PW: 2, DH: 1, DW: 1},
		{N: 1, C: 2, H: 9, W: 10, KH: 3, KW: 3, SH: 4, SW: 4, DH: 1, DW: 1},
	}
	for gi, w := range geoms {
		oh, ow := w.Out()
		kk := w.KH * w.KW
		all := w.N0 + w.N // images of the batch that im2col reads and col2im writes
		for _, op := range []device.WindowOp{device.Im2Col, device.Col2Im, device.MaxPool, device.AvgPool, device.MaxPoolGrad, device.AvgPoolGrad} {
			g := w
			var xn, gn, on int
			switch op {
			case device.Im2Col:
				xn, on = all*w.C*w.H*w.W, w.N*w.C*kk*w.RowLen()
				if w.Ones {
					on += w.N * w.RowLen()
				}
			case device.Col2Im:
				xn, on = w.N*w.C*kk*w.RowLen(), all*w.C*w.H*w.W
			case device.MaxPool, device.AvgPool:
				g.N0, xn, on = 0, w.N*w.C*w.H*w.W, w.N*w.C*oh*ow
			case device.MaxPoolGrad:
				g.N0, xn, gn, on = 0, w.N*w.C*w.H*w.W, w.N*w.C*oh*ow, w.N*w.C*w.H*w.W
			case device.AvgPoolGrad:
				g.N0, gn, on = 0, w.N*w.C*oh*ow, w.N*w.C*w.H*w.W
			}
			vals := func(n int) []float32 {
				v := make([]float32, n)
				for i := range v {
					v[i] = float16.Fromfloat32(float32(r.IntN(16)-8) / 4 * float32(1+r.Float64())).Float32()
				}
				return v
			}
			xv, gv, ov := vals(xn), vals(gn), vals(on)
			run := func(d device.Device, dt device.DType) []float32 {
				buf := func(v []float32) device.Buffer {
					if len(v) == 0 {
						return nil
					}
					b, err := d.Alloc(dt, len(v))
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { d.Free(b) })
					if err := d.Write(b, host(dt, v)); err != nil {
						t.Fatal(err)
					}
					return b
				}
				out := buf(ov)
				d.Window(op, out, buf(xv), buf(gv), g)
				return readBack(t, d, dt, out, on)
			}
			want, got, ref := run(d, device.Float32), run(d, device.Float16), run(cpu.New(), device.Float32)
			for i := range want {
				if math.Abs(float64(want[i]-ref[i])) > 1e-6*max(1, math.Abs(float64(ref[i]))) {
					t.Errorf("geometry %d %v: float32 element %d of %d is %v; the CPU backend's %v", gi, op, i, on, want[i], ref[i])
					break
				}
			}
			for i := range want {
				if w := float16.Fromfloat32(want[i]).Float32(); math.Float32bits(got[i]) != math.Float32bits(w) {
					t.Errorf("geometry %d %v: float16 element %d of %d is %v; want %v (float32 %v)", gi, op, i, on, got[i], w, want[i])
					break
				}
			}
		}
	}
}

// TestStandInsFused runs float16 linear layers (the texture product, on
// a float32 stand-in of its result and bias; the register kernel, on
// stand-ins of all) and a ReLU after each: the stand-in's cast back joins
// the ReLU's chain, one fused kernel where the kernels read WGSL's f16,
// and the values are the unfused calls' bit for bit.
func TestStandInsFused(t *testing.T) {
	for _, force := range []string{"texture", "register"} {
		t.Run(force, func(t *testing.T) {
			d := freshWith(t, webgpu.EnvMatMul, force)
			want := int64(0)
			if webgpu.NativeF16(d) {
				want = 1
			}
			x := tensor.Must(tensor.Uniform(d, device.Float16, -1, 1, 1, 64, 40))
			w := tensor.Must(tensor.Uniform(d, device.Float16, -1, 1, 2, 24, 40))
			b := tensor.Must(tensor.Uniform(d, device.Float16, -1, 1, 3, 24))
			run := func(fuse bool) ([]uint16, int64) {
				defer d.Fusion(d.Fusion(fuse))
				if err := d.Flush(); err != nil {
					t.Fatal(err)
				}
				f0 := d.FusedKernels()
				y := ops.Relu(ops.Linear(x, w, b))
				bits, err := y.Float16Bits()
				if err != nil {
					t.Fatal(err)
				}
				return bits, d.FusedKernels() - f0
			}
			fused, n := run(true)
			unfused, _ := run(false)
			if n != want {
				t.Errorf("%d fused kernels; want %d (the result's cast and the ReLU)", n, want)
			}
			for i := range fused {
				if fused[i] != unfused[i] {
					t.Fatalf("element %d is %#04x fused, %#04x unfused", i, fused[i], unfused[i])
				}
			}
		})
	}
}

// TestFloat16ForwardedToCasts runs chains in which a cast takes a
// float16 value another node computes in the kernel (abs of every
// float16, then its cast to float32), and a node reads a buffer that a
// cast reads by its bits (neg of every float16 beside its cast): fused,
// bit for bit what the unfused calls give, NaN payloads and subnormals
// too, in one fused kernel where the kernels read WGSL's f16.
func TestFloat16ForwardedToCasts(t *testing.T) {
	d := fresh(t)
	all := everyHalf()
	n := len(all)
	alloc := func(dt device.DType) device.Buffer {
		b, err := d.Alloc(dt, n)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	h := alloc(device.Float16)
	if err := d.Write(h, all); err != nil {
		t.Fatal(err)
	}
	type result struct {
		abs, neg []uint16
		absF32   []float32
		fused    int64
	}
	run := func(fuse bool) result {
		defer d.Fusion(d.Fusion(fuse))
		abs, neg := alloc(device.Float16), alloc(device.Float16)
		absF32, hF32 := alloc(device.Float32), alloc(device.Float32)
		f0 := d.FusedKernels()
		d.Unary(device.UnaryOp("abs"), abs, h)
		d.Convert(absF32, abs)
		d.Unary(device.UnaryOp("neg"), neg, h)
		d.Convert(hF32, h)
		r := result{abs: make([]uint16, n), neg: make([]uint16, n), absF32: make([]float32, n)}
		for _, rd := range []struct {
			b device.Buffer
			v any
		}{{abs, r.abs}, {neg, r.neg}, {absF32, r.absF32}} {
			if err := d.Read(rd.b, rd.v); err != nil {
				t.Fatal(err)
			}
		}
		r.fused = d.FusedKernels() - f0
		for _, b := range []device.Buffer{abs, neg, absF32, hF32} {
			d.Free(b)
		}
		return r
	}
	want, got := run(false), run(true)
	if webgpu.NativeF16(d) && got.fused != 1 {
		t.Errorf("%d fused kernels; want 1", got.fused)
	}
	for i := range n {
		if got.abs[i] != want.abs[i] || got.neg[i] != want.neg[i] || math.Float32bits(got.absF32[i]) != math.Float32bits(want.absF32[i]) {
			t.Fatalf("float16 %#04x: abs %#04x, neg %#04x, abs as float32 %#08x fused; %#04x, %#04x, %#08x unfused",
				all[i], got.abs[i], got.neg[i], math.Float32bits(got.absF32[i]), want.abs[i], want.neg[i], math.Float32bits(want.absF32[i]))
		}
	}
}
