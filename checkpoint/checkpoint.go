// Package checkpoint saves and loads tensors in the safetensors format,
// which PyTorch users open with the safetensors package: an 8-byte
// little-endian header length, a JSON header naming each tensor's dtype,
// shape and byte range, then the raw little-endian data.
//
// Saving is atomic: the file is written under a temporary name beside the
// target and renamed over it, so a crash never leaves a broken
// checkpoint. Loading checks the header completely (lengths, offsets
// inside the data and covering it exactly, dtypes, shapes) before it
// reads a tensor, and reports a bad file as an error, never a panic or an
// out-of-range read.
package checkpoint

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/tensor"
)

// ErrFormat is wrapped by the errors of a file that is not a valid
// safetensors file.
var ErrFormat = errors.New("checkpoint: not a valid safetensors file")

// maxHeader bounds the JSON header, as the reference implementation does
// (100 MB), so that a lying length cannot exhaust memory.
const maxHeader = 100 << 20

// entry is one tensor in the header.
type entry struct {
	DType   string   `json:"dtype"`
	Shape   []int    `json:"shape"`
	Offsets [2]int64 `json:"data_offsets"`
}

var dtypes = map[string]device.DType{"F32": device.Float32, "F64": device.Float64, "I32": device.Int32, "F16": device.Float16}

// sizes are the element sizes of every dtype of the safetensors format: a
// file holding any of them parses, and Tensor reads those in dtypes.
var sizes = map[string]int64{"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1,
	"I16": 2, "U16": 2, "F16": 2, "BF16": 2, "I32": 4, "U32": 4, "F32": 4, "F64": 8, "I64": 8, "U64": 8}

func dtypeName(dt device.DType) (string, bool) {
	for k, v := range dtypes {
		if v == dt {
			return k, true
		}
	}
	return "", false
}

// Save writes the tensors, by name, and the metadata to path, atomically.
// It waits for each tensor's value (a failed tensor's error is returned).
func Save(path string, tensors map[string]*tensor.Tensor, metadata map[string]string) (err error) {
	names := make([]string, 0, len(tensors))
	for name := range tensors {
		if name == "__metadata__" || name == "" || !utf8.ValidString(name) {
			return fmt.Errorf("checkpoint: invalid tensor name %q (names are non-empty UTF-8, not __metadata__)", name)
		}
		names = append(names, name)
	}
	sort.Strings(names)
	header := map[string]any{}
	if len(metadata) > 0 {
		header["__metadata__"] = metadata
	}
	var data [][]byte
	var off int64
	for _, name := range names {
		t := tensors[name]
		if t == nil {
			return fmt.Errorf("checkpoint: tensor %q is nil", name)
		}
		dn, ok := dtypeName(t.DType())
		if !ok {
			return fmt.Errorf("checkpoint: tensor %q has dtype %v, which safetensors files here do not hold", name, t.DType())
		}
		b, err := raw(t)
		if err != nil {
			return fmt.Errorf("checkpoint: tensor %q: %w", name, err)
		}
		header[name] = entry{DType: dn, Shape: t.Shape(), Offsets: [2]int64{off, off + int64(len(b))}}
		off += int64(len(b))
		data = append(data, b)
	}
	h, err := json.Marshal(header)
	if err != nil {
		return err
	}
	for len(h)%8 != 0 { // the reference pads the header with spaces to 8 bytes
		h = append(h, ' ')
	}
	target, err := resolve(path)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	cleanStale(target)
	tmp, err := os.CreateTemp(filepath.Dir(target), tempPrefix(target)+"*")
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(h)))
	for _, b := range append([][]byte{n[:], h}, data...) {
		if _, err = tmp.Write(b); err != nil {
			return fmt.Errorf("checkpoint: writing %s: %w", path, err)
		}
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if err = os.Rename(tmp.Name(), target); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

// Writable reports, as an error, whether Save could write path: the
// directory it would write in takes a new file (one is made and removed),
// and path is not a directory. Programs call it before long work whose
// result they save, so that an unwritable path costs nothing.
func Writable(path string) error {
	target, err := resolve(path)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if fi, err := os.Stat(target); err == nil && fi.IsDir() {
		return fmt.Errorf("checkpoint: %s is a directory", path)
	}
	f, err := os.CreateTemp(filepath.Dir(target), tempPrefix(target)+"*")
	if err != nil {
		return fmt.Errorf("checkpoint: cannot write %s: %w", path, err)
	}
	f.Close()
	return os.Remove(f.Name())
}

// resolve returns where a save to path writes: path, or where the
// symbolic links it names lead (a link is followed, not replaced).
func resolve(path string) (string, error) {
	for range 255 { // as many links as Linux follows
		fi, err := os.Lstat(path)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			return path, nil // a new file, or a regular one
		}
		to, err := os.Readlink(path)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(to) {
			to = filepath.Join(filepath.Dir(path), to)
		}
		path = to
	}
	return "", fmt.Errorf("%s: too many levels of symbolic links", path)
}

