package fashionmnist

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

// idx builds an uncompressed IDX stream with the given type byte,
// dimensions and data.
func idx(typ byte, dims []uint32, data []byte) []byte {
	b := []byte{0, 0, typ, byte(len(dims))}
	for _, d := range dims {
		b = binary.BigEndian.AppendUint32(b, d)
	}
	return append(b, data...)
}

// writeGzip writes b gzip-compressed to name in dir and returns its path.
func writeGzip(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Three 2×2 images and their labels.
var (
	testPixels = []byte{
		0, 255, 51, 102,
		1, 2, 3, 4,
		10, 20, 30, 40,
	}
	testLabels = []byte{7, 0, 9}
	goodImages = idx(0x08, []uint32{3, 2, 2}, testPixels)
	goodLabels = idx(0x08, []uint32{3}, testLabels)
)

// writeSet writes the four Fashion-MNIST files into a temporary directory,
// using the same images and labels for the training and test sets.
func writeSet(t *testing.T, images, labels []byte) string {
	t.Helper()
	dir := t.TempDir()
	for _, p := range []string{"train", "t10k"} {
		writeGzip(t, dir, p+"-images-idx3-ubyte.gz", images)
		writeGzip(t, dir, p+"-labels-idx1-ubyte.gz", labels)
	}
	return dir
}

func TestReadIDX(t *testing.T) {
	tests := []struct {
		name     string
		in       []byte
		wantDims []int
		wantData []byte
		wantErr  string
	}{
		{"images", goodImages, []int{3, 2, 2}, testPixels, ""},
		{"labels", goodLabels, []int{3}, testLabels, ""},
		{"empty", idx(0x08, []uint32{0, 28, 28}, nil), []int{0, 28, 28}, []byte{}, ""},
		{"no input", nil, nil, nil, "fashionmnist: idx: truncated header"},
		{"short header", []byte{0, 0}, nil, nil, "fashionmnist: idx: truncated header"},
		{"bad magic", append([]byte{0x12, 0x34}, goodLabels[2:]...), nil, nil, "fashionmnist: idx: bad magic 0x1234"},
		{"float type", idx(0x0D, []uint32{3}, testLabels), nil, nil, "unsupported data type 0x0d (float32)"},
		{"unknown type", idx(0x42, []uint32{3}, testLabels), nil, nil, "unsupported data type 0x42 (unknown)"},
		{"no dims", idx(0x08, nil, nil), nil, nil, "fashionmnist: idx: no dimensions"},
		{"short dims", idx(0x08, []uint32{3, 2, 2}, nil)[:10], nil, nil, "fashionmnist: idx: truncated dimensions"},
		{"truncated", idx(0x08, []uint32{60000, 28, 28}, make([]byte, 100)), nil, nil,
			"fashionmnist: idx: truncated: want 47040000 bytes of data, got 100"},
		{"trailing", idx(0x08, []uint32{3}, []byte{1, 2, 3, 4}), nil, nil, "trailing data after 3 bytes"},
		{"too large", idx(0x08, []uint32{1 << 16, 1 << 16}, nil), nil, nil, "too large"},
		{"overflow", idx(0x08, []uint32{1<<32 - 1, 1<<32 - 1, 1<<32 - 1}, nil), nil, nil, "too large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dims, data, err := ReadIDX(bytes.NewReader(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ReadIDX error = %v, want containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ReadIDX: %v", err)
			}
			if !slices.Equal(dims, tt.wantDims) {
				t.Errorf("dims = %v, want %v", dims, tt.wantDims)
			}
			if !bytes.Equal(data, tt.wantData) {
				t.Errorf("data = %v, want %v", data, tt.wantData)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	dir := writeSet(t, goodImages, goodLabels)
	train, test, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []*Set{train, test} {
		if s.N != 3 || s.Rows != 2 || s.Cols != 2 || s.Features() != 4 {
			t.Fatalf("N, Rows, Cols, Features = %d, %d, %d, %d; want 3, 2, 2, 4", s.N, s.Rows, s.Cols, s.Features())
		}
		if len(s.Images) != 12 {
			t.Fatalf("len(Images) = %d, want 12", len(s.Images))
		}
		for i, p := range testPixels {
			if want := float32(p) / 255; s.Images[i] != want {
				t.Errorf("Images[%d] = %v, want %v", i, s.Images[i], want)
			}
		}
		if s.Images[0] != 0 || s.Images[1] != 1 || s.Images[2] != 0.2 {
			t.Errorf("Images[:3] = %v, want [0 1 0.2]", s.Images[:3])
		}
		if want := []int32{7, 0, 9}; !slices.Equal(s.Labels, want) {
			t.Errorf("Labels = %v, want %v", s.Labels, want)
		}
	}
}

// TestLoadWith: progress counts the compressed bytes read, rising to the
// four files' total.
func TestLoadWith(t *testing.T) {
	dir := writeSet(t, goodImages, goodLabels)
	var calls int
	var last, total int64
	_, _, err := LoadWith(dir, func(read, all int64) {
		if read < last {
			t.Errorf("progress went back from %d to %d", last, read)
		}
		calls, last, total = calls+1, read, all
	})
	if err != nil {
		t.Fatal(err)
	}
	var size int64
	for _, f := range Files {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		size += st.Size()
	}
	if calls == 0 || last != size || total != size {
		t.Errorf("%d calls, last %d of %d; want the files' %d bytes", calls, last, total, size)
	}
}

// TestLoadFS reads the sets from a file system that is no directory and
// whose files tell no size, as a web page's fetched files; a missing file
// is named and errors.Is fs.ErrNotExist.
func TestLoadFS(t *testing.T) {
	dir := writeSet(t, goodImages, goodLabels)
	fsys := fstest.MapFS{}
	for _, f := range Files {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		fsys[f] = &fstest.MapFile{Data: b}
	}
	train, test, err := LoadFS(fsys, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []*Set{train, test} {
		if s.N != 3 || !slices.Equal(s.Labels, []int32{7, 0, 9}) || s.Images[1] != 1 {
			t.Errorf("N %d, labels %v, pixel 1 %v; want 3, [7 0 9], 1", s.N, s.Labels, s.Images[1])
		}
	}
	delete(fsys, Files[3])
	if _, _, err := LoadFS(fsys, nil); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), Files[3]) {
		t.Errorf("without %s: %v; want fs.ErrNotExist naming it", Files[3], err)
	}
}

func TestBatch(t *testing.T) {
	dir := writeSet(t, goodImages, goodLabels)
	s, err := LoadSet(filepath.Join(dir, "train-images-idx3-ubyte.gz"), filepath.Join(dir, "train-labels-idx1-ubyte.gz"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		start, size, want int
	}{
		{0, 2, 2},
		{1, 2, 2},
		{2, 2, 1},
		{0, 3, 3},
		{0, 10, 3},
		{3, 2, 0},
		{7, 2, 0},
		{1, 0, 0},
	}
	for _, tt := range tests {
		imgs := make([]float32, 4*tt.size)
		labels := make([]int32, tt.size)
		n := s.Batch(tt.start, tt.size, imgs, labels)
		if n != tt.want {
			t.Errorf("Batch(%d, %d) = %d, want %d", tt.start, tt.size, n, tt.want)
			continue
		}
		if n == 0 {
			continue
		}
		if !slices.Equal(imgs[:4*n], s.Images[4*tt.start:4*(tt.start+n)]) {
			t.Errorf("Batch(%d, %d) images = %v", tt.start, tt.size, imgs[:4*n])
		}
		if !slices.Equal(labels[:n], s.Labels[tt.start:tt.start+n]) {
			t.Errorf("Batch(%d, %d) labels = %v", tt.start, tt.size, labels[:n])
		}
	}

	panics := []struct {
		name          string
		start, size   int
		images        []float32
		labels        []int32
		wantSubstring string
	}{
		{"short images", 0, 2, make([]float32, 7), make([]int32, 2), "dstImages has length 7, need 8"},
		{"short labels", 0, 2, make([]float32, 8), make([]int32, 1), "dstLabels has length 1, need 2"},
		{"negative start", -1, 2, make([]float32, 8), make([]int32, 2), "negative"},
		{"negative size", 0, -1, nil, nil, "negative"},
	}
	for _, tt := range panics {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				r := recover()
				msg, _ := r.(string)
				if !strings.Contains(msg, tt.wantSubstring) {
					t.Errorf("panic = %v, want containing %q", r, tt.wantSubstring)
				}
			}()
			s.Batch(tt.start, tt.size, tt.images, tt.labels)
		})
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name    string
		images  []byte
		labels  []byte
		wantErr []string
	}{
		{"bad magic", append([]byte{0x12, 0x34}, goodImages[2:]...), goodLabels,
			[]string{"train-images-idx3-ubyte.gz", "bad magic 0x1234"}},
		{"wrong type", idx(0x0C, []uint32{3, 2, 2}, testPixels), goodLabels,
			[]string{"train-images-idx3-ubyte.gz", "unsupported data type 0x0c (int32)"}},
		{"truncated", goodImages[:len(goodImages)-1], goodLabels,
			[]string{"train-images-idx3-ubyte.gz", "truncated: want 12 bytes of data, got 11"}},
		{"truncated labels", goodImages, goodLabels[:len(goodLabels)-2], []string{
			"train-labels-idx1-ubyte.gz", "truncated: want 3 bytes of data, got 1"}},
		{"images not 3-D", idx(0x08, []uint32{3, 4}, testPixels), goodLabels,
			[]string{"train-images-idx3-ubyte.gz", "images must have 3 dimensions, got 2"}},
		{"labels not 1-D", goodImages, idx(0x08, []uint32{3, 1}, testLabels),
			[]string{"train-labels-idx1-ubyte.gz", "labels must have 1 dimension, got 2"}},
		{"count mismatch", goodImages, idx(0x08, []uint32{2}, testLabels[:2]),
			[]string{"count mismatch", "has 3 images", "has 2 labels"}},
		{"label out of range", goodImages, idx(0x08, []uint32{3}, []byte{1, 10, 2}),
			[]string{"train-labels-idx1-ubyte.gz", "label 10 at index 1 out of range"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeSet(t, tt.images, tt.labels)
			train, test, err := Load(dir)
			if err == nil {
				t.Fatal("Load succeeded, want error")
			}
			if train != nil || test != nil {
				t.Error("Load returned non-nil sets with an error")
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Load error = %q, want containing %q", err, want)
				}
			}
		})
	}
}

