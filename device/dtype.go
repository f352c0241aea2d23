package device

import "fmt"

// DType is the element type of a buffer or tensor.
type DType uint8

// The element types. Float32 is supported by every backend; Float64 only by
// the CPU reference backend; Int32 holds labels and indices.
const (
	Float32 DType = iota + 1
	Float64
	Int32
)

// Size returns the size of one element in bytes.
func (d DType) Size() int {
	switch d {
	case Float64:
		return 8
	case Float32, Int32:
		return 4
	}
	panic(fmt.Sprintf("device: invalid dtype %d", uint8(d)))
}

// IsFloat reports whether d is a floating-point type.
func (d DType) IsFloat() bool { return d == Float32 || d == Float64 }

// String returns the dtype's name, e.g. "float32".
func (d DType) String() string {
	switch d {
	case Float32:
		return "float32"
	case Float64:
		return "float64"
	case Int32:
		return "int32"
	}
	return fmt.Sprintf("dtype(%d)", uint8(d))
}
