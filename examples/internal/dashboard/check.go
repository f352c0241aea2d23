package dashboard

import (
	"fmt"
	"image"

	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/tensor"
)

// Known returns a State of known content, for tests of what draws and
// shows frames: a loss falling linearly from 2 to 0 over 101 steps, two
// accuracies, twelve 4×4 images each of one grey level (image k: k/11),
// the even ones predicted right, and 8 filters of 3×3 whose first value is
// filter (change it to change the filter panel).
func Known(dev device.Device, filter float32) (State, error) {
	losses := make([]float64, 101)
	for i := range losses {
		losses[i] = 2 - 0.02*float64(i)
	}
	px := make([]float32, 12*16)
	for k := range 12 {
		for j := range 16 {
			px[k*16+j] = float32(k) / 11
		}
	}
	f := make([]float32, 8*9)
	for i := range f {
		f[i] = float32(i%5)/4 - 0.5
	}
	f[0] = filter
	pred, labels := make([]int32, 12), make([]int32, 12)
	for k := range pred {
		pred[k], labels[k] = int32(k%10), int32(k%10)
		if k%2 == 1 {
			labels[k] = int32((k + 1) % 10)
		}
	}
	images, err := tensor.FromFloat32(dev, px, 12, 1, 4, 4)
	if err != nil {
		return State{}, err
	}
	filters, err := tensor.FromFloat32(dev, f, 8, 1, 3, 3)
	if err != nil {
		return State{}, err
	}
	return State{Title: "test", Epoch: 2, Losses: losses, TestAcc: []float64{0.5, 0.75}, Images: images,
		Pred: pred, Labels: labels, Classes: []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"},
		Filters: filters, FilterShape: [2]int{3, 3}}, nil
}

// CheckKnown lists how img, a frame of Known's state, fails to show it
// (Check).
func CheckKnown(img *image.RGBA, s State) []string { return Check(img, s) }

// Check lists how img, a frame drawn of s, fails to show it: in the loss
// plot's middle column, the curves must cover the row of the loss at that
// point of the run (interpolated between steps, as the curve kernel
// does); the centre pixel of each test image shown must be its grey level
// (±1); and each image's frame must be green when its prediction is
// right, red when not.
func Check(img *image.RGBA, s State) []string {
	var bad []string
	if n := len(s.Losses); n > 1 {
		area := plotArea(lossPanel)
		mid := (area.Min.X + area.Max.X) / 2
		top, bottom := -1, -1 // the rows the curves cover in that column
		for y := area.Min.Y; y < area.Max.Y; y++ {
			if c := img.RGBAAt(mid, y); c == smooth || c == raw {
				if top < 0 {
					top = y
				}
				bottom = y
			}
		}
		f := float64(mid-area.Min.X) * float64(n-1) / float64(area.Dx()-1)
		i := min(int(f), n-2)
		v := s.Losses[i] + (s.Losses[i+1]-s.Losses[i])*(f-float64(i))
		want := area.Min.Y + int((1-v/lossTop(s.Losses))*float64(area.Dy()-1)+0.5)
		if top < 0 || want < top-2 || want > bottom+2 {
			bad = append(bad, fmt.Sprintf("loss curves over rows %d…%d of column %d; the loss there, %.3f, is at row %d", top, bottom, mid, v, want))
		}
	}
	if s.Images != nil {
		shape := s.Images.Shape()
		ih, iw := shape[len(shape)-2], shape[len(shape)-1]
		px, err := s.Images.Float32s()
		if err != nil {
			return append(bad, err.Error())
		}
		for k := range min(s.Images.Dim(0), len(s.Pred), 12) {
			at := imageCell(k, ih, iw)
			v := min(max(px[(k*ih+ih/2)*iw+iw/2], 0), 1)
			g := uint8(v*255 + 0.5)
			got := img.RGBAAt(at.X+imageBorder+iw/2*imageZoom, at.Y+imageBorder+ih/2*imageZoom)
			if absDiff(got.R, g) > 1 || got.R != got.G || got.G != got.B {
				bad = append(bad, fmt.Sprintf("image %d shows %v at its centre; want grey %d", k, got, g))
			}
			want := right
			if s.Pred[k] != s.Labels[k] {
				want = wrong
			}
			if got := img.RGBAAt(at.X, at.Y); got != want {
				bad = append(bad, fmt.Sprintf("image %d framed %v; want %v", k, got, want))
			}
		}
	}
	return bad
}

// FiltersDiffer reports whether the filter panels of a and b differ.
func FiltersDiffer(a, b *image.RGBA) bool {
	for y := filtersPanel.Min.Y; y < filtersPanel.Max.Y; y++ {
		for x := filtersPanel.Min.X; x < filtersPanel.Max.X; x++ {
			if a.RGBAAt(x, y) != b.RGBAAt(x, y) {
				return true
			}
		}
	}
	return false
}

// DiffersOnlyInFilters lists the ways a and b are not frames that differ
// in the filter panel and nowhere else.
func DiffersOnlyInFilters(a, b *image.RGBA) []string {
	changed := 0
	for y := range Height {
		for x := range Width {
			if a.RGBAAt(x, y) != b.RGBAAt(x, y) {
				changed++
				if !image.Pt(x, y).In(filtersPanel) {
					return []string{fmt.Sprintf("pixel (%d,%d), outside the filter panel, differs", x, y)}
				}
			}
		}
	}
	if changed == 0 {
		return []string{"the filter panels are the same"}
	}
	return nil
}

func absDiff(a, b uint8) int {
	if a > b {
		return int(a - b)
	}
	return int(b - a)
}
