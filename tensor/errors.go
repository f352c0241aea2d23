package tensor

import (
	"errors"
	"fmt"
)

// The kinds of programmer error. A panic value of type *Error wraps one.
var (
	ErrShape    = errors.New("incompatible shape")
	ErrDType    = errors.New("incompatible dtype")
	ErrDevice   = errors.New("tensors on different devices")
	ErrArgument = errors.New("invalid argument")
	ErrReleased = errors.New("use of released tensor")
)

// Error is a programmer error: an op was called with arguments it cannot
// accept. Ops panic with an *Error; use Maybe to recover it.
type Error struct {
	Op   string // the op that was called, e.g. "ops.Add"
	Kind error  // ErrShape, ErrDType, ErrDevice, ErrArgument or ErrReleased
	Msg  string // what was given and what was expected
}

// Error returns "op: msg".
func (e *Error) Error() string { return e.Op + ": " + e.Msg }

// Unwrap returns the error's Kind.
func (e *Error) Unwrap() error { return e.Kind }

// Panicf panics with an *Error of the given kind. It is for ops packages
// built on tensor.
func Panicf(op string, kind error, format string, args ...any) {
	panic(&Error{Op: op, Kind: kind, Msg: fmt.Sprintf(format, args...)})
}

// Maybe calls fn and returns the *Error it panics with, if any. Other panics
// propagate.
func Maybe(fn func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(*Error); ok {
				err = e
				return
			}
			panic(r)
		}
	}()
	fn()
	return nil
}

// Must returns t, and panics if err is not nil. It is for examples and
// tests where a failure to create a tensor ends the program anyway.
func Must(t *Tensor, err error) *Tensor {
	if err != nil {
		panic(err)
	}
	return t
}
