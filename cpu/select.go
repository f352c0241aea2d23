package cpu

import (
	"math"

	"github.com/extensor/extensor/device"
)

// Where sets dst[i] = a[i] where cond[i] ≠ 0, else b[i].
func (d *Device) Where(dst, cond, a, b device.Buffer) {
	o, c, x, y := buf(dst), buf(cond), buf(a), buf(b)
	for i := range o.Len() {
		if c.at(i) != 0 || math.IsNaN(c.at(i)) {
			o.set(i, x.at(i))
		} else {
			o.set(i, y.at(i))
		}
	}
}
