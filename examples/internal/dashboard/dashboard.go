// Package dashboard draws the training dashboard of the examples on the
// device that trains, with package draw: the loss per step (raw and
// smoothed), the test accuracy per epoch, a grid of test images with their
// predicted classes framed green (right) or red (wrong), and the first
// convolution's filters. The pictures come from the training tensors'
// own buffers; only the finished frame is read back, to save as a PNG
// (Snapshot) or to show in a window.
package dashboard

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"

	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/draw"
	"github.com/extensor/extensor/examples/internal/report"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/tensor"
)

// Size of the dashboard, in pixels.
const (
	Width  = 960
	Height = 600
)

// Colours.
var (
	background = color.RGBA{24, 26, 33, 255}
	panel      = color.RGBA{36, 39, 48, 255}
	axis       = color.RGBA{120, 124, 136, 255}
	text       = color.RGBA{225, 228, 235, 255}
	dim        = color.RGBA{150, 154, 166, 255}
	raw        = color.RGBA{70, 110, 170, 255}
	smooth     = color.RGBA{120, 190, 255, 255}
	accuracy   = color.RGBA{255, 170, 60, 255}
	right      = color.RGBA{60, 200, 90, 255}
	wrong      = color.RGBA{230, 60, 60, 255}
)

// The panels.
var (
	lossPanel    = image.Rect(20, 50, 470, 300)
	accPanel     = image.Rect(490, 50, 940, 300)
	imagesPanel  = image.Rect(20, 320, 470, 590)
	filtersPanel = image.Rect(490, 320, 940, 590)
)

// State is what a frame shows.
type State struct {
	Title   string
	Epoch   int
	Losses  []float64 // per step
	TestAcc []float64 // per epoch, in [0, 1]
	// Images are test images (N×1×H×W or N×H×W, on the device) and Pred
	// and Labels their predicted and true classes; Classes names them.
	Images       *tensor.Tensor
	Pred, Labels []int32
	Classes      []string
	// Filters are the first layer's filters (F×1×KH×KW, or F×(H·W) for a
	// dense layer's rows shown as H×W images: FilterShape).
	Filters     *tensor.Tensor
	FilterShape [2]int
}

// Dashboard draws frames on a device.
type Dashboard struct {
	c *draw.Canvas
}

// New returns a dashboard that draws on dev.
func New(dev device.Device) (*Dashboard, error) {
	c, err := draw.New(dev, Width, Height, background)
	if err != nil {
		return nil, err
	}
	return &Dashboard{c: c}, nil
}

// Release frees the dashboard's canvas.
func (d *Dashboard) Release() { d.c.Release() }

// Canvas returns the canvas the frames are drawn on.
func (d *Dashboard) Canvas() *draw.Canvas { return d.c }

// Draw draws a frame of s.
func (d *Dashboard) Draw(s State) (err error) {
	return tensor.Maybe(func() {
		c := d.c
		c.Fill(image.Rect(0, 0, Width, Height), background)
		d.text(image.Pt(20, 14), s.Title, 2, text)
		d.lossPanel(s.Losses)
		d.accuracyPanel(s.TestAcc)
		if s.Images != nil {
			d.imagePanel(s)
		}
		if s.Filters != nil {
			d.filterPanel(s)
		}
	})
}

// text paints a string, panicking on a failed allocation (Draw recovers).
func (d *Dashboard) text(at image.Point, s string, zoom int, col color.RGBA) {
	if err := d.c.Text(at, s, zoom, col); err != nil {
		panic(err)
	}
}

// frame paints a panel with its title and returns its plot area.
func (d *Dashboard) frame(r image.Rectangle, title string) image.Rectangle {
	d.c.Fill(r, panel)
	d.text(r.Min.Add(image.Pt(10, 6)), title, 1, text)
	return plotArea(r)
}

// plotArea is the plot's area inside panel r.
func plotArea(r image.Rectangle) image.Rectangle {
	return image.Rect(r.Min.X+60, r.Min.Y+28, r.Max.X-14, r.Max.Y-24)
}

// Shown is how many test images the image panel shows at most.
const Shown = 12

// The image panel's grid: six a row, zoomed twice, framed imageBorder
// pixels wide, with a line for the class under each row.
const (
	imageCols   = 6
	imageZoom   = 2
	imageBorder = 3
)

// imageCell is the corner of image k's cell, for images of ih×iw.
func imageCell(k, ih, iw int) image.Point {
	cell := draw.Grid{Cols: imageCols, Zoom: imageZoom, Border: imageBorder}.Size(1, ih, iw)
	return imagesPanel.Min.Add(image.Pt(14+(k%imageCols)*cell.X, 30+(k/imageCols)*(cell.Y+22)))
}

// axes paints the left and bottom axes of area with the range's labels.
func (d *Dashboard) axes(area image.Rectangle, lo, hi string, left, rightLabel string) {
	d.c.Fill(image.Rect(area.Min.X-2, area.Min.Y, area.Min.X-1, area.Max.Y+1), axis)
	d.c.Fill(image.Rect(area.Min.X-2, area.Max.Y+1, area.Max.X, area.Max.Y+2), axis)
	d.text(image.Pt(area.Min.X-8-len(hi)*draw.GlyphW, area.Min.Y-6), hi, 1, dim)
	d.text(image.Pt(area.Min.X-8-len(lo)*draw.GlyphW, area.Max.Y-7), lo, 1, dim)
	d.text(image.Pt(area.Min.X, area.Max.Y+6), left, 1, dim)
	d.text(image.Pt(area.Max.X-len(rightLabel)*draw.GlyphW, area.Max.Y+6), rightLabel, 1, dim)
}

