//go:build cgo || js

package webgpu_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/device/webgpu"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/tensor"
)

// TestCopyStrided checks strided copies against their definition,
// including those that move vec4s (the innermost dimension contiguous and
// a multiple of 4, the other strides and offsets multiples of 4) and
// those just short of it; the buffers' lengths are not multiples of 4;
// on float32 and float16.
func TestCopyStrided(t *testing.T) {
	d := fresh(t)
	for _, s := range []device.Strided{
		{Shape: []int{3, 5, 8}, SrcStrides: []int{8, 24, 1}, DstStrides: []int{40, 8, 1}, SrcOffset: 4, DstOffset: 8},   // vec4s
		{Shape: []int{2, 3, 4, 12}, SrcStrides: []int{200, 12, 60, 1}, DstStrides: []int{144, 48, 12, 1}, DstOffset: 4}, // vec4s, rank 4
		{Shape: []int{3, 5, 8}, SrcStrides: []int{8, 24, 1}, DstStrides: []int{40, 8, 1}, SrcOffset: 3, DstOffset: 8},   // offset
		{Shape: []int{3, 5, 6}, SrcStrides: []int{6, 18, 1}, DstStrides: []int{30, 6, 1}},                               // stride 6
		{Shape: []int{4, 7}, SrcStrides: []int{1, 4}, DstStrides: []int{7, 1}},                                          // a transpose
		{Shape: []int{3, 8}, SrcStrides: []int{0, 1}, DstStrides: []int{8, 1}, DstOffset: 4},                            // broadcast rows, vec4s
		{Shape: []int{5, 19}, SrcStrides: []int{19, 1}, DstStrides: []int{20, 1}, SrcOffset: 1, DstOffset: 4},           // into padded rows: vec4s of dst
		{Shape: []int{2, 3, 17}, SrcStrides: []int{51, 17, 1}, DstStrides: []int{72, 24, 1}},                            // the same, rank 3
		{Shape: []int{2, 17}, SrcStrides: []int{17, 1}, DstStrides: []int{20, 1}},                                       // dst ends mid-vec4: elements
		{Shape: []int{2, 1, 9}, SrcStrides: []int{9, 5, 1}, DstStrides: []int{9, 0, 1}, SrcOffset: 1, DstOffset: 3},     // one run: a copy (float16: odd, elements)
		{Shape: []int{3, 6}, SrcStrides: []int{6, 1}, DstStrides: []int{6, 1}, SrcOffset: 2, DstOffset: 6},              // one run: a copy
	} {
		srcLen, dstLen := s.SrcOffset+1, s.DstOffset+1
		for k, n := range s.Shape {
			srcLen += (n - 1) * s.SrcStrides[k]
			dstLen += (n - 1) * s.DstStrides[k]
		}
		srcLen, dstLen = srcLen+3, dstLen+2 // lengths that are not multiples of 4
		src := make([]float32, srcLen)
		for i := range src {
			src[i] = float32(i) + 0.5
		}
		want := make([]float32, dstLen)
		for i := range want {
			want[i] = -1
		}
		c := make([]int, len(s.Shape))
		for range s.Len() {
			si, di := s.SrcOffset, s.DstOffset
			for k := range c {
				si += c[k] * s.SrcStrides[k]
				di += c[k] * s.DstStrides[k]
			}
			want[di] = src[si]
			for k := len(c) - 1; k >= 0; k-- {
				if c[k]++; c[k] < s.Shape[k] {
					break
				}
				c[k] = 0
			}
		}
		// float16 too (these values are exact in it): halves of words, or
		// four halves a vec2<u32> of dst where float32 writes vec4s of dst.
		for _, dt := range []device.DType{device.Float32, device.Float16} {
			x := ops.Cast(tensor.Must(tensor.FromFloat32(d, src, srcLen)), dt)
			out := ops.Cast(tensor.Must(tensor.Full(d, device.Float32, -1, dstLen)), dt)
			d.CopyStrided(out.Buffer(), x.Buffer(), s)
			got, err := ops.Cast(out, device.Float32).Float32s()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Errorf("%+v on %v: got %v, want %v", s, dt, got, want)
			}
			x.Release()
			out.Release()
		}
	}
}

