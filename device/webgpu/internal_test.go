//go:build cgo || js

package webgpu

import (
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/extensor/extensor/device"
)

func TestGrid(t *testing.T) {
	for _, c := range []struct {
		groups int
		x, y   uint32
	}{
		{1, 1, 1}, {65535, 65535, 1}, {65536, 65535, 2}, {65535*3 + 1, 65535, 4},
	} {
		x, y, err := grid(c.groups)
		if err != nil || x != c.x || y != c.y {
			t.Errorf("grid(%d) = %d, %d, %v; want %d, %d", c.groups, x, y, err, c.x, c.y)
		}
		if int(x)*int(y) < c.groups {
			t.Errorf("grid(%d) covers only %d workgroups", c.groups, x*y)
		}
	}
	if _, _, err := grid(65535*65535 + 1); err == nil {
		t.Errorf("grid beyond 65535² workgroups: no error")
	}
}

func TestBucket(t *testing.T) {
	for _, c := range []struct{ in, want uint64 }{
		{1, 256}, {256, 256}, {257, 320}, {512, 512}, {513, 640}, {1 << 20, 1 << 20}, {(1 << 20) + 1, 1<<20 + 1<<18},
	} {
		if got := bucket(c.in); got != c.want {
			t.Errorf("bucket(%d) = %d; want %d", c.in, got, c.want)
		}
		if bucket(c.in) < c.in {
			t.Errorf("bucket(%d) smaller than the request", c.in)
		}
	}
}

func TestCoalesce(t *testing.T) {
	for _, c := range []struct {
		shape, axes []int
		kept, red   []axis
	}{
		{[]int{3, 4, 5}, []int{0, 1, 2}, nil, []axis{{60, 1}}},
		{[]int{3, 4, 5}, []int{1}, []axis{{3, 20}, {5, 1}}, []axis{{4, 5}}},
		{[]int{3, 1, 4, 5}, []int{2, 3}, []axis{{3, 20}}, []axis{{20, 1}}},
		{[]int{7, 257}, []int{0}, []axis{{257, 1}}, []axis{{7, 257}}},
		{[]int{}, []int{}, nil, nil},
	} {
		kept, red := coalesce(c.shape, c.axes)
		if !slices.Equal(kept, c.kept) || !slices.Equal(red, c.red) {
			t.Errorf("coalesce(%v, %v) = %v, %v; want %v, %v", c.shape, c.axes, kept, red, c.kept, c.red)
		}
	}
}

