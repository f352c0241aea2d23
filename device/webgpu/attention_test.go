//go:build cgo || js

package webgpu_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/tensor"
)

// TestAttentionGradPacked runs the attention gradient of heads read from
// one packed projection (ops.MultiHeadAttention's layouts) against the
// CPU backend: into one packed gradient, where the filters' kernel writes
// dk and dv in place (three kernels: Δ, dq, dk and dv), and into three
// buffers of that layout, where dk and dv go through scratch and two
// strided copies.
func TestAttentionGradPacked(t *testing.T) {
	d := fresh(t)
	t.Parallel()
	c := cpu.New()
	// Two sequences of 5 positions, 2 heads of 4 (the parity suite's
	// (2,5,24) heads=2, whose kernels it compiles).
	const outer, heads, l, hd = 2, 2, 5, 4
	const e = heads * hd
	in := func(off int) device.AttentionLayout {
		return device.AttentionLayout{Offset: off, Outer: l * 3 * e, Head: hd, Row: 3 * e}
	}
	s := device.AttentionSpec{Batch: outer * heads, Heads: heads, Lq: l, Lk: l, D: hd, DV: hd, Scale: 1 / math.Sqrt(hd),
		Q: in(0), K: in(e), V: in(2 * e), O: device.AttentionLayout{Outer: l * e, Head: hd, Row: e}}
	r := rand.New(rand.NewPCG(1, 2))
	qkv, dO := normals(r, outer*l*3*e), normals(r, outer*l*e)
	// run returns the packed gradient on dev: in one buffer (packed), or
	// dq, dk and dv in three, merged.
	run := func(dev device.Device, packed bool) (grad []float32, kernels int64) {
		load := func(v []float32) *tensor.Tensor { return tensor.Must(tensor.FromFloat32(dev, v, len(v))) }
		x, g := load(qkv), load(dO)
		out := tensor.Must(tensor.Zeros(dev, device.Float32, len(dO)))
		stats := tensor.Must(tensor.Zeros(dev, device.Float32, s.Batch*s.Lq*device.AttentionStats))
		dev.Attention(out.Buffer(), stats.Buffer(), x.Buffer(), x.Buffer(), x.Buffer(), nil, s)
		grads := []*tensor.Tensor{tensor.Must(tensor.Zeros(dev, device.Float32, len(qkv)))}
		if !packed {
			grads = append(grads, tensor.Must(tensor.Zeros(dev, device.Float32, len(qkv))), tensor.Must(tensor.Zeros(dev, device.Float32, len(qkv))))
		}
		if _, err := stats.Float32s(); err != nil {
			t.Fatal(err)
		}
		counter, counting := dev.(device.Counter)
		var before int64
		if counting {
			before = counter.Kernels()
		}
		b := func(i int) device.Buffer { return grads[min(i, len(grads)-1)].Buffer() }
		dev.AttentionGrad(b(0), b(1), b(2), stats.Buffer(), x.Buffer(), x.Buffer(), x.Buffer(), nil, out.Buffer(), g.Buffer(), s)
		if counting {
			kernels = counter.Kernels() - before
		}
		grad = make([]float32, len(qkv))
		for i, gt := range grads {
			v, err := gt.Float32s()
			if err != nil {
				t.Fatal(err)
			}
			// Each buffer holds its third of every row: q's, k's or v's.
			for j := range v {
				if len(grads) == 1 || (j%(3*e))/e == i {
					grad[j] = v[j]
				}
			}
		}
		return grad, kernels
	}
	for _, packed := range []bool{true, false} {
		want, _ := run(c, packed)
		got, kernels := run(d, packed)
		for i := range want {
			if math.Abs(float64(got[i]-want[i])) > 1e-5+1e-4*math.Abs(float64(want[i])) {
				t.Fatalf("packed=%v: gradient %d = %v; want %v (the CPU's)", packed, i, got[i], want[i])
			}
		}
		if wantKernels := map[bool]int64{true: 3, false: 5}[packed]; kernels != wantKernels {
			t.Errorf("packed=%v: %d kernels; want %d", packed, kernels, wantKernels)
		}
	}
}
