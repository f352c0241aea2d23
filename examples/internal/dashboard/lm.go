package dashboard

import (
	"fmt"
	"image"
	"image/color"
	"strings"

	"github.com/extensor/extensor/draw"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/tensor"
)

// LM is what a language model's frame shows.
type LM struct {
	Title  string
	Losses []float64 // the training loss per step
	// Val are the validation losses, measured at ValSteps (about evenly
	// spaced).
	Val      []float64
	ValSteps []int
	// Attention is a layer's head's attention probabilities for a
	// validation window ([L, L], on the device, rows the queries), named
	// by AttentionLabel.
	Attention      *tensor.Tensor
	AttentionLabel string
	Sample         string // the latest sample, shown from its start
}

// The language model's panels.
var (
	valPanel       = accPanel
	attentionPanel = imagesPanel
	samplePanel    = filtersPanel
)

var validation = color.RGBA{255, 170, 60, 255}

// DrawLM draws a frame of s: the training loss per step, the validation
// loss, the attention map and the sample.
func (d *Dashboard) DrawLM(s LM) error {
	return tensor.Maybe(func() {
		c := d.c
		c.Fill(image.Rect(0, 0, Width, Height), background)
		d.text(image.Pt(20, 14), s.Title, 2, text)
		d.lossPanel(s.Losses)
		d.valPanel(s)
		if s.Attention != nil {
			d.attentionPanel(s)
		}
		d.samplePanel(s.Sample)
	})
}

func (d *Dashboard) valPanel(s LM) {
	area := d.frame(valPanel, "validation loss (held-out files)")
	hi := lossTop(s.Val)
	first, last := "", ""
	if n := len(s.ValSteps); n > 0 {
		first, last = fmt.Sprintf("step %d", s.ValSteps[0]), fmt.Sprintf("step %d", s.ValSteps[n-1])
	}
	d.axes(area, "0", fmt.Sprintf("%.2f", hi), first, last)
	d.curve(area, s.Val, 0, hi, 3, validation)
	if n := len(s.Val); n > 0 {
		d.text(image.Pt(area.Max.X-90, area.Min.Y+4), fmt.Sprintf("%.3f", s.Val[n-1]), 2, validation)
	}
}

// attentionMap returns where the attention map of l×l probabilities is
// drawn and its zoom.
func attentionMap(l int) (image.Point, int) {
	area := plotArea(attentionPanel)
	return area.Min.Sub(image.Pt(46, 0)), max(1, min(area.Dx(), area.Dy())/max(l, 1))
}

// attentionPanel shows the attention map zoomed to fill the panel, the
// shade of a probability p its square root (black 0, white 1), so that
// small weights show.
func (d *Dashboard) attentionPanel(s LM) {
	d.frame(attentionPanel, "attention: "+s.AttentionLabel)
	a := s.Attention
	l := a.Dim(0)
	at, zoom := attentionMap(l)
	img := ops.Sqrt(ops.Reshape(a, 1, l, a.Dim(1)))
	defer img.Release()
	if err := d.c.Images(at, img, draw.Grid{Cols: 1, Zoom: zoom}, nil); err != nil {
		panic(err)
	}
	x := at.X + l*zoom + 8
	d.text(image.Pt(x, at.Y), "rows: queries", 1, dim)
	d.text(image.Pt(x, at.Y+16), "columns: keys", 1, dim)
	d.text(image.Pt(x, at.Y+32), "shade: sqrt(p)", 1, dim)
}

// CheckLM lists how img, a frame drawn of s, fails to show its attention
// map: the first query attends only to itself, so the map's top-left
// cell must be white and its top-right cell black.
func CheckLM(img *image.RGBA, s LM) []string {
	if s.Attention == nil {
		return nil
	}
	l := s.Attention.Dim(0)
	at, zoom := attentionMap(l)
	var problems []string
	for _, c := range []struct {
		name string
		col  int
		want uint8
	}{{"top-left (query 0, key 0)", 0, 255}, {"top-right (query 0, last key)", l - 1, 0}} {
		px := img.RGBAAt(at.X+c.col*zoom+zoom/2, at.Y+zoom/2)
		if px.R != c.want || px.G != c.want || px.B != c.want {
			problems = append(problems, fmt.Sprintf("attention map's %s cell is %v; want grey %d", c.name, px, c.want))
		}
	}
	return problems
}

// samplePanel shows the sample's first lines, tabs as four spaces, bytes
// outside printable ASCII as dots.
func (d *Dashboard) samplePanel(sample string) {
	r := samplePanel
	d.c.Fill(r, panel)
	d.text(r.Min.Add(image.Pt(10, 6)), "latest sample", 1, text)
	cols := (r.Dx() - 20) / draw.GlyphW
	rows := (r.Dy() - 34) / draw.GlyphH
	for i, line := range SampleLines(sample, cols, rows) {
		d.text(r.Min.Add(image.Pt(10, 26+i*draw.GlyphH)), line, 1, text)
	}
}

// SampleLines returns text as at most rows lines of at most cols
// characters: tabs as four spaces, bytes outside printable ASCII as dots,
// long lines cut.
func SampleLines(text string, cols, rows int) []string {
	var out []string
	for _, line := range strings.Split(strings.ReplaceAll(text, "\t", "    "), "\n") {
		if len(out) == rows {
			break
		}
		b := []byte(line)
		for i, c := range b {
			if c < 0x20 || c > 0x7e {
				b[i] = '.'
			}
		}
		out = append(out, string(b[:min(len(b), cols)]))
	}
	return out
}
