package cpu

import (
	"bufio"
	"math"
	"os"
	"strconv"
	"strings"
)

// DefaultMemoryLimit returns the memory limit of a new CPU device: three
// quarters of the smaller of the machine's memory (MemTotal in
// /proc/meminfo) and the process's cgroup limit (cgroup v2 memory.max, or
// v1 memory.limit_in_bytes). Where neither can be read it returns
// math.MaxInt64, leaving the limit to the operating system.
func DefaultMemoryLimit() int64 {
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
