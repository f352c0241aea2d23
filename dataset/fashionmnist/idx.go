package fashionmnist

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
)

// maxIDXElems bounds the number of elements an IDX stream may declare.
// Larger products are rejected before any allocation takes place.
const maxIDXElems = 1 << 31

// initialIDXAlloc bounds the size of the first data allocation so that a
// short stream claiming huge dimensions cannot force a huge allocation; the
// buffer grows as data actually arrives. It is large enough to hold the
// Fashion-MNIST training images in one go.
const initialIDXAlloc = 64 << 20

// idxTypeNames names the IDX element types.
var idxTypeNames = map[byte]string{
	0x08: "unsigned byte",
	0x09: "signed byte",
	0x0B: "int16",
	0x0C: "int32",
	0x0D: "float32",
	0x0E: "float64",
}

// ReadIDX parses one uncompressed IDX stream from r and returns its
// dimensions and its raw elements in row-major order.
//
// Only the unsigned byte element type (0x08) is supported. The stream must
// contain exactly as many elements as the product of its dimensions; short
// and over-long streams are reported as errors, as are streams declaring more
// than 1<<31 elements.
func ReadIDX(r io.Reader) (dims []int, data []byte, err error) {
	dims, data, err = readIDX(r)
	if err != nil {
		return nil, nil, fmt.Errorf("fashionmnist: idx: %w", err)
	}
	return dims, data, nil
}

// readIDX implements ReadIDX. Its errors carry no prefix, so that callers
// can add their own context.
func readIDX(r io.Reader) ([]int, []byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, nil, readErr("header", err)
	}
	if hdr[0] != 0 || hdr[1] != 0 {
		return nil, nil, fmt.Errorf("bad magic 0x%04x (want 0x0000)", binary.BigEndian.Uint16(hdr[:2]))
	}
	if typ := hdr[2]; typ != 0x08 {
		name, ok := idxTypeNames[typ]
		if !ok {
			name = "unknown"
		}
		return nil, nil, fmt.Errorf("unsupported data type 0x%02x (%s); only 0x08 (unsigned byte) is supported", typ, name)
	}
	ndims := int(hdr[3])
	if ndims == 0 {
		return nil, nil, errors.New("no dimensions")
	}

	raw := make([]byte, 4*ndims)
	if _, err := io.ReadFull(r, raw); err != nil {
		return nil, nil, readErr("dimensions", err)
	}
	dims := make([]int, ndims)
	total := uint64(1)
	for i := range dims {
		d := binary.BigEndian.Uint32(raw[4*i:])
		dims[i] = int(d)
		// total <= maxIDXElems and d < 1<<32, so this cannot overflow.
		total *= uint64(d)
		if total > maxIDXElems {
			return nil, nil, fmt.Errorf("dimensions %v too large: more than %d elements", dimsOf(raw), uint64(maxIDXElems))
		}
	}

	n := int(total)
	data := make([]byte, 0, min(n, initialIDXAlloc))
	for len(data) < n {
		if len(data) == cap(data) {
			data = slices.Grow(data, min(n-len(data), len(data)))
		}
		m, err := io.ReadFull(r, data[len(data):min(cap(data), n)])
		data = data[:len(data)+m]
		if err != nil {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return nil, nil, fmt.Errorf("truncated: want %d bytes of data, got %d", n, len(data))
			}
			return nil, nil, fmt.Errorf("reading data: %w", err)
		}
	}

	// Demand a clean end of stream. For gzip input this also makes the
	// decompressor verify the trailing checksum.
	var extra [1]byte
	switch m, err := io.ReadFull(r, extra[:]); {
	case m > 0:
		return nil, nil, fmt.Errorf("trailing data after %d bytes of data", n)
	case err != io.EOF:
		return nil, nil, fmt.Errorf("reading data: %w", err)
	}
	return dims, data, nil
}

// readErr describes a failure to read the named part of an IDX stream.
func readErr(what string, err error) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return fmt.Errorf("truncated %s", what)
	}
	return fmt.Errorf("reading %s: %w", what, err)
}

// dimsOf decodes big-endian uint32 dimensions for error messages.
func dimsOf(raw []byte) []uint32 {
	ds := make([]uint32, len(raw)/4)
	for i := range ds {
		ds[i] = binary.BigEndian.Uint32(raw[4*i:])
	}
	return ds
}
