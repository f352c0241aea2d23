package cpu

import "github.com/extensor/extensor/device"

// Cumsum sets dst to the running sums of x along axis (from the end when
// reverse is set).
func (d *Device) Cumsum(dst, x device.Buffer, shape []int, axis int, reverse bool) {
	o, in := buf(dst), buf(x)
	n, inner := shape[axis], device.Numel(shape[axis+1:])
	for outer := range device.Numel(shape[:axis]) {
		for i := range inner {
			s := 0.0
			for j := range n {
				if reverse {
					j = n - 1 - j
				}
				k := (outer*n+j)*inner + i
				s += in.at(k)
				o.set(k, s)
			}
		}
	}
}