// tempPrefix is the start of the names of the temporary files that saves
// to target write: ".<name>.tmp-<pid>-", then random digits.
func tempPrefix(target string) string {
	return fmt.Sprintf(".%s.tmp-%d-", filepath.Base(target), os.Getpid())
}

// cleanStale removes the temporary files of saves to target that a
// killed process left behind: those named by tempPrefix for a process
// that no longer runs. Saves of live processes, this one's included, keep
// theirs.
func cleanStale(target string) {
	prefix := "." + filepath.Base(target) + ".tmp-"
	entries, err := os.ReadDir(filepath.Dir(target))
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok {
			continue
		}
		pid, _, ok := strings.Cut(rest, "-")
		n, err := strconv.Atoi(pid)
		if !ok || err != nil || n == os.Getpid() || processAlive(n) {
			continue
		}
		os.Remove(filepath.Join(filepath.Dir(target), e.Name()))
	}
}

// raw returns t's values as little-endian bytes.
func raw(t *tensor.Tensor) ([]byte, error) {
	switch t.DType() {
	case device.Float32:
		v, err := t.Float32s()
		b := make([]byte, 4*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
		}
		return b, err
	case device.Float64:
		v, err := t.Float64s()
		b := make([]byte, 8*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(x))
		}
		return b, err
	case device.Float16:
		v, err := t.Float16Bits()
		b := make([]byte, 2*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint16(b[2*i:], x)
		}
		return b, err
	default:
		v, err := t.Int32s()
		b := make([]byte, 4*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint32(b[4*i:], uint32(x))
		}
		return b, err
	}
}

// File is a checked safetensors file in memory.
type File struct {
	Metadata map[string]string
	// Progress, if set, is told the bytes copied so far of a load's
	// total after each tensor.
	Progress func(done, total int64)
	entries  map[string]entry
	data     []byte
}

