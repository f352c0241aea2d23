//go:build !js

package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"image"
	"image/png"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/extensor/extensor/dataset/fashionmnist"
	"github.com/extensor/extensor/examples/web/events"
	"github.com/extensor/extensor/internal/browser"
)

var screenshot = flag.String("screenshot", "", "write the canvas the page test read back to this PNG file")

// need skips the test without what it needs (Chromium, the data), or
// fails it under CI=true, where make deps installs them.
func need(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal(err)
	}
	t.Skip(err)
}

// pageLimit is the training examples of the page's epoch in TestPage:
// a quarter of the set, 120 steps of 128 (SwiftShader runs the whole
// epoch in a minute of CPU).
const pageLimit = 15360

// pageBar is the test accuracy the page must reach after that epoch; it
// reached 78.0% on SwiftShader (2026-12-02).
const pageBar = 0.75

// TestPage opens the page in headless Chromium, where it trains on the
// browser's WebGPU (SwiftShader where there is no GPU): training starts,
// the page's button pauses it (no step runs while paused) and resumes it,
// the loss halves, the test accuracy after an epoch of pageLimit examples
// reaches pageBar, and
// the canvas, read back as the browser shows it, shows the dashboard's
// last frame (dashboard.Check).
func TestPage(t *testing.T) {
	if testing.Short() {
		t.Skip("trains an epoch in a browser; skipped with -short")
	}
	chromium, err := browser.Chromium()
	need(t, err)
	s, err := newServer(fashionmnist.DefaultDir)
	need(t, err)
	got := make(chan events.Event, 1024)
	s.onEvent = func(e events.Event) {
		t.Log(e)
		got <- e
	}
	snapshot := make(chan []byte, 1)
	s.onSnapshot = func(b []byte) { snapshot <- b }
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: s}
	go srv.Serve(ln)
	defer srv.Close()

	ctx, cancel := context.WithCancel(context.Background())
	var log bytes.Buffer
	cmd := browser.Headless(ctx, chromium, t.TempDir(), "http://"+ln.Addr().String()+fmt.Sprintf("/?autostart=1&epochs=1&limit=%d&pauseat=20&check=1", pageLimit), false)
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cancel() // before Wait

	var steps []events.Event
	var epoch, check *events.Event
	var paused, resumed, started bool
	timeout := time.After(5 * time.Minute)
wait:
	for {
		select {
		case e := <-got:
			switch e.Event {
			case "error":
				t.Fatalf("the page failed: %s", e.Text)
			case "started":
				started = e.Step == 0
			case "paused":
				paused = e.Step == 20
			case "resumed":
				resumed = paused && e.Step == 20
			case "step":
				steps = append(steps, e)
			case "epoch":
				epoch = &e
			case "check":
				check = &e
			case "done":
				break wait
			}
		case <-timeout:
			t.Fatalf("the page has not finished after 5 minutes; Chromium's log:\n%s", log.String())
		}
	}
	if !started || !paused || !resumed {
		t.Errorf("started at step 0 %v, paused at step 20 %v, resumed at step 20 %v; want all", started, paused, resumed)
	}
	if len(steps) < 2 || !(steps[len(steps)-1].Loss < steps[0].Loss/2) {
		t.Errorf("the loss did not halve: %v", steps)
	}
	if epoch == nil {
		t.Fatal("no epoch reported")
	}
	if epoch.Accuracy < pageBar {
		t.Errorf("test accuracy after one epoch: %.2f%%; want ≥ %.0f%%", 100*epoch.Accuracy, 100*pageBar)
	}
	t.Logf("the page trained at %.1f ms/step over the epoch, its kernels' compilation included (%.1f steps/s)", epoch.MsPerStep, 1000/epoch.MsPerStep)
	if n := len(steps); n >= 4 {
		// From the middle of the epoch on: compiled, frames included.
		a, b := steps[n/2], steps[n-1]
		ms := (b.MsPerStep*float64(b.Step) - a.MsPerStep*float64(a.Step)) / float64(b.Step-a.Step)
		t.Logf("steps %d to %d: %.1f ms/step (%.1f steps/s)", a.Step, b.Step, ms, 1000/ms)
	}
	if check == nil {
		t.Fatal("the page did not check its canvas")
	}
	for _, p := range check.Problems {
		t.Errorf("the canvas: %s", p)
	}
	select {
	case b := <-snapshot:
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("the page's snapshot: %v", err)
		}
		if img.Bounds() != image.Rect(0, 0, 960, 600) {
			t.Errorf("the snapshot is %v; want 960×600", img.Bounds())
		}
		if *screenshot != "" {
			if err := os.WriteFile(*screenshot, b, 0o644); err != nil {
				t.Error(err)
			}
		}
	case <-time.After(30 * time.Second):
		t.Error("the page sent no snapshot")
	}
}

// TestReportGuards: the server takes reports from its own origin only,
// of a bounded size, and prints their text escaped.
func TestReportGuards(t *testing.T) {
	s := &server{onEvent: func(events.Event) {}}
	s.HandleFunc("POST /report", s.report)
	for _, c := range []struct {
		name    string
		body    string
		headers map[string]string
		want    int
	}{
		{"same origin", `{"event":"step"}`, map[string]string{"Origin": "http://example.test", "Sec-Fetch-Site": "same-origin"}, http.StatusOK},
		{"no page", `{"event":"step"}`, nil, http.StatusOK},
		{"another origin", `{"event":"step"}`, map[string]string{"Origin": "http://evil.test"}, http.StatusForbidden},
		{"a cross-site fetch", `{"event":"step"}`, map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"2 MiB", `{"event":"` + strings.Repeat("x", 2<<20) + `"}`, nil, http.StatusBadRequest},
	} {
		r := httptest.NewRequest("POST", "http://example.test/report", strings.NewReader(c.body))
		for k, v := range c.headers {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		if w.Code != c.want {
			t.Errorf("%s: status %d; want %d", c.name, w.Code, c.want)
		}
	}
	if got := (events.Event{Event: "error", Text: "a\x1b[2Jb\a"}).String(); strings.ContainsAny(got, "\x1b\a") {
		t.Errorf("a report's text printed as %q; want control characters escaped", got)
	}
}
