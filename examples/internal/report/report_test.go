package report_test

import (
	"bufio"
	"encoding/json"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/extensor/extensor/examples/internal/report"
)

func TestSmooth(t *testing.T) {
	got := report.Smooth([]float64{4, 0, 0}, 0.5)
	// Debiased: the first point is the first value; then (0.5·4·0.5 + 0)/0.75, …
	want := []float64{4, 4.0 / 3, 4.0 / 7}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12 {
			t.Fatalf("Smooth = %v; want %v", got, want)
		}
	}
}

// TestRecorder logs a short run and plots it: every record is a JSON
// line, and each plot is a PNG of the size asked for whose pixels are not
// all one colour.
func TestRecorder(t *testing.T) {
	dir := t.TempDir()
	r, err := report.New(dir, []string{"a", "b", "c"})
	if err != nil {
		t.Fatal(err)
	}
	for s := 1; s <= 30; s++ {
		if err := r.AddSteps(report.Step{Epoch: 1 + (s-1)/15, Step: s, Loss: 2 / float64(s)}); err != nil {
			t.Fatal(err)
		}
	}
	for e := 1; e <= 2; e++ {
		if err := r.AddEpoch(report.Epoch{Epoch: e, Loss: 1 / float64(e), TrainAcc: 0.5 + 0.1*float64(e), TestAcc: 0.4 + 0.1*float64(e)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.SetConfusion([]int32{0, 1, 2, 2, 1}, []int32{0, 1, 2, 1, 1}); err != nil {
		t.Fatal(err)
	}
	if r.Confusion[2][1] != 1 || r.Confusion[1][1] != 2 || r.Confusion[2][2] != 1 {
		t.Errorf("confusion %v", r.Confusion)
	}
	paths, err := r.Plot()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines := 0
	for sc := bufio.NewScanner(f); sc.Scan(); lines++ {
		var v map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil || len(v) != 1 {
			t.Fatalf("line %d: %q: %v", lines+1, sc.Text(), err)
		}
	}
	if lines != 30+2+1 {
		t.Errorf("%d lines; want 33", lines)
	}
	if len(paths) != 3 {
		t.Fatalf("plots %v", paths)
	}
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		b := img.Bounds()
		first := img.At(b.Min.X, b.Min.Y)
		varied := false
		for y := b.Min.Y; y < b.Max.Y && !varied; y += 7 {
			for x := b.Min.X; x < b.Max.X; x += 7 {
				if img.At(x, y) != first {
					varied = true
					break
				}
			}
		}
		if b.Dx() < 500 || !varied {
			t.Errorf("%s: %v, varied %v", p, b, varied)
		}
	}
}

// TestProgressOffTerminal: away from a terminal the bar draws nothing.
func TestProgressOffTerminal(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	p := report.NewProgress(f, 1, 10)
	p.Set(1, 5, 0.5)
	p.Finish()
	if st, _ := f.Stat(); p.Shown() || st.Size() != 0 {
		t.Errorf("progress wrote %d bytes to a file", st.Size())
	}
}