func (d *Dashboard) curve(area image.Rectangle, v []float64, lo, hi float64, thick int, col color.RGBA) {
	if len(v) == 0 {
		return
	}
	f := make([]float32, len(v))
	for i, x := range v {
		f[i] = float32(x)
	}
	t, err := tensor.FromFloat32(d.c.Tensor().Device(), f, len(f))
	if err != nil {
		panic(err)
	}
	defer t.Release()
	d.c.Curve(area, t, lo, hi, thick, col)
}

func (d *Dashboard) lossPanel(losses []float64) {
	area := d.frame(lossPanel, "training loss per step (smoothed)")
	hi := lossTop(losses)
	d.axes(area, "0", fmt.Sprintf("%.2f", hi), "step 1", fmt.Sprintf("step %d", len(losses)))
	d.curve(area, losses, 0, hi, 1, raw)
	d.curve(area, report.SmoothSteps(losses), 0, hi, 3, smooth)
}

// lossTop is the top of the loss plot's axis: the largest finite loss,
// at least 0.1.
func lossTop(losses []float64) float64 {
	hi := 0.1
	for _, l := range losses {
		if !math.IsNaN(l) && !math.IsInf(l, 0) {
			hi = max(hi, l)
		}
	}
	return hi
}

func (d *Dashboard) accuracyPanel(acc []float64) {
	area := d.frame(accPanel, "test accuracy per epoch")
	lo := 1.0
	for _, a := range acc {
		lo = min(lo, a)
	}
	lo = math.Max(0, math.Floor(lo*10-0.5)/10) // a round tenth below the lowest
	d.axes(area, fmt.Sprintf("%.0f%%", 100*lo), "100%", "epoch 1", fmt.Sprintf("epoch %d", max(len(acc), 1)))
	d.curve(area, acc, lo, 1, 3, accuracy)
	if n := len(acc); n > 0 {
		d.text(image.Pt(area.Max.X-90, area.Min.Y+4), fmt.Sprintf("%.2f%%", 100*acc[n-1]), 2, accuracy)
	}
}

// imagePanel shows up to Shown test images, six a row, zoomed twice, each
// framed by whether its prediction is right, its predicted class below.
func (d *Dashboard) imagePanel(s State) {
	d.c.Fill(imagesPanel, panel)
	d.text(imagesPanel.Min.Add(image.Pt(10, 6)), "test images: predicted class (green right, red wrong)", 1, text)
	n := min(s.Images.Dim(0), len(s.Pred), Shown)
	g := draw.Grid{Cols: imageCols, Zoom: imageZoom, Border: imageBorder}
	shape := s.Images.Shape()
	ih, iw := shape[len(shape)-2], shape[len(shape)-1]
	cell := g.Size(1, ih, iw)
	for row := 0; row*imageCols < n; row++ {
		lo, hi := row*imageCols, min(n, (row+1)*imageCols)
		imgs := ops.Narrow(s.Images, 0, lo, hi-lo)
		frames := make([]color.RGBA, hi-lo)
		for i := range frames {
			frames[i] = wrong
			if s.Pred[lo+i] == s.Labels[lo+i] {
				frames[i] = right
			}
		}
		at := imageCell(lo, ih, iw)
		err := d.c.Images(at, imgs, g, frames)
		imgs.Release()
		if err != nil {
			panic(err)
		}
		for i := range frames {
			name := fmt.Sprint(s.Pred[lo+i])
			if int(s.Pred[lo+i]) < len(s.Classes) {
				name = s.Classes[s.Pred[lo+i]]
			}
			if len(name) > 8 {
				name = name[:8]
			}
			d.text(at.Add(image.Pt(i*cell.X, cell.Y+4)), name, 1, frames[i])
		}
	}
}

// filterPanel shows the first layer's filters, each scaled alike: black
// at −max|w|, white at +max|w|.
func (d *Dashboard) filterPanel(s State) {
	area := d.frame(filtersPanel, "first-layer filters")
	f := s.Filters
	n := f.Dim(0)
	kh, kw := s.FilterShape[0], s.FilterShape[1]
	imgs := ops.Reshape(f, n, kh, kw)
	defer imgs.Release()
	abs := ops.Abs(f)
	top := ops.Max(abs)
	m, err := top.Float64s()
	abs.Release()
	top.Release()
	if err != nil {
		panic(err)
	}
	scale := max(m[0], 1e-6)
	cols := 8
	zoom := max(1, min((area.Dx()/cols-2)/kw, (area.Dy()/((n+cols-1)/cols)-2)/kh))
	g := draw.Grid{Cols: cols, Zoom: zoom, Border: 2, Lo: -scale, Hi: scale}
	if err := d.c.Images(area.Min, imgs, g, nil); err != nil {
		panic(err)
	}
	d.text(image.Pt(area.Min.X, area.Max.Y+6), fmt.Sprintf("%d filters %dx%d, black -%.2f .. white +%.2f", n, kh, kw, scale, scale), 1, dim)
}

// Image reads the last frame back.
func (d *Dashboard) Image() (*image.RGBA, error) { return d.c.Image() }

// Snapshot writes the last frame to path as a PNG.
func (d *Dashboard) Snapshot(path string) error {
	img, err := d.Image()
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := png.Encode(f, img); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
