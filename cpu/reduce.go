package cpu

import (
	"math"

	"github.com/extensor/extensor/device"
)

// Reduce reduces x over axes into dst, accumulating in float64. The
// output's coordinate of each input element comes from an odometer over
// the input whose strides are 0 along the reduced axes.
func (d *Device) Reduce(op device.ReduceOp, dst, x device.Buffer, shape, axes []int) {
	o, in := buf(dst), buf(x)
	reduced := make([]bool, len(shape))
	count := 1
	for _, ax := range axes {
		reduced[ax] = true
		count *= shape[ax]
	}
	ostr := make([]int, len(shape))
	s := 1
	for ax := len(shape) - 1; ax >= 0; ax-- {
		if !reduced[ax] {
			ostr[ax] = s
			s *= shape[ax]
		}
	}
	// seen counts the elements folded into each output so far: it is the
	// index along the reduced axes of the element being visited.
	acc := make([]float64, o.Len())
	seen := make([]int, o.Len())
	best := make([]int, o.Len())
	zero := make([]int, len(shape))
	odometer(shape, ostr, zero, func(i, io, _ int) {
		v := in.at(i)
		k := seen[io]
		seen[io]++
		switch op {
		case device.Sum, device.Mean:
			acc[io] += v
		case device.Max:
			acc[io] = nanFold(acc[io], v, k == 0, math.Max)
		case device.Min:
			acc[io] = nanFold(acc[io], v, k == 0, math.Min)
		case device.ArgMax, device.ArgMin:
			b := acc[io]
			first := k == 0
			beats := (op == device.ArgMax && v > b) || (op == device.ArgMin && v < b)
			if first || (!math.IsNaN(b) && (math.IsNaN(v) || beats)) {
				acc[io], best[io] = v, k
			}
		}
	})
	switch op {
	case device.ArgMax, device.ArgMin:
		for i, k := range best {
			o.set(i, float64(k))
		}
		return
	case device.Mean:
		for i := range acc {
			acc[i] /= float64(count)
		}
	}
	for i, v := range acc {
		o.set(i, v)
	}
}

// nanFold folds v into a running extremum m with pick (math.Max or
// math.Min), taking v itself when first and keeping NaN once seen.
func nanFold(m, v float64, first bool, pick func(a, b float64) float64) float64 {
	if first || math.IsNaN(v) {
		return v
	}
	if math.IsNaN(m) {
		return m
	}
	return pick(m, v)
}

// softmaxRows calls row for every row of shape along axis: the offset of
// its first element and the stride between its elements.
func softmaxRows(shape []int, axis int, row func(off, stride int)) {
	inner := device.Numel(shape[axis+1:])
	n := shape[axis]
	outer := device.Numel(shape[:axis])
	for o := range outer {
		for in := range inner {
			row(o*n*inner+in, inner)
		}
	}
}

// Softmax sets dst to the (log-)softmax of x along axis, in float64:
// the log-softmax x − max − log Σ exp(x − max), the softmax
// exp(x − max) / Σ exp(x − max) (one exponential an element).
func (d *Device) Softmax(dst, x device.Buffer, shape []int, axis int, log bool) {
	o, in := buf(dst), buf(x)
	n := shape[axis]
	e := make([]float64, n) // a row's exp(x − max)
	softmaxRows(shape, axis, func(off, stride int) {
		mx := math.Inf(-1)
		for j := range n {
			mx = nanFold(mx, in.at(off+j*stride), false, math.Max)
		}
		s := 0.0
		for j := range n {
			e[j] = math.Exp(in.at(off+j*stride) - mx)
			s += e[j]
		}
		if log {
			lse := mx + math.Log(s)
			for j := range n {
				o.set(off+j*stride, in.at(off+j*stride)-lse)
			}
			return
		}
		for j := range n {
			o.set(off+j*stride, e[j]/s)
		}
	})
}

