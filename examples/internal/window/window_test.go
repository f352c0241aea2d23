//go:build cgo

package window

import (
	"errors"
	"image"
	"image/color"
	"os"
	"testing"
	"time"

	"github.com/extensor/extensor/draw"
	"github.com/extensor/extensor/internal/gputest"
	"github.com/go-gl/glfw/v3.3/glfw"
)

func TestMain(m *testing.M) { os.Exit(Main(m.Run)) }

// open opens a window, failing under CI without a display (make test
// runs the tests under xvfb-run), skipping elsewhere.
func open(t *testing.T) *Window {
	t.Helper()
	var w *Window
	var err error
	Do(func() { w, err = Open("extensor window test", 960, 600) })
	if errors.Is(err, ErrNoDisplay) && !gputest.CI() {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestWindow presents frames drawn on the window's device while a
// "training" goroutine runs, resizes the window, pauses and resumes with
// Space, and stops with Escape; the frame read back from the GPU shows
// what was drawn.
func TestWindow(t *testing.T) {
	w := open(t)
	defer Do(func() { w.Close() })
	c, err := draw.New(w.Device(), 960, 600, color.RGBA{24, 26, 33, 255})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	done := make(chan error, 1)
	var paused, resumed, stopped bool
	go func() {
		defer close(done)
		for i := range 20 {
			c.Fill(image.Rect(10*i, 100, 10*i+10, 200), color.RGBA{uint8(12 * i), 200, 0, 255})
			w.Show(c)
			time.Sleep(20 * time.Millisecond)
		}
		for w.Presented() < 5 {
			time.Sleep(10 * time.Millisecond)
		}
		w.key(glfw.KeySpace)
		paused = w.Paused()
		w.key(glfw.KeySpace)
		resumed = !w.Paused()
		w.key(glfw.KeyEscape)
		stopped = w.Closed()
	}()
	Do(func() {
		w.win.SetSize(640, 400) // the swap chain follows; frames keep coming
		err = w.Run(done)
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := w.Presented(); n < 5 {
		t.Errorf("%d frames presented; want at least 5", n)
	}
	if !paused || !resumed || !stopped {
		t.Errorf("Space paused %v, Space again resumed %v, Escape closed %v", paused, resumed, stopped)
	}
	img, err := c.Image()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := img.RGBAAt(195, 150), (color.RGBA{12 * 19, 200, 0, 255}); got != want {
		t.Errorf("pixel (195,150) = %v; want %v", got, want)
	}
}
