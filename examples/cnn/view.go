package main

import (
	"image"

	"fmt"
	"github.com/extensor/extensor/examples/internal/dashboard"
	"io"
	"time"

	"github.com/extensor/extensor/examples/internal/report"
	"github.com/extensor/extensor/nn"
	"github.com/extensor/extensor/optim"
)

// viewer draws the dashboard for -snapshot and -window, paced so that it
// costs little training time, and accounts for that time.
type viewer struct {
	b        *board
	snapshot string // the PNG to write ("": none)
	every    int    // also write it every this many steps (0: at the end)
	win      Screen // the live window (nil: none)
	onFrame  func(*image.RGBA, dashboard.State)

	frames   int
	cost     time.Duration // spent drawing frames
	last     time.Time     // when the last frame was drawn
	lastCost time.Duration
}

// due reports whether a frame should be drawn after step steps: for the
// snapshot every `every` steps; for the window when at least a thirtieth
// of a second and 19 times the last frame's cost have passed since it
// (drawing then costs at most a twentieth of the time, leaving room for
// presenting and for the pipeline stalls of the frame's readbacks).
func (v *viewer) due(steps int) bool {
	if v.b == nil {
		return false
	}
	if v.snapshot != "" && v.every > 0 && steps%v.every == 0 {
		return true
	}
	return v.win != nil && time.Since(v.last) >= max(time.Second/30, 19*v.lastCost)
}

// frame draws a frame, shows it in the window and writes the snapshot
// (when the snapshot is due every few steps, or final).
func (v *viewer) frame(rec *report.Recorder, epoch int, net nn.Sequential, final bool) error {
	start := time.Now()
	st, err := v.b.draw(rec, epoch, net)
	if err == nil && v.onFrame != nil {
		var img *image.RGBA
		if img, err = v.b.Image(); err == nil {
			v.onFrame(img, st)
		}
	}
	if err == nil && v.win != nil {
		v.win.Show(v.b.Canvas())
	}
	if err == nil && v.snapshot != "" && (final || v.every > 0) {
		err = v.b.Snapshot(v.snapshot)
	}
	v.last, v.lastCost = time.Now(), time.Since(start)
	v.frames++
	v.cost += v.lastCost
	return err
}

// release stops showing the dashboard and frees it.
func (v *viewer) release() {
	if v.win != nil {
		v.win.Show(nil)
	}
	v.b.release()
}

// waitWhilePaused waits while the window is paused (and not closed) and
// returns how long.
func (v *viewer) waitWhilePaused() time.Duration {
	start := time.Now()
	for v.win.Paused() && !v.win.Closed() {
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(start)
}

// report prints what the dashboard cost.
func (v *viewer) report(w io.Writer, training time.Duration) {
	if v.frames == 0 {
		return
	}
	where := "window"
	if v.snapshot != "" {
		where = "snapshot " + v.snapshot
	}
	fmt.Fprintf(w, "dashboard (%s): %d frames, %.1f ms a frame, %.2f%% of the training time\n", where, v.frames,
		v.cost.Seconds()*1e3/float64(v.frames), 100*v.cost.Seconds()/training.Seconds())
}

// stopEarly ends training when the window closes: it writes a checkpoint
// that resumes at the start of the interrupted epoch, with the
// parameters and optimiser state reached.
func stopEarly(cfg Config, w io.Writer, net nn.Sequential, opt *optim.Optimizer, epoch, step int) error {
	if cfg.Save == "" {
		fmt.Fprintf(w, "window closed at epoch %d, step %d; no checkpoint (-save is empty)\n", epoch, step)
		return nil
	}
	if err := save(cfg.Save, net, opt, epoch-1); err != nil {
		return err
	}
	fmt.Fprintf(w, "window closed at epoch %d, step %d: wrote %s; -resume %s goes on from epoch %d\n", epoch, step, cfg.Save, cfg.Save, epoch)
	return nil
}
