package checkpoint_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/extensor/extensor/checkpoint"
	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/tensor"
)

func TestRoundTrip(t *testing.T) {
	dev := cpu.New()
	path := filepath.Join(t.TempDir(), "model.safetensors")
	w := tensor.Must(tensor.FromFloat32(dev, []float32{1, -2.5, 3, 4, 5, 6}, 2, 3))
	d := tensor.Must(tensor.FromFloat64(dev, []float64{0.125}))
	h := tensor.Must(tensor.FromValues(dev, device.Float16, []float64{1.5, -65504, 0.1}, 3))
	i := tensor.Must(tensor.FromInt32(dev, []int32{7, -8}, 2, 1))
	e := tensor.Must(tensor.Zeros(dev, device.Float32, 0, 4))
	in := map[string]*tensor.Tensor{"layer.weight": w, "scale": d, "step": i, "empty": e, "half": h}
	if err := checkpoint.Save(path, in, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	f, err := checkpoint.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if f.Metadata["format"] != "pt" || !slices.Equal(f.Names(), []string{"empty", "half", "layer.weight", "scale", "step"}) {
		t.Fatalf("metadata %v, names %v", f.Metadata, f.Names())
	}
	for name, want := range in {
		got, err := f.Tensor(dev, name)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := got.Float64s()
		b, _ := want.Float64s()
		if !slices.Equal(a, b) || !slices.Equal(got.Shape(), want.Shape()) || got.DType() != want.DType() {
			t.Errorf("%s: read %v %v %v; wrote %v %v %v", name, got.DType(), got.Shape(), a, want.DType(), want.Shape(), b)
		}
	}
	// Into a model: values copied; every mismatch listed, nothing copied.
	w2 := tensor.Must(tensor.Zeros(dev, device.Float32, 2, 3))
	if err := f.LoadInto(map[string]*tensor.Tensor{"layer.weight": w2, "scale": tensor.Must(tensor.Zeros(dev, device.Float64, 1)),
		"step": tensor.Must(tensor.Zeros(dev, device.Int32, 2, 1)), "empty": tensor.Must(tensor.Zeros(dev, device.Float32, 0, 4)),
		"half": tensor.Must(tensor.Zeros(dev, device.Float16, 3))}); err != nil {
		t.Fatal(err)
	}
	if v, _ := w2.Float32s(); v[1] != -2.5 {
		t.Errorf("LoadInto copied %v", v)
	}
	w3 := tensor.Must(tensor.Zeros(dev, device.Float32, 3, 2))
	err = f.LoadInto(map[string]*tensor.Tensor{"layer.weight": w3, "other": w3})
	var m checkpoint.Mismatch
	if !errors.As(err, &m) || len(m) != 6 || !strings.Contains(err.Error(), `"layer.weight": the checkpoint has F32 [2 3], the model float32 [3 2]`) {
		t.Errorf("LoadInto of another model: %v", err)
	}
	// No temporary file is left beside the checkpoint.
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Errorf("%d files beside the checkpoint", len(entries))
	}
}

// TestPythonFiles reads files written by Python's safetensors package
// (testdata/python: the safetensors project's samples): each holds
// range(-3, 3) in its dtype and the metadata {"test": "a"}. A dtype
// extensor has no tensors of (U8, I16, …) parses, and reading it is a
// clear error.
func TestPythonFiles(t *testing.T) {
	dev := cpu.New()
	want := []float64{-3, -2, -1, 0, 1, 2}
	dtypes := map[string]device.DType{"f": device.Float32, "d": device.Float64, "i": device.Int32, "e": device.Float16}
	for _, file := range []string{"f", "d", "i", "overall"} {
		f, err := checkpoint.Read(filepath.Join("testdata", "python", file+".safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		if f.Metadata["test"] != "a" {
			t.Errorf("%s: metadata %v", file, f.Metadata)
		}
		for name, dt := range dtypes {
			if file != "overall" && name != file {
				continue
			}
			x, err := f.Tensor(dev, name)
			if err != nil {
				t.Fatalf("%s: %s: %v", file, name, err)
			}
			if v, _ := x.Float64s(); x.DType() != dt || !slices.Equal(x.Shape(), []int{6}) || !slices.Equal(v, want) {
				t.Errorf("%s: %s is %v %v %v; want %v [6] %v", file, name, x.DType(), x.Shape(), v, dt, want)
			}
		}
		if file == "overall" {
			if names := strings.Join(f.Names(), ""); names != "BHIbdefhi" {
				t.Errorf("overall holds %q", names)
			}
			if _, err := f.Tensor(dev, "h"); err == nil || !strings.Contains(err.Error(), "I16") {
				t.Errorf("reading the I16 tensor: %v; want an error naming the dtype", err)
			}
		}
	}
}

// header builds a file of the given header and data.
func header(h string, data []byte) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	return append(append(b, h...), data...)
}

