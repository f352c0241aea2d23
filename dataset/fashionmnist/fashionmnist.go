package fashionmnist

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// DefaultDir is the directory where Debian's dataset-fashion-mnist package
// installs the Fashion-MNIST files.
const DefaultDir = "/usr/share/datasets/fashion-mnist"

// numClasses is the number of label classes; labels are in [0, numClasses).
const numClasses = 10

// Classes names the classes, by label.
var Classes = []string{"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"}

// installHint tells the user how to obtain missing data files.
const installHint = "install Debian's dataset-fashion-mnist (apt-get install dataset-fashion-mnist)"

// A Set is a collection of labelled images.
type Set struct {
	// Images holds N images of Rows×Cols pixels each, stored
	// contiguously in row-major order. Pixel values are in [0, 1].
	Images []float32

	// Labels holds the class, in [0, 9], of each of the N images.
	Labels []int32

	// N is the number of examples; Rows and Cols are the image size.
	N, Rows, Cols int
}

// Features returns the number of pixels per image, Rows*Cols.
func (s *Set) Features() int {
	return s.Rows * s.Cols
}

// Batch copies up to size examples, beginning with example start, into
// dstImages and dstLabels and returns the number n of examples copied.
// Fewer than size examples are copied if the set ends first; if start is at
// or beyond the end, n is 0.
//
// dstImages must have room for n*s.Features() values and dstLabels for n
// values; Batch panics otherwise, or if start or size is negative.
func (s *Set) Batch(start, size int, dstImages []float32, dstLabels []int32) (n int) {
	if start < 0 || size < 0 {
		panic(fmt.Sprintf("fashionmnist: Batch: negative start %d or size %d", start, size))
	}
	if start >= s.N {
		return 0
	}
	n = min(size, s.N-start)
	f := s.Features()
	if len(dstImages) < n*f {
		panic(fmt.Sprintf("fashionmnist: Batch: dstImages has length %d, need %d for %d examples of %d features", len(dstImages), n*f, n, f))
	}
	if len(dstLabels) < n {
		panic(fmt.Sprintf("fashionmnist: Batch: dstLabels has length %d, need %d", len(dstLabels), n))
	}
	copy(dstImages, s.Images[start*f:(start+n)*f])
	copy(dstLabels, s.Labels[start:start+n])
	return n
}

// Load reads the Fashion-MNIST training and test sets from the gzip-compressed
// IDX files in dir, which is typically [DefaultDir].
//
// If a file is missing, the returned error satisfies
// errors.Is(err, fs.ErrNotExist).
func Load(dir string) (train, test *Set, err error) { return LoadWith(dir, nil) }

// Files are the four files of Fashion-MNIST, as [LoadFS] reads them:
// training images and labels, test images and labels.
var Files = [4]string{"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"}

// LoadWith is Load that tells progress, as it reads and decompresses, how
// many bytes of the four compressed files it has read of their total (for
// a progress bar). progress may be nil.
func LoadWith(dir string, progress func(read, total int64)) (train, test *Set, err error) {
	return load(os.DirFS(dir), dir, progress)
}

// LoadFS is LoadWith reading [Files] from fsys: a directory (os.DirFS), an
// archive, or files fetched over HTTP (as a web page does). Where fsys's
// files do not tell their size (fs.Stat fails), progress's total counts
// only those that do.
func LoadFS(fsys fs.FS, progress func(read, total int64)) (train, test *Set, err error) {
	return load(fsys, "", progress)
}

// load reads the sets from fsys, naming the files in errors as dir/name.
func load(fsys fs.FS, dir string, progress func(read, total int64)) (train, test *Set, err error) {
	c := &counter{progress: progress}
	for _, f := range Files {
		if st, err := fs.Stat(fsys, f); err == nil {
			c.total += st.Size()
		}
	}
	sets := [2]*Set{}
	for i := range sets {
		images, labels := Files[2*i], Files[2*i+1]
		sets[i], err = readSet(func(name string) (io.ReadCloser, error) { return fsys.Open(name) }, dir, images, labels, c)
		if err != nil {
			return nil, nil, err
		}
	}
	return sets[0], sets[1], nil
}