// TestGPUOrder runs the elementwise, softmax and reduction kernels in the
// order they take on GPUs (neighbouring invocations on neighbouring items)
// on sizes that leave partial workgroups, against the CPU backend.
func TestGPUOrder(t *testing.T) {
	d := fresh(t)
	t.Parallel()
	webgpu.AsGPU(d)
	c := cpu.New()
	rng := rand.New(rand.NewPCG(3, 4))
	values := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = rng.Float32()*4 - 2
		}
		return v
	}
	cases := []struct {
		name  string
		shape []int
		op    func(x, y *tensor.Tensor) *tensor.Tensor
	}{
		{"exp/vec4", []int{4 * 5001}, func(x, _ *tensor.Tensor) *tensor.Tensor { return ops.Exp(x) }},
		{"exp", []int{20003}, func(x, _ *tensor.Tensor) *tensor.Tensor { return ops.Exp(x) }},
		{"exp/float16", []int{20006}, func(x, _ *tensor.Tensor) *tensor.Tensor {
			return ops.Cast(ops.Exp(ops.Cast(x, device.Float16)), device.Float32)
		}},
		{"mul/vec4", []int{3, 13336}, ops.Mul[*tensor.Tensor]},
		{"mul", []int{3, 13335}, ops.Mul[*tensor.Tensor]},
		{"softmax/rows-of-1024", []int{5, 1024}, func(x, _ *tensor.Tensor) *tensor.Tensor { return ops.Softmax(x, -1) }},
		{"softmax/rows-of-12", []int{3001, 12}, func(x, _ *tensor.Tensor) *tensor.Tensor { return ops.Softmax(x, -1) }},
		{"softmax/rows-of-7", []int{301, 7}, func(x, _ *tensor.Tensor) *tensor.Tensor { return ops.Softmax(x, -1) }},
		// Short rows, a workgroup of fewer than 64 a row on GPUs: 32
		// vec4s in 32 invocations, 10 in 16 (6 idle), 8 in 8.
		{"softmax/rows-of-128", []int{301, 128}, func(x, _ *tensor.Tensor) *tensor.Tensor { return ops.Softmax(x, -1) }},
		{"log-softmax/rows-of-40", []int{301, 40}, func(x, _ *tensor.Tensor) *tensor.Tensor { return ops.LogSoftmax(x, -1) }},
		{"softmax-grad/rows-of-32", []int{301, 32}, func(x, y *tensor.Tensor) *tensor.Tensor { return ops.SoftmaxBackward(x, y, -1) }},
		{"layer-norm/rows-of-128", []int{1024, 128}, func(x, _ *tensor.Tensor) *tensor.Tensor {
			return ops.LayerNorm(x, []int{128}, nil, nil, ops.DefaultLayerNormEps)
		}},
		{"layer-norm-grad/rows-of-40", []int{301, 40}, func(x, y *tensor.Tensor) *tensor.Tensor {
			gx, _, _ := ops.LayerNormBackward(x, []int{40}, nil, nil, y, ops.DefaultLayerNormEps)
			return gx
		}},
		{"rms-norm/rows-of-32", []int{301, 32}, func(x, _ *tensor.Tensor) *tensor.Tensor {
			return ops.RMSNorm(x, []int{32}, nil, ops.DefaultLayerNormEps)
		}},
		// The one-pass kernel, a workgroup a row: its gradient, rows with a
		// partial last vec4 an invocation, and more rows than one grid
		// dimension holds (workgroups past the last row store nothing).
		{"softmax-grad/rows-of-1024", []int{5, 1024}, func(x, y *tensor.Tensor) *tensor.Tensor { return ops.SoftmaxBackward(x, y, -1) }},
		{"log-softmax/rows-of-1000", []int{7, 1000}, func(x, _ *tensor.Tensor) *tensor.Tensor { return ops.LogSoftmax(x, -1) }},
		{"log-softmax-grad/rows-of-1000", []int{7, 1000}, func(x, y *tensor.Tensor) *tensor.Tensor { return ops.LogSoftmaxBackward(x, y, -1) }},
		{"softmax/65537-rows-of-256", []int{65537, 256}, func(x, _ *tensor.Tensor) *tensor.Tensor { return ops.Softmax(x, -1) }},
		// Rows longer than the one-pass kernel takes, in two passes.
		{"softmax/rows-of-8320", []int{3, 8320}, func(x, _ *tensor.Tensor) *tensor.Tensor { return ops.Softmax(x, -1) }},
		{"softmax-grad/rows-of-8196", []int{3, 8196}, func(x, y *tensor.Tensor) *tensor.Tensor { return ops.SoftmaxBackward(x, y, -1) }},
		// Long rows of vec4s: the reduction's chunks of 4096 vec4s, the
		// last partial, each invocation's vec4s 256 apart.
		{"sum/vec4", []int{3, 4 * 5000}, func(x, _ *tensor.Tensor) *tensor.Tensor { return ops.Sum(x, 1) }},
		{"max/vec4", []int{4 * 20001}, func(x, _ *tensor.Tensor) *tensor.Tensor { return ops.Max(x, 0) }},
		// Rows of one chunk: the first pass writes the results, scaled.
		{"mean/vec4/one-chunk", []int{5, 4000}, func(x, _ *tensor.Tensor) *tensor.Tensor { return ops.Mean(x, 1) }},
		{"mean/columns/one-chunk", []int{1024, 100}, func(x, _ *tensor.Tensor) *tensor.Tensor { return ops.Mean(x, 0) }},
		{"sum/all", []int{4 * 300001}, func(x, _ *tensor.Tensor) *tensor.Tensor { return ops.Sum(x) }},
		{"mean/all/float16", []int{6000}, func(x, _ *tensor.Tensor) *tensor.Tensor {
			return ops.Cast(ops.Mean(ops.Cast(x, device.Float16)), device.Float32)
		}},
		// The attention kernels' blocking on GPUs: partial blocks of rows
		// and keys, causal, dropout; the gradients' sum checked.
		{"attention", []int{3, 37, 16}, func(x, y *tensor.Tensor) *tensor.Tensor {
			return ops.ScaledDotProductAttention(x, y, y, nil, ops.AttentionAttrs{Causal: true, Dropout: 0.2, Seed: 5})
		}},
		{"attention-grad", []int{3, 37, 16}, func(x, y *tensor.Tensor) *tensor.Tensor {
			gq, gk, gv, _ := ops.ScaledDotProductAttentionBackward(x, y, x, ops.Attention{Causal: true, Dropout: 0.2, Seed: 5}, y)
			return ops.Add(ops.Add(gq, gk), gv)
		}},
		// Rows split among invocations on GPUs (attnSplit): 10 chunks of
		// 20 keys (queries), the last partial, rows past the causal
		// diagonal's chunks seeing none of theirs; and with a mask.
		{"attention/split", []int{2, 200, 8}, func(x, y *tensor.Tensor) *tensor.Tensor {
			return ops.ScaledDotProductAttention(x, y, x, nil, ops.AttentionAttrs{Causal: true})
		}},
		{"attention-grad/split", []int{2, 200, 8}, func(x, y *tensor.Tensor) *tensor.Tensor {
			gq, gk, gv, _ := ops.ScaledDotProductAttentionBackward(x, y, x, ops.Attention{Causal: true, Dropout: 0.1, Seed: 2}, y)
			return ops.Add(ops.Add(gq, gk), gv)
		}},
		// The same, split, for heads read in place from one packed
		// projection [2, 200, 3·16], 2 heads of 8 (the kernels above),
		// and written merged; dq summed from its chunks and then placed.
		{"multi-head-attention/split", []int{2, 200, 48}, func(x, _ *tensor.Tensor) *tensor.Tensor {
			return ops.MultiHeadAttention(x, nil, ops.MultiHeadAttrs{Heads: 2, AttentionAttrs: ops.AttentionAttrs{Causal: true}})
		}},
		{"multi-head-attention-grad/split", []int{2, 200, 48}, func(x, y *tensor.Tensor) *tensor.Tensor {
			g, _ := ops.MultiHeadAttentionBackward(x, ops.MultiHeadAttrs{Heads: 2, AttentionAttrs: ops.AttentionAttrs{Causal: true, Dropout: 0.1, Seed: 2}}, nil, ops.Slice(y, -1, 0, 16, 1))
			return g
		}},
		// float16 takes a row an invocation on GPUs, unsplit.
		{"attention-grad/float16", []int{2, 70, 8}, func(x, y *tensor.Tensor) *tensor.Tensor {
			h, hy := ops.Cast(x, device.Float16), ops.Cast(y, device.Float16)
			gq, gk, gv, _ := ops.ScaledDotProductAttentionBackward(h, hy, h, ops.Attention{Causal: true}, hy)
			return ops.Cast(ops.Add(ops.Add(gq, gk), gv), device.Float32)
		}},
		{"attention/float16", []int{2, 70, 8}, func(x, y *tensor.Tensor) *tensor.Tensor {
			return ops.Cast(ops.ScaledDotProductAttention(ops.Cast(x, device.Float16), ops.Cast(y, device.Float16), ops.Cast(x, device.Float16), nil, ops.AttentionAttrs{Causal: true}), device.Float32)
		}},
		{"attention/split-masked", []int{2, 150, 12}, func(x, y *tensor.Tensor) *tensor.Tensor {
			// An additive mask [150, 150]: x's first matrix times y's,
			// transposed, made on the host (a product on a device taken
			// for a GPU would time the tiled variants first).
			xv, err := x.Float32s()
			if err != nil {
				t.Fatal(err)
			}
			yv, err := y.Float32s()
			if err != nil {
				t.Fatal(err)
			}
			prod, _ := gemmRef(device.GEMM{Batch: 1, M: 150, K: 12, N: 150, TransB: true}, xv, yv, 150*150)
			m := make([]float32, len(prod))
			for i, v := range prod {
				m[i] = float32(v)
			}
			mask := tensor.Must(tensor.FromFloat32(x.Device(), m, 150, 150))
			return ops.ScaledDotProductAttention(x, y, y, mask, ops.AttentionAttrs{})
		}},
	}
	for _, tc := range cases {
		n := 1
		for _, s := range tc.shape {
			n *= s
		}
		xs, ys := values(n), values(n)
		run := func(dev device.Device) []float32 {
			x := tensor.Must(tensor.FromFloat32(dev, xs, tc.shape...))
			y := tensor.Must(tensor.FromFloat32(dev, ys, tc.shape...))
			got, err := tc.op(x, y).Float32s()
			if err != nil {
				t.Fatalf("%s on %v: %v", tc.name, dev, err)
			}
			return got
		}
		got, want := run(d), run(c)
		tol := 1e-5
		if strings.HasSuffix(tc.name, "float16") {
			tol = 2e-3
		}
		for i := range want {
			if math.Abs(float64(got[i]-want[i])) > tol*max(1, math.Abs(float64(want[i]))) {
				t.Fatalf("%s %v: [%d] = %v; want %v", tc.name, tc.shape, i, got[i], want[i])
			}
		}
	}
}

