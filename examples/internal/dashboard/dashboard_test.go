package dashboard

import (
	"image"
	"image/color"
	"path/filepath"
	"testing"

	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/internal/gputest"
	"github.com/extensor/extensor/tensor"
)

// state is a frame of known content: a loss falling linearly from 2 to
// 0 over 101 steps, accuracies, twelve 4×4 images each of one grey level
// (image k: k/11), half of them predicted right, and 8 filters.
func state(t *testing.T, dev device.Device, filterValue float32) State {
	t.Helper()
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
	f[0] = filterValue
	pred, labels := make([]int32, 12), make([]int32, 12)
	for k := range pred {
		pred[k], labels[k] = int32(k%10), int32(k%10)
		if k%2 == 1 {
			labels[k] = int32((k + 1) % 10)
		}
	}
	return State{Title: "test", Epoch: 2, Losses: losses, TestAcc: []float64{0.5, 0.75},
		Images: tensor.Must(tensor.FromFloat32(dev, px, 12, 1, 4, 4)),
		Pred:   pred, Labels: labels, Classes: []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"},
		Filters: tensor.Must(tensor.FromFloat32(dev, f, 8, 1, 3, 3)), FilterShape: [2]int{3, 3}}
}

func frame(t *testing.T, dev device.Device, filterValue float32) *image.RGBA {
	t.Helper()
	d, err := New(dev)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Release()
	if err := d.Draw(state(t, dev, filterValue)); err != nil {
		t.Fatal(err)
	}
	img, err := d.Image()
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// TestFrame checks a frame's pixels on each device: the loss curve lies
// where its values say, the image grid shows the images it was given in
// frames of the right colours, and the filter panel changes when a filter
// does. The WebGPU frame must match the CPU's.
func TestFrame(t *testing.T) {
	devs := []device.Device{cpu.New()}
	if g := gputest.OrNil(t); g != nil {
		devs = append(devs, g)
	}
	var frames []*image.RGBA
	for _, dev := range devs {
		img := frame(t, dev, 0.5)
		frames = append(frames, img)
		// The loss: at the plot area's middle column the value is 1, half
		// of the axis's top (2): its row is the area's middle row.
		area := image.Rect(lossPanel.Min.X+60, lossPanel.Min.Y+28, lossPanel.Max.X-14, lossPanel.Max.Y-24)
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
			t.Errorf("%s: loss curves over rows %d…%d of column %d; want them at about %d", dev.Name(), top, bottom, mid, want)
		}
		// Image k sits in cell (k mod 6, k div 6), grey k/11, framed green
		// when its prediction is right (even k), red otherwise.
		for k := range 12 {
			cell := image.Pt(4*2+6, 4*2+6)
			at := imagesPanel.Min.Add(image.Pt(14+(k%6)*cell.X, 30+(k/6)*(cell.Y+22)))
			g := uint8(float32(k)/11*255 + 0.5)
			if got := img.RGBAAt(at.X+3+2, at.Y+3+2); got != (color.RGBA{g, g, g, 255}) && absDiff(got.R, g) > 1 {
				t.Errorf("%s: image %d shows %v; want grey %d", dev.Name(), k, got, g)
			}
			want := right
			if k%2 == 1 {
				want = wrong
			}
			if got := img.RGBAAt(at.X, at.Y); got != want {
				t.Errorf("%s: image %d framed %v; want %v", dev.Name(), k, got, want)
			}
		}
		// Another value of a filter changes the filter panel, and only it.
		other := frame(t, dev, -0.5)
		changed := 0
		for y := range Height {
			for x := range Width {
				if img.RGBAAt(x, y) != other.RGBAAt(x, y) {
					changed++
					if !image.Pt(x, y).In(filtersPanel) {
						t.Fatalf("%s: a filter's change altered pixel (%d,%d), outside the filter panel", dev.Name(), x, y)
					}
				}
			}
		}
		if changed == 0 {
			t.Errorf("%s: a filter's change left the filter panel alone", dev.Name())
		}
	}
	if len(frames) == 2 {
		bad := 0
		for i := range frames[0].Pix {
			if absDiff(frames[0].Pix[i], frames[1].Pix[i]) > 1 {
				bad++
			}
		}
		if bad > 0 {
			t.Errorf("%d channel values of the webgpu frame differ from the cpu's", bad)
		}
	}
	// A snapshot is the frame as a PNG.
	d, err := New(devs[len(devs)-1])
	if err != nil {
		t.Fatal(err)
	}
	defer d.Release()
	if err := d.Draw(state(t, devs[len(devs)-1], 0.5)); err != nil {
		t.Fatal(err)
	}
	if err := d.Snapshot(filepath.Join(t.TempDir(), "frame.png")); err != nil {
		t.Fatal(err)
	}
}

func absDiff(a, b uint8) int {
	if a > b {
		return int(a - b)
	}
	return int(b - a)
}
