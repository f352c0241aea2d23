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

// gemmRef computes the products s describes in float64, with the bound
// on each result's rounding error (a multiple of Σ|a||b|).
func gemmRef(s device.GEMM, a, b []float32, dstLen int) (want, tol []float64) {
	want, tol = make([]float64, dstLen), make([]float64, dstLen)
	for i := range s.Batch {
		ja := i
		if s.CycleA > 0 {
			ja = i % s.CycleA
		}
		oa, ob, od := s.OffA+ja*s.StrideA, s.OffB+i*s.StrideB, s.OffDst+i*s.M*s.N
		for r := range s.M {
			for c := range s.N {
				var sum, abs float64
				for k := range s.K {
					av := a[oa+r*s.K+k]
					if s.TransA {
						av = a[oa+k*s.M+r]
					}
					var bv float32
					if s.TransB {
						bv = b[ob+c*s.RowB()+k]
					} else {
						bv = b[ob+k*s.RowB()+c]
					}
					sum += float64(av) * float64(bv)
					abs += math.Abs(float64(av) * float64(bv))
				}
				want[od+r*s.N+c], tol[od+r*s.N+c] = sum, 1e-5*abs+1e-6
			}
		}
	}
	return want, tol
}

// extent returns the elements of a, b and dst that s reaches.
func extent(s device.GEMM) (na, nb, nd int) {
	na = s.OffA + max(s.CycleA, 1)*s.M*s.K
	if s.CycleA == 0 {
		na = s.OffA + max((s.Batch-1)*s.StrideA, 0) + s.M*s.K
	}
	rows, width := s.K, s.N // of B_i as stored: its last row ends unpadded
	if s.TransB {
		rows, width = s.N, s.K
	}
	nb = s.OffB + max((s.Batch-1)*s.StrideB, 0) + (rows-1)*s.RowB() + width
	nd = s.OffDst + s.Batch*s.M*s.N
	return na, nb, nd
}

