package device

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
)

// CheckedAdd returns a + b for a, b ≥ 0, and false when the sum overflows
// int. Shape arithmetic on sizes the user gives (padding, concatenation,
// output sizes) goes through it and CheckedMul.
func CheckedAdd(a, b int) (int, bool) {
	if a < 0 || b < 0 || a > math.MaxInt-b {
		return 0, false
	}
	return a + b, true
}

// CheckedMul returns a·b for a, b ≥ 0, and false when the product
// overflows int.
func CheckedMul(a, b int) (int, bool) {
	if a < 0 || b < 0 || (b != 0 && a > math.MaxInt/b) {
		return 0, false
	}
	return a * b, true
}

// HostLimit returns how much memory, in bytes, one host allocation of the
// library may take: three quarters of the smaller of the machine's memory
// (MemTotal in /proc/meminfo) and the process's cgroup limit (cgroup v2
// memory.max, or v1 memory.limit_in_bytes). Where neither can be read it
// returns math.MaxInt64, leaving the limit to the operating system. It is
// also the CPU backend's default memory limit.
func HostLimit() int64 { return hostLimit() }

var hostLimit = sync.OnceValue(func() int64 {
	limit := int64(math.MaxInt64)
	if v, ok := memTotal(); ok {
		limit = v
	}
	for _, f := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && v > 0 && v < limit {
			limit = v // "max" (no limit) does not parse
		}
	}
	if limit == math.MaxInt64 {
		return limit
	}
	return limit / 4 * 3
})

// CheckHostAlloc returns an error wrapping ErrOutOfMemory, naming what,
// unless n elements of size bytes fit in one host allocation (HostLimit).
// Every host slice sized by a user's argument (a tensor's length, a
// file's header) is checked with it before it is made: Go ends the
// process on an allocation it cannot make.
func CheckHostAlloc(what string, n, size int) error {
	b, ok := CheckedMul(n, size)
	if !ok || int64(b) > HostLimit() {
		return fmt.Errorf("%s: %d elements of %d bytes exceed the host memory one allocation may take (%d bytes): %w", what, n, size, HostLimit(), ErrOutOfMemory)
	}
	return nil
}

// memTotal returns MemTotal from /proc/meminfo in bytes.
func memTotal() (int64, bool) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			return kb * 1024, err == nil
		}
	}
	return 0, false
}