func TestBadFiles(t *testing.T) {
	for _, tt := range []struct {
		name string
		file []byte
		says string
	}{
		{"short", []byte{1, 2}, "a header length needs 8"},
		{"length past the end", binary.LittleEndian.AppendUint64(nil, 1<<40), "header length"},
		{"not JSON", header("{", nil), "header"},
		{"unknown dtype", header(`{"a":{"dtype":"F24","shape":[1],"data_offsets":[0,3]}}`, make([]byte, 3)), `dtype "F24"`},
		{"BF16 of the wrong size", header(`{"a":{"dtype":"BF16","shape":[2],"data_offsets":[0,2]}}`, make([]byte, 2)), "want 4 bytes"},
		{"offsets past the data", header(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, make([]byte, 4)), "offsets [0, 8)"},
		{"size not the shape's", header(`{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, make([]byte, 8)), "want 12 bytes"},
		{"negative shape", header(`{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}}`, nil), "shape [-1]"},
		{"overlap", header(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, make([]byte, 8)), "tile"},
		{"data left over", header(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, make([]byte, 8)), "cover 4 of 8"},
		{"a name twice", header(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, make([]byte, 8)), `names "a" twice`},
		{"huge shape", header(`{"a":{"dtype":"F64","shape":[2147483647,2147483647,2147483647],"data_offsets":[0,8]}}`, make([]byte, 8)), "shape"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := checkpoint.Parse(tt.file)
			if !errors.Is(err, checkpoint.ErrFormat) || !strings.Contains(err.Error(), tt.says) {
				t.Errorf("Parse: %v; want ErrFormat saying %q", err, tt.says)
			}
		})
	}
}

// FuzzParse: no input panics or reads out of range; what parses yields
// every tensor it names.
func FuzzParse(f *testing.F) {
	f.Add(header(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"__metadata__":{"k":"v"}}`, make([]byte, 8)))
	f.Add(header(`{"b":{"dtype":"I32","shape":[],"data_offsets":[0,4]}}`, make([]byte, 4)))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0})
	dev := cpu.New()
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := checkpoint.Parse(b)
		if err != nil {
			return
		}
		for _, name := range file.Names() {
			if x, err := file.Tensor(dev, name); err == nil {
				x.Release()
			}
		}
	})
}