// TestMatMulKernels runs every matmul kernel (EXTENSOR_MATMUL) on products
// with edges that are not multiples of any tile, transposes, batches
// (shared, cycled and offset operands) and an empty k, against float64;
// and on float16 operands, against its float32 products of their values.
func TestMatMulKernels(t *testing.T) {
	cases := []device.GEMM{
		{Batch: 1, M: 1, K: 1, N: 1},
		{Batch: 1, M: 5, K: 7, N: 3},
		{Batch: 1, M: 67, K: 33, N: 129},
		{Batch: 1, M: 67, K: 33, N: 129, TransA: true},
		{Batch: 1, M: 67, K: 33, N: 129, TransB: true},
		{Batch: 1, M: 67, K: 33, N: 129, TransA: true, TransB: true},
		{Batch: 1, M: 300, K: 200, N: 260, TransB: true}, // timed by "tiled"
		{Batch: 1, M: 64, K: 64, N: 64},
		{Batch: 3, M: 37, K: 20, N: 45, StrideA: 37 * 20, StrideB: 20 * 45},
		{Batch: 4, M: 9, K: 11, N: 13, StrideA: 9 * 11, StrideB: 11 * 13, CycleA: 2},
		{Batch: 3, M: 9, K: 11, N: 13, StrideA: 9 * 11, StrideB: 0, OffA: 5, OffB: 3, OffDst: 7},
		{Batch: 1, M: 6, K: 0, N: 5},
		{Batch: 2, M: 130, K: 200, N: 333, StrideA: 130 * 200, StrideB: 200 * 333, OffDst: 3, TransB: true}, // texture-sized, odd words
		// Texture-sized with both operands packed by vec4s and out written by vec4s, then neither.
		{Batch: 2, M: 132, K: 200, N: 336, StrideA: 132 * 200, StrideB: 200 * 336, OffDst: 4, TransA: true},
		{Batch: 1, M: 128, K: 260, N: 256, OffB: 1, OffDst: 2},
		// Both operands copied into the texture kernel's textures (rows
		// 256 bytes apart), at offsets, in a batch.
		{Batch: 2, M: 40, K: 64, N: 128, StrideA: 40 * 64, StrideB: 64 * 128, OffA: 4, OffB: 64, OffDst: 1},
		// op(a) transposed, by rows: copied (rows of 64), and cycled.
		{Batch: 2, M: 64, K: 36, N: 96, TransA: true, StrideA: 64 * 36, StrideB: 36 * 96, OffA: 64, OffDst: 4},
		{Batch: 3, M: 68, K: 24, N: 40, TransA: true, StrideA: 68 * 24, StrideB: 24 * 40, CycleA: 2},
		// Enough workgroups for the texture kernel's 32-wide blocks (with
		// edges that they do not divide) where up to 4 threads run them.
		{Batch: 1, M: 600, K: 37, N: 700},
		// b's rows padded (LdB): scalar, by vec4s into the padding, transposed, and texture-sized.
		{Batch: 3, M: 9, K: 11, N: 13, LdB: 15, StrideB: 11 * 15},
		{Batch: 2, M: 64, K: 29, N: 121, LdB: 124, StrideB: 29 * 124, OffB: 4},
		{Batch: 2, M: 20, K: 30, N: 17, TransB: true, LdB: 33, StrideB: 17 * 33},
		{Batch: 2, M: 64, K: 289, N: 481, LdB: 484, StrideB: 289 * 484, OffDst: 1},
		{Batch: 1, M: 130, K: 250, N: 300, TransB: true, LdB: 257},
		// More than 8 block rows (the z variants' groups of blocks), in one
		// group and a partial one.
		{Batch: 1, M: 1100, K: 12, N: 20},
		// Rows times rows, by vec4s along k (the register kernel's DotK).
		{Batch: 3, M: 37, K: 20, N: 45, TransB: true, StrideA: 37 * 20, StrideB: 45 * 20},
		{Batch: 2, M: 64, K: 124, N: 70, TransB: true, LdB: 128, StrideA: 64 * 124, StrideB: 70 * 128, OffA: 4, OffB: 8, OffDst: 3},
		// DotK at most 12 wide, in blocks 12 wide: 16 rows where every
		// thread of a CPU adapter of 2 still gets a workgroup, 8 where not.
		{Batch: 64, M: 32, K: 40, N: 10, TransB: true, StrideA: 32 * 40, StrideB: 10 * 40, OffDst: 2},
		{Batch: 1, M: 21, K: 36, N: 7, TransB: true, OffDst: 1},
	}
	// The operands and float64 products of each case, made once.
	type operands struct {
		a, b      []float32
		want, tol []float64
	}
	made := make([]*operands, len(cases))
	operandsOf := func(c int) *operands {
		if made[c] == nil {
			s := cases[c]
			rng := rand.New(rand.NewPCG(1, uint64(c)))
			na, nb, nd := extent(s)
			o := &operands{a: make([]float32, max(na, 1)), b: make([]float32, max(nb, 1))}
			for _, v := range [][]float32{o.a, o.b} {
				for i := range v {
					v[i] = rng.Float32()*2 - 1
				}
			}
			o.want, o.tol = gemmRef(s, o.a, o.b, nd)
			for i := range o.want {
				if o.tol[i] == 0 { // before OffDst: not a product's
					o.want[i] = 42
				}
			}
			made[c] = o
		}
		return made[c]
	}
	gputest.Open(t) // the shared device, opened before EXTENSOR_MATMUL is set
	for c := range cases {
		operandsOf(c) // before the parallel subtests read them
	}
	// The variants run in parallel, each on a device of its own: a device
	// compiles its kernels one at a time (lavapipe at their first
	// dispatch), and cold, the variants' kernels take most of this test.
	for _, name := range webgpu.MatMulKernels() {
		t.Run(strings.ReplaceAll(name, "×", "x"), func(t *testing.T) {
			d := freshWith(t, webgpu.EnvMatMul, name)
			t.Parallel()
			if !webgpu.TileFits(d, name) {
				// A variant beyond the adapter's limits fails naming them.
				x := tensor.Must(tensor.Zeros(d, device.Float32, 16))
				d.MatMul(x.Buffer(), x.Buffer(), x.Buffer(), device.GEMM{Batch: 1, M: 4, K: 4, N: 4})
				err := d.Sync()
				if err == nil || !strings.Contains(err.Error(), "workgroup memory") {
					t.Fatalf("%s on %v: Sync = %v; want an error naming the workgroup memory it needs", name, d, err)
				}
				t.Logf("%s does not fit %v: %v", name, d, err)
				return
			}
			// check runs case c with spare entries after b's (with
			// LdB, kernels may read the last row's padding by vec4s
			// only when b's buffer holds it).
			check := func(c, spare int) {
				s := cases[c]
				_, _, nd := extent(s)
				o := operandsOf(c)
				a, b, want, tol := o.a, append(slices.Clone(o.b), make([]float32, spare)...), o.want, o.tol
				x := tensor.Must(tensor.FromFloat32(d, a, len(a)))
				y := tensor.Must(tensor.FromFloat32(d, b, len(b)))
				out := tensor.Must(tensor.Full(d, device.Float32, 42, nd))
				d.MatMul(out.Buffer(), x.Buffer(), y.Buffer(), s)
				got, err := out.Float32s()
				if err != nil {
					t.Fatalf("%+v: %v", s, err)
				}
				for i := range got {
					if !(math.Abs(float64(got[i])-want[i]) <= tol[i]) { // NaN fails
						t.Fatalf("%+v with %s: out[%d] = %v; want %v", s, d.MatMulKernel(s), i, got[i], want[i])
					}
				}
				// Accumulating adds the products to the 42s.
				acc := s
				acc.Accumulate = true
				d.Fill(out.Buffer(), 42)
				d.MatMul(out.Buffer(), x.Buffer(), y.Buffer(), acc)
				if got, err = out.Float32s(); err != nil {
					t.Fatalf("%+v: %v", acc, err)
				}
				for i := range got {
					if tol[i] > 0 && !(math.Abs(float64(got[i])-want[i]-42) <= tol[i]+42e-7) || tol[i] == 0 && got[i] != 42 { // NaN fails
						t.Fatalf("%+v with %s: out[%d] = %v; want %v", acc, d.MatMulKernel(s), i, got[i], want[i]+42)
					}
				}
				x.Release()
				y.Release()
				out.Release()
				matMulHalf(t, d, s, a, b, nd)
			}
			for c, s := range cases {
				check(c, 0)
				if s.LdB > 0 {
					check(c, s.LdB)
				}
			}
			if name == "tiled" {
				s := cases[6]
				if k := d.MatMulKernel(s); !strings.HasPrefix(k, "tiled/") {
					t.Errorf("after a timed product, MatMulKernel = %q; want the variant chosen", k)
				}
				t.Logf("%v chose %s for %dx%dx%d", d, d.MatMulKernel(s), s.M, s.K, s.N)
			}
		})
	}
	// The first product of a shape class times the tiled variants (as on
	// every GPU): when it accumulates, the timing runs must not add to
	// out (they did, three times a variant, on the H100).
	t.Run("tiled-timed-accumulating", func(t *testing.T) {
		t.Setenv(webgpu.EnvMatMul, "tiled")
		d := fresh(t)
		s := cases[6]
		s.Accumulate = true
		o := operandsOf(6)
		x := tensor.Must(tensor.FromFloat32(d, o.a, len(o.a)))
		y := tensor.Must(tensor.FromFloat32(d, o.b, len(o.b)))
		out := tensor.Must(tensor.Full(d, device.Float32, 42, len(o.want)))
		d.MatMul(out.Buffer(), x.Buffer(), y.Buffer(), s)
		got, err := out.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if math.Abs(float64(got[i])-o.want[i]-42) > o.tol[i]+42e-7 {
				t.Fatalf("%+v, the first of its class, with %s: out[%d] = %v; want %v", s, d.MatMulKernel(s), i, got[i], o.want[i]+42)
			}
		}
	})
}

