package im2col_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/device/im2col"
)

// conv is a convolution's buffers on the CPU backend in float64.
type conv struct {
	c               device.Conv2D
	x, w, b, gy     []float64
	xs, ws, ys      []int
	dev             *cpu.Device
	bx, bw, bb, bgy device.Buffer
}

func newConv(t *testing.T, c device.Conv2D) *conv {
	t.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	oh, ow := c.Out()
	v := &conv{c: c, dev: cpu.New(),
		xs: []int{c.N, c.C, c.H, c.W}, ws: []int{c.F, c.C / c.Groups, c.KH, c.KW}, ys: []int{c.N, c.F, oh, ow}}
	t.Cleanup(func() { v.dev.Close() })
	fill := func(shape []int) ([]float64, device.Buffer) {
		n := 1
		for _, s := range shape {
			n *= s
		}
		d := make([]float64, n)
		for i := range d {
			d[i] = r.Float64()*2 - 1
		}
		return d, v.buffer(t, d)
	}
	v.x, v.bx = fill(v.xs)
	v.w, v.bw = fill(v.ws)
	v.b, v.bb = fill([]int{c.F})
	v.gy, v.bgy = fill(v.ys)
	return v
}

func (v *conv) buffer(t *testing.T, d []float64) device.Buffer {
	t.Helper()
	b, err := v.dev.Alloc(device.Float64, len(d))
	if err != nil {
		t.Fatal(err)
	}
	if err := v.dev.Write(b, d); err != nil {
		t.Fatal(err)
	}
	return b
}

func (v *conv) read(t *testing.T, b device.Buffer) []float64 {
	t.Helper()
	d := make([]float64, b.Len())
	if err := v.dev.Read(b, d); err != nil {
		t.Fatal(err)
	}
	return d
}

// want returns the convolution and its gradients summed term by term
// from the definition.
func (v *conv) want() (y, gx, gw, gb []float64) {
	c, xs, ys := v.c, v.xs, v.ys
	y, gx, gw, gb = make([]float64, len(v.gy)), make([]float64, len(v.x)), make([]float64, len(v.w)), make([]float64, c.F)
	cg, og := c.C/c.Groups, c.F/c.Groups
	for n := range ys[0] {
		for o := range ys[1] {
			for i := range ys[2] {
				for j := range ys[3] {
					out := ((n*ys[1]+o)*ys[2]+i)*ys[3] + j
					s := v.b[o]
					gb[o] += v.gy[out]
					for ci := range cg {
						ch := o/og*cg + ci
						for a := range c.KH {
							for bb := range c.KW {
								py, px := i*c.SH-c.PH+a*c.DH, j*c.SW-c.PW+bb*c.DW
								if py < 0 || py >= xs[2] || px < 0 || px >= xs[3] {
									continue
								}
								xi := ((n*xs[1]+ch)*xs[2]+py)*xs[3] + px
								wi := ((o*cg+ci)*c.KH+a)*c.KW + bb
								s += v.x[xi] * v.w[wi]
								gx[xi] += v.gy[out] * v.w[wi]
								gw[wi] += v.gy[out] * v.x[xi]
							}
						}
					}
					y[out] = s
				}
			}
		}
	}
	return y, gx, gw, gb
}

func geometry(n, c, h, w, f, k, groups int) device.Conv2D {
	return device.Conv2D{Window2D: device.Window2D{N: n, C: c, H: h, W: w, KH: k, KW: k, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1}, F: f, Groups: groups}
}

func near(t *testing.T, name string, got, want []float64) {
	t.Helper()
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-9*math.Max(1, math.Abs(want[i])) {
			t.Fatalf("%s[%d] = %v, want %v", name, i, got[i], want[i])
		}
	}
}

// budgeted is a device with its own column budget (im2col.Budgeter).
type budgeted struct {
	*cpu.Device
	budget int
}

func (b budgeted) ColumnBudget() int { return b.budget }

