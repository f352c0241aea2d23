package window

import (
	"errors"
	"testing"
	"time"

	"github.com/extensor/extensor/internal/gputest"
)

// OpenTest opens a window for a test, on the main thread (Do; the test
// binary's TestMain runs Main). Without a display it skips tb, but under
// CI, where the tests run under xvfb-run, it fails tb; so does any other
// error.
func OpenTest(tb testing.TB, title string, w, h int) *Window {
	tb.Helper()
	var win *Window
	var err error
	Do(func() { win, err = Open(title, w, h) })
	if errors.Is(err, ErrNoDisplay) && !gputest.CI() {
		tb.Skip(err)
	}
	if err != nil {
		tb.Fatal(err)
	}
	return win
}

// RunTest runs train on another goroutine while the main thread handles
// the window, which it asks to close once ready is closed and two frames
// have been presented (CloseWhen, a minute at most for each); it returns
// train's error, else the error closing the window.
func (w *Window) RunTest(ready <-chan struct{}, train func() error) error {
	done := make(chan error, 1)
	go func() { done <- train() }()
	go w.CloseWhen(ready, 2, time.Minute)
	var err error
	Do(func() { err = w.RunAndClose(done) })
	return err
}
