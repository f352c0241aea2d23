package half

import (
	"math"

	"github.com/x448/float16"
)

// table holds float16 bits h's float32 value at h.
var table = func() *[1 << 16]float32 {
	var t [1 << 16]float32
	for h := range t {
		t[h] = float16.Frombits(uint16(h)).Float32()
	}
	return &t
}()

// ToFloat32 returns float16 bits h as a float32 (exact).
func ToFloat32(h uint16) float32 { return table[h] }

// FromFloat32 returns f rounded to float16 bits, to nearest with ties to
// even (x448/float16.Fromfloat32's result).
func FromFloat32(f float32) uint16 {
	u := math.Float32bits(f)
	sign := uint16(u>>16) & 0x8000
	a := u & 0x7fffffff
	// From 2⁻¹⁴ (the smallest normal float16) up to below 2¹⁶ the result
	// is a normal float16 or, rounding past 65504, infinity: rebias the
	// exponent and round the 13 bits dropped, the carry reaching the
	// exponent where the mantissa overflows.
	if a >= 113<<23 && a < 143<<23 {
		odd := (a >> 13) & 1
		return sign | uint16((a-(112<<23)+0xfff+odd)>>13)
	}
	if a >= 143<<23 && a < 0x7f800000 { // finite, past float16's range
		return sign | 0x7c00
	}
	return float16.Fromfloat32(f).Bits()
}
