//go:build cgo

package webgpu_test

import (
	"math"
	"testing"

	"github.com/extensor/extensor/cpu"

	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/device/webgpu"
	"github.com/extensor/extensor/internal/gputest"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/tensor"
)

// TestEmbeddingPastBinding gathers rows of tables larger than the
// adapter's storage binding (a language model's token embedding), in
// float32 and float16: the table is bound a chunk of rows at a time, and
// each row, from the first chunk, the last and across a chunk's edge,
// comes out exactly; a bad index is still NaN and reported.
func TestEmbeddingPastBinding(t *testing.T) {
	dev := gputest.Open(t)
	limit := dev.(*webgpu.Device).Limits().MaxStorageBufferBindingSize
	for _, dt := range []device.DType{device.Float32, device.Float16} {
		const d = 256
		rows := int(limit)/(d*dt.Size()) + 37
		v := make([]float64, rows*d)
		for r := range rows {
			for j := range d {
				v[r*d+j] = float64(r) + float64(j%4)/4 // the row itself, exact in float32
				if dt == device.Float16 {
					v[r*d+j] = float64(r%250) + float64(j%4)/4 // exact in float16
				}
			}
		}
		table, err := tensor.FromValues(dev, dt, v, rows, d)
		if err != nil {
			t.Fatal(err)
		}
		want := []int32{0, 1, int32(rows - 1), int32(rows - 38), int32(rows - 37), int32(rows / 2), 5}
		idx := tensor.Must(tensor.FromInt32(dev, want, len(want)))
		got, err := ops.Embedding(idx, table).Float64s()
		if err != nil {
			t.Fatalf("%v: %v", dt, err)
		}
		for i, r := range want {
			for j := range d {
				if g, w := got[i*d+j], v[int(r)*d+j]; g != w {
					t.Fatalf("%v: row %d (of %d), feature %d: %v; want %v", dt, r, rows, j, g, w)
				}
			}
		}
		bad := tensor.Must(tensor.FromInt32(dev, []int32{3, int32(rows)}, 2))
		if _, err := ops.Embedding(bad, table).Float64s(); err == nil {
			t.Errorf("%v: index %d of %d rows gave no error", dt, rows, rows)
		}
		table.Release()
		idx.Release()
		bad.Release()
	}
}

// TestLinearPastBinding runs Linear and its backward with a weight larger
// than the adapter's storage binding (a language model's head), in
// float32 and float16: the weight's rows go a chunk at a time, and the
// result and the gradients agree with the CPU's.
func TestLinearPastBinding(t *testing.T) {
	dev := gputest.Open(t)
	limit := int(dev.(*webgpu.Device).Limits().MaxStorageBufferBindingSize)
	host := cpu.New()
	for _, dt := range []device.DType{device.Float32, device.Float16} {
		const in, rows = 512, 3
		out := limit/(4*in) + 300 // the float32 stand-in passes the binding
		on := func(d device.Device, seed uint64, shape ...int) *tensor.Tensor {
			return tensor.Must(tensor.Uniform(d, dt, -1, 1, seed, shape...))
		}
		var results [2][4][]float64
		for k, d := range []device.Device{host, dev} {
			x, w, b, g := on(d, 1, rows, in), on(d, 2, out, in), on(d, 3, out), on(d, 4, rows, out)
			y := ops.Linear(x, w, b)
			gx, gw, gb := ops.LinearBackward(x, w, b, g)
			for i, r := range []*tensor.Tensor{y, gx, gw, gb} {
				v, err := r.Float64s()
				if err != nil {
					t.Fatalf("%v on %v: %v", dt, d, err)
				}
				results[k][i] = v
				r.Release()
			}
			for _, r := range []*tensor.Tensor{x, w, b, g} {
				r.Release()
			}
		}
		// Sums of up to 65,000 products of ±1: float32 rounding reaches
		// 10⁻³ of them, float16's a few tenths; a chunk missed or misplaced
		// moves a value by about its own size.
		abs, rel := 1e-2, 1e-4
		if dt == device.Float16 {
			abs, rel = 0.5, 2e-2
		}
		for i, name := range []string{"y", "gx", "gw", "gb"} {
			c, gpu := results[0][i], results[1][i]
			for j := range c {
				if math.Abs(c[j]-gpu[j]) > abs+rel*math.Abs(c[j]) {
					t.Fatalf("%v: %s[%d] of %d: webgpu %v, cpu %v", dt, name, j, len(c), gpu[j], c[j])
				}
			}
		}
	}
}
