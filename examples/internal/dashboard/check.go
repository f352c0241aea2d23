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

// CheckKnown lists how img, a frame of Known's state, fails to show it:
// the loss curves must cross the middle column of the loss plot at its
// middle row (the loss there is 1, half the axis's top), and image k must
// show grey k/11 (±1) in a frame green when predicted right, red when not.
func CheckKnown(img *image.RGBA) []string {
	var bad []string
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
	if want := area.Min.Y + area.Dy()/2; top < 0 || want < top-1 || want > bottom+1 || bottom-top > 20 {
		bad = append(bad, fmt.Sprintf("loss curves over rows %d…%d of column %d; want them at about %d", top, bottom, mid, want))
	}
	for k := range 12 {
		at := imageCell(k, 4, 4)
		g := uint8(float32(k)/11*255 + 0.5)
		if got := img.RGBAAt(at.X+imageBorder+2, at.Y+imageBorder+2); absDiff(got.R, g) > 1 || got.R != got.G || got.G != got.B {
			bad = append(bad, fmt.Sprintf("image %d shows %v; want grey %d", k, got, g))
		}
		want := right
		if k%2 == 1 {
			want = wrong
		}
		if got := img.RGBAAt(at.X, at.Y); got != want {
			bad = append(bad, fmt.Sprintf("image %d framed %v; want %v", k, got, want))
		}
	}
	return bad
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
