package bench

import (
	"fmt"
	"testing"

	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/examples/mlp/model"
	"github.com/extensor/extensor/internal/gputest"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/tensor"
)

// devices returns the devices to benchmark, by name.
func devices(b *testing.B) []device.Device {
	c, err := device.Open("cpu")
	if err != nil {
		b.Fatal(err)
	}
	devs := []device.Device{c}
	if g := gputest.OrNil(b); g != nil {
		devs = append(devs, g)
	}
	return devs
}

func sync(b *testing.B, dev device.Device) {
	if err := dev.Sync(); err != nil {
		b.Fatal(err)
	}
}

func BenchmarkMatMul(b *testing.B) {
	for _, dev := range devices(b) {
		for _, n := range []int{256, 512, 1024} {
			b.Run(fmt.Sprintf("%s/%d", dev.Name(), n), func(b *testing.B) {
				x := tensor.Must(tensor.Uniform(dev, device.Float32, -1, 1, 1, n, n))
				y := tensor.Must(tensor.Uniform(dev, device.Float32, -1, 1, 2, n, n))
				defer x.Release()
				defer y.Release()
				ops.MatMul(x, y).Release() // compile the kernel outside the timing
				sync(b, dev)
				b.ResetTimer()
				for range b.N {
					ops.MatMul(x, y).Release()
				}
				sync(b, dev)
				b.ReportMetric(2*float64(n*n*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

func BenchmarkAdd(b *testing.B) {
	for _, dev := range devices(b) {
		for _, n := range []int{1 << 20, 1 << 24} {
			b.Run(fmt.Sprintf("%s/%dM", dev.Name(), n>>20), func(b *testing.B) {
				x := tensor.Must(tensor.Uniform(dev, device.Float32, -1, 1, 1, n))
				y := tensor.Must(tensor.Uniform(dev, device.Float32, -1, 1, 2, n))
				defer x.Release()
				defer y.Release()
				ops.Add(x, y).Release()
				sync(b, dev)
				b.ResetTimer()
				for range b.N {
					ops.Add(x, y).Release()
					sync(b, dev) // lets the pool recycle the 64 MB result
				}
				b.ReportMetric(12*float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
			})
		}
	}
}

func BenchmarkMLPStep(b *testing.B) {
	const batch, in, hidden, classes = 128, 784, 256, 10
	for _, dev := range devices(b) {
		b.Run(fmt.Sprintf("%s/%d", dev.Name(), batch), func(b *testing.B) {
			m, err := model.New(dev, in, hidden, classes, 1)
			if err != nil {
				b.Fatal(err)
			}
			defer m.Release()
			xs := make([]float32, batch*in)
			ys := make([]int32, batch)
			for i := range xs {
				xs[i] = float32(i%255) / 255
			}
			for i := range ys {
				ys[i] = int32(i % classes)
			}
			step := func() {
				// Upload a batch each step, as training does.
				x := tensor.Must(tensor.FromFloat32(dev, xs, batch, in))
				y := tensor.Must(tensor.FromInt32(dev, ys, batch))
				m.Step(x, y, 0.01).Release()
				x.Release()
				y.Release()
			}
			step()
			sync(b, dev)
			b.ResetTimer()
			for range b.N {
				step()
			}
			sync(b, dev)
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/step")
			if p, ok := dev.(device.Pooler); ok {
				s := p.PoolStats()
				b.ReportMetric(100*float64(s.Hits)/float64(max(s.Hits+s.Misses, 1)), "%pool-hits")
			}
		})
	}
}

func BenchmarkTinyOp(b *testing.B) {
	for _, dev := range devices(b) {
		b.Run(dev.Name()+"/64", func(b *testing.B) {
			x := tensor.Must(tensor.Ones(dev, device.Float32, 64))
			y := tensor.Must(tensor.Zeros(dev, device.Float32, 64))
			defer x.Release()
			defer y.Release()
			ops.Axpy(y, x, 1)
			sync(b, dev)
			b.ResetTimer()
			for range b.N {
				ops.Axpy(y, x, 1)
			}
			sync(b, dev)
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/op")
		})
	}
}
