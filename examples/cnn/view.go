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
	dashboard.Pacer
	b       *board
	onFrame func(*image.RGBA, dashboard.State)
}

// due reports whether a frame should be drawn after step steps.
func (v *viewer) due(steps int) bool { return v.b != nil && v.Due(steps) }

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
	if err == nil && v.Win != nil {
		v.Win.Show(v.b.Canvas())
	}
	if err == nil && v.Snapshot != "" && (final || v.Every > 0) {
		err = v.b.Snapshot(v.Snapshot)
	}
	v.Drawn(start)
	return err
}

// release stops showing the dashboard and frees it.
func (v *viewer) release() {
	if v.Win != nil {
		v.Win.Show(nil)
	}
	v.b.release()
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
