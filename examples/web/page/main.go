//go:build js

// Command page is the web example's program, built as WebAssembly and run
// by the page that package web serves: it trains the MLP of examples/mlp
// on Fashion-MNIST, fetched from that server, on the browser's WebGPU,
// and draws the training dashboard into the page's canvas through its
// WebGPU context. The page's button starts and pauses training.
//
// The page's query sets the run: epochs, batch, lr, hidden, seed and
// limit as examples/mlp's flags; autostart=1 starts at once; pauseat=N
// clicks the button at step N and again a second later; check=1 reads
// the canvas back after the last frame, checks it shows that frame
// (dashboard.Check) and sends it to the server as a PNG. Progress goes to
// the server as events (see package web's Event).
package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/draw"
	"image/png"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"
	"syscall/js"
	"time"

	"github.com/extensor/extensor/dataset/fashionmnist"
	"github.com/extensor/extensor/dataset/loader"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/device/webgpu"
	"github.com/extensor/extensor/examples/internal/dashboard"
	"github.com/extensor/extensor/examples/internal/report"
	"github.com/extensor/extensor/examples/mlp/model"
	"github.com/extensor/extensor/examples/web/events"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/optim"
	"github.com/extensor/extensor/tensor"
	"github.com/oliverbestmann/webgpu/wgpu"
)

func main() {
	p := newPage()
	if err := p.run(); err != nil {
		p.status("error: " + err.Error())
		p.send(events.Event{Event: "error", Text: err.Error()})
	}
	select {} // keep serving the button's events
}

// page is the page's elements and the button's state.
type page struct {
	doc, canvas, button, statusLine, epochList js.Value
	origin                                     string

	mu      sync.Mutex
	cond    *sync.Cond
	running bool // training runs (Start pressed, Pause not)
	onClick js.Func
}

func newPage() *page {
	doc := js.Global().Get("document")
	p := &page{doc: doc, canvas: doc.Call("getElementById", "dashboard"), button: doc.Call("getElementById", "toggle"),
		statusLine: doc.Call("getElementById", "status"), epochList: doc.Call("getElementById", "epochs"),
		origin: js.Global().Get("location").Get("origin").String()}
	p.cond = sync.NewCond(&p.mu)
	p.onClick = js.FuncOf(func(js.Value, []js.Value) any {
		p.mu.Lock()
		p.running = !p.running
		label := "Pause"
		if !p.running {
			label = "Resume"
		}
		p.mu.Unlock()
		p.cond.Broadcast()
		p.button.Set("textContent", label)
		return nil
	})
	p.button.Call("addEventListener", "click", p.onClick)
	return p
}

// status shows s under the canvas.
func (p *page) status(s string) { p.statusLine.Set("textContent", s) }

// send posts e to the server, which logs it (and tests read it).
func (p *page) send(e events.Event) {
	b, _ := json.Marshal(e)
	if r, err := http.Post(p.origin+"/report", "application/json", bytes.NewReader(b)); err == nil {
		r.Body.Close()
	}
}

// waitRunning blocks while training is paused (or not yet started); it
// returns how long it waited.
func (p *page) waitRunning() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running {
		return 0
	}
	start := time.Now()
	for !p.running {
		p.cond.Wait()
	}
	return time.Since(start)
}

func (p *page) run() error {
	q, err := url.ParseQuery(strings.TrimPrefix(js.Global().Get("location").Get("search").String(), "?"))
	if err != nil {
		return err
	}
	cfg, err := parseConfig(q)
	if err != nil {
		return err
	}
	p.status("loading Fashion-MNIST…")
	var shown time.Time
	train, test, err := fashionmnist.LoadFS(httpFS{p.origin + "/data/"}, func(read, total int64) {
		if time.Since(shown) > 100*time.Millisecond {
			p.status(fmt.Sprintf("loading Fashion-MNIST: %.1f of %.1f MB", float64(read)/1e6, float64(total)/1e6))
			shown = time.Now()
		}
	})
	if err != nil {
		return err
	}
	dev, err := webgpu.OpenSurface(&wgpu.SurfaceDescriptor{Canvas: p.canvas}, dashboard.Width, dashboard.Height)
	if err != nil {
		return fmt.Errorf("this page trains on the browser's WebGPU: %w", err)
	}
	// The device stays open: the canvas keeps showing its last frame.
	p.send(events.Event{Event: "device", Text: dev.String()})
	return tensor.Maybe(func() { err = p.train(cfg, dev, train, test) })
}

// failure carries an error out of train's steps (must).
type failure struct{ error }