// TestMatMulEpilogue checks GEMM.Bias and GEMM.Sums, alone and together,
// against float64: the texture kernel adds the bias in its store (in
// rows of blocks, into rows padded to vec4s, in a batch) and sums op(a)'s
// rows where op(a) is transposed, with no dispatch of their own; elsewhere
// the binary family adds the bias and the reduction sums. float16 takes
// float32 stand-ins and rounds once.
func TestMatMulEpilogue(t *testing.T) {
	cases := []struct {
		s      device.GEMM
		kernel string
	}{
		{device.GEMM{Batch: 1, M: 68, K: 300, N: 40, TransA: true}, "texture"},
		{device.GEMM{Batch: 1, M: 130, K: 61, N: 96, TransA: true, TransB: true}, "texture"},
		{device.GEMM{Batch: 1, M: 36, K: 8000, N: 32, TransA: true}, "texture"},
		{device.GEMM{Batch: 1, M: 40, K: 50, N: 37}, "texture"}, // along k, rows padded to vec4s
		{device.GEMM{Batch: 2, M: 40, K: 52, N: 36, StrideA: 40 * 52, StrideB: 52 * 36, TransB: true}, "texture"},
		{device.GEMM{Batch: 1, M: 40, K: 50, N: 36, TransA: true}, "register"},
		{device.GEMM{Batch: 1, M: 7, K: 0, N: 5, TransA: true}, "register"},
		{device.GEMM{Batch: 1, M: 36, K: 16500, N: 32, TransA: true}, "register"}, // k in parts
	}
	for _, kernel := range []string{"texture", "register"} {
		t.Run(kernel, func(t *testing.T) {
			d := freshWith(t, webgpu.EnvMatMul, kernel)
			rng := rand.New(rand.NewPCG(3, 4))
			for _, c := range cases {
				if c.kernel != kernel {
					continue
				}
				s := c.s
				na, nb, nd := extent(s)
				a, b, bias := make([]float32, na), make([]float32, max(nb, 1)), make([]float32, s.N)
				for _, v := range [][]float32{a, b, bias} {
					for i := range v {
						v[i] = float16.Fromfloat32(rng.Float32()*2 - 1).Float32()
					}
				}
				want, tol := gemmRef(s, a, b, nd)
				withBias := slices.Clone(want)
				for i := range withBias {
					withBias[i] += float64(bias[i%s.N])
				}
				sums, sumTol := make([]float64, s.M), make([]float64, s.M)
				for r := range s.M {
					for k := range s.K {
						v := float64(a[r*s.K+k])
						if s.TransA {
							v = float64(a[k*s.M+r])
						}
						sums[r] += v
						sumTol[r] += 1e-5 * math.Abs(v)
					}
					sumTol[r] += 1e-6
				}
				// The dispatches of the product alone, its operands already on d.
				x, y := tensor.Must(tensor.FromFloat32(d, a, na)), tensor.Must(tensor.FromFloat32(d, b, len(b)))
				out := tensor.Must(tensor.Zeros(d, device.Float32, nd))
				if _, err := out.Float32s(); err != nil {
					t.Fatal(err)
				}
				before := d.Kernels()
				d.MatMul(out.Buffer(), x.Buffer(), y.Buffer(), s)
				if _, err := out.Float32s(); err != nil {
					t.Fatal(err)
				}
				plain := d.Kernels() - before
				for _, dt := range []device.DType{device.Float32, device.Float16} {
					for _, with := range []string{"bias", "sums", "bias and sums"} {
						wantBias, wantSums := with != "sums", with != "bias"
						if wantSums && s.Batch > 1 {
							continue
						}
						load := func(v []float32) *tensor.Tensor {
							x := tensor.Must(tensor.FromFloat32(d, v, len(v)))
							if dt == device.Float16 {
								x = ops.Cast(x, dt)
							}
							return x
						}
						x, y, bt := load(a), load(b), load(bias)
						out, sum := load(slices.Repeat([]float32{42}, nd)), load(slices.Repeat([]float32{42}, s.M))
						ws := s
						if wantBias {
							ws.Bias = bt.Buffer()
						}
						if wantSums {
							ws.Sums = sum.Buffer()
						}
						before := d.Kernels()
						d.MatMul(out.Buffer(), x.Buffer(), y.Buffer(), ws)
						label := fmt.Sprintf("%+v on %v with %s, %s", s, dt, d.MatMulKernel(s), with)
						got, err := ops.Cast(out, device.Float32).Float32s()
						if err != nil {
							t.Fatalf("%s: %v", label, err)
						}
						// In the texture kernel, neither takes a dispatch of its own.
						if kernel == "texture" && dt == device.Float32 && (s.TransA || !wantSums) {
							if plain == 0 {
								t.Fatalf("%s: no plain product counted", label)
							}
							if n := d.Kernels() - before; n != plain {
								t.Errorf("%s: %d dispatches; want %d, the product's alone", label, n, plain)
							}
						}
						gotSums, err := ops.Cast(sum, device.Float32).Float32s()
						if err != nil {
							t.Fatalf("%s: %v", label, err)
						}
						// float16 rounds each result once: half an ulp, 2⁻¹¹ of it.
						rel := 0.0
						if dt == device.Float16 {
							rel = 1.0 / 2048
						}
						w := want
						if wantBias {
							w = withBias
						}
						for i := range got {
							if !(math.Abs(float64(got[i])-w[i]) <= tol[i]+rel*math.Abs(w[i])) {
								t.Fatalf("%s: out[%d] = %v; want %v", label, i, got[i], w[i])
							}
						}
						for r := range gotSums {
							if wantSums && !(math.Abs(float64(gotSums[r])-sums[r]) <= sumTol[r]+rel*math.Abs(sums[r])) || !wantSums && gotSums[r] != 42 {
								t.Fatalf("%s: sums[%d] = %v; want %v", label, r, gotSums[r], sums[r])
							}
						}
					}
				}
			}
		})
	}
}

