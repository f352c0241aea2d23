package main

// The data-parallel tests. This file's name sorts after main_test.go's,
// so that go test runs them after the tests there, whose kernels lavapipe
// then has compiled (Mesa's shader cache, shared by the ranks).

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/extensor/extensor/examples/gpt/model"
	"github.com/extensor/extensor/internal/mpitest"
	"github.com/extensor/extensor/tensor"
)

// ranked is what a rank of TestDataParallel's job reports.
type ranked struct {
	Losses []float64
	Evals  []Eval
	Params string // the digest of the trained parameters' bits
}

// ddpConfig is the run of TestDataParallel, data-parallel or alone.
func ddpConfig(dev string) Config {
	cfg := tinyConfig(dev)
	cfg.Steps, cfg.EvalEvery, cfg.EvalBatches = 12, 6, 2
	return cfg
}

// rank runs this process's part of a job mpirun started (TestMain):
// "train-<device>", ddpConfig's run; "main", the command with the
// arguments mpirun passed.
func rank(mode string) int {
	if mode == "main" {
		main()
		return 0
	}
	if mode == "panic" { // rank 1 panics at step 3 (a programmer's error)
		cfg := ddpConfig("cpu")
		cfg.DDP, cfg.Steps = true, 1000
		cfg.onStep = func(step int) {
			if step == 3 && mpitest.Rank() == 1 {
				tensor.Panicf("a test's op", tensor.ErrArgument, "a failure of the test's")
			}
		}
		_, err := Train(cfg, io.Discard)
		fmt.Fprintln(os.Stderr, "Train returned:", err)
		return 1
	}
	dev, ok := strings.CutPrefix(mode, "train-")
	if !ok {
		fmt.Fprintf(os.Stderr, "unknown mode %q\n", mode)
		return 1
	}
	cfg := ddpConfig(dev)
	cfg.DDP = true
	var r ranked
	cfg.onDone = func(net *model.GPT) { r.Params = mpitest.Digest(net.Params()) }
	res, err := Train(cfg, io.Discard) // an error has ended the job
	if err == nil {
		r.Losses, r.Evals = res.Losses, res.Evals
	}
	return mpitest.Finish(r, err)
}

// TestDataParallel trains the tiny model over mpirun -np 2, on each
// backend: the losses of the global batch equal those of one process
// training on the whole batch, within float32's summation order, and
// the two ranks end with the same parameters, bit for bit.
func TestDataParallel(t *testing.T) {
	for _, dev := range []string{"cpu", "webgpu"} {
		t.Run(dev, func(t *testing.T) {
			r := mpitest.Results[ranked](t, 2, "train-"+dev)
			if r[0].Params != r[1].Params {
				t.Errorf("the ranks' parameters differ: digests %s and %s", r[0].Params, r[1].Params)
			}
			if !slices.Equal(r[0].Losses, r[1].Losses) {
				t.Errorf("the ranks report different losses: %v and %v", r[0].Losses, r[1].Losses)
			}
			cfg := tiny(t, dev)
			cfg.Steps, cfg.EvalEvery, cfg.EvalBatches = 12, 6, 2
			alone, err := Train(cfg, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if len(r[0].Losses) != cfg.Steps || len(r[0].Evals) != len(alone.Evals) {
				t.Fatalf("%d losses and %d evaluations; want %d and %d", len(r[0].Losses), len(r[0].Evals), cfg.Steps, len(alone.Evals))
			}
			worst := 0.0
			for i, l := range alone.Losses {
				worst = max(worst, math.Abs(l-r[0].Losses[i]))
			}
			for i, e := range alone.Evals {
				worst = max(worst, math.Abs(e.Loss-r[0].Evals[i].Loss))
			}
			t.Logf("%s: 2 ranks against one process, %d steps: losses differ by at most %.2g", dev, cfg.Steps, worst)
			if worst > 1e-4 {
				t.Errorf("2 ranks' losses %v, validation %v; one process's %v, %v: want within 1e-4", r[0].Losses, r[0].Evals, alone.Losses, alone.Evals)
			}
		})
	}
}

// TestRankPanics: a rank whose training panics (a programmer's error)
// ends the job at once, naming itself, while the other waits in a
// collective.
func TestRankPanics(t *testing.T) {
	start := time.Now()
	out, err := mpitest.Command(t, 2, "panic", t.TempDir(), nil).CombinedOutput()
	took := time.Since(start)
	if err == nil {
		t.Fatalf("the job ended without an error:\n%s", out)
	}
	t.Logf("the job ended in %v: %v", took.Round(time.Millisecond), err)
	if want := "dist: rank 1 of 2: panic: a test's op: a failure of the test's"; !strings.Contains(string(out), want) || took > 30*time.Second {
		t.Errorf("the job took %v; want < 30 s, and an output with %q:\n%s", took, want, out)
	}
}

// TestRankKilled kills one rank of a data-parallel run mid-training: the
// job ends with an error within 30 s, and the last checkpoint resumes.
func TestRankKilled(t *testing.T) {
	dir := t.TempDir()
	ckpt := filepath.Join(dir, "gpt.safetensors")
	cmd := mpitest.Command(t, 2, "main", dir, nil, "-ddp", "-device", "cpu", "-context", "32", "-layers", "2", "-heads", "2", "-width", "32",
		"-batch", "8", "-steps", "100000", "-eval-every", "100000", "-progress", "1", "-save", ckpt, "-save-every", "4", "-plots", "", "-tokens", "0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	var seen strings.Builder
	for lines.Scan() {
		seen.WriteString(lines.Text() + "\n")
		if strings.HasPrefix(lines.Text(), "step 10:") {
			break
		}
	}
	mpitest.Kill(t, dir, 1)
	killed := time.Now()
	go io.Copy(&seen, stdout)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("the job runs on 30 s after rank 1 was killed:\n%s%s", seen.String(), stderr.String())
	}
	t.Logf("the job ended %v after rank 1 was killed: %v", time.Since(killed).Round(time.Millisecond), err)
	if err == nil {
		t.Fatalf("the job ended without an error after rank 1 was killed:\n%s", seen.String())
	}
	named := false
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(line, "rank 1") {
			t.Logf("mpirun: %s", strings.TrimSpace(line))
			named = true
		}
	}
	if !named {
		t.Errorf("the job's error does not name rank 1:\n%s", stderr.String())
	}
	// A run alone resumes from the last checkpoint (every 4 steps, from
	// step 8 on since step 10 was printed).
	cfg := tiny(t, "cpu")
	_, steps, err := readCheckpoint(ckpt, cfg.Model)
	if err != nil {
		t.Fatalf("the last checkpoint: %v", err)
	}
	if steps < 8 || steps%4 != 0 {
		t.Fatalf("the checkpoint's step %d; want a multiple of 4 from 8", steps)
	}
	cfg.Resume, cfg.Steps = ckpt, steps+3
	var out strings.Builder
	res, err := Train(cfg, &out)
	if err != nil {
		t.Fatal(err)
	}
	if res.First != steps+1 || len(res.Losses) != 3 || !regexp.MustCompile(fmt.Sprintf(`resumed from .* after step %d\n`, steps)).MatchString(out.String()) {
		t.Errorf("resumed at step %d with %d losses; want step %d and 3:\n%s", res.First, len(res.Losses), steps+1, out.String())
	}
}
