package dashboard

import (
	"fmt"
	"io"
	"time"

	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/draw"
)

// Screen is a live window for the dashboard (package window's Window).
type Screen interface {
	Device() device.Device // the device that presents on the window
	Show(c *draw.Canvas)   // present this frame from now on
	Paused() bool          // training should wait
	Closed() bool          // training should stop, saving a checkpoint
}

// Pacer paces the frames of a training run's dashboard so that drawing
// costs little training time, and accounts for that time.
type Pacer struct {
	Snapshot string // the PNG written ("": none)
	Every    int    // also write it every Every steps (0: at the end)
	Win      Screen // the live window (nil: none)

	frames         int
	cost, lastCost time.Duration // spent drawing frames; the last one
	last           time.Time     // when the last frame was drawn
}

// Due reports whether a frame should be drawn after step steps: for the
// snapshot every Every steps; for the window when at least a thirtieth
// of a second and 19 times the last frame's cost have passed since it
// (drawing then costs at most a twentieth of the time, leaving room for
// presenting and for the pipeline stalls of the frame's readbacks).
func (p *Pacer) Due(steps int) bool {
	if p.Snapshot != "" && p.Every > 0 && steps%p.Every == 0 {
		return true
	}
	return p.Win != nil && time.Since(p.last) >= max(time.Second/30, 19*p.lastCost)
}

// Drawn records a frame begun at start.
func (p *Pacer) Drawn(start time.Time) {
	p.last, p.lastCost = time.Now(), time.Since(start)
	p.frames++
	p.cost += p.lastCost
}

// WaitWhilePaused waits while the window is paused (and not closed) and
// returns how long.
func (p *Pacer) WaitWhilePaused() time.Duration {
	start := time.Now()
	for p.Win != nil && p.Win.Paused() && !p.Win.Closed() {
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(start)
}

// Report prints what the frames cost, as a share of training.
func (p *Pacer) Report(w io.Writer, training time.Duration) {
	if p.frames == 0 {
		return
	}
	where := "window"
	if p.Snapshot != "" {
		where = "snapshot " + p.Snapshot
	}
	fmt.Fprintf(w, "dashboard (%s): %d frames, %.1f ms a frame, %.2f%% of the training time\n", where, p.frames,
		p.cost.Seconds()*1e3/float64(p.frames), 100*p.cost.Seconds()/training.Seconds())
}