// TestMatMulSplitK checks the register kernel's products split over k
// (kParts: few blocks, long k) for several thread counts, on the CPU
// adapters' kernels: MatMulKernel names the parts; the results, plain and
// accumulating, match float64's; on float16 they are the float32 results
// rounded. The products are flat and not, by vec4s along k and not,
// batched, offset, and past maxLoop.
func TestMatMulSplitK(t *testing.T) {
	d := fresh(t)
	t.Parallel()
	webgpu.AsCPU(d)
	rng := rand.New(rand.NewPCG(7, 8))
	cases := []struct {
		s       device.GEMM
		threads int
		want    string
	}{
		{device.GEMM{Batch: 1, M: 64, K: 1600, N: 128, TransB: true}, 1, "register"},
		{device.GEMM{Batch: 1, M: 64, K: 1600, N: 128, TransB: true}, 2, "register, k in 2 parts"},
		{device.GEMM{Batch: 1, M: 64, K: 1600, N: 128, TransB: true}, 16, "register, k in 12 parts"}, // at least minPartK terms a part
		{device.GEMM{Batch: 2, M: 30, K: 2000, N: 9, StrideA: 30 * 2000, StrideB: 2000 * 9, OffDst: 3}, 3, "register, k in 3 parts"},
		{device.GEMM{Batch: 1, M: 8, K: 255, N: 12}, 8, "register"},                 // too short to split
		{device.GEMM{Batch: 1, M: 128, K: 256, N: 10, TransB: true}, 2, "register"}, // too small to split
		{device.GEMM{Batch: 1, M: 200, K: 300, N: 200}, 2, "register"},              // 4 workgroups already
		{device.GEMM{Batch: 1, M: 40, K: 3000, N: 12}, 2, "register, k in 2 parts"},
		{device.GEMM{Batch: 1, M: 32, K: 400, N: 128, TransB: true}, 2, "register, k in 2 parts"},
		{device.GEMM{Batch: 1, M: 40, K: 1024, N: 30, TransB: true, OffDst: 1}, 4, "register, k in 4 parts"},
		{device.GEMM{Batch: 1, M: 12, K: 20000, N: 5, TransA: true}, 2, "register, k in 2 parts"},
	}
	for _, c := range cases {
		webgpu.SetThreads(d, c.threads)
		if got := d.MatMulKernel(c.s); got != c.want {
			t.Errorf("%+v with %d threads: MatMulKernel = %q; want %q", c.s, c.threads, got, c.want)
		}
		na, nb, _ := extent(c.s)
		a, b := make([]float32, na), make([]float32, nb)
		for _, v := range [][]float32{a, b} {
			for i := range v {
				v[i] = rng.Float32()*2 - 1
			}
		}
		checkProducts(t, d, c.s, a, b, fmt.Sprintf("%d threads, %s", c.threads, c.want))
	}
}

