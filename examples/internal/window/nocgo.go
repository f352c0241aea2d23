//go:build !cgo

// Package window shows the training dashboard live in a glfw window; it
// needs cgo (glfw, X11 and WebGPU), and without it Open says so.
package window

import (
	"errors"
	"time"

	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/draw"
)

// ErrNoDisplay is returned by Open where there is no display.
var ErrNoDisplay = errors.New("window: built without cgo: no window (draw to a PNG with -snapshot instead)")

// FrameInterval is the shortest time between two frames presented.
const FrameInterval = time.Second / 30

// Window is unavailable without cgo.
type Window struct{}

// Open returns ErrNoDisplay: windows need cgo.
func Open(title string, w, h int) (*Window, error) { return nil, ErrNoDisplay }

// Device is never reached.
func (w *Window) Device() device.Device { return nil }

// Paused is never reached.
func (w *Window) Paused() bool { return false }

// Closed is never reached.
func (w *Window) Closed() bool { return false }

// RequestClose is never reached.
func (w *Window) RequestClose() {}

// Presented is never reached.
func (w *Window) Presented() int64 { return 0 }

// Show is never reached.
func (w *Window) Show(c *draw.Canvas) {}

// Run is never reached.
func (w *Window) Run(done <-chan error) error { return <-done }

// Close is never reached.
func (w *Window) Close() error { return nil }

// Main runs run.
func Main(run func() int) int { return run() }

// Do runs f.
func Do(f func()) { f() }