// Names returns the tensors' names, sorted.
func (f *File) Names() []string {
	names := make([]string, 0, len(f.entries))
	for n := range f.entries {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Parse checks a whole safetensors file and returns it.
func Parse(b []byte) (*File, error) {
	bad := func(format string, args ...any) (*File, error) {
		return nil, fmt.Errorf("%w: %s", ErrFormat, fmt.Sprintf(format, args...))
	}
	if len(b) < 8 {
		return bad("%d bytes; a header length needs 8", len(b))
	}
	n := binary.LittleEndian.Uint64(b)
	if n > maxHeader || n > uint64(len(b)-8) {
		return bad("header length %d past the file's %d bytes (or the %d-byte limit)", n, len(b), maxHeader)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b[8:8+n], &raw); err != nil {
		return bad("header: %v", err)
	}
	if name, ok := repeatedKey(b[8 : 8+n]); ok {
		return bad("header names %q twice", name)
	}
	f := &File{entries: map[string]entry{}, data: b[8+n:]}
	type span struct {
		lo, hi int64
		name   string
	}
	var spans []span
	for name, msg := range raw {
		if name == "__metadata__" {
			if err := json.Unmarshal(msg, &f.Metadata); err != nil {
				return bad("metadata: %v", err)
			}
			continue
		}
		var e entry
		if err := json.Unmarshal(msg, &e); err != nil {
			return bad("tensor %q: %v", name, err)
		}
		size, ok := sizes[e.DType]
		if !ok {
			return bad("tensor %q has dtype %q, not one of safetensors'", name, e.DType)
		}
		count := int64(1)
		for _, d := range e.Shape {
			if d < 0 || d > math.MaxInt32 || count > math.MaxInt64/int64(max(d, 1))/8 {
				return bad("tensor %q has shape %v", name, e.Shape)
			}
			count *= int64(d)
		}
		if len(e.Shape) > device.MaxRank {
			return bad("tensor %q has rank %d; at most %d", name, len(e.Shape), device.MaxRank)
		}
		lo, hi := e.Offsets[0], e.Offsets[1]
		if lo < 0 || hi < lo || hi > int64(len(f.data)) || hi-lo != count*size {
			return bad("tensor %q (%s %v) has offsets [%d, %d) in %d bytes of data; want %d bytes inside it",
				name, e.DType, e.Shape, lo, hi, len(f.data), count*size)
		}
		f.entries[name] = e
		spans = append(spans, span{lo, hi, name})
	}
	// The tensors tile the data exactly, as the reference requires.
	slices.SortFunc(spans, func(a, b span) int {
		if a.lo != b.lo {
			return int(a.lo - b.lo)
		}
		return int(a.hi - b.hi)
	})
	var at int64
	for _, s := range spans {
		if s.lo != at {
			return bad("tensor %q starts at byte %d of the data; want %d (tensors must tile the data)", s.name, s.lo, at)
		}
		at = s.hi
	}
	if at != int64(len(f.data)) {
		return bad("the tensors cover %d of %d bytes of data", at, len(f.data))
	}
	return f, nil
}

// repeatedKey returns the first key that the JSON object hdr (valid JSON)
// holds twice, which encoding/json would take the last of.
func repeatedKey(hdr []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(hdr))
	if _, err := dec.Token(); err != nil { // {
		return "", false
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		key, _ := tok.(string)
		if seen[key] {
			return key, true
		}
		seen[key] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return "", false
		}
	}
	return "", false
}