// checkProducts runs the products s on d, plain and accumulating onto
// 42s, against float64's, then on float16 (matMulHalf); label names the
// setting in a failure.
func checkProducts(t *testing.T, d *webgpu.Device, s device.GEMM, a, b []float32, label string) {
	t.Helper()
	_, _, nd := extent(s)
	want, tol := gemmRef(s, a, b, nd)
	x := tensor.Must(tensor.FromFloat32(d, a, len(a)))
	y := tensor.Must(tensor.FromFloat32(d, b, len(b)))
	out := tensor.Must(tensor.Full(d, device.Float32, 42, nd))
	defer x.Release()
	defer y.Release()
	defer out.Release()
	for _, acc := range []bool{false, true} {
		s := s
		s.Accumulate = acc
		d.Fill(out.Buffer(), 42)
		d.MatMul(out.Buffer(), x.Buffer(), y.Buffer(), s)
		got, err := out.Float32s()
		if err != nil {
			t.Fatalf("%+v: %v", s, err)
		}
		for i := range got {
			w := want[i]
			switch {
			case tol[i] == 0: // before OffDst
				w = 42
			case acc:
				w += 42
			}
			if math.Abs(float64(got[i])-w) > tol[i]+42e-7 {
				t.Fatalf("%+v (%s): out[%d] = %v; want %v", s, label, i, got[i], w)
			}
		}
	}
	matMulHalf(t, d, s, a, b, nd)
}

