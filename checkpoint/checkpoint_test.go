package checkpoint_test

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
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