func TestLoadNotGzip(t *testing.T) {
	dir := t.TempDir()
	images := filepath.Join(dir, "images")
	if err := os.WriteFile(images, goodImages, 0o644); err != nil {
		t.Fatal(err)
	}
	labels := writeGzip(t, dir, "labels", goodLabels)
	_, err := LoadSet(images, labels)
	if err == nil || !strings.Contains(err.Error(), images) || !errors.Is(err, gzip.ErrHeader) {
		t.Errorf("LoadSet error = %v, want gzip.ErrHeader naming %s", err, images)
	}
}

func TestLoadMissing(t *testing.T) {
	for _, missing := range []string{
		"train-images-idx3-ubyte.gz",
		"train-labels-idx1-ubyte.gz",
		"t10k-images-idx3-ubyte.gz",
		"t10k-labels-idx1-ubyte.gz",
	} {
		t.Run(missing, func(t *testing.T) {
			dir := writeSet(t, goodImages, goodLabels)
			path := filepath.Join(dir, missing)
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			_, _, err := Load(dir)
			if !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("Load error = %v, want fs.ErrNotExist", err)
			}
			for _, want := range []string{path, "apt-get install dataset-fashion-mnist"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Load error = %q, want containing %q", err, want)
				}
			}
		})
	}
}