// TestMagic checks udiv of common.wgsl, written out here in uint32
// arithmetic as the kernels do it, against Go's division.
func TestMagic(t *testing.T) {
	mulhi := func(a, b uint32) uint32 {
		a0, a1, b0, b1 := a&0xffff, a>>16, b&0xffff, b>>16
		p01, p10 := a0*b1, a1*b0
		mid := (a0*b0)>>16 + p01&0xffff + p10&0xffff
		return a1*b1 + p01>>16 + p10>>16 + mid>>16
	}
	udiv := func(n, d, m uint32) uint32 {
		tt := mulhi(n, m)
		l := 32 - uint32(bits.LeadingZeros32(d-1))
		return (tt + (n-tt)>>min(l, 1)) >> (max(l, 1) - 1)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	divisors := []uint32{1, 2, 3, 5, 7, 9, 121, 676, 1 << 16, 1<<16 + 1, 1<<31 - 1, 1 << 31, 1<<31 + 1, 1<<32 - 1}
	for range 2000 {
		divisors = append(divisors, rng.Uint32()>>rng.UintN(32))
	}
	for _, d := range divisors {
		if d == 0 {
			continue
		}
		m := magic(int(d))
		ns := []uint32{0, 1, d - 1, d, d + 1, 2*d - 1, 1<<32 - 1, 1<<32 - 2, 1 << 31, 1<<31 - 1}
		for range 500 {
			ns = append(ns, rng.Uint32(), rng.Uint32()%(4*d+1), d*rng.Uint32N(1<<16)-rng.Uint32N(2))
		}
		for _, n := range ns {
			if got, want := udiv(n, d, m), n/d; got != want {
				t.Fatalf("udiv(%d, %d, magic %d) = %d; want %d", n, d, m, got, want)
			}
		}
	}
}

// TestSpecs checks the kernels' specialisations against the WGSL files:
// every kernel file (shaders/*.wgsl but the includes and present.wgsl,
// the window's render shader) has one spec type, named by its family; a
// kernel is cached under its spec, so two specs differing in a field are
// two kernels, named apart.
func TestSpecs(t *testing.T) {
	specs := []spec{unarySpec{}, binarySpec{}, updateSpec{}, castSpec{}, drawSpec{}, gatherSpec{}, scanSpec{}, whereSpec{},
		stridedSpec{}, reduceSpec{}, softmaxSpec{}, xentSpec{}, xentSpec{Grad: true}, normSpec{}, windowSpec{}, attentionSpec{},
		registerSpec{}, tiledSpec{}, sumSpec{}, texSpec{}, convTexSpec{}, fusedSpec{}}
	families := map[string]bool{}
	for _, s := range specs {
		if families[s.family()] {
			t.Errorf("two specs of family %s", s.family())
		}
		families[s.family()] = true
	}
	files, err := filepath.Glob("../../shaders/*.wgsl")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".wgsl")
		switch {
		case name == "prelude" || name == "common" || name == "present":
		case !families[name]:
			t.Errorf("shaders/%s.wgsl has no spec type", name)
		}
		delete(families, name)
	}
	for f := range families {
		t.Errorf("spec family %s has no WGSL file", f)
	}

	d := openTB(t)
	defer d.Close()
	d.mu.Lock()
	defer d.mu.Unlock()
	exp := unarySpec{Fn: "exp", Unroll: 4}
	log := exp
	log.Fn = "log"
	ke, kl := d.kernel(exp, false, true), d.kernel(log, false, true)
	if ke == nil || kl == nil {
		t.Fatalf("compiling unary exp and log: %v", d.report())
	}
	if ke == kl || ke.name == kl.name || d.kernel(exp, false, true) != ke {
		t.Errorf("kernels of exp (%s) and log (%s): want two, each cached under its spec", ke.name, kl.name)
	}
	if want := "unary/exp/unroll=4"; ke.name != want {
		t.Errorf("kernel name %q; want %q", ke.name, want)
	}
}

// openTB opens a device of its own for an internal test or benchmark,
// under internal/gputest's policy (which imports this package): without
// an adapter it fails tb under CI, and elsewhere skips tb.
func openTB(tb testing.TB) *Device {
	tb.Helper()
	d, err := Open()
	if err != nil {
		if os.Getenv("CI") == "true" || !errors.Is(err, device.ErrUnavailable) {
			tb.Fatalf("WebGPU device required (CI=%s): %v", os.Getenv("CI"), err)
		}
		tb.Skipf("no WebGPU adapter: %v", err)
	}
	return d
}

// TestHoistedAtParameterRollover records fills ahead of an open chain
// (each fill's value a parameter set of its own) past the parameter
// buffer's slots, fused and not: the submission that makes room records
// the chain mid-dispatch, and each fill must keep its own parameters.
func TestHoistedAtParameterRollover(t *testing.T) {
	for _, fuse := range []bool{true, false} {
		t.Run(fmt.Sprintf("fuse=%v", fuse), func(t *testing.T) {
			d := openTB(t)
			defer d.Close()
			d.Fusion(fuse)
			const n, fills = 1024, paramSlots + 500
			xv := make([]float32, n)
			for i := range xv {
				xv[i] = float32(i) - 500
			}
			alloc := func(n int) device.Buffer {
				b, err := d.Alloc(device.Float32, n)
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
			x, y1, y2 := alloc(n), alloc(n), alloc(n)
			if err := d.Write(x, xv); err != nil {
				t.Fatal(err)
			}
			fs := make([]device.Buffer, fills)
			for i := range fs {
				fs[i] = alloc(4)
				d.Unary(device.UnaryOp("relu"), y1, x)
				d.Unary(device.UnaryOp("neg"), y2, y1)
				d.Fill(fs[i], float64(i+1))
			}
			got := make([]float32, 4)
			for i, f := range fs {
				if err := d.Read(f, got); err != nil {
					t.Fatal(err)
				}
				if slices.ContainsFunc(got, func(v float32) bool { return v != float32(i+1) }) {
					t.Fatalf("fill %d of %d holds %v; want %d", i+1, fills, got, i+1)
				}
			}
		})
	}
}
