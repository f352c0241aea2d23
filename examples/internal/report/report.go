// Package report records a training run and draws it: a metrics log
// (JSON lines), PNG plots made with gonum.org/v1/plot (the loss per step
// with a smoothed line, train and test accuracy per epoch, the confusion
// matrix of the test set as a heat map with class names), and a progress
// bar on a terminal (github.com/schollz/progressbar) or one plain line per
// epoch elsewhere (CI).
package report

import (
	"encoding/json"
	"fmt"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Step is one training step's loss.
type Step struct {
	Epoch int     `json:"epoch"`
	Step  int     `json:"step"` // counted from 1 over the whole run
	Loss  float64 `json:"loss"`
}

// Epoch is what one epoch achieved.
type Epoch struct {
	Epoch    int     `json:"epoch"`
	Loss     float64 `json:"loss"`      // mean training loss
	TrainAcc float64 `json:"train_acc"` // accuracy on training examples, evaluation mode, in [0, 1]
	TestAcc  float64 `json:"test_acc"`  // accuracy on the test set, in [0, 1]
	StepMS   float64 `json:"step_ms"`   // mean wall time of a step
}

// A Recorder collects a run's metrics, logs each as a JSON line, and
// plots them.
type Recorder struct {
	Classes   []string // class names, for the confusion matrix
	Steps     []Step
	Epochs    []Epoch
	Confusion [][]int // [true class][predicted class] counts of the last test
	dir       string
	log       *os.File
}

// New returns a Recorder that writes its log (metrics.jsonl) and plots
// into dir, created if missing; dir "" keeps everything in memory.
func New(dir string, classes []string) (*Recorder, error) {
	r := &Recorder{Classes: classes, dir: dir}
	if dir == "" {
		return r, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		return nil, err
	}
	r.log = f
	return r, nil
}

// Close closes the log.
func (r *Recorder) Close() error {
	if r.log == nil {
		return nil
	}
	return r.log.Close()
}

func (r *Recorder) write(kind string, v any) error {
	if r.log == nil {
		return nil
	}
	b, err := json.Marshal(map[string]any{kind: v})
	if err != nil {
		return err
	}
	_, err = r.log.Write(append(b, '\n'))
	return err
}

// AddSteps records steps' losses.
func (r *Recorder) AddSteps(s ...Step) error {
	r.Steps = append(r.Steps, s...)
	for _, x := range s {
		if err := r.write("step", x); err != nil {
			return err
		}
	}
	return nil
}

// AddEpoch records an epoch.
func (r *Recorder) AddEpoch(e Epoch) error {
	r.Epochs = append(r.Epochs, e)
	return r.write("epoch", e)
}

// SetConfusion records the confusion matrix of predictions against the
// true labels.
func (r *Recorder) SetConfusion(labels, pred []int32) error {
	n := len(r.Classes)
	m := make([][]int, n)
	for i := range m {
		m[i] = make([]int, n)
	}
	for i, y := range labels {
		if int(y) < n && int(pred[i]) < n {
			m[y][pred[i]]++
		}
	}
	r.Confusion = m
	return r.write("confusion", m)
}

// Smooth returns the exponential moving average of v with weight alpha for
// the newest value, debiased as TensorBoard's smoothing is.
func Smooth(v []float64, alpha float64) []float64 {
	out := make([]float64, len(v))
	acc, w := 0.0, 0.0
	for i, x := range v {
		acc = (1-alpha)*acc + alpha*x
		w = (1-alpha)*w + alpha
		out[i] = acc / w
	}
	return out
}

// SmoothSteps smooths a curve of per-step values for display: about the
// last 20 values weigh in each point (alpha 20/len, within [0.01, 0.3]).
func SmoothSteps(v []float64) []float64 {
	return Smooth(v, min(0.3, max(0.01, 20/float64(max(len(v), 1)))))
}

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, x, y
	return p
}

// Plot writes loss.png, accuracy.png (once AddEpoch has been called) and
// (once SetConfusion has been called) confusion.png into the Recorder's directory and returns their
// paths. It may be called at any time during training.
func (r *Recorder) Plot() ([]string, error) {
	if r.dir == "" {
		return nil, fmt.Errorf("report: no directory to plot into")
	}
	var paths []string
	for _, f := range []struct {
		name string
		make func() (*plot.Plot, error)
		w, h vg.Length
	}{
		{"loss.png", r.lossPlot, 7 * vg.Inch, 4 * vg.Inch},
		{"accuracy.png", r.accuracyPlot, 7 * vg.Inch, 4 * vg.Inch},
		{"confusion.png", r.confusionPlot, 7 * vg.Inch, 6 * vg.Inch},
	} {
		if f.name == "confusion.png" && r.Confusion == nil || f.name == "accuracy.png" && r.Epochs == nil {
			continue // during training: no test predictions yet; no epochs in a run of steps
		}
		p, err := f.make()
		if err != nil {
			return paths, fmt.Errorf("report: %s: %w", f.name, err)
		}
		path := filepath.Join(r.dir, f.name)
		if err := p.Save(f.w, f.h, path); err != nil {
			return paths, err
		}
		paths = append(paths, path)
	}
	return paths, nil
}

