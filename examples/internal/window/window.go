//go:build cgo

// Package window shows the training dashboard live in a glfw window whose
// WebGPU surface belongs to the device that trains: the window is made
// first, and the device on an adapter that can present to it. Frames are
// drawn on that device and copied to the screen by it, with no round trip
// through the CPU. Space pauses training, Escape or closing the window
// stops it. glfw needs cgo and X11; only the examples import this package.
package window

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/device/webgpu"
	"github.com/extensor/extensor/draw"
	"github.com/go-gl/glfw/v3.3/glfw"
	"github.com/oliverbestmann/webgpu/wgpu"
)

// glfw's calls belong on the main thread: keep the main goroutine there.
func init() { runtime.LockOSThread() }

// ErrNoDisplay is returned by Open where there is no display.
var ErrNoDisplay = errors.New("window: no display (DISPLAY is not set): run under a virtual display, e.g. xvfb-run -a, or draw to a PNG with -snapshot instead")

// FrameInterval is the shortest time between two frames presented: at
// most 30 frames a second.
const FrameInterval = time.Second / 30

// Window is a window with a WebGPU device presenting on it.
type Window struct {
	win *glfw.Window
	dev *webgpu.Device

	paused, closing atomic.Bool
	mu              sync.Mutex // guards canvas
	canvas          *draw.Canvas
	fresh           bool // canvas changed since it was last presented
	presented       atomic.Int64
}

// hints sets the window hints, reporting GLFW's error where glfw.Init
// failed: go-gl/glfw logs a platform error of glfwInit (a display that
// does not open) and returns nil, and the next call panics with
// NotInitialized.
func hints() (err error) {
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(*glfw.Error)
			if !ok {
				panic(r)
			}
			err = e
		}
	}()
	glfw.WindowHint(glfw.ClientAPI, glfw.NoAPI)
	glfw.WindowHint(glfw.Resizable, glfw.True)
	return nil
}

// Open opens a window of w×h pixels, keeping that aspect when resized,
// and a WebGPU device that presents on it. Call it on the main goroutine.
func Open(title string, w, h int) (*Window, error) {
	if os.Getenv("DISPLAY") == "" {
		return nil, ErrNoDisplay
	}
	if err := glfw.Init(); err != nil {
		return nil, fmt.Errorf("window: %v (%w)", err, ErrNoDisplay)
	}
	if err := hints(); err != nil {
		return nil, fmt.Errorf("window: DISPLAY=%s: %v (%w)", os.Getenv("DISPLAY"), err, ErrNoDisplay)
	}
	win, err := glfw.CreateWindow(w, h, title, nil, nil)
	if err != nil {
		glfw.Terminate()
		return nil, fmt.Errorf("window: %v", err)
	}
	win.SetAspectRatio(w, h)
	fw, fh := win.GetFramebufferSize()
	dev, err := webgpu.OpenSurface(&wgpu.SurfaceDescriptor{XlibWindow: &wgpu.SurfaceSourceXlibWindow{
		Display: unsafe.Pointer(glfw.GetX11Display()), Window: uint32(win.GetX11Window())}}, fw, fh)
	if err != nil {
		win.Destroy()
		glfw.Terminate()
		return nil, err
	}
	wd := &Window{win: win, dev: dev}
	win.SetKeyCallback(func(_ *glfw.Window, key glfw.Key, _ int, action glfw.Action, _ glfw.ModifierKey) {
		if action == glfw.Press {
			wd.key(key)
		}
	})
	win.SetFramebufferSizeCallback(func(_ *glfw.Window, w, h int) {
		if err := dev.Resize(w, h); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
		wd.mu.Lock()
		wd.fresh = true // draw the last frame at the new size
		wd.mu.Unlock()
	})
	return wd, nil
}

// key handles a key press: Space pauses or resumes, Escape closes.
func (w *Window) key(k glfw.Key) {
	switch k {
	case glfw.KeySpace:
		w.paused.Store(!w.paused.Load())
	case glfw.KeyEscape:
		w.win.SetShouldClose(true)
		w.closing.Store(true)
	}
}

// Device returns the device that presents on the window; train on it.
func (w *Window) Device() device.Device { return w.dev }

// Paused reports whether training should wait (Space).
func (w *Window) Paused() bool { return w.paused.Load() }

// Closed reports whether the window was closed (or Escape pressed):
// training should stop cleanly.
func (w *Window) Closed() bool { return w.closing.Load() }

// RequestClose closes the window as its close button would.
func (w *Window) RequestClose() { w.closing.Store(true) }

// Presented returns how many frames have been presented.
func (w *Window) Presented() int64 { return w.presented.Load() }

// Show makes canvas the frame the window presents from now on; any
// goroutine may call it after drawing the frame on the window's device.
// Show(nil) stops presenting it (call it before releasing the canvas).
func (w *Window) Show(c *draw.Canvas) {
	w.mu.Lock()
	w.canvas, w.fresh = c, true
	w.mu.Unlock()
}

// Run handles the window's events and presents its frames (each new one
// at once, at most 30 a second; the last one again every second) until
// done yields (the training has finished) and returns what
// done yielded. Closing the window asks training to stop (Closed) and
// keeps the loop running until it has. Call it on the main goroutine.
func (w *Window) Run(done <-chan error) error {
	last := time.Time{}
	for {
		select {
		case err := <-done:
			w.present() // the final frame
			return err
		default:
		}
		glfw.WaitEventsTimeout(FrameInterval.Seconds())
		if w.win.ShouldClose() {
			w.closing.Store(true)
		}
		// A new frame (or a resize) is presented at once, at most 30 a
		// second; the same frame again once a second, to keep the window
		// alive without spending the CPU adapter's time on it.
		w.mu.Lock()
		fresh := w.fresh
		w.mu.Unlock()
		if since := time.Since(last); fresh && since >= FrameInterval || since >= time.Second {
			last = time.Now()
			if err := w.present(); err != nil {
				fmt.Fprintln(os.Stderr, "window:", err)
			}
		}
	}
}

// present shows the current frame (again: a window must keep presenting).
func (w *Window) present() error {
	w.mu.Lock() // held throughout: Show(nil) waits before the canvas goes
	defer w.mu.Unlock()
	c := w.canvas
	w.fresh = false
	if c == nil {
		return nil
	}
	if err := w.dev.Present(c.Tensor().Buffer(), c.W, c.H); err != nil {
		return err
	}
	w.presented.Add(1)
	return nil
}

// Close closes the window and its device. Call it on the main goroutine
// once training is done with the device.
func (w *Window) Close() error {
	err := w.dev.Close()
	w.win.Destroy()
	glfw.Terminate()
	return err
}

// calls are functions to run on the main thread (Do), served by Main.
var calls = make(chan func())

// Main runs run (a test binary's m.Run) on another goroutine while the
// main goroutine, locked to the main thread, runs the functions passed to
// Do; it returns what run returns. Tests that open windows call it from
// TestMain.
func Main(run func() int) int {
	done := make(chan int)
	go func() { done <- run() }()
	for {
		select {
		case f := <-calls:
			f()
		case code := <-done:
			return code
		}
	}
}

// Do runs f on the main thread, under Main, and waits for it.
func Do(f func()) {
	ch := make(chan struct{})
	calls <- func() {
		defer close(ch)
		f()
	}
	<-ch
}
