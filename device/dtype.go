package device

import "fmt"

// DType is the element type of a buffer or tensor.
type DType uint8

// The element types. Float32 is supported by every backend; Float64 only by
// the CPU reference backend; Int32 holds labels and indices. Float16 is a
// storage format on every backend (IEEE binary16, two to a 32-bit word on
// the GPU): kernels compute in float32, and host slices of it are []uint16
// of its bits.
const (
	Float32 DType = iota + 1
	Float64
	Int32
	Float16
)

// Size returns the size of one element in bytes.
func (d DType) Size() int {
	switch d {
	case Float64:
		return 8
	case Float32, Int32:
		return 4
	case Float16:
		return 2
	}
	panic(fmt.Sprintf("device: invalid dtype %d", uint8(d)))
}

// IsFloat reports whether d is a floating-point type.
func (d DType) IsFloat() bool { return d == Float32 || d == Float64 || d == Float16 }

// String returns the dtype's name, e.g. "float32".
func (d DType) String() string {
	switch d {
	case Float32:
		return "float32"
	case Float64:
		return "float64"
	case Int32:
		return "int32"
	case Float16:
		return "float16"
	}
	return fmt.Sprintf("dtype(%d)", uint8(d))
}

// HostSlice describes a host slice given to Device.Write or Device.Read:
// its dtype and length, with ok false if it is not a []float32, []float64,
// []int32 or []uint16 (float16 bits).
func HostSlice(s any) (dt DType, n int, ok bool) {
	switch s := s.(type) {
	case []float32:
		return Float32, len(s), true
	case []float64:
		return Float64, len(s), true
	case []int32:
		return Int32, len(s), true
	case []uint16:
		return Float16, len(s), true
	}
	return 0, 0, false
}

// CheckHost returns an error unless s is a host slice of dtype dt and
// length n; op names the caller in the message.
func CheckHost(op string, s any, dt DType, n int) error {
	sdt, sn, ok := HostSlice(s)
	if !ok {
		return fmt.Errorf("%s: %T is not a []float32, []float64, []int32 or []uint16", op, s)
	}
	if sdt != dt || sn != n {
		return fmt.Errorf("%s: []%v of length %d does not match a %v buffer of %d elements", op, sdt, sn, dt, n)
	}
	return nil
}
