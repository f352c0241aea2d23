package bench

import (
	"flag"
	"fmt"
	"image/color"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/extensor/extensor/device/webgpu"
	"github.com/extensor/extensor/internal/gputest"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

var chart = flag.String("chart", "", "write the training-step results (extensor and PyTorch side by side) as a bar chart to this PNG")

// stepResults are the ms/step figures of BenchmarkTrainStep's last run of
// each sub-benchmark, by name ("cnn/webgpu").
var stepResults = struct {
	sync.Mutex
	ms map[string]float64
}{ms: map[string]float64{}}

// recordStep keeps the figure of a BenchmarkTrainStep sub-benchmark.
func recordStep(b *testing.B, ms float64) {
	name := b.Name() // BenchmarkTrainStep/cnn/webgpu
	name = name[strings.Index(name, "/")+1:]
	stepResults.Lock()
	stepResults.ms[name] = ms
	stepResults.Unlock()
}

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if *torchTable && code == 0 {
		if err := sideBySide(); err != nil {
			fmt.Fprintln(os.Stderr, "side by side:", err)
			code = 1
		}
	}
	if os.Getenv(webgpu.EnvProfile) != "" && code == 0 {
		printProfile()
	}
	if *chart != "" && code == 0 {
		if err := writeChart(*chart); err != nil {
			fmt.Fprintln(os.Stderr, "chart:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// writeChart draws the training steps as bars, one panel per network,
// one bar per device or PyTorch setting, in ms.
func writeChart(path string) error {
	stepResults.Lock()
	defer stepResults.Unlock()
	if len(stepResults.ms) == 0 {
		return fmt.Errorf("no BenchmarkTrainStep results (run it with -bench TrainStep)")
	}
	var runners []string
	for name := range stepResults.ms {
		r := name[strings.Index(name, "/")+1:]
		if !slices.Contains(runners, r) {
			runners = append(runners, r)
		}
	}
	slices.Sort(runners)
	var row []*plot.Plot
	for _, n := range []string{"mlp", "cnn"} {
		p := plot.New()
		p.Title.Text = fmt.Sprintf("%s: one training step", n)
		p.Y.Label.Text = "ms per step"
		vals := make(plotter.Values, len(runners))
		for i, r := range runners {
			vals[i] = stepResults.ms[n+"/"+r]
		}
		bars, err := plotter.NewBarChart(vals, vg.Points(28))
		if err != nil {
			return err
		}
		bars.Color = color.RGBA{70, 110, 170, 255}
		bars.LineStyle.Width = 0
		p.Add(plotter.NewGrid(), bars)
		p.NominalX(runners...)
		p.X.Tick.Label.Rotation, p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = 0.5, -1, -0.5
		row = append(row, p)
	}
	img := vgimg.New(11*vg.Inch, 4.5*vg.Inch)
	tiles := draw.Tiles{Rows: 1, Cols: len(row), PadX: vg.Millimeter * 6, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align([][]*plot.Plot{row}, tiles, draw.New(img))
	for j, p := range row {
		p.Draw(canvases[0][j])
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// printProfile prints the kernels that took most of the WebGPU device's
// time since its profile last restarted (steps restarts it), when
// webgpu.EnvProfile is set.
func printProfile() {
	dev, err := gputest.Try()
	if err != nil {
		return
	}
	p, ok := dev.(*webgpu.Device)
	if !ok {
		return
	}
	ks := p.Profile()
	var total time.Duration
	for _, k := range ks {
		total += k.Time
	}
	fmt.Printf("device time by kernel (%s, clock %s; %.3f ms in all):\n", dev, p.ProfileClock(), total.Seconds()*1e3)
	for _, k := range ks[:min(len(ks), 30)] {
		fmt.Printf("  %5.1f%%  %10.3f ms  %7d dispatches  %8.2f µs each  %s\n", 100*k.Time.Seconds()/total.Seconds(), k.Time.Seconds()*1e3, k.Dispatches, k.Time.Seconds()*1e6/float64(k.Dispatches), k.Kernel)
	}
}
