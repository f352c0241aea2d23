package cpu

import (
	"math"

	"github.com/extensor/extensor/device"
)

// normStats returns a row's mean (0 unless center) and 1/√(variance + eps),
// in float64.
func normStats(in *buffer, off, n int, eps float64, center bool) (mu, rho float64) {
	if center {
		for j := range n {
			mu += in.at(off + j)
		}
		mu /= float64(n)
	}
	v := 0.0
	for j := range n {
		d := in.at(off+j) - mu
		v += d * d
	}
	return mu, 1 / math.Sqrt(v/float64(n)+eps)
}

// Norm sets each row of dst to (x − μ)·ρ.
func (d *Device) Norm(dst, x device.Buffer, rows, n int, eps float64, center bool) {
	o, in := buf(dst), buf(x)
	for r := range rows {
		off := r * n
		mu, rho := normStats(in, off, n, eps, center)
		for j := range n {
			o.set(off+j, (in.at(off+j)-mu)*rho)
		}
	}
}

// NormGrad sets dx = ρ·(g − mean(g) − x̂·mean(g·x̂)).
func (d *Device) NormGrad(dx, x, g device.Buffer, rows, n int, eps float64, center bool) {
	o, in, gb := buf(dx), buf(x), buf(g)
	for r := range rows {
		off := r * n
		mu, rho := normStats(in, off, n, eps, center)
		var sg, sgx float64
		for j := range n {
			xh := (in.at(off+j) - mu) * rho
			sg += gb.at(off + j)
			sgx += gb.at(off+j) * xh
		}
		if !center {
			sg = 0
		}
		for j := range n {
			xh := (in.at(off+j) - mu) * rho
			o.set(off+j, rho*(gb.at(off+j)-sg/float64(n)-xh*sgx/float64(n)))
		}
	}
}
