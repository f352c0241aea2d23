//go:build unix

package checkpoint

import (
	"fmt"
	"os"
	"runtime"
	"syscall"
)

// mapFile returns the contents of the regular file path mapped read-only
// into memory (the pages read as they are touched, and dropped under
// memory pressure: a file larger than the memory maps), and a function
// that unmaps it.
func mapFile(path string) ([]byte, func(), error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !st.Mode().IsRegular() || st.Size() == 0 || st.Size() != int64(int(st.Size())) {
		b, err := os.ReadFile(path) // not mappable: read it
		return b, func() {}, err
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, int(st.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, fmt.Errorf("mapping %s: %w", path, err)
	}
	return b, func() { syscall.Munmap(b) }, nil
}

// release unmaps f's data once f is unreachable.
func (f *File) release(unmap func()) {
	runtime.AddCleanup(f, func(u func()) { u() }, unmap)
}