// TestMatMulSplitKTiled checks the tiled kernel's products split over k
// on GPUs (tiledParts: few blocks, long k), in the GPUs' work order on
// any adapter, for variants scalar, by vec4s and with two copies of the
// tiles: MatMulKernel names the parts; the results, plain and
// accumulating, match float64's; on float16 they are the float32 results
// rounded.
func TestMatMulSplitKTiled(t *testing.T) {
	gputest.Open(t)
	rng := rand.New(rand.NewPCG(9, 10))
	cases := []struct {
		s     device.GEMM
		parts int
	}{
		{device.GEMM{Batch: 1, M: 128, K: 1024, N: 384, TransA: true}, 8}, // a weight's gradient
		{device.GEMM{Batch: 1, M: 64, K: 1000, N: 72}, 7},
		{device.GEMM{Batch: 2, M: 30, K: 600, N: 40, StrideA: 30 * 600, StrideB: 600 * 40, OffDst: 3, TransB: true}, 4},
		{device.GEMM{Batch: 1, M: 64, K: 255, N: 64}, 1}, // too short to split
		{device.GEMM{Batch: 1, M: 320, K: 300, N: 384}, 2},
		{device.GEMM{Batch: 1, M: 768, K: 300, N: 768}, 1},    // 144 blocks: enough
		{device.GEMM{Batch: 1, M: 1100, K: 2048, N: 1024}, 1}, // 288 blocks
	}
	for _, v := range []string{"tiled/64×64×8/4×4", "tiled/128×64×16/8×4svp", "tiled/128×128×32/8×8svp"} {
		t.Run(strings.ReplaceAll(v, "×", "x"), func(t *testing.T) {
			d := freshWith(t, webgpu.EnvMatMul, v)
			t.Parallel()
			if !webgpu.TileFits(d, v) {
				t.Skipf("%s does not fit %v", v, d)
			}
			webgpu.AsGPU(d)
			for _, c := range cases {
				want := v
				if c.parts > 1 {
					want = fmt.Sprintf("%s, k in %d parts", v, c.parts)
				}
				if got := d.MatMulKernel(c.s); got != want && !(c.s.M == 1100 && strings.HasPrefix(got, v)) {
					t.Errorf("%+v: MatMulKernel = %q; want %q", c.s, got, want)
				}
				if c.s.M == 1100 {
					continue // only named: the blocks of a large product are enough
				}
				na, nb, _ := extent(c.s)
				a, b := make([]float32, na), make([]float32, nb)
				for _, v := range [][]float32{a, b} {
					for i := range v {
						v[i] = rng.Float32()*2 - 1
					}
				}
				checkProducts(t, d, c.s, a, b, want)
			}
		})
	}
}

// TestMatMulTextureShapes queues texture products of more shapes than the
// device keeps operand textures for, with no readback between them, so
// that making a product's textures releases the others: every product
// must still be right (a view released under a recorded dispatch, or
// between packing a and b, crashed inside wgpu).
func TestMatMulTextureShapes(t *testing.T) {
	d := freshWith(t, webgpu.EnvMatMul, "texture")
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	type product struct {
		s    device.GEMM
		a, b []float32
		out  *tensor.Tensor
		x, y *tensor.Tensor
	}
	var ps []product
	for i := range 14 { // 21 textures: pairs share a's (k), not b's (n)
		s := device.GEMM{Batch: 1, M: 256, K: 256 + i/2, N: 256 + 16*(i%2), TransB: i%3 == 1} // 2²⁴ MACs or more
		p := product{s: s, a: make([]float32, s.M*s.K), b: make([]float32, s.K*s.N)}
		for _, v := range [][]float32{p.a, p.b} {
			for j := range v {
				v[j] = rng.Float32()*2 - 1
			}
		}
		p.x = tensor.Must(tensor.FromFloat32(d, p.a, len(p.a)))
		p.y = tensor.Must(tensor.FromFloat32(d, p.b, len(p.b)))
		p.out = tensor.Empty(d, device.Float32, s.M*s.N)
		d.MatMul(p.out.Buffer(), p.x.Buffer(), p.y.Buffer(), s)
		ps = append(ps, p)
	}
	for _, p := range ps {
		got, err := p.out.Float32s()
		if err != nil {
			t.Fatalf("%+v: %v", p.s, err)
		}
		want, tol := gemmRef(p.s, p.a, p.b, len(got))
		for i := range got {
			if !(math.Abs(float64(got[i])-want[i]) <= tol[i]) { // NaN fails
				t.Fatalf("%+v with %s: out[%d] = %v; want %v", p.s, d.MatMulKernel(p.s), i, got[i], want[i])
			}
		}
		for _, x := range []*tensor.Tensor{p.x, p.y, p.out} {
			x.Release()
		}
	}
}