// train trains the MLP as cfg says, drawing frames on the canvas.
func (p *page) train(cfg config, dev *webgpu.Device, train, test *fashionmnist.Set) (err error) {
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(failure)
			if !ok {
				panic(r)
			}
			err = f.error
		}
	}()
	must := func(err error) {
		if err != nil {
			panic(failure{err})
		}
	}
	feat := train.Features()
	m, err := model.New(dev, feat, cfg.hidden, 10, cfg.seed)
	must(err)
	defer m.Release()
	opt := optim.SGD(m.Params(), cfg.lr, device.StepParams{})
	board, err := newBoard(dev, p.canvas, test)
	must(err)
	defer board.release()

	data := loader.New(train.Images, train.Labels, feat, cfg.batch, cfg.seed)
	data.Limit = cfg.limit
	steps := data.Steps()
	must(board.frame(m, "press Start to train", false))
	p.status(fmt.Sprintf("%s: press Start to train %d epochs of %d steps", dev, cfg.epochs, steps))
	p.button.Set("disabled", false)
	if cfg.autostart {
		p.button.Call("click")
	}
	var pending report.Pending
	flush := func() {
		v, err := pending.Read()
		must(err)
		board.losses = append(board.losses, v...)
	}
	// msPerStep is the wall time per step of the epoch so far, frames
	// included, pauses not.
	var start time.Time
	var paused time.Duration
	msPerStep := func(steps int) float64 {
		return float64((time.Since(start) - paused).Milliseconds()) / float64(max(steps, 1))
	}
	p.waitRunning()
	p.send(events.Event{Event: "started"})
	lastFrame := time.Now()
	for e := 1; e <= cfg.epochs; e++ {
		board.epoch = e
		start, paused = time.Now(), 0
		for s, b := range data.Epoch(dev) {
			must(b.Err)
			if waited := p.waitRunning(); waited > 0 {
				paused += waited
				p.send(events.Event{Event: "resumed", Step: opt.Steps()})
			}
			pending = append(pending, m.TapeStep(b.X, b.Y, opt))
			b.X.Release()
			b.Y.Release()
			if cfg.pauseAt > 0 && opt.Steps() == cfg.pauseAt {
				p.button.Call("click")
				p.send(events.Event{Event: "paused", Step: opt.Steps()})
				var again js.Func
				again = js.FuncOf(func(js.Value, []js.Value) any {
					p.button.Call("click")
					again.Release()
					return nil
				})
				js.Global().Call("setTimeout", again, 1000)
			}
			if time.Since(lastFrame) > 500*time.Millisecond || s+1 == steps {
				flush()
				n := len(board.losses)
				ms := msPerStep(s + 1)
				p.send(events.Event{Event: "step", Step: n, Epoch: e, Loss: board.losses[n-1], MsPerStep: ms})
				title := fmt.Sprintf("extensor MLP in the browser: epoch %d, step %d, loss %.3f", e, n, board.losses[n-1])
				must(board.frame(m, title, false))
				p.status(fmt.Sprintf("epoch %d/%d, step %d/%d, loss %.3f, %.1f steps/s", e, cfg.epochs, s+1, steps, board.losses[n-1], 1000/ms))
				lastFrame = time.Now()
			}
		}
		flush()
		ms := msPerStep(steps)
		acc, err := m.Accuracy(test)
		must(err)
		board.acc = append(board.acc, acc)
		loss := 0.0
		for _, l := range board.losses[len(board.losses)-steps:] {
			loss += l / float64(steps)
		}
		p.send(events.Event{Event: "epoch", Epoch: e, Loss: loss, Accuracy: acc, MsPerStep: ms})
		item := p.doc.Call("createElement", "li")
		item.Set("textContent", fmt.Sprintf("epoch %d: train loss %.4f, test accuracy %.2f%%, %.1f ms/step", e, loss, 100*acc, ms))
		p.epochList.Call("appendChild", item)
		last := e == cfg.epochs
		title := fmt.Sprintf("extensor MLP in the browser: epoch %d, test accuracy %.2f%%", e, 100*acc)
		must(board.frame(m, title, last && cfg.check))
		if last && cfg.check {
			p.check(board)
		}
	}
	p.button.Set("disabled", true)
	p.status(fmt.Sprintf("trained %d epochs: test accuracy %.2f%%", cfg.epochs, 100*board.acc[len(board.acc)-1]))
	p.send(events.Event{Event: "done", Step: opt.Steps()})
	return nil
}

// check checks the canvas, as read back by frame (the browser's PNG of
// it), against the frame's state (dashboard.Check) and sends the result
// and the picture to the server.
func (p *page) check(b *board) {
	problems, err := b.checkShown()
	if err != nil {
		problems = []string{err.Error()}
	}
	p.send(events.Event{Event: "check", Problems: problems})
	if b.shown != nil {
		if r, err := http.Post(p.origin+"/snapshot", "image/png", bytes.NewReader(b.shown)); err == nil {
			r.Body.Close()
		}
	}
}