// SoftmaxGrad sets dx from the (log-)softmax output y and upstream dy.
func (d *Device) SoftmaxGrad(dx, y, dy device.Buffer, shape []int, axis int, log bool) {
	o, yb, g := buf(dx), buf(y), buf(dy)
	n := shape[axis]
	softmaxRows(shape, axis, func(off, stride int) {
		// The Jacobian-vector product: for softmax, y_j·(g_j − Σ_k g_k·y_k);
		// for its log, g_j − softmax_j·Σ_k g_k.
		dot := 0.0
		for k := range n {
			i := off + k*stride
			if log {
				dot += g.at(i)
			} else {
				dot += g.at(i) * yb.at(i)
			}
		}
		for j := range n {
			i := off + j*stride
			if log {
				o.set(i, g.at(i)-math.Exp(yb.at(i))*dot)
			} else {
				o.set(i, yb.at(i)*(g.at(i)-dot))
			}
		}
	})
}

// logSumExp returns log Σ exp(v(j)) for j < n, shifted by the maximum; NaN
// if any value is NaN.
func logSumExp(n int, v func(j int) float64) float64 {
	mx := math.Inf(-1)
	for j := range n {
		mx = nanFold(mx, v(j), false, math.Max)
	}
	s := 0.0
	for j := range n {
		s += math.Exp(v(j) - mx)
	}
	return mx + math.Log(s)
}

// Gather takes elements (or table rows) as t describes, NaN for an index
// out of range.
func (d *Device) Gather(dst, x, idx device.Buffer, t device.Take) {
	o, in, ix := buf(dst), buf(x), buf(idx)
	if t.K > 0 {
		for e := range t.N * t.K {
			k, v := int(ix.i32[e]), math.NaN()
			if d.checkIndex(t.Site, k, t.C) {
				v = t.Scale * in.at(e/t.K*t.C+k)
			}
			o.set(e, v)
		}
		return
	}
	for i := range t.N {
		k := int(ix.i32[i])
		skip := t.Ignoring && int32(k) == t.IgnoreIndex
		ok := skip || d.checkIndex(t.Site, k, t.C)
		if !t.Table {
			v := math.NaN()
			switch {
			case skip:
				v = 0
			case ok:
				v = t.Scale * in.at(i*t.C+k)
			}
			o.set(i, v)
			continue
		}
		for j := range t.D {
			v := math.NaN()
			switch {
			case skip:
				v = 0
			case ok:
				v = t.Scale * in.at(k*t.D+j)
			}
			o.set(i*t.D+j, v)
		}
	}
}

// GatherGrad scatters scale·g back to where Gather took from: to (i,
// idx[i]) of dx, zeros elsewhere; or, for a table, added into row idx[i].
func (d *Device) GatherGrad(dx, idx, g device.Buffer, t device.Take) {
	o, ix, gb := buf(dx), buf(idx), buf(g)
	if t.K > 0 {
		acc := make([]float64, t.N*t.C)
		for e := range t.N * t.K {
			if k := int(ix.i32[e]); d.checkIndex(t.Site, k, t.C) {
				acc[e/t.K*t.C+k] += gb.at(e)
			}
		}
		for e, v := range acc {
			o.set(e, t.Scale*v)
		}
		return
	}
	if t.Table {
		acc := make([]float64, t.C*t.D)
		for i := range t.N {
			k := int(ix.i32[i])
			if t.Ignoring && int32(k) == t.IgnoreIndex || !d.checkIndex(t.Site, k, t.C) {
				continue
			}
			for j := range t.D {
				acc[k*t.D+j] += gb.at(i*t.D + j)
			}
		}
		for e, v := range acc {
			o.set(e, t.Scale*v)
		}
		return
	}
	for i := range t.N {
		k := int(ix.i32[i])
		skip := t.Ignoring && int32(k) == t.IgnoreIndex
		ok := skip || d.checkIndex(t.Site, k, t.C)
		for j := range t.C {
			v := 0.0
			switch {
			case skip:
			case !ok:
				v = math.NaN()
			case j == k:
				v = t.Scale * gb.at(i)
			}
			o.set(i*t.C+j, v)
		}
	}
}
