package cpu

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/extensor/extensor/device"
)

// TestUnaryTwins checks that every function of shaders/unary.wgsl has its
// CPU twin and every twin its WGSL function (package ops's tests hold
// both to the op table).
func TestUnaryTwins(t *testing.T) {
	src, err := os.ReadFile("../shaders/unary.wgsl")
	if err != nil {
		t.Fatal(err)
	}
	wgsl := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^fn op_(\w+)\(`).FindAllSubmatch(src, -1) {
		name := string(m[1])
		if base, ok := strings.CutSuffix(name, "_grad"); ok {
			name = base
		}
		wgsl[name] = true
	}
	for name := range wgsl {
		if _, ok := unaryFns[device.UnaryOp(name)]; !ok {
			t.Errorf("op_%s in shaders/unary.wgsl has no CPU twin", name)
		}
	}
	for op := range unaryFns {
		if !wgsl[string(op)] {
			t.Errorf("CPU twin %q has no op_%s in shaders/unary.wgsl", op, op)
		}
	}
}