// TestConv2d checks the lowering against the definition, with and
// without kept columns (read twice, as a retained graph does), fused bias
// and groups, in one chunk and in several (ColsBudget's, or a device's).
func TestConv2d(t *testing.T) {
	for _, tc := range []struct {
		name   string
		c      device.Conv2D
		budget int // the device's (im2col.Budgeter), if not 0
	}{
		{"fused bias", geometry(2, 3, 6, 5, 4, 3, 1), 0},
		{"groups", geometry(2, 4, 5, 5, 6, 3, 2), 0},
		{"chunks", geometry(5, 4, 130, 130, 2, 3, 1), 0},            // 37 rows of 16,900 pixels: 3 images a chunk
		{"device's budget", geometry(3, 3, 6, 5, 4, 3, 1), 28 * 30}, // 28 rows of 32 (30 pixels): an image a chunk
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newConv(t, tc.c)
			var dev device.Device = v.dev
			if tc.budget > 0 {
				dev = budgeted{v.dev, tc.budget}
			}
			y, gx, gw, gb := v.want()
			for _, keep := range []bool{false, true} {
				out := v.buffer(t, make([]float64, len(y)))
				kept, err := im2col.Conv2d(dev, out, v.bx, v.bw, v.bb, tc.c, keep)
				if err != nil {
					t.Fatal(err)
				}
				if keep != (len(kept) > 0) {
					t.Fatalf("keep %v: %d buffers kept", keep, len(kept))
				}
				if keep && tc.budget > 0 && len(kept) != tc.c.N {
					t.Fatalf("a budget of one image's columns kept %d chunks; want %d", len(kept), tc.c.N)
				}
				near(t, "y", v.read(t, out), y)
				for range 2 {
					bx, bw, bb := v.buffer(t, gx), v.buffer(t, gw), v.buffer(t, gb)
					if err := im2col.Conv2dBackward(dev, bx, bw, bb, v.bx, v.bw, v.bgy, tc.c, kept); err != nil {
						t.Fatal(err)
					}
					near(t, "gx", v.read(t, bx), gx)
					near(t, "gw", v.read(t, bw), gw)
					near(t, "gb", v.read(t, bb), gb)
				}
				for _, b := range kept {
					v.dev.Free(b)
				}
			}
			// The images' gradient alone (conv_transpose2d's forward).
			bx := v.buffer(t, make([]float64, len(gx)))
			if err := im2col.Conv2dBackward(dev, bx, nil, nil, nil, v.bw, v.bgy, tc.c, nil); err != nil {
				t.Fatal(err)
			}
			near(t, "gx alone", v.read(t, bx), gx)
		})
	}
}

// TestScratchFailure checks that a failed allocation of the lowering's
// scratch memory is returned, naming it.
func TestScratchFailure(t *testing.T) {
	c := geometry(2, 3, 6, 5, 4, 3, 1)
	v := newConv(t, c)
	out := v.buffer(t, make([]float64, len(v.gy)))
	gx, gw, gb := v.buffer(t, make([]float64, len(v.x))), v.buffer(t, make([]float64, len(v.w))), v.buffer(t, make([]float64, c.F))
	v.dev.SetMemoryLimit(v.dev.MemoryInUse())
	_, err := im2col.Conv2d(v.dev, out, v.bx, v.bw, v.bb, c, false)
	if !errors.Is(err, device.ErrOutOfMemory) || !strings.Contains(err.Error(), "im2col: the filters with their bias") {
		t.Errorf("Conv2d past the memory limit: %v; want an ErrOutOfMemory naming the scratch", err)
	}
	err = im2col.Conv2dBackward(v.dev, gx, gw, gb, v.bx, v.bw, v.bgy, c, nil)
	if !errors.Is(err, device.ErrOutOfMemory) || !strings.Contains(err.Error(), "im2col: ") {
		t.Errorf("Conv2dBackward past the memory limit: %v; want an ErrOutOfMemory naming the scratch", err)
	}
}
