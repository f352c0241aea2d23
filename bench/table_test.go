package bench

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/extensor/extensor/internal/torchpy"
)

var (
	torchTable = flag.Bool("torch", false, "after the benchmarks, run their workloads in PyTorch (testdata/torch_bench.py: CUDA if PyTorch sees a GPU, else the CPU) and print both side by side")
	tableFile  = flag.String("table", "", "with -torch, also write the side-by-side table, in Markdown, to this file")
)

// metric is one benchmark figure.
type metric struct {
	v    float64
	unit string
}

// results are the figures reported through report: by workload (the
// sub-benchmark's name without "Benchmark" and the device), by runner
// ("cpu", "webgpu", or "pytorch"), the last run's.
var results = struct {
	sync.Mutex
	order   []string
	m       map[string]map[string]metric
	devices map[string]string // runner → its description
}{m: map[string]map[string]metric{}, devices: map[string]string{}}

// report reports v in unit as b's metric and keeps it for the table.
func report(b *testing.B, v float64, unit string) {
	b.ReportMetric(v, unit)
	parts := strings.Split(b.Name(), "/")
	work, runner := []string{strings.TrimPrefix(parts[0], "Benchmark")}, ""
	for _, p := range parts[1:] {
		if p == "cpu" || p == "webgpu" {
			runner = p
			continue
		}
		work = append(work, p)
	}
	keep(strings.Join(work, "/"), runner, metric{v, unit})
}

func keep(work, runner string, m metric) {
	results.Lock()
	defer results.Unlock()
	if results.m[work] == nil {
		results.m[work] = map[string]metric{}
		results.order = append(results.order, work)
	}
	results.m[work][runner] = m
}

// describe records the description of a runner for the table's header.
func describe(runner, desc string) {
	results.Lock()
	results.devices[runner] = desc
	results.Unlock()
}

// runTorchBench runs testdata/torch_bench.py, keeping its figures as the
// runner "pytorch".
func runTorchBench() error {
	python, err := torchpy.Find()
	if err != nil {
		return err
	}
	cmd := exec.Command(python, "testdata/torch_bench.py")
	cmd.Stderr = os.Stderr
	outb, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("testdata/torch_bench.py: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(outb)), "\n") {
		if desc, ok := strings.CutPrefix(line, "device "); ok {
			describe("pytorch", desc)
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 {
			return fmt.Errorf("testdata/torch_bench.py printed %q", line)
		}
		v, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			return fmt.Errorf("testdata/torch_bench.py printed %q: %v", line, err)
		}
		results.Lock()
		_, ours := results.m[f[0]]
		results.Unlock()
		if ours {
			keep(f[0], "pytorch", metric{v, f[2]})
		}
	}
	return nil
}

// faster is how many times faster a is than b: the ratio of rates, or
// the inverse ratio of times.
func faster(a, b metric) float64 {
	if strings.HasSuffix(a.unit, "/s") {
		return a.v / b.v
	}
	return b.v / a.v
}

// writeTable prints the workloads that PyTorch ran beside extensor's
// figures, as a Markdown table.
func writeTable(w io.Writer) {
	results.Lock()
	defer results.Unlock()
	fmt.Fprintf(w, "extensor webgpu: %s; extensor cpu: the reference backend; PyTorch: %s\n\n", results.devices["webgpu"], results.devices["pytorch"])
	fmt.Fprintln(w, "| workload | unit | extensor webgpu | extensor cpu | PyTorch | webgpu vs PyTorch |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	cell := func(m metric, ok bool) string {
		if !ok {
			return "–"
		}
		return strconv.FormatFloat(m.v, 'g', 4, 64)
	}
	for _, work := range results.order {
		r := results.m[work]
		t, ok := r["pytorch"]
		if !ok {
			continue
		}
		g, gok := r["webgpu"]
		c, cok := r["cpu"]
		ratio := "–"
		if gok {
			ratio = fmt.Sprintf("%.3g×", faster(g, t))
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", work, t.unit, cell(g, gok), cell(c, cok), cell(t, true), ratio)
	}
	fmt.Fprintln(w, "\nThe last column is how many times faster extensor's WebGPU backend is (below 1: slower).")
}

// sideBySide runs PyTorch's workloads and prints the table (and writes
// it to -table), after the benchmarks.
func sideBySide() error {
	if err := runTorchBench(); err != nil {
		return err
	}
	writeTable(os.Stdout)
	if *tableFile != "" {
		f, err := os.Create(*tableFile)
		if err != nil {
			return err
		}
		writeTable(f)
		return f.Close()
	}
	return nil
}