// Read returns the file at path, checked. On Unix the file is mapped
// into memory, not read: its pages are read as tensors are taken from it
// and can be dropped again, so a file larger than the memory reads (the
// file must not change while the File is in use); elsewhere it is read
// whole, and a file larger than the host's memory can hold is an error
// wrapping device.ErrOutOfMemory before any of it is read.
func Read(path string) (*File, error) {
	if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() && st.Size() > math.MaxInt {
		return nil, fmt.Errorf("checkpoint: %s: %d bytes: %w", path, st.Size(), device.ErrOutOfMemory)
	}
	b, unmap, err := mapFile(path)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	f, err := Parse(b)
	if err != nil {
		unmap()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f.release(unmap)
	return f, nil
}

// Tensor returns the named tensor on dev: F32, F64, F16 and I32 as
// they are; BF16 as float32 (exactly) and I64 (PyTorch's counters,
// BatchNorm's num_batches_tracked) as int32, an error naming the tensor
// if a value is outside int32's range.
func (f *File) Tensor(dev device.Device, name string) (*tensor.Tensor, error) {
	e, ok := f.entries[name]
	if !ok {
		return nil, fmt.Errorf("checkpoint: no tensor %q", name)
	}
	defer runtime.KeepAlive(f) // f.data may be mapped: unmapped once f is unreachable
	b := f.data[e.Offsets[0]:e.Offsets[1]]
	if err := device.CheckHostAlloc(fmt.Sprintf("checkpoint: tensor %q (%s %v)", name, e.DType, e.Shape), len(b), 2); err != nil {
		return nil, err // a BF16 tensor's float32s take twice its bytes
	}
	switch e.DType {
	case "BF16": // the upper half of a float32's bits
		v := make([]float32, len(b)/2)
		for i := range v {
			v[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(b[2*i:])) << 16)
		}
		return tensor.FromFloat32(dev, v, e.Shape...)
	case "I64":
		v := make([]int32, len(b)/8)
		for i := range v {
			x := int64(binary.LittleEndian.Uint64(b[8*i:]))
			if x != int64(int32(x)) {
				return nil, fmt.Errorf("checkpoint: tensor %q (I64 %v): element %d is %d, outside int32, extensor's integer dtype", name, e.Shape, i, x)
			}
			v[i] = int32(x)
		}
		return tensor.FromInt32(dev, v, e.Shape...)
	}
	dt, ok := dtypes[e.DType]
	if !ok {
		return nil, fmt.Errorf("checkpoint: tensor %q has dtype %s; extensor reads F32, F64, F16, BF16, I32 and I64", name, e.DType)
	}
	switch dt {
	case device.Float32:
		v := make([]float32, len(b)/4)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		return tensor.FromFloat32(dev, v, e.Shape...)
	case device.Float64:
		v := make([]float64, len(b)/8)
		for i := range v {
			v[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
		}
		return tensor.FromFloat64(dev, v, e.Shape...)
	case device.Float16:
		v := make([]uint16, len(b)/2)
		for i := range v {
			v[i] = binary.LittleEndian.Uint16(b[2*i:])
		}
		return tensor.FromFloat16Bits(dev, v, e.Shape...)
	default:
		v := make([]int32, len(b)/4)
		for i := range v {
			v[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
		}
		return tensor.FromInt32(dev, v, e.Shape...)
	}
}

// loadable reports whether a tensor of the safetensors dtype name loads
// into a model's tensor of dtype dt, as PyTorch's load_state_dict copies
// it: any float dtype into any float one (rounded to the model's), I32
// and I64 into int32.
func loadable(name string, dt device.DType) bool {
	switch name {
	case "F16", "BF16", "F32", "F64":
		return dt.IsFloat()
	case "I32", "I64":
		return dt == device.Int32
	}
	return false
}

// Mismatch lists what did not fit when loading into a model.
type Mismatch []string

func (m Mismatch) Error() string {
	s := fmt.Sprintf("checkpoint: %d mismatches with the model:", len(m))
	for _, x := range m {
		s += "\n  " + x
	}
	return s
}

// LoadInto copies the file's tensors into into's, by name, after checking
// every name, shape and dtype: a tensor missing from either side, of
// another shape, or of a dtype that does not load into the model's is
// listed in the returned Mismatch, and nothing is copied then. As
// PyTorch's load_state_dict, a float tensor loads into a float one of
// any dtype, rounded to it (a BF16 or F16 checkpoint into a float32
// model), and I64 and I32 counters into int32 ones (an I64 value outside
// int32's range is an error naming the tensor).
func (f *File) LoadInto(into map[string]*tensor.Tensor) error {
	if m := append(f.Fits(into), f.Unused(into, nil)...); len(m) > 0 {
		sort.Strings(m)
		return m
	}
	return f.load(into)
}

// Unused lists, as LoadInto's mismatches, the file's tensors that into
// lacks, of those counts reports true for (every one if counts is nil),
// sorted.
func (f *File) Unused(into map[string]*tensor.Tensor, counts func(name string) bool) Mismatch {
	var m Mismatch
	for name, e := range f.entries {
		if _, ok := into[name]; !ok && (counts == nil || counts(name)) {
			m = append(m, fmt.Sprintf("%q: in the checkpoint (%s %v), not in the model", name, e.DType, e.Shape))
		}
	}
	sort.Strings(m)
	return m
}

// Fits returns the mismatches of into's tensors alone (nil if none),
// sorted: a name the file lacks, another shape, a dtype that does not
// load into the model's. The file's other tensors are not counted.
func (f *File) Fits(into map[string]*tensor.Tensor) Mismatch {
	var m Mismatch
	for name, t := range into {
		e, ok := f.entries[name]
		switch {
		case !ok:
			m = append(m, fmt.Sprintf("%q: in the model (%v %v), not in the checkpoint", name, t.DType(), t.Shape()))
		case !loadable(e.DType, t.DType()) || !slices.Equal(e.Shape, t.Shape()):
			m = append(m, fmt.Sprintf("%q: the checkpoint has %s %v, the model %v %v", name, e.DType, e.Shape, t.DType(), t.Shape()))
		}
	}
	sort.Strings(m)
	return m
}

// LoadSome is LoadInto for into's tensors alone: the file's others are
// left out (a shard's tensors of another part of a model).
func (f *File) LoadSome(into map[string]*tensor.Tensor) error {
	if m := f.Fits(into); len(m) > 0 {
		return m
	}
	return f.load(into)
}

// batchBytes bounds the converted tensors that wait for their copies
// during a load: a model loads within its own size and this much more.
const batchBytes = 256 << 20

// load copies the file's tensors into into's, which Fits accepted: every
// value is checked first (an I64 outside int32), then the tensors are
// read and copied in turn, so that no more than batchBytes of read
// tensors exist at once beside the model's.
func (f *File) load(into map[string]*tensor.Tensor) error {
	names := slices.Sorted(maps.Keys(into))
	var total, done int64
	for _, name := range names {
		if err := f.checkValues(name); err != nil {
			return err
		}
		total += int64(into[name].Len()) * int64(into[name].DType().Size())
	}
	var srcs []*tensor.Tensor
	held := 0
	flush := func() error {
		devs := map[device.Device]bool{}
		for _, s := range srcs {
			devs[s.Device()] = true
		}
		var err error
		for dev := range devs {
			if e := dev.Sync(); e != nil && err == nil {
				err = e
			}
		}
		for _, s := range srcs {
			s.Release()
		}
		srcs, held = srcs[:0], 0
		return err
	}
	defer flush()
	for _, name := range names {
		t := into[name]
		src, err := f.Tensor(t.Device(), name)
		if err != nil {
			return err
		}
		srcs = append(srcs, src)
		if src.DType() != t.DType() { // converted on the host
			v, err := src.Float64s()
			if err != nil {
				return err
			}
			if src, err = tensor.FromValues(t.Device(), t.DType(), v, t.Shape()...); err != nil {
				return err
			}
			srcs = append(srcs, src)
		}
		t.Device().Copy(t.Buffer(), src.Buffer())
		n := int64(t.Len()) * int64(t.DType().Size())
		held += int(n)
		done += n
		if held >= batchBytes {
			if err := flush(); err != nil {
				return err
			}
		}
		if f.Progress != nil {
			f.Progress(done, total)
		}
	}
	return flush()
}

// checkValues returns an error for a value of the named tensor that does
// not load: an I64 outside int32's range.
func (f *File) checkValues(name string) error {
	e := f.entries[name]
	if e.DType != "I64" {
		return nil
	}
	defer runtime.KeepAlive(f)
	b := f.data[e.Offsets[0]:e.Offsets[1]]
	for i := 0; i+8 <= len(b); i += 8 {
		if x := int64(binary.LittleEndian.Uint64(b[i:])); x != int64(int32(x)) {
			return fmt.Errorf("checkpoint: tensor %q (I64 %v): element %d is %d, outside int32, extensor's integer dtype", name, e.Shape, i/8, x)
		}
	}
	return nil
}
