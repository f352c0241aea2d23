// Package errtest checks the project's policy for programmer errors in
// tests: a call panics with a *tensor.Error that names the op, wraps the
// kind of error and says what was expected.
package errtest

import (
	"errors"
	"strings"
	"testing"

	"github.com/extensor/extensor/tensor"
)

// Panics calls fn and fails t unless fn panics with a *tensor.Error from
// op, wrapping kind, whose message starts with "op: " and contains says.
func Panics(t testing.TB, fn func(), op string, kind error, says string) {
	t.Helper()
	err := tensor.Maybe(fn)
	if err == nil {
		t.Fatalf("no panic, want %s: %v", op, kind)
	}
	if !errors.Is(err, kind) {
		t.Errorf("error %q does not wrap %q", err, kind)
	}
	var te *tensor.Error
	if !errors.As(err, &te) || te.Op != op {
		t.Errorf("error %q is from %+v, want op %q", err, te, op)
	}
	if !strings.HasPrefix(err.Error(), op+": ") || !strings.Contains(err.Error(), says) {
		t.Errorf("error %q does not name %s and say %q", err, op, says)
	}
}
