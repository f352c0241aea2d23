package tensor

// The constructors: tensors from host data, filled, ranges and random
// draws, and the checks of their arguments.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"unsafe"

	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/internal/half"
)

// Failed returns a tensor of the given shape that carries err; ops that
// cannot run because an input failed return one.
func Failed(dev device.Device, dt device.DType, err error, shape ...int) *Tensor {
	return newTensor(&storage{dev: dev, err: err}, dims(shape), dt)
}

// dims returns a copy of shape that is never nil, so that passing it on to
// a From function keeps a 0-D shape 0-D.
func dims(shape []int) []int { return append([]int{}, shape...) }

func newFilled(dev device.Device, dt device.DType, shape []int, fill func(b device.Buffer) error) (*Tensor, error) {
	t := Empty(dev, dt, shape...)
	if t.st.err != nil {
		return nil, t.st.err
	}
	if err := fill(t.st.buffer()); err != nil {
		t.Release()
		return nil, err
	}
	return t, nil
}

func checkLen(op string, n int, shape []int) {
	checkShape(op, shape)
	checkLenOnly(op, n, shape)
}

// checkFrom is checkLen for the From functions, which also need a device.
func checkFrom(op string, dev device.Device, n int, shape []int) {
	checkMake(op, dev, shape)
	checkLenOnly(op, n, shape)
}

func checkLenOnly(op string, n int, shape []int) {
	want, err := device.CheckNumel(shape)
	if err != nil {
		Panicf(op, ErrShape, "%d values do not fill shape %v, which has more elements than an int counts", n, shape)
	}
	if n != want {
		Panicf(op, ErrShape, "%d values do not fill shape %v (%d elements)", n, shape, want)
	}
}

// FromFloat32 copies data into a new float32 tensor of the given shape on
// dev. With no shape (a nil one), the tensor is 1-D; for a 0-D tensor pass
// an empty shape, []int{}..., or use Scalar.
func FromFloat32(dev device.Device, data []float32, shape ...int) (*Tensor, error) {
	return fromSlice("tensor.FromFloat32", dev, device.Float32, data, shape)
}

// FromFloat64 copies data into a new float64 tensor of the given shape on
// dev. With no shape, the tensor is 1-D.
func FromFloat64(dev device.Device, data []float64, shape ...int) (*Tensor, error) {
	return fromSlice("tensor.FromFloat64", dev, device.Float64, data, shape)
}

// FromInt32 copies data into a new int32 tensor of the given shape on dev.
// With no shape, the tensor is 1-D.
func FromInt32(dev device.Device, data []int32, shape ...int) (*Tensor, error) {
	return fromSlice("tensor.FromInt32", dev, device.Int32, data, shape)
}

// fromSlice copies data into a new tensor of dtype dt (data's element
// type) and the given shape on dev, 1-D where shape is nil.
func fromSlice[E float32 | float64 | int32](op string, dev device.Device, dt device.DType, data []E, shape []int) (*Tensor, error) {
	if shape == nil {
		shape = []int{len(data)}
	}
	checkFrom(op, dev, len(data), shape)
	return newFilled(dev, dt, shape, func(b device.Buffer) error { return dev.Write(b, data) })
}

// FromFloat16Bits copies float16 values, given by their IEEE binary16
// bits, into a new float16 tensor.
func FromFloat16Bits(dev device.Device, bits []uint16, shape ...int) (*Tensor, error) {
	checkFrom("tensor.FromFloat16Bits", dev, len(bits), shape)
	return newFilled(dev, device.Float16, shape, func(b device.Buffer) error { return dev.Write(b, bits) })
}

// FromValues copies float64 values into a new tensor of dtype dt, rounding
// them to dt (to float16 through float32, rounding to nearest even).
func FromValues(dev device.Device, dt device.DType, data []float64, shape ...int) (*Tensor, error) {
	switch dt {
	case device.Float64:
		return FromFloat64(dev, data, shape...)
	case device.Float32:
		f := make([]float32, len(data))
		for i, v := range data {
			f[i] = float32(v)
		}
		return FromFloat32(dev, f, shape...)
	case device.Int32:
		n := make([]int32, len(data))
		for i, v := range data {
			n[i] = int32(v)
		}
		return FromInt32(dev, n, shape...)
	case device.Float16:
		h := make([]uint16, len(data))
		for i, v := range data {
			h[i] = half.FromFloat32(float32(v))
		}
		return FromFloat16Bits(dev, h, shape...)
	}
	Panicf("tensor.FromValues", ErrDType, "unknown dtype %v", dt)
	return nil, nil
}

// Full returns a tensor of the given shape with every element set to v.
func Full(dev device.Device, dt device.DType, v float64, shape ...int) (*Tensor, error) {
	checkMake("tensor.Full", dev, shape)
	return newFilled(dev, dt, shape, func(b device.Buffer) error {
		dev.Fill(b, v)
		return nil
	})
}

// Zeros returns a tensor of zeros.
func Zeros(dev device.Device, dt device.DType, shape ...int) (*Tensor, error) {
	return Full(dev, dt, 0, shape...)
}

// Ones returns a tensor of ones.
func Ones(dev device.Device, dt device.DType, shape ...int) (*Tensor, error) {
	return Full(dev, dt, 1, shape...)
}

