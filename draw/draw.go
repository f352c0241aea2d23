package draw

import (
	"image"
	"image/color"

	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/tensor"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// Glyph sizes of the font, basicfont.Face7x13: each character is
// GlyphW×GlyphH pixels (times the zoom).
const (
	GlyphW = 7
	GlyphH = 13
)

// Canvas is a picture of W×H pixels held on a device, as an int32 tensor
// of packed RGBA pixels.
type Canvas struct {
	W, H int
	t    *tensor.Tensor
	font *tensor.Tensor // the glyph rows of the codes 32…126
	none *tensor.Tensor // stands for an unused operand
}

// New returns a canvas of w×h pixels on dev, filled with bg.
func New(dev device.Device, w, h int, bg color.RGBA) (*Canvas, error) {
	if w <= 0 || h <= 0 {
		tensor.Panicf("draw.New", tensor.ErrArgument, "canvas %d×%d; want positive sizes", w, h)
	}
	t, err := tensor.Zeros(dev, device.Int32, h, w)
	if err != nil {
		return nil, err
	}
	font, err := tensor.FromInt32(dev, fontRows(), 95*GlyphH)
	if err != nil {
		t.Release()
		return nil, err
	}
	none, err := tensor.Zeros(dev, device.Int32, 1)
	if err != nil {
		t.Release()
		font.Release()
		return nil, err
	}
	c := &Canvas{W: w, H: h, t: t, font: font, none: none}
	c.Fill(image.Rect(0, 0, w, h), bg)
	return c, nil
}

// fontRows rasterises basicfont.Face7x13: for each code 32…126, GlyphH
// rows of bits, bit c for column c.
func fontRows() []int32 {
	face := basicfont.Face7x13
	rows := make([]int32, 95*GlyphH)
	for code := rune(32); code <= 126; code++ {
		dr, mask, mp, _, ok := face.Glyph(fixed.P(0, face.Ascent), code)
		if !ok {
			continue
		}
		for y := range dr.Dy() {
			for x := range min(dr.Dx(), GlyphW) {
				if _, _, _, a := mask.At(mp.X+x, mp.Y+y).RGBA(); a > 0x7fff {
					rows[int(code-32)*GlyphH+dr.Min.Y+y] |= 1 << (dr.Min.X + x)
				}
			}
		}
	}
	return rows
}

// Release frees the canvas's tensors.
func (c *Canvas) Release() {
	c.t.Release()
	c.font.Release()
	c.none.Release()
}

// Tensor returns the canvas's pixels: an H×W int32 tensor, each pixel
// packed RGBA (device.Pack).
func (c *Canvas) Tensor() *tensor.Tensor { return c.t }

func pack(col color.RGBA) uint32 { return device.Pack(col.R, col.G, col.B, col.A) }

func (c *Canvas) paint(op device.DrawOp, src, aux *tensor.Tensor, p device.Paint) {
	p.W, p.H = c.W, c.H
	if p.RW <= 0 || p.RH <= 0 {
		return
	}
	c.t.Device().Draw(op, c.t.Buffer(), src.Buffer(), aux.Buffer(), p)
}

// check panics with a *tensor.Error unless t is a live float32 tensor on
// the canvas's device: the kernels read float32 values.
func (c *Canvas) check(op string, t *tensor.Tensor) {
	switch {
	case t == nil:
		tensor.Panicf(op, tensor.ErrArgument, "nil tensor")
	case t.Released():
		tensor.Panicf(op, tensor.ErrReleased, "tensor %v %v was released", t.Shape(), t.DType())
	case t.DType() != device.Float32:
		tensor.Panicf(op, tensor.ErrDType, "tensor %v is %v; want float32 (convert with ops.Cast)", t.Shape(), t.DType())
	case t.Device() != c.t.Device():
		tensor.Panicf(op, tensor.ErrDevice, "tensor is on %s but the canvas on %s; move it with Tensor.To", t.Device(), c.t.Device())
	}
}

// Fill paints r with col.
func (c *Canvas) Fill(r image.Rectangle, col color.RGBA) {
	c.paint(device.DrawRect, c.none, c.none, device.Paint{X: r.Min.X, Y: r.Min.Y, RW: r.Dx(), RH: r.Dy(), Color: pack(col)})
}

// Grid lays out images for Images.
type Grid struct {
	Cols   int     // images per row
	Zoom   int     // canvas pixels per image pixel (0: 1)
	Border int     // width of each image's frame
	Lo, Hi float64 // the values shown black and white (both 0: 0 and 1)
}

// Size returns the size of the grid of n images of ih×iw.
func (g Grid) Size(n, ih, iw int) image.Point {
	z := max(g.Zoom, 1)
	rows := (n + g.Cols - 1) / g.Cols
	return image.Pt(min(n, g.Cols)*(iw*z+2*g.Border), rows*(ih*z+2*g.Border))
}

// Images paints imgs, a float32 tensor of N images of IH×IW (any shape
// whose last two axes are IH and IW), as a grid from at, each framed in
// its colour of frames (nil or a zero colour: no frame). An error is a
// failure to allocate the frames' colours.
func (c *Canvas) Images(at image.Point, imgs *tensor.Tensor, g Grid, frames []color.RGBA) error {
	c.check("draw.Images", imgs)
	s := imgs.Shape()
	if len(s) < 2 || g.Cols <= 0 {
		tensor.Panicf("draw.Images", tensor.ErrShape, "images of shape %v in %d columns; want …×IH×IW and columns > 0", s, g.Cols)
	}
	ih, iw := s[len(s)-2], s[len(s)-1]
	n := imgs.Len() / max(ih*iw, 1)
	if frames != nil && len(frames) != n {
		tensor.Panicf("draw.Images", tensor.ErrShape, "%d frame colours for %d images", len(frames), n)
	}
	fr := make([]int32, max(n, 1))
	for i, f := range frames {
		fr[i] = int32(pack(f))
	}
	ft, err := tensor.FromInt32(c.t.Device(), fr, len(fr))
	if err != nil {
		return err
	}
	defer ft.Release()
	lo, hi := g.Lo, g.Hi
	if lo == 0 && hi == 0 {
		hi = 1
	}
	sz := g.Size(n, ih, iw)
	c.paint(device.DrawImages, imgs, ft, device.Paint{X: at.X, Y: at.Y, RW: sz.X, RH: sz.Y, N: n, IH: ih, IW: iw,
		Cols: g.Cols, Border: g.Border, Zoom: max(g.Zoom, 1), Lo: lo, Hi: hi})
	return nil
}

// Curve paints the values of v (a float32 tensor, read as a vector) as a
// curve across r, lo at its bottom and hi at its top, thick pixels wide.
func (c *Canvas) Curve(r image.Rectangle, v *tensor.Tensor, lo, hi float64, thick int, col color.RGBA) {
	c.check("draw.Curve", v)
	if v.Len() == 0 {
		return
	}
	c.paint(device.DrawCurve, v, c.none, device.Paint{X: r.Min.X, Y: r.Min.Y, RW: r.Dx(), RH: r.Dy(), N: v.Len(),
		Lo: lo, Hi: hi, Thick: max(thick, 1), Color: pack(col)})
}

// Text paints s (ASCII; other characters are left blank) from at, its
// glyphs zoom×zoom. An error is a failure to allocate the codes.
func (c *Canvas) Text(at image.Point, s string, zoom int, col color.RGBA) error {
	if s == "" {
		return nil
	}
	codes := make([]int32, 0, len(s))
	for _, r := range s {
		codes = append(codes, int32(r))
	}
	t, err := tensor.FromInt32(c.t.Device(), codes, len(codes))
	if err != nil {
		return err
	}
	defer t.Release()
	z := max(zoom, 1)
	c.paint(device.DrawText, t, c.font, device.Paint{X: at.X, Y: at.Y, RW: len(codes) * GlyphW * z, RH: GlyphH * z,
		N: len(codes), Zoom: z, GW: GlyphW, GH: GlyphH, Color: pack(col)})
	return nil
}

// Image reads the canvas back as an image.
func (c *Canvas) Image() (*image.RGBA, error) {
	px, err := c.t.Int32s()
	if err != nil {
		return nil, err
	}
	img := image.NewRGBA(image.Rect(0, 0, c.W, c.H))
	for i, v := range px {
		u := uint32(v)
		img.Pix[4*i], img.Pix[4*i+1], img.Pix[4*i+2], img.Pix[4*i+3] = uint8(u), uint8(u>>8), uint8(u>>16), uint8(u>>24)
	}
	return img, nil
}
