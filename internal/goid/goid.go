// Package goid reads the calling goroutine's id, for the scopes that
// follow a goroutine (tensor.Tidy, autograd.NoGrad). Go offers no other
// way than the header of a stack trace; callers read it only while a
// scope is open.
package goid

import (
	"bytes"
	"runtime"
	"strconv"
)

// Get returns the calling goroutine's id, from the header of its stack
// trace ("goroutine 18 [running]:").
func Get() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	id, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		panic("goid: cannot read the goroutine id: " + err.Error())
	}
	return id
}