// TestMatMulTextureZeroDepths checks that the texture kernel's last texel
// of k, read whole, adds nothing past k: a product whose k is not a
// multiple of 4, after one of the same texture size whose op(b) held
// +Inf at every term (left in the cached texture unless the depths past
// k are zeroed: 0·Inf would be NaN).
func TestMatMulTextureZeroDepths(t *testing.T) {
	gputest.Open(t)
	t.Setenv(webgpu.EnvMatMul, "texture")
	d := fresh(t)
	for _, k := range []int{260, 257} {
		s := device.GEMM{Batch: 1, M: 64, K: k, N: 64}
		a, b := make([]float32, s.M*k), make([]float32, k*s.N)
		for i := range a {
			a[i] = float32(i%7) - 3
		}
		for i := range b {
			b[i] = float32(i%5) - 2
			if k == 260 {
				b[i] = float32(math.Inf(1))
			}
		}
		x := tensor.Must(tensor.FromFloat32(d, a, len(a)))
		y := tensor.Must(tensor.FromFloat32(d, b, len(b)))
		out := tensor.Empty(d, device.Float32, s.M*s.N)
		d.MatMul(out.Buffer(), x.Buffer(), y.Buffer(), s)
		got, err := out.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		if k == 257 {
			want, tol := gemmRef(s, a, b, len(got))
			for i := range got {
				if !(math.Abs(float64(got[i])-want[i]) <= tol[i]) { // NaN fails
					t.Fatalf("k %d with %s after a product of +Inf: out[%d] = %v; want %v", k, d.MatMulKernel(s), i, got[i], want[i])
				}
			}
		}
		for _, v := range []*tensor.Tensor{x, y, out} {
			v.Release()
		}
	}
}

// matMulHalf checks the product s of a and b rounded to float16 on
// float16 tensors: its result is d's float32 product of the same values,
// rounded to float16, bit for bit (both accumulate in float32; an
// initial 42 outside the products must stay).
func matMulHalf(t *testing.T, d *webgpu.Device, s device.GEMM, a, b []float32, nd int) {
	t.Helper()
	round := func(v []float32) []float32 {
		r := make([]float32, len(v))
		for i, x := range v {
			r[i] = float16.Fromfloat32(x).Float32()
		}
		return r
	}
	a, b = round(a), round(b)
	product := func(dt device.DType) []float32 {
		x := tensor.Must(tensor.FromFloat32(d, a, len(a)))
		y := tensor.Must(tensor.FromFloat32(d, b, len(b)))
		out := tensor.Must(tensor.Full(d, device.Float32, 42, nd))
		defer out.Release()
		if dt == device.Float16 {
			x, y, out = ops.Cast(x, dt), ops.Cast(y, dt), ops.Cast(out, dt)
		}
		d.MatMul(out.Buffer(), x.Buffer(), y.Buffer(), s)
		if dt == device.Float16 {
			out = ops.Cast(out, device.Float32)
		}
		got, err := out.Float32s()
		if err != nil {
			t.Fatalf("%+v on %v: %v", s, dt, err)
		}
		return got
	}
	want, got := round(product(device.Float32)), product(device.Float16)
	t.Logf("%+v on float16 with %s", s, d.MatMulKernel(s))
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%+v with %s on float16: out[%d] = %v; want %v", s, d.MatMulKernel(s), i, got[i], want[i])
		}
	}
}
