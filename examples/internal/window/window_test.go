//go:build cgo

package window

import (
	"errors"
	"image"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/extensor/extensor/examples/internal/dashboard"
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

// TestDisplayThatDoesNotOpen opens a window on a display that does not
// exist: an error naming it, wrapping ErrNoDisplay, never a panic.
func TestDisplayThatDoesNotOpen(t *testing.T) {
	t.Setenv("DISPLAY", ":4242")
	var err error
	Do(func() { _, err = Open("extensor window test", 64, 64) })
	if !errors.Is(err, ErrNoDisplay) || !strings.Contains(err.Error(), "DISPLAY=:4242") {
		t.Errorf("Open on DISPLAY=:4242: %v; want ErrNoDisplay naming the display", err)
	}
}

// TestWindow shows the dashboard, drawn on the window's device, while a
// "training" goroutine runs: the window resizes, presents frames, pauses
// and resumes with Space and stops with Escape. The frame read back from
// the GPU shows what was drawn (dashboard.CheckKnown), and a step that
// changes a filter changes the filter panel.
func TestWindow(t *testing.T) {
	w := open(t)
	defer Do(func() { w.Close() })
	d, err := dashboard.New(w.Device())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Release()
	var known dashboard.State
	draw := func(filter float32) *image.RGBA {
		s, err := dashboard.Known(w.Device(), filter)
		if filter > 0 {
			known = s
		}
		if err == nil {
			err = d.Draw(s)
		}
		if err != nil {
			t.Error(err)
			return nil
		}
		w.Show(d.Canvas())
		img, err := d.Image()
		if err != nil {
			t.Error(err)
		}
		return img
	}
	done := make(chan error, 1)
	var paused, resumed, stopped bool
	var before, after *image.RGBA
	go func() {
		defer close(done)
		deadline := time.Now().Add(30 * time.Second)
		waitFor := func(n int64) {
			for w.Presented() < n && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
		}
		before = draw(0.5)
		waitFor(2)                 // the new frame, and again a second later
		after = draw(-0.5)         // a training step moved a filter
		waitFor(w.Presented() + 1) // presented at once
		w.key(glfw.KeySpace)
		paused = w.Paused()
		w.key(glfw.KeySpace)
		resumed = !w.Paused()
		w.key(glfw.KeyEscape)
		stopped = w.Closed()
		w.Show(nil)
	}()
	Do(func() {
		w.win.SetSize(640, 400) // the swap chain follows; frames keep coming
		err = w.Run(done)
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := w.Presented(); n < 3 {
		t.Errorf("%d frames presented; want at least 3", n)
	}
	if !paused || !resumed || !stopped {
		t.Errorf("Space paused %v, Space again resumed %v, Escape closed %v", paused, resumed, stopped)
	}
	if before == nil || after == nil {
		t.Fatal("no frames read back")
	}
	for _, e := range dashboard.CheckKnown(before, known) {
		t.Error(e)
	}
	for _, e := range dashboard.DiffersOnlyInFilters(before, after) {
		t.Errorf("after a step: %s", e)
	}
}