// Scalar returns a 0-D tensor holding v.
func Scalar(dev device.Device, dt device.DType, v float64) (*Tensor, error) {
	return Full(dev, dt, v)
}

// Arange returns the 1-D tensor start, start + step, … before stop, as
// PyTorch's arange: ⌈(stop − start)/step⌉ elements, element i start +
// i·step, computed on dev (Device.Arange: float64 on the CPU, float32 on
// WebGPU, as PyTorch on CUDA) and rounded to dt. The bounds and step must
// be finite, step non-zero and of the sign of stop − start (or the range
// empty); for int32, start and step must be integers and every element
// an int32 (PyTorch truncates fractions instead).
func Arange(dev device.Device, dt device.DType, start, stop, step float64) (*Tensor, error) {
	const op = "tensor.Arange"
	for _, v := range []float64{start, stop, step} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			Panicf(op, ErrArgument, "start %v, stop %v, step %v; want finite numbers", start, stop, step)
		}
	}
	if step == 0 {
		Panicf(op, ErrArgument, "step 0; want a non-zero step")
	}
	n := math.Ceil((stop - start) / step)
	switch {
	case n < 0:
		Panicf(op, ErrArgument, "start %v, stop %v, step %v: the bounds and the step's sign disagree", start, stop, step)
	case n > math.MaxInt32:
		Panicf(op, ErrArgument, "start %v, stop %v, step %v: %v elements; want at most 2³¹−1", start, stop, step, n)
	}
	if dt == device.Int32 {
		last := start + max(n-1, 0)*step
		if start != math.Trunc(start) || step != math.Trunc(step) || min(start, last) < math.MinInt32 || max(start, last) > math.MaxInt32 {
			Panicf(op, ErrArgument, "int32 from start %v, stop %v, step %v; want an integer start and step, and int32 elements", start, stop, step)
		}
	}
	checkMake(op, dev, []int{int(n)})
	return newFilled(dev, dt, []int{int(n)}, func(b device.Buffer) error {
		if n > 0 {
			dev.Arange(b, start, step)
		}
		return nil
	})
}

// Uniform returns a tensor of values drawn uniformly from [lo, hi) by a PCG
// generator seeded with seed. The values are drawn on the host, so a seed
// gives the same tensor on every device.
func Uniform(dev device.Device, dt device.DType, lo, hi float64, seed uint64, shape ...int) (*Tensor, error) {
	return random("tensor.Uniform", dev, dt, seed, shape, func(r *rand.Rand) float64 {
		v := lo + (hi-lo)*r.Float64()
		// Rounding to float32 may reach hi; draw again.
		for dt == device.Float32 && hi > lo && float64(float32(v)) >= hi {
			v = lo + (hi-lo)*r.Float64()
		}
		return v
	})
}

// Normal returns a tensor of normally distributed values with the given
// mean and standard deviation, drawn on the host by a PCG generator seeded
// with seed.
func Normal(dev device.Device, dt device.DType, mean, std float64, seed uint64, shape ...int) (*Tensor, error) {
	return random("tensor.Normal", dev, dt, seed, shape, func(r *rand.Rand) float64 { return mean + std*r.NormFloat64() })
}

// random makes a tensor of values drawn by draw from a PCG generator
// seeded with seed. The tensor is allocated first, and the values drawn
// into a host slice of its dtype once the host is known to hold it: an
// allocation past either memory is an error wrapping
// device.ErrOutOfMemory, never the end of the process.
func random(op string, dev device.Device, dt device.DType, seed uint64, shape []int, draw func(*rand.Rand) float64) (*Tensor, error) {
	checkMake(op, dev, shape)
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return newFilled(dev, dt, shape, func(b device.Buffer) error {
		switch dt {
		case device.Float64:
			return drawInto(op, dev, b, r, draw, func(v float64) float64 { return v })
		case device.Float32:
			return drawInto(op, dev, b, r, draw, func(v float64) float32 { return float32(v) })
		case device.Float16:
			return drawInto(op, dev, b, r, draw, func(v float64) uint16 { return half.FromFloat32(float32(v)) })
		case device.Int32:
			return drawInto(op, dev, b, r, draw, func(v float64) int32 { return int32(v) })
		}
		return &Error{Op: op, Kind: ErrDType, Msg: fmt.Sprintf("unknown dtype %v", dt)}
	})
}

// drawInto writes b.Len() values drawn by draw, converted to the host
// type of b's dtype, into b.
func drawInto[E hostElem](op string, dev device.Device, b device.Buffer, r *rand.Rand, draw func(*rand.Rand) float64, conv func(float64) E) error {
	v, err := hostSlice[E](op, b.Len())
	if err != nil {
		return err
	}
	for i := range v {
		v[i] = conv(draw(r))
	}
	return dev.Write(b, v)
}

// hostElem is the host type of a dtype's elements (float16 as its bits).
type hostElem interface {
	float32 | float64 | int32 | uint16
}

// hostSlice returns a host slice of n elements, or an error wrapping
// device.ErrOutOfMemory, naming op, when the host cannot hold it
// (device.CheckHostAlloc).
func hostSlice[E hostElem](op string, n int) ([]E, error) {
	var e E
	if err := device.CheckHostAlloc(op, n, int(unsafe.Sizeof(e))); err != nil {
		return nil, err
	}
	return make([]E, n), nil
}