func (r *Recorder) lossPlot() (*plot.Plot, error) {
	p := newPlot("Training loss", "step", "cross-entropy")
	raw, smooth := make(plotter.XYs, len(r.Steps)), make(plotter.XYs, len(r.Steps))
	losses := make([]float64, len(r.Steps))
	for i, s := range r.Steps {
		losses[i] = s.Loss
	}
	for i, v := range SmoothSteps(losses) {
		raw[i] = plotter.XY{X: float64(r.Steps[i].Step), Y: r.Steps[i].Loss}
		smooth[i] = plotter.XY{X: float64(r.Steps[i].Step), Y: v}
	}
	a, err := plotter.NewLine(raw)
	if err != nil {
		return nil, err
	}
	a.Color = color.RGBA{R: 160, G: 190, B: 230, A: 255}
	b, err := plotter.NewLine(smooth)
	if err != nil {
		return nil, err
	}
	b.Color, b.Width = color.RGBA{B: 160, A: 255}, vg.Points(1.5)
	p.Add(plotter.NewGrid(), a, b)
	p.Legend.Add("per step", a)
	p.Legend.Add("smoothed", b)
	p.Legend.Top = true
	return p, nil
}

func (r *Recorder) accuracyPlot() (*plot.Plot, error) {
	p := newPlot("Accuracy", "epoch", "accuracy (%)")
	train, test := make(plotter.XYs, len(r.Epochs)), make(plotter.XYs, len(r.Epochs))
	for i, e := range r.Epochs {
		train[i] = plotter.XY{X: float64(e.Epoch), Y: 100 * e.TrainAcc}
		test[i] = plotter.XY{X: float64(e.Epoch), Y: 100 * e.TestAcc}
	}
	p.Add(plotter.NewGrid())
	for _, s := range []struct {
		name string
		xy   plotter.XYs
		c    color.Color
	}{{"train", train, color.RGBA{R: 200, G: 90, A: 255}}, {"test", test, color.RGBA{B: 160, A: 255}}} {
		l, pts, err := plotter.NewLinePoints(s.xy)
		if err != nil {
			return nil, err
		}
		l.Color, pts.Color = s.c, s.c
		p.Add(l, pts)
		p.Legend.Add(s.name, l, pts)
	}
	p.Legend.Top, p.Legend.Left = false, false
	ticks := make([]plot.Tick, len(r.Epochs))
	for i, e := range r.Epochs {
		ticks[i] = plot.Tick{Value: float64(e.Epoch), Label: strconv.Itoa(e.Epoch)}
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	return p, nil
}

// grid is a confusion matrix as a heat map's grid, row 0 at the top.
type grid [][]int

func (g grid) Dims() (c, r int)   { return len(g), len(g) }
func (g grid) Z(c, r int) float64 { return float64(g[len(g)-1-r][c]) }
func (g grid) X(c int) float64    { return float64(c) }
func (g grid) Y(r int) float64    { return float64(r) }

func (r *Recorder) confusionPlot() (*plot.Plot, error) {
	n := len(r.Confusion)
	if n == 0 {
		return nil, fmt.Errorf("no confusion matrix recorded")
	}
	p := newPlot("Confusion matrix (test set)", "predicted", "true")
	pal := moreland.SmoothBlueRed().Palette(64)
	p.Add(plotter.NewHeatMap(grid(r.Confusion), pal))
	var labels plotter.XYLabels
	for t := range n {
		for c := range n {
			labels.XYs = append(labels.XYs, plotter.XY{X: float64(c), Y: float64(n - 1 - t)})
			labels.Labels = append(labels.Labels, strconv.Itoa(r.Confusion[t][c]))
		}
	}
	l, err := plotter.NewLabels(labels)
	if err != nil {
		return nil, err
	}
	for i := range l.TextStyle {
		l.TextStyle[i].XAlign, l.TextStyle[i].YAlign = -0.5, -0.5
		l.TextStyle[i].Font.Size = vg.Points(7)
	}
	p.Add(l)
	xt, yt := make([]plot.Tick, n), make([]plot.Tick, n)
	for i := range n {
		name := strconv.Itoa(i)
		if i < len(r.Classes) {
			name = r.Classes[i]
		}
		xt[i] = plot.Tick{Value: float64(i), Label: name}
		yt[i] = plot.Tick{Value: float64(n - 1 - i), Label: name}
	}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.ConstantTicks(xt), plot.ConstantTicks(yt)
	p.X.Tick.Label.Rotation, p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = 0.6, -1, -0.5
	return p, nil
}

// Progress shows the progress of the steps of an epoch: a progress bar
// with its rate, the loss and the time left when w is a terminal;
// nothing otherwise, where the caller's line per epoch is the record.
type Progress struct {
	bar *progressbar.ProgressBar
}

// NewProgress starts the progress of an epoch of steps steps on w.
func NewProgress(w io.Writer, epoch, steps int) *Progress {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return &Progress{}
	}
	return &Progress{bar: progressbar.NewOptions(steps,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(fmt.Sprintf("epoch %d", epoch)),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("steps"),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)}
}

// Shown reports whether the bar is drawn (w is a terminal): a caller can
// skip reading values back for it otherwise.
func (p *Progress) Shown() bool { return p.bar != nil }

// Set moves the bar to step done and shows the latest loss.
func (p *Progress) Set(epoch, done int, loss float64) {
	if p.bar == nil {
		return
	}
	p.bar.Describe(fmt.Sprintf("epoch %d  loss %.4f", epoch, loss))
	_ = p.bar.Set(done)
}

// Finish removes the bar.
func (p *Progress) Finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}

// Loading returns a progress function for a load of bytes (such as
// fashionmnist.LoadWith's), drawing a bar with the bytes read, the rate
// and the time left on w when w is a terminal; nil otherwise.
func Loading(w io.Writer, what string) func(read, total int64) {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	var bar *progressbar.ProgressBar
	return func(read, total int64) {
		if bar == nil {
			bar = progressbar.NewOptions64(total, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription(what),
				progressbar.OptionShowBytes(true), progressbar.OptionSetPredictTime(true),
				progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
		}
		_ = bar.Set64(read)
		if read >= total {
			_ = bar.Finish()
		}
	}
}
