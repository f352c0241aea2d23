package half

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/x448/float16"
)

// TestToFloat32 compares every float16 with x448's conversion, bit for
// bit (NaNs' payloads included).
func TestToFloat32(t *testing.T) {
	for h := range 1 << 16 {
		got, want := ToFloat32(uint16(h)), float16.Frombits(uint16(h)).Float32()
		if math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("ToFloat32(%#04x) = %#08x; want %#08x", h, math.Float32bits(got), math.Float32bits(want))
		}
	}
}

// TestFromFloat32 compares FromFloat32 with x448's conversion on the
// float32s around every float16 and every midpoint between neighbours
// (each ±8 ulps, both signs), every 251st float32 bit pattern, and
// random ones.
func TestFromFloat32(t *testing.T) {
	check := func(u uint32) {
		f := math.Float32frombits(u)
		if got, want := FromFloat32(f), float16.Fromfloat32(f).Bits(); got != want {
			t.Fatalf("FromFloat32(%g, bits %#08x) = %#04x; want %#04x", f, u, got, want)
		}
	}
	for h := range 1 << 15 {
		lo := math.Float32bits(float16.Frombits(uint16(h)).Float32())
		hi := math.Float32bits(float16.Frombits(uint16(h + 1)).Float32())
		for _, c := range []uint32{lo, lo + (hi-lo)/2} {
			for d := uint32(0); d <= 16; d++ {
				for _, s := range []uint32{0, 1 << 31} {
					check((c + d - 8) | s)
				}
			}
		}
	}
	for u := uint64(0); u < 1<<32; u += 251 {
		check(uint32(u))
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 1 << 20 {
		check(r.Uint32())
	}
}

// BenchmarkConvert converts 65,536 values each way, here and by x448.
func BenchmarkConvert(b *testing.B) {
	f, h := make([]float32, 1<<16), make([]uint16, 1<<16)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range f {
		f[i] = r.Float32()*8 - 4
		h[i] = float16.Fromfloat32(f[i]).Bits()
	}
	run := func(name string, convert func()) {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				convert()
			}
		})
	}
	run("FromFloat32", func() {
		for i, v := range f {
			h[i] = FromFloat32(v)
		}
	})
	run("x448/FromFloat32", func() {
		for i, v := range f {
			h[i] = float16.Fromfloat32(v).Bits()
		}
	})
	run("ToFloat32", func() {
		for i, v := range h {
			f[i] = ToFloat32(v)
		}
	})
	run("x448/ToFloat32", func() {
		for i, v := range h {
			f[i] = float16.Frombits(v).Float32()
		}
	})
}