func TestLoadReal(t *testing.T) {
	if _, err := os.Stat(filepath.Join(DefaultDir, "train-images-idx3-ubyte.gz")); err != nil {
		t.Skipf("Fashion-MNIST not installed in %s (apt-get install dataset-fashion-mnist): %v", DefaultDir, err)
	}
	train, test, err := Load(DefaultDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		s    *Set
		n    int
	}{{"train", train, 60000}, {"test", test, 10000}} {
		s := c.s
		if s.N != c.n || s.Rows != 28 || s.Cols != 28 {
			t.Errorf("%s: N, Rows, Cols = %d, %d, %d; want %d, 28, 28", c.name, s.N, s.Rows, s.Cols, c.n)
		}
		if len(s.Images) != s.N*28*28 || len(s.Labels) != s.N {
			t.Errorf("%s: len(Images), len(Labels) = %d, %d", c.name, len(s.Images), len(s.Labels))
		}
		var seen [10]int
		for _, l := range s.Labels {
			seen[l]++
		}
		for class, count := range seen {
			if count == 0 {
				t.Errorf("%s: class %d never appears", c.name, class)
			}
		}
		lo, hi := slices.Min(s.Images), slices.Max(s.Images)
		if lo != 0 || hi != 1 {
			t.Errorf("%s: pixel range [%v, %v], want [0, 1]", c.name, lo, hi)
		}
	}
}