// TestBroadcastRows runs broadcasting binary ops and their gradients
// whose output's last axis is a multiple of 4 (read by vec4s along it:
// operands whole along it, or broadcast along it and splat) against the
// CPU backend, on float32 and float16.
func TestBroadcastRows(t *testing.T) {
	t.Parallel()
	checkBroadcasts(t, [][2][]int{
		{{3, 4, 8}, {8}}, {{3, 4, 8}, {3, 4, 1}}, {{3, 1, 8}, {1, 5, 8}}, {{2, 3, 4}, {2, 1, 1}},
		{{64, 4}, {64, 1}}, {{1, 4}, {7, 4}}, {{5, 1}, {1, 12}}, {{2, 6, 16}, {2, 1, 1}},
	})
}

// TestScalarOperands runs them where one operand is one element (splat
// into the same-layout kernel), at lengths by whole vec4s and not.
func TestScalarOperands(t *testing.T) {
	t.Parallel()
	checkBroadcasts(t, [][2][]int{{{6, 16}, {}}, {{}, {3, 5}}, {{4099}, {1}}, {{1, 1}, {2, 1, 7}}, {{1}, {1, 2}}})
}

// checkBroadcasts runs binary ops and their gradients on the pairs of
// shapes against the CPU backend, on float32 and float16.
func checkBroadcasts(t *testing.T, pairs [][2][]int) {
	d := fresh(t)
	c := cpu.New()
	rng := rand.New(rand.NewPCG(5, 6))
	type binOp struct {
		name string
		f    func(a, b *tensor.Tensor) *tensor.Tensor
	}
	bins := []binOp{{"add", ops.Add[*tensor.Tensor]}, {"sub", ops.Sub[*tensor.Tensor]}, {"mul", ops.Mul[*tensor.Tensor]}, {"div", ops.Div[*tensor.Tensor]}, {"maximum", ops.Maximum[*tensor.Tensor]},
		{"mul-grad", func(a, b *tensor.Tensor) *tensor.Tensor {
			g := ops.Mul(a, b) // any tensor of the output's shape
			ga, gb := ops.MulBackward(a, b, g)
			return ops.Add(ops.SumTo(ga, []int{}), ops.SumTo(gb, []int{}))
		}},
		{"div-grad", func(a, b *tensor.Tensor) *tensor.Tensor {
			g := ops.Add(a, b)
			ga, gb := ops.DivBackward(a, b, g)
			return ops.Add(ops.Sum(ga), ops.Sum(gb))
		}},
	}
	for _, dt := range []device.DType{device.Float32, device.Float16} {
		for _, p := range pairs {
			av, bv := make([]float64, device.Numel(p[0])), make([]float64, device.Numel(p[1]))
			for i := range av {
				av[i] = rng.Float64()*4 - 2
			}
			for i := range bv {
				bv[i] = rng.Float64()*3 + 0.5
			}
			for _, op := range bins {
				run := func(dev device.Device) []float64 {
					a := ops.Cast(tensor.Must(tensor.FromValues(dev, device.Float32, av, p[0]...)), dt)
					b := ops.Cast(tensor.Must(tensor.FromValues(dev, device.Float32, bv, p[1]...)), dt)
					got, err := ops.Cast(op.f(a, b), device.Float32).Float64s()
					if err != nil {
						t.Fatalf("%s %v %v on %v: %v", op.name, p[0], p[1], dev, err)
					}
					return got
				}
				got, want := run(d), run(c)
				tol := 1e-5
				if dt == device.Float16 {
					tol = 4e-3
				}
				for i := range want {
					if math.Abs(got[i]-want[i]) > tol*max(1, math.Abs(want[i])) {
						t.Fatalf("%s %v %v (%v): [%d] = %v; want %v", op.name, p[0], p[1], dt, i, got[i], want[i])
					}
				}
			}
		}
	}
}
