package draw_test

import (
	"fmt"
	"image"
	"image/color"
	"math"
	"testing"

	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/draw"
	"github.com/extensor/extensor/internal/errtest"
	"github.com/extensor/extensor/internal/gputest"
	"github.com/extensor/extensor/tensor"
)

var (
	bg    = color.RGBA{20, 20, 30, 255}
	red   = color.RGBA{255, 0, 0, 255}
	green = color.RGBA{0, 200, 0, 255}
	white = color.RGBA{255, 255, 255, 255}
)

// scene paints one of everything: a rectangle, a grid of three 2×3
// images (a ramp, its reverse, a NaN), a curve and some text.
func scene(t *testing.T, dev device.Device) *image.RGBA {
	t.Helper()
	c, err := draw.New(dev, 120, 80, bg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	c.Fill(image.Rect(100, 0, 130, 10), white) // clipped at the right edge
	imgs := tensor.Must(tensor.FromFloat32(dev, []float32{0, 0.2, 0.4, 0.6, 0.8, 1, 1, 0.8, 0.6, 0.4, 0.2, 0, float32(math.NaN()), 0, 0, 0, 0, 2}, 3, 2, 3))
	if err := c.Images(image.Pt(2, 2), imgs, draw.Grid{Cols: 2, Zoom: 3, Border: 1}, []color.RGBA{green, red, {}}); err != nil {
		t.Fatal(err)
	}
	v := make([]float32, 50)
	for i := range v {
		v[i] = float32(i) / 49 // a straight rising line
	}
	v[30] = float32(math.NaN())
	c.Curve(image.Rect(40, 20, 100, 60), tensor.Must(tensor.FromFloat32(dev, v, 50)), 0, 1, 1, green)
	if err := c.Text(image.Pt(2, 62), "Hi 9", 1, white); err != nil {
		t.Fatal(err)
	}
	img, err := c.Image()
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// TestScene checks the CPU's picture against what each call asked for,
// and the WebGPU picture against the CPU's, pixel for pixel (grey levels
// may differ by one).
func TestScene(t *testing.T) {
	want := scene(t, cpu.New())
	at := func(img *image.RGBA, x, y int) color.RGBA { return img.RGBAAt(x, y) }
	for _, c := range []struct {
		name string
		x, y int
		want color.RGBA
	}{
		{"background", 110, 70, bg},
		{"rectangle", 119, 5, white},
		{"frame of image 0", 2, 2, green},
		{"image 0, first pixel (black)", 3, 3, color.RGBA{0, 0, 0, 255}},
		{"image 0, value 1 (white)", 3 + 2*3, 3 + 3, white},
		{"image 0, value 0.4", 3 + 2*3, 3, color.RGBA{102, 102, 102, 255}},
		{"frame of image 1", 2 + 11, 2, red},
		{"image 1, first pixel (white)", 3 + 11, 3, white},
		{"image 2: no frame", 2, 2 + 8, bg},
		{"image 2: NaN is red", 3, 3 + 8, red},
		{"image 2: 2 clamps to white", 3 + 2*3, 3 + 8 + 3, white},
		{"curve at its start, bottom row", 40, 59, green},
		{"curve at its end, top row", 99, 20, green},
		{"curve in the middle: 0.508 at row 19", 40 + 30, 20 + 19, green},
		{"off the curve", 40 + 10, 20 + 5, bg},
	} {
		if got := at(want, c.x, c.y); got != c.want {
			t.Errorf("cpu: %s: pixel (%d,%d) = %v; want %v", c.name, c.x, c.y, got, c.want)
		}
	}
	// The text: "H" has its two stems, the space is empty.
	text := func(img *image.RGBA, x0 int) int {
		n := 0
		for y := 62; y < 62+draw.GlyphH; y++ {
			for x := x0; x < x0+draw.GlyphW; x++ {
				if at(img, x, y) == white {
					n++
				}
			}
		}
		return n
	}
	if h, sp := text(want, 2), text(want, 2+2*draw.GlyphW); h < 10 || sp != 0 {
		t.Errorf("cpu text: %d pixels in H, %d in the space", h, sp)
	}
	gpu := gputest.OrNil(t)
	if gpu == nil {
		return
	}
	got := scene(t, gpu)
	bad := 0
	for i := 0; i < len(got.Pix); i += 4 {
		for k := range 4 {
			d := int(got.Pix[i+k]) - int(want.Pix[i+k])
			if d > 1 || d < -1 {
				if bad < 5 {
					t.Errorf("webgpu pixel (%d,%d) = %v; cpu %v", i/4%120, i/4/120, got.Pix[i:i+4], want.Pix[i:i+4])
				}
				bad++
				break
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d webgpu pixels differ from the cpu's", bad, 120*80)
	}
}

func ExampleCanvas() {
	dev := cpu.New()
	c, _ := draw.New(dev, 64, 16, color.RGBA{0, 0, 0, 255})
	defer c.Release()
	_ = c.Text(image.Pt(0, 0), "loss", 1, color.RGBA{255, 255, 255, 255})
	img, _ := c.Image()
	fmt.Println(img.Bounds())
	// Output: (0,0)-(64,16)
}

// TestBadTensors refuses, with a *tensor.Error naming the call, tensors
// the kernels cannot paint: other dtypes, another device's, nil.
func TestBadTensors(t *testing.T) {
	dev := cpu.New()
	c, err := draw.New(dev, 20, 20, bg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	other := tensor.Must(tensor.Zeros(cpu.New(), device.Float32, 2, 2))
	ints := tensor.Must(tensor.Zeros(dev, device.Int32, 2, 2))
	halves := tensor.Must(tensor.Zeros(dev, device.Float16, 2, 2))
	g := draw.Grid{Cols: 1}
	for _, tt := range []struct {
		name string
		fn   func()
		op   string
		kind error
		says string
	}{
		{"Images of int32", func() { _ = c.Images(image.Point{}, ints, g, nil) }, "draw.Images", tensor.ErrDType, "int32; want float32"},
		{"Images of float16", func() { _ = c.Images(image.Point{}, halves, g, nil) }, "draw.Images", tensor.ErrDType, "float16; want float32"},
		{"Images of another device", func() { _ = c.Images(image.Point{}, other, g, nil) }, "draw.Images", tensor.ErrDevice, "Tensor.To"},
		{"Images of nil", func() { _ = c.Images(image.Point{}, nil, g, nil) }, "draw.Images", tensor.ErrArgument, "nil tensor"},
		{"Curve of int32", func() { c.Curve(image.Rect(0, 0, 9, 9), ints, 0, 1, 1, red) }, "draw.Curve", tensor.ErrDType, "int32; want float32"},
		{"Curve of another device", func() { c.Curve(image.Rect(0, 0, 9, 9), other, 0, 1, 1, red) }, "draw.Curve", tensor.ErrDevice, "Tensor.To"},
	} {
		t.Run(tt.name, func(t *testing.T) { errtest.Panics(t, tt.fn, tt.op, tt.kind, tt.says) })
	}
}
