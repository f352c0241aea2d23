package main

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"errors"
	"image"
	"image/png"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/checkpoint"
	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/dataset/fashionmnist"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/examples/cnn/model"
	"github.com/extensor/extensor/examples/internal/dashboard"
	"github.com/extensor/extensor/examples/internal/window"
	"github.com/extensor/extensor/internal/gputest"
	"github.com/extensor/extensor/internal/mpitest"
	"github.com/extensor/extensor/internal/torchpy"
	"github.com/extensor/extensor/optim"
	"github.com/extensor/extensor/tensor"
)

// settle logs a training run's output, then skips the test when the
// Fashion-MNIST data is missing (outside CI) or fails it on the run's error.
func settle(t *testing.T, out string, err error) {
	t.Helper()
	t.Log(out)
	if errors.Is(err, fs.ErrNotExist) && !gputest.CI() {
		t.Skipf("no Fashion-MNIST data: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestShortTraining trains the CNN for 40 steps of 64 on WebGPU: the loss
// falls and the accuracy on 1000 test images is far above chance. The
// full run (make train-cnn) takes minutes on lavapipe.
func TestShortTraining(t *testing.T) {
	gputest.Open(t)
	var out bytes.Buffer
	ckpt := filepath.Join(t.TempDir(), "cnn.safetensors")
	plots := t.TempDir()
	cfg := Config{Device: "webgpu", Data: fashionmnist.DefaultDir, Epochs: 2, Batch: 64, Opt: "adam", Dropout: 0.25, Seed: 1, Limit: 1280, Test: 1000, Progress: 10, Save: ckpt, Plots: plots,
		Snapshot: filepath.Join(plots, "dashboard.png"), SnapshotEvery: 15}
	epochs, err := Train(cfg, &out)
	settle(t, out.String(), err)
	if len(epochs) != 2 || !(epochs[1].Loss < epochs[0].Loss) {
		t.Fatalf("epochs %+v; want 2 with a falling loss", epochs)
	}
	if acc := epochs[1].TestAcc; acc < 0.6 {
		t.Errorf("test accuracy after 40 steps: %.1f%%; want ≥ 60%%", 100*acc)
	}
	for _, want := range []string{"device: webgpu#", "epoch 2: loss", "train accuracy", "test accuracy", "plots: "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	// The metrics log has a line per step and per epoch; the plots are
	// PNG images.
	logged, err := os.ReadFile(filepath.Join(plots, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(string(logged), "\n"); lines != 40+2+1 {
		t.Errorf("metrics.jsonl has %d lines; want 40 steps, 2 epochs and the confusion matrix", lines)
	}
	if !strings.Contains(out.String(), "dashboard (snapshot "+filepath.Join(plots, "dashboard.png")+"): 4 frames") {
		t.Errorf("output lacks the snapshot's line with 4 frames (steps 15 and 30, and each epoch's end)")
	}
	for _, name := range []string{"loss.png", "accuracy.png", "confusion.png", "dashboard.png"} {
		f, err := os.Open(filepath.Join(plots, name))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil || img.Bounds().Dx() < 400 {
			t.Errorf("%s: %v, %v", name, err, img)
		}
	}

	// Resume from the checkpoint for a third epoch: it starts where the
	// second ended (its loss below the second's).
	out.Reset()
	cfg.Epochs, cfg.Resume = 3, ckpt
	more, err := Train(cfg, &out)
	if err != nil {
		t.Fatal(err)
	}
	if len(more) != 1 || !strings.Contains(out.String(), "resumed from "+ckpt+" after epoch 2 (40 steps)") || !(more[0].Loss < epochs[0].Loss) {
		t.Errorf("resumed run: %+v\n%s", more, out.String())
	}

	// A checkpoint of another model is refused, naming what differs.
	other := filepath.Join(t.TempDir(), "other.safetensors")
	x := tensor.Must(tensor.Zeros(cpu.New(), device.Float32, 2))
	if err := checkpoint.Save(other, map[string]*tensor.Tensor{"0.weight": x}, map[string]string{"epoch": "1", "steps": "5"}); err != nil {
		t.Fatal(err)
	}
	cfg.Resume = other
	if _, err := Train(cfg, &out); err == nil || !strings.Contains(err.Error(), `"0.weight": the checkpoint has F32 [2], the model float32 [32 1 3 3]`) {
		t.Errorf("resuming from another model's checkpoint: %v", err)
	}
}

// TestShortMixedPrecision trains 20 steps with -amp on WebGPU: the loss
// falls, the accuracy rises above chance by far, and the output reports
// the mode's peak memory and step time.
func TestShortMixedPrecision(t *testing.T) {
	gputest.Open(t)
	var out bytes.Buffer
	cfg := Config{Device: "webgpu", Data: fashionmnist.DefaultDir, Epochs: 1, Batch: 64, Opt: "adam", Dropout: 0.25, Seed: 1, Limit: 1280, Test: 1000, AMP: true}
	epochs, err := Train(cfg, &out)
	settle(t, out.String(), err)
	if acc := epochs[0].TestAcc; acc < 0.5 {
		t.Errorf("mixed-precision test accuracy after 20 steps: %.1f%%; want ≥ 50%%", 100*acc)
	}
	if want := "mixed precision (loss scale"; !strings.Contains(out.String(), want) || !strings.Contains(out.String(), "peak device memory") {
		t.Errorf("output lacks %q and the peak memory", want)
	}
}

// TestBadConfig refuses settings that cannot train with one error, before
// the device opens or any work is done (nothing is printed).
func TestBadConfig(t *testing.T) {
	dir := t.TempDir()
	resume := func(epoch, steps string) string {
		path := filepath.Join(dir, "e"+epoch+"s"+steps+".safetensors")
		x := tensor.Must(tensor.Zeros(cpu.New(), device.Float32, 1))
		if err := checkpoint.Save(path, map[string]*tensor.Tensor{"x": x}, map[string]string{"epoch": epoch, "steps": steps}); err != nil {
			t.Fatal(err)
		}
		return path
	}
	// A path under a file: no directory can be made for it. (A missing
	// directory is made.)
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	good := Config{Device: "cpu", Data: fashionmnist.DefaultDir, Epochs: 1, Batch: 64, Opt: "adam"}
	for _, tt := range []struct {
		name string
		edit func(*Config)
		says string
	}{
		{"negative learning rate", func(c *Config) { c.LR = -1 }, "-lr -1; want a finite learning rate"},
		{"NaN learning rate", func(c *Config) { c.LR = math.NaN() }, "-lr NaN"},
		{"infinite learning rate", func(c *Config) { c.LR = math.Inf(1) }, "-lr +Inf"},
		{"no epochs", func(c *Config) { c.Epochs = 0 }, "-epochs 0"},
		{"no batch", func(c *Config) { c.Batch = 0 }, "-batch 0"},
		{"negative limit", func(c *Config) { c.Limit = -3 }, "-limit -3"},
		{"unknown optimiser", func(c *Config) { c.Opt = "lbfgs" }, `-opt "lbfgs"; want adam or sgd`},
		{"negative steps in the checkpoint", func(c *Config) { c.Resume = resume("1", "-7") }, "epoch 1 and step count -7"},
		{"no steps in the checkpoint", func(c *Config) { c.Resume = resume("1", "x") }, "no epoch and step count"},
		{"missing checkpoint", func(c *Config) { c.Resume = filepath.Join(dir, "none.safetensors") }, "none.safetensors"},
		{"unwritable save", func(c *Config) { c.Save = filepath.Join(file, "m.safetensors") }, "-save " + filepath.Join(file, "m.safetensors")},
		{"unwritable snapshot", func(c *Config) { c.Snapshot = dir }, "-snapshot " + dir},
		{"dropout 1", func(c *Config) { c.Dropout = 1 }, "-dropout 1; want a probability"},
		{"data-parallel with a snapshot", func(c *Config) { c.DDP, c.Snapshot = true, filepath.Join(dir, "s.png") }, "-ddp with -snapshot"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := good
			tt.edit(&cfg)
			var out bytes.Buffer
			_, err := Train(cfg, &out)
			if err == nil || !strings.Contains(err.Error(), tt.says) {
				t.Errorf("%v; want an error saying %q", err, tt.says)
			}
			if out.Len() > 0 {
				t.Errorf("printed %q before refusing", out.String())
			}
		})
	}
}

// tinySet writes Fashion-MNIST files of n images of side×side (training
// and test alike) into a temporary directory and returns it.
func tinySet(t *testing.T, n, side int) string {
	t.Helper()
	dir := t.TempDir()
	file := func(name string, dims []uint32, data []byte) {
		b := []byte{0, 0, 0x08, byte(len(dims))}
		for _, d := range dims {
			b = binary.BigEndian.AppendUint32(b, d)
		}
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(append(b, data...))
		zw.Close()
		if err := os.WriteFile(filepath.Join(dir, name), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pixels, labels := make([]byte, n*side*side), make([]byte, n)
	for i := range pixels {
		pixels[i] = byte(i * 7)
	}
	for i := range labels {
		labels[i] = byte(i % 10)
	}
	for _, p := range []string{"train", "t10k"} {
		file(p+"-images-idx3-ubyte.gz", []uint32{uint32(n), uint32(side), uint32(side)}, pixels)
		file(p+"-labels-idx1-ubyte.gz", []uint32{uint32(n)}, labels)
	}
	return dir
}

// TestOddData trains on a test set smaller than the dashboard's image
// panel, and refuses images of another size than the network takes
// before it builds the network.
func TestOddData(t *testing.T) {
	plots := t.TempDir()
	cfg := Config{Device: "cpu", Data: tinySet(t, 5, 28), Epochs: 1, Batch: 4, Opt: "adam", Dropout: 0.25, Seed: 1, Snapshot: filepath.Join(plots, "dashboard.png")}
	var out bytes.Buffer
	if _, err := Train(cfg, &out); err != nil {
		t.Fatalf("5 test images with -snapshot: %v\n%s", err, out.String())
	}
	if _, err := os.Stat(cfg.Snapshot); err != nil {
		t.Error(err)
	}
	cfg.Data, cfg.Snapshot = tinySet(t, 5, 10), ""
	if _, err := Train(cfg, &out); err == nil || !strings.Contains(err.Error(), "images of 10×10 (training) and 10×10 (test); the network takes 28×28") {
		t.Errorf("10×10 images: %v; want an error naming the sizes", err)
	}
}

// TestMain runs a rank's part of a data-parallel job when mpirun started
// the binary (parallel_test.go), the tests otherwise.
func TestMain(m *testing.M) {
	if mode := mpitest.Mode(); mode != "" {
		os.Exit(rank(mode))
	}
	os.Exit(window.Main(m.Run))
}

// TestWindowClose trains with the live window (under xvfb-run on CI) and
// closes it mid-training: training stops cleanly with a checkpoint, which
// resumes.
func TestWindowClose(t *testing.T) {
	gputest.Open(t)
	win := window.OpenTest(t, "extensor cnn test", dashboard.Width, dashboard.Height)
	ckpt := filepath.Join(t.TempDir(), "cnn.safetensors")
	// The frames drawn while training, read back from the GPU, must show
	// their state (dashboard.Check: the loss curve where its values say,
	// the test images given, framed by whether the prediction is right),
	// and the filter panel must change between frames a few steps apart.
	var frames []*image.RGBA
	var problems []string
	twoFrames := make(chan struct{})
	onFrame := func(img *image.RGBA, s dashboard.State) {
		problems = append(problems, dashboard.Check(img, s)...)
		if frames = append(frames, img); len(frames) == 2 {
			close(twoFrames)
		}
	}
	// 50 steps an epoch: the window closes in the first (two frames take
	// at least 0.7 s; 20 steps had passed by then on lavapipe's faster runs).
	cfg := Config{Data: fashionmnist.DefaultDir, Epochs: 3, Batch: 64, Opt: "adam", Dropout: 0.25, Seed: 1, Limit: 3200, Test: 200, Save: ckpt, Window: win, OnFrame: onFrame}
	var out bytes.Buffer
	err := win.RunTest(twoFrames, func() error {
		_, err := Train(cfg, &out)
		return err
	})
	settle(t, out.String(), err)
	for _, p := range problems {
		t.Errorf("a frame drawn while training: %s", p)
	}
	if len(frames) < 2 || !dashboard.FiltersDiffer(frames[0], frames[1]) {
		t.Errorf("%d frames; want two whose filter panels differ", len(frames))
	}
	if !strings.Contains(out.String(), "window closed at epoch 1") || !strings.Contains(out.String(), "wrote "+ckpt) {
		t.Fatalf("closing the window did not stop training in epoch 1 with a checkpoint:\n%s", out.String())
	}
	cfg.Window, cfg.Device, cfg.Resume, cfg.Epochs = nil, "webgpu", ckpt, 1
	out.Reset()
	if _, err := Train(cfg, &out); err != nil || !strings.Contains(out.String(), "resumed from "+ckpt+" after epoch 0") {
		t.Errorf("resuming after the window closed: %v\n%s", err, out.String())
	}
}

// TestCheckpointOpensInPyTorch saves the CNN after an Adam step as the
// example does and opens the file in PyTorch (testdata/torch_load.py):
// the parameters load into the same network built there with
// load_state_dict(strict=True), which then gives extensor's logits for
// the same images. It needs a Python that imports torch (Debian's
// python3-torch), and is skipped without one.
func TestCheckpointOpensInPyTorch(t *testing.T) {
	python, err := torchpy.Find()
	if err != nil {
		t.Skip(err)
	}
	dev := cpu.New()
	net, err := model.New(dev, 7)
	if err != nil {
		t.Fatal(err)
	}
	opt := optim.Adam(net.Params(), 1e-3)
	x := tensor.Must(tensor.Uniform(dev, device.Float32, 0, 1, 1, 4, 1, 28, 28))
	y := tensor.Must(tensor.FromInt32(dev, []int32{0, 3, 9, 5}, 4))
	if _, err := model.Step(net, opt, nil, x, y); err != nil {
		t.Fatal(err)
	}
	net.Train(false)
	logits := net.Forward(autograd.Leaf(x, false)).Value()
	dir := t.TempDir()
	ckpt, io := filepath.Join(dir, "cnn.safetensors"), filepath.Join(dir, "io.safetensors")
	if err := save(ckpt, net, opt, 1); err != nil {
		t.Fatal(err)
	}
	if err := checkpoint.Save(io, map[string]*tensor.Tensor{"x": x, "logits": logits}, nil); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, filepath.Join("testdata", "torch_load.py"), ckpt, io)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s testdata/torch_load.py: %v", python, err)
	}
	var got struct {
		MaxDiff  float64           `json:"max_diff"`
		Metadata map[string]string `json:"metadata"`
		Params   []string          `json:"params"`
		Optim    []string          `json:"optim"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	t.Logf("PyTorch: %s", out)
	if got.MaxDiff > 1e-5 || len(got.Params) != 8 || len(got.Optim) != 16 || got.Metadata["epoch"] != "1" || got.Metadata["steps"] != "1" {
		t.Errorf("PyTorch read %+v; want 8 parameters, 16 optimiser tensors, epoch 1 after 1 step, and logits within 1e-5", got)
	}
}
