package main

import (
	"fmt"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/extensor/extensor/examples/internal/report"
	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// writePlots writes dir/loss.png (the training loss per step, raw and smoothed,
// and the validation loss), dir/metrics.tsv and dir/sample.txt, and
// returns their paths.
func writePlots(dir string, res *Result) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var tsv strings.Builder
	tsv.WriteString("step\ttrain_loss\tval_loss\n")
	val := map[int]float64{}
	for _, e := range res.Evals {
		val[e.Step] = e.Loss
	}
	raw, vals := make(plotter.XYs, len(res.Losses)), make(plotter.XYs, 0, len(res.Evals))
	for _, e := range res.Evals {
		if e.Step < res.First { // before the first step: the untrained model's
			fmt.Fprintf(&tsv, "%d\t\t%.5f\n", e.Step, e.Loss)
		}
	}
	for i, l := range res.Losses {
		step := res.First + i
		raw[i] = plotter.XY{X: float64(step), Y: l}
		if v, ok := val[step]; ok {
			fmt.Fprintf(&tsv, "%d\t%.5f\t%.5f\n", step, l, v)
		} else {
			fmt.Fprintf(&tsv, "%d\t%.5f\t\n", step, l)
		}
	}
	for _, e := range res.Evals {
		vals = append(vals, plotter.XY{X: float64(e.Step), Y: e.Loss})
	}
	smooth := make(plotter.XYs, len(raw))
	for i, v := range report.SmoothSteps(res.Losses) {
		smooth[i] = plotter.XY{X: raw[i].X, Y: v}
	}
	p := plot.New()
	p.Title.Text = "extensor GPT on Go source: loss (nats a byte)"
	p.X.Label.Text = "step"
	p.Y.Label.Text = "cross-entropy"
	p.Add(plotter.NewGrid())
	lr, err := plotter.NewLine(raw)
	if err != nil {
		return nil, err
	}
	lr.Color = color.RGBA{R: 160, G: 190, B: 230, A: 255}
	ls, err := plotter.NewLine(smooth)
	if err != nil {
		return nil, err
	}
	ls.Width = vg.Points(1.5)
	ls.Color = color.RGBA{B: 160, A: 255}
	lv, pts, err := plotter.NewLinePoints(vals)
	if err != nil {
		return nil, err
	}
	lv.Color, pts.Color = color.RGBA{R: 200, G: 90, A: 255}, color.RGBA{R: 200, G: 90, A: 255}
	p.Add(lr, ls, lv)
	p.Legend.Add("training (per step)", lr)
	p.Legend.Add("training (smoothed)", ls)
	p.Legend.Add("validation (held-out files)", lv)
	p.Legend.Top = true
	loss := filepath.Join(dir, "loss.png")
	if err := p.Save(8*vg.Inch, 4.5*vg.Inch, loss); err != nil {
		return nil, err
	}
	metrics := filepath.Join(dir, "metrics.tsv")
	if err := os.WriteFile(metrics, []byte(tsv.String()), 0o644); err != nil {
		return nil, err
	}
	paths := []string{loss, metrics}
	if res.Sample != "" {
		s := filepath.Join(dir, "sample.txt")
		if err := os.WriteFile(s, []byte(res.Sample+"\n"), 0o644); err != nil {
			return nil, err
		}
		paths = append(paths, s)
	}
	return paths, nil
}

// bar is the training progress bar: steps, the loss and tokens a second,
// drawn only when its writer is a terminal.
type bar struct{ b *progressbar.ProgressBar }

func newBar(w io.Writer, steps int) *bar {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return &bar{}
	}
	return &bar{progressbar.NewOptions(steps, progressbar.OptionSetWriter(w), progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true), progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())}
}

func (b *bar) set(done int, loss, tokSec float64) {
	if b.b != nil {
		b.b.Describe(fmt.Sprintf("loss %.4f  %.0f tokens/s", loss, tokSec))
		_ = b.b.Set(done)
	}
}

// println prints a line to w, above the bar.
func (b *bar) println(w io.Writer, line string) {
	if b.b != nil {
		_ = b.b.Clear()
	}
	fmt.Fprintln(w, line)
}

func (b *bar) finish() {
	if b.b != nil {
		_ = b.b.Finish()
	}
}
