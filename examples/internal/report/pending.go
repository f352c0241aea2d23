package report

import (
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/tensor"
)

// Pending are training losses (0-D tensors, one a step) not yet read
// back: a loop keeps them on the device and reads them together, in one
// readback, when it reports.
type Pending []*tensor.Tensor

// Read reads the losses back, releases them and empties p.
func (p *Pending) Read() ([]float64, error) {
	if len(*p) == 0 {
		return nil, nil
	}
	all := ops.Stack(*p, 0)
	v, err := all.Float64s()
	all.Release()
	for _, l := range *p {
		l.Release()
	}
	*p = (*p)[:0]
	return v, err
}
