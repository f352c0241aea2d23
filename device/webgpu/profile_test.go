//go:build cgo || js

package webgpu_test

import (
	"math"
	"strings"
	"testing"

	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/device/webgpu"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/tensor"
)

// TestProfile checks the kernel profiler: off by default, and with
// EXTENSOR_PROFILE set, every dispatch counted and timed under its
// kernel's name until ResetProfile, by the GPU's timestamps where the
// adapter has them (lavapipe has) and by the host's clock.
func TestProfile(t *testing.T) {
	if d := fresh(t); d.Profile() != nil || d.ProfileClock() != "" {
		t.Fatalf("Profile without %s = %v, clock %q; want nil, \"\"", webgpu.EnvProfile, d.Profile(), d.ProfileClock())
	}
	t.Setenv(webgpu.EnvProfile, "1")
	for _, clock := range []string{"gpu", "host"} {
		t.Run(clock, func(t *testing.T) {
			d := fresh(t)
			if clock == "host" {
				webgpu.ProfileByHost(d)
			}
			if got := d.ProfileClock(); got != clock {
				t.Fatalf("ProfileClock() = %q; want %q", got, clock)
			}
			x := tensor.Must(tensor.Uniform(d, device.Float32, -1, 1, 1, 1000))
			d.Fusion(false)
			want := ops.Exp(ops.Neg(x)) // two kernels in one batch
			for range 2 {
				ops.Exp(x).Release()
			}
			got, err := want.Float32s()
			if err != nil {
				t.Fatal(err)
			}
			xs, err := x.Float32s()
			if err != nil {
				t.Fatal(err)
			}
			for i := range got {
				if w := float32(math.Exp(-float64(xs[i]))); math.Abs(float64(got[i]-w)) > 1e-6 {
					t.Fatalf("exp(-x)[%d] = %v; want %v: profiling changed a result", i, got[i], w)
				}
			}
			var exp, neg *webgpu.KernelTime
			for _, k := range d.Profile() {
				switch {
				case strings.HasPrefix(k.Kernel, "unary/exp/"):
					exp = &k
				case strings.HasPrefix(k.Kernel, "unary/neg/"):
					neg = &k
				}
			}
			if exp == nil || exp.Dispatches != 3 || exp.Time <= 0 || neg == nil || neg.Dispatches != 1 {
				t.Fatalf("Profile() = %+v; want unary/exp/… with 3 dispatches and a time, unary/neg/… with 1", d.Profile())
			}
			d.ResetProfile()
			if p := d.Profile(); len(p) != 0 {
				t.Fatalf("Profile() after ResetProfile = %+v; want none", p)
			}
			// Fused, the chain is one kernel named after its ops; the
			// exps released unread are left out.
			d.Fusion(true)
			y := ops.Exp(ops.Neg(x))
			for range 2 {
				ops.Exp(x).Release()
			}
			if _, err := y.Float32s(); err != nil {
				t.Fatal(err)
			}
			if p := d.Profile(); len(p) != 1 || p[0].Kernel != "fused/neg,exp" || p[0].Dispatches != 1 {
				t.Fatalf("Profile() of a fused chain = %+v; want fused/neg,exp with 1 dispatch", p)
			}
		})
	}
}
