package window

import "time"

// Train opens a window of w×h pixels titled title, runs train with it on
// another goroutine, and handles the window until train returns; then it
// closes the window and its device and returns train's error. Call it on
// the main goroutine.
func Train(title string, w, h int, train func(win *Window) error) error {
	win, err := Open(title, w, h)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- train(win) }()
	return win.RunAndClose(done)
}

// RunAndClose runs the window (Run) until done yields, then closes it
// and its device; it returns what done yielded, else the error closing.
// Call it on the main goroutine.
func (w *Window) RunAndClose(done <-chan error) error {
	err := w.Run(done)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	return err
}

// CloseWhen asks the window to close (RequestClose) once ready is closed
// and n frames have been presented, waiting at most limit for each: for
// tests that stop training from the window.
func (w *Window) CloseWhen(ready <-chan struct{}, n int64, limit time.Duration) {
	select {
	case <-ready:
	case <-time.After(limit):
	}
	for deadline := time.Now().Add(limit); w.Presented() < n && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	w.RequestClose()
}
