package dashboard

import (
	"image"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/internal/gputest"
)

// frame draws Known's state on dev and reads the frame back.
func frame(t *testing.T, d *Dashboard, dev device.Device, filter float32) *image.RGBA {
	t.Helper()
	img, _ := frameOf(t, d, dev, filter)
	return img
}

func frameOf(t *testing.T, d *Dashboard, dev device.Device, filter float32) (*image.RGBA, State) {
	t.Helper()
	s, err := Known(dev, filter)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Draw(s); err != nil {
		t.Fatal(err)
	}
	img, err := d.Image()
	if err != nil {
		t.Fatal(err)
	}
	return img, s
}

// TestFrame checks a frame's pixels on each device (CheckKnown: the loss
// curve lies where its values say, the image grid shows the images it was
// given in frames of the right colours), that the filter panel changes
// when a filter does, and nothing else; the WebGPU frame must match the
// CPU's. The same checks run on the snapshot PNG.
func TestFrame(t *testing.T) {
	devs := []device.Device{cpu.New()}
	if g := gputest.OrNil(t); g != nil {
		devs = append(devs, g)
	}
	var frames []*image.RGBA
	for _, dev := range devs {
		d, err := New(dev)
		if err != nil {
			t.Fatal(err)
		}
		img, st := frameOf(t, d, dev, 0.5)
		frames = append(frames, img)
		for _, e := range CheckKnown(img, st) {
			t.Errorf("%s: %s", dev.Name(), e)
		}
		for _, e := range DiffersOnlyInFilters(img, frame(t, d, dev, -0.5)) {
			t.Errorf("%s: after a filter's change: %s", dev.Name(), e)
		}
		// The snapshot PNG shows the same.
		frame(t, d, dev, 0.5)
		path := filepath.Join(t.TempDir(), "frame.png")
		if err := d.Snapshot(path); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		decoded, err := png.Decode(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		rgba := image.NewRGBA(decoded.Bounds())
		for y := range Height {
			for x := range Width {
				rgba.Set(x, y, decoded.At(x, y))
			}
		}
		for _, e := range CheckKnown(rgba, st) {
			t.Errorf("%s: snapshot: %s", dev.Name(), e)
		}
		d.Release()
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
}