// TestSaveRefusesBadNames refuses names that are not UTF-8, which Read
// would refuse, and writes nothing.
func TestSaveRefusesBadNames(t *testing.T) {
	dir := t.TempDir()
	x := tensor.Must(tensor.FromFloat32(cpu.New(), []float32{1}, 1))
	defer x.Release()
	if err := checkpoint.Save(filepath.Join(dir, "m.safetensors"), map[string]*tensor.Tensor{"a\xff": x}, nil); err == nil || !strings.Contains(err.Error(), "UTF-8") {
		t.Fatalf("Save of a name that is not UTF-8: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("Save of a bad name left %v", entries)
	}
}

// TestReadHugeFile opens a (sparse) file of 1 TiB holding one tensor:
// mapped, not read, it opens at no cost; taking the tensor, larger than
// the host's memory, is an error wrapping ErrOutOfMemory, not the end of
// the process.
func TestReadHugeFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "huge.safetensors")
	header := []byte(`{"w": {"dtype": "F32", "shape": [524288, 524288], "data_offsets": [0, 1099511627776]}}`)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(header)))
	f.Write(append(n[:], header...))
	if err := f.Truncate(int64(8+len(header)) + 1<<40); err != nil {
		f.Close()
		t.Skipf("no sparse file of 1 TiB here: %v", err)
	}
	f.Close()
	c, err := checkpoint.Read(path)
	if runtime.GOOS == "js" || runtime.GOOS == "wasip1" || runtime.GOOS == "windows" {
		if !errors.Is(err, device.ErrOutOfMemory) {
			t.Fatalf("Read of a 1 TiB file, read whole here: %v; want ErrOutOfMemory", err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Tensor(cpu.New(), "w"); !errors.Is(err, device.ErrOutOfMemory) {
		t.Fatalf("the 1 TiB tensor: %v; want ErrOutOfMemory", err)
	}
}

// TestSaveRefusesNil returns an error, not a nil dereference, for a nil
// tensor, and writes nothing.
func TestSaveRefusesNil(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.safetensors")
	err := checkpoint.Save(path, map[string]*tensor.Tensor{"w": nil}, nil)
	if err == nil || !strings.Contains(err.Error(), `tensor "w" is nil`) {
		t.Fatalf("Save of a nil tensor: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("Save of a nil tensor left %v", entries)
	}
}

// TestSaveThroughSymlink writes where a symbolic link points, leaving the
// link a link, as cp and PyTorch's torch.save do.
func TestSaveThroughSymlink(t *testing.T) {
	dev := cpu.New()
	dir := t.TempDir()
	target := filepath.Join(dir, "runs", "model.safetensors")
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "latest.safetensors")
	if err := os.Symlink(filepath.Join("runs", "model.safetensors"), link); err != nil {
		t.Fatal(err)
	}
	for _, v := range []float32{1, 2} { // a new target, then one replaced
		x := tensor.Must(tensor.FromFloat32(dev, []float32{v}))
		if err := checkpoint.Save(link, map[string]*tensor.Tensor{"x": x}, nil); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("after Save, %s is no longer a link (%v)", link, err)
		}
		f, err := checkpoint.Read(target)
		if err != nil {
			t.Fatal(err)
		}
		got, err := f.Tensor(dev, "x")
		if err != nil {
			t.Fatal(err)
		}
		if v2, _ := got.Float32s(); v2[0] != v {
			t.Errorf("the link's target holds %v; want %v", v2, v)
		}
	}
}

// TestSaveCleansStaleTemporaries removes the temporary files of saves
// to the same path by processes that no longer run, and keeps those of
// live ones and other files; where processes cannot be asked about (not
// unix: the browser, say), it keeps them all.
func TestSaveCleansStaleTemporaries(t *testing.T) {
	dev := cpu.New()
	dir := t.TempDir()
	path := filepath.Join(dir, "m.safetensors")
	// A process id no process has: past Linux's largest (2²²).
	stale := filepath.Join(dir, ".m.safetensors.tmp-99999999-12345")
	live := filepath.Join(dir, fmt.Sprintf(".m.safetensors.tmp-%d-777", os.Getppid()))
	other := filepath.Join(dir, ".other.safetensors.tmp-99999999-1")
	for _, p := range []string{stale, live, other} {
		if err := os.WriteFile(p, []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	x := tensor.Must(tensor.FromFloat32(dev, []float32{1}))
	if err := checkpoint.Save(path, map[string]*tensor.Tensor{"x": x}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); asksProcesses && !os.IsNotExist(err) {
		t.Errorf("the stale temporary file is still there (%v)", err)
	} else if !asksProcesses && err != nil {
		t.Errorf("where processes cannot be asked about, the stale temporary file was removed (%v); want it left alone", err)
	}
	for _, p := range []string{live, other, path} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: %v", filepath.Base(p), err)
		}
	}
}

// TestWritable tells a writable place from unwritable ones before any
// work, and leaves nothing behind.
func TestWritable(t *testing.T) {
	dir := t.TempDir()
	if err := checkpoint.Writable(filepath.Join(dir, "m.safetensors")); err != nil {
		t.Errorf("Writable in a temporary directory: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("Writable left %v", entries)
	}
	for _, bad := range []string{filepath.Join(dir, "no", "such", "dir", "m.safetensors"), dir} {
		if err := checkpoint.Writable(bad); err == nil {
			t.Errorf("Writable(%s) = nil; want an error", bad)
		}
	}
}