// board draws the dashboard of the page's run on its device.
type board struct {
	*dashboard.Dashboard
	dev    *webgpu.Device
	x      *tensor.Tensor // the first dashboard.Shown test images, N×784
	images *tensor.Tensor // the same, N×28×28
	labels []int32
	losses []float64 // per step
	acc    []float64 // per epoch
	epoch  int
	state  dashboard.State // the kept frame's
	canvas js.Value        // the page's canvas
	shown  []byte          // the kept frame as the canvas showed it, a PNG
}

func newBoard(dev *webgpu.Device, canvas js.Value, test *fashionmnist.Set) (*board, error) {
	d, err := dashboard.New(dev)
	if err != nil {
		return nil, err
	}
	b := &board{Dashboard: d, dev: dev, canvas: canvas, labels: make([]int32, dashboard.Shown)}
	px := make([]float32, dashboard.Shown*test.Features())
	n := test.Batch(0, dashboard.Shown, px, b.labels)
	if b.x, err = tensor.FromFloat32(dev, px[:n*test.Features()], n, test.Features()); err != nil {
		d.Release()
		return nil, err
	}
	b.images = ops.Reshape(b.x, n, test.Rows, test.Cols)
	b.labels = b.labels[:n]
	return b, nil
}

func (b *board) release() {
	b.Release()
	b.x.Release()
	b.images.Release()
}

// frame draws a frame and presents it on the canvas: the metrics so far,
// the network's predictions for the test images now and the first 32 of
// its hidden units' weights as 28×28 images. With keep, the frame's state
// and the canvas as it shows the frame are kept (for check).
func (b *board) frame(m *model.MLP, title string, keep bool) error {
	pred, err := m.Predict(b.x)
	if err != nil {
		return err
	}
	w1t := ops.Transpose(m.W1)
	filters := ops.Narrow(w1t, 0, 0, min(32, w1t.Dim(0)))
	w1t.Release()
	s := dashboard.State{Title: title, Epoch: b.epoch, Losses: b.losses, TestAcc: b.acc, Images: b.images, Pred: pred,
		Labels: b.labels, Classes: fashionmnist.Classes, Filters: filters, FilterShape: [2]int{28, 28}}
	err = b.Draw(s)
	filters.Release()
	s.Filters = nil
	if err != nil {
		return err
	}
	c := b.Canvas()
	if err := b.dev.Present(c.Tensor().Buffer(), c.W, c.H); err != nil {
		return err
	}
	if keep {
		// In the task that drew it: once the task ends, the browser
		// presents the frame and its texture expires.
		b.state, b.shown = s, nil
		url := b.canvas.Call("toDataURL", "image/png").String()
		png, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(url, "data:image/png;base64,"))
		if err != nil {
			return fmt.Errorf("the canvas's PNG: %v", err)
		}
		b.shown = png
	}
	return nil
}

// checkShown lists how the kept frame, as the canvas showed it, fails to
// show its state.
func (b *board) checkShown() ([]string, error) {
	img, err := png.Decode(bytes.NewReader(b.shown))
	if err != nil {
		return nil, fmt.Errorf("the canvas's PNG: %v", err)
	}
	rgba := image.NewRGBA(img.Bounds())
	draw.Draw(rgba, rgba.Bounds(), img, image.Point{}, draw.Src)
	return dashboard.Check(rgba, b.state), nil
}

// httpFS is the server's files under base, fetched over HTTP.
type httpFS struct{ base string }

func (f httpFS) Open(name string) (fs.File, error) {
	r, err := http.Get(f.base + name)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	if r.StatusCode != http.StatusOK {
		r.Body.Close()
		err := fmt.Errorf("%s%s: %s", f.base, name, r.Status)
		if r.StatusCode == http.StatusNotFound {
			err = fs.ErrNotExist
		}
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return &httpFile{name: name, size: r.ContentLength, body: r.Body}, nil
}

// Stat asks the server for name's size (a HEAD request), so that
// fs.Stat need not fetch the file.
func (f httpFS) Stat(name string) (fs.FileInfo, error) {
	r, err := http.Head(f.base + name)
	if err != nil {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: err}
	}
	r.Body.Close()
	if r.StatusCode != http.StatusOK || r.ContentLength < 0 {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fmt.Errorf("%s%s: %s", f.base, name, r.Status)}
	}
	return &httpFile{name: name, size: r.ContentLength}, nil
}

// httpFile is a fetched file, and its own fs.FileInfo.
type httpFile struct {
	name string
	size int64
	body io.ReadCloser
}

func (f *httpFile) Read(p []byte) (int, error) { return f.body.Read(p) }
func (f *httpFile) Close() error               { return f.body.Close() }
func (f *httpFile) Stat() (fs.FileInfo, error) { return f, nil }
func (f *httpFile) Name() string               { return path.Base(f.name) }
func (f *httpFile) Size() int64                { return f.size }
func (f *httpFile) Mode() fs.FileMode          { return 0o444 }
func (f *httpFile) ModTime() time.Time         { return time.Time{} }
func (f *httpFile) IsDir() bool                { return false }
func (f *httpFile) Sys() any                   { return nil }