// counter counts the compressed bytes read, telling progress.
type counter struct {
	progress    func(read, total int64)
	read, total int64
}

// reader returns r counting what is read through it.
func (c *counter) reader(r io.Reader) io.Reader {
	if c == nil || c.progress == nil {
		return r
	}
	return readFunc(func(p []byte) (int, error) {
		n, err := r.Read(p)
		c.read += int64(n)
		c.progress(c.read, c.total)
		return n, err
	})
}

type readFunc func([]byte) (int, error)

func (f readFunc) Read(p []byte) (int, error) { return f(p) }

// LoadSet reads one set of examples from a gzip-compressed IDX image file
// with three dimensions (count, rows, columns) and a gzip-compressed IDX
// label file with one dimension (count). The counts must match and every
// label must be in [0, 9].
//
// If a file is missing, the returned error satisfies
// errors.Is(err, fs.ErrNotExist).
func LoadSet(imagesPath, labelsPath string) (*Set, error) {
	open := func(name string) (io.ReadCloser, error) { return os.Open(name) }
	return readSet(open, "", imagesPath, labelsPath, nil)
}

// readSet reads a set from the files images and labels that open opens,
// naming them in errors as dir/name.
func readSet(open func(string) (io.ReadCloser, error), dir, images, labels string, c *counter) (*Set, error) {
	imagesPath, labelsPath := filepath.Join(dir, images), filepath.Join(dir, labels)
	idims, pixels, err := readGzipIDX(open, images, imagesPath, c)
	if err != nil {
		return nil, err
	}
	if len(idims) != 3 {
		return nil, fmt.Errorf("fashionmnist: %s: images must have 3 dimensions, got %d %v", imagesPath, len(idims), idims)
	}
	ldims, labelBytes, err := readGzipIDX(open, labels, labelsPath, c)
	if err != nil {
		return nil, err
	}
	if len(ldims) != 1 {
		return nil, fmt.Errorf("fashionmnist: %s: labels must have 1 dimension, got %d %v", labelsPath, len(ldims), ldims)
	}
	if idims[0] != ldims[0] {
		return nil, fmt.Errorf("fashionmnist: count mismatch: %s has %d images but %s has %d labels",
			imagesPath, idims[0], labelsPath, ldims[0])
	}

	s := &Set{
		Images: make([]float32, len(pixels)),
		Labels: make([]int32, len(labelBytes)),
		N:      idims[0],
		Rows:   idims[1],
		Cols:   idims[2],
	}
	for i, l := range labelBytes {
		if l >= numClasses {
			return nil, fmt.Errorf("fashionmnist: %s: label %d at index %d out of range [0, %d]", labelsPath, l, i, numClasses-1)
		}
		s.Labels[i] = int32(l)
	}
	scale := &pixelScale
	for i, p := range pixels {
		s.Images[i] = scale[p]
	}
	return s, nil
}

// pixelScale maps each pixel byte b to float32(b)/255.
var pixelScale = func() (t [256]float32) {
	for i := range t {
		t[i] = float32(i) / 255
	}
	return t
}()

// readGzipIDX reads the gzip-compressed IDX file name that open opens,
// naming it path in errors.
func readGzipIDX(open func(string) (io.ReadCloser, error), name, path string, c *counter) (dims []int, data []byte, err error) {
	f, err := open(name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("fashionmnist: %s is missing; %s: %w", path, installHint, err)
		}
		return nil, nil, fmt.Errorf("fashionmnist: %s: %w", path, err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(bufio.NewReaderSize(c.reader(f), 1<<16))
	if err != nil {
		return nil, nil, fmt.Errorf("fashionmnist: %s: %w", path, err)
	}
	defer zr.Close()
	dims, data, err = readIDX(zr)
	if err != nil {
		return nil, nil, fmt.Errorf("fashionmnist: %s: idx: %w", path, err)
	}
	return dims, data, nil
}
