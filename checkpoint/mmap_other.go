//go:build !unix

package checkpoint

import (
	"os"

	"github.com/extensor/extensor/device"
)

// mapFile returns the contents of the file at path, read whole: one
// larger than the host's memory can hold is an error wrapping
// device.ErrOutOfMemory before any of it is read.
func mapFile(path string) ([]byte, func(), error) {
	if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() {
		if err := device.CheckHostAlloc("checkpoint: "+path, int(st.Size()), 1); err != nil {
			return nil, nil, err
		}
	}
	b, err := os.ReadFile(path)
	return b, func() {}, err
}

func (f *File) release(func()) {}
