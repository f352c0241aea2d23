package cpu

// The matrix product: gonum's BLAS, with IEEE special values put back
// where BLAS drops them.

import (
	"fmt"

	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/internal/half"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
)

// MatMul computes each product of the batch with gonum's BLAS, added to
// s.Bias where set, and s.Sums by the reduction.
func (d *Device) MatMul(dst, a, b device.Buffer, s device.GEMM) {
	o, x, y := buf(dst), buf(a), buf(b)
	if s.Sums != nil {
		s.CheckSums(dst, a)
		s.RowSums(d, a)
	}
	m, k, n := s.M, s.K, s.N
	if m == 0 || n == 0 || s.Batch == 0 {
		return
	}
	if s.Bias != nil { // every row starts as the bias, the products added to it
		s.CheckBias(dst)
		bias := buf(s.Bias)
		for r := range s.Batch * m {
			for c := range n {
				o.copyFrom(r*n+c, bias, c)
			}
		}
		s.Bias, s.Accumulate = nil, true
	}
	if k == 0 {
		if !s.Accumulate {
			for i := s.OffDst; i < s.OffDst+s.Batch*m*n; i++ {
				o.set(i, 0)
			}
		}
		return
	}
	beta := 0.0 // what the products are added to: 0, or 1 × dst
	if s.Accumulate {
		beta = 1
	}
	ta, tb := blas.NoTrans, blas.NoTrans
	ar, ac := m, k
	if s.TransA {
		ta, ar, ac = blas.Trans, k, m
	}
	br, bc, ldb := k, n, s.RowB()
	if s.TransB {
		tb, br, bc = blas.Trans, n, k
	}
	nb := (br-1)*ldb + bc // the elements B_i spans
	for i := range s.Batch {
		j := i
		if s.CycleA > 0 {
			j = i % s.CycleA
		}
		oa, ob, oo := s.OffA+j*s.StrideA, s.OffB+i*s.StrideB, s.OffDst+i*m*n
		fix := patchNonFinite(o, x, y, s, oa, ob, oo)
		switch o.dt {
		case device.Float64:
			blas64.Gemm(ta, tb, 1,
				blas64.General{Rows: ar, Cols: ac, Stride: ac, Data: x.f64[oa : oa+m*k]},
				blas64.General{Rows: br, Cols: bc, Stride: ldb, Data: y.f64[ob : ob+nb]},
				beta, blas64.General{Rows: m, Cols: n, Stride: n, Data: o.f64[oo : oo+m*n]})
		case device.Float32:
			blas32.Gemm(ta, tb, 1,
				blas32.General{Rows: ar, Cols: ac, Stride: ac, Data: x.f32[oa : oa+m*k]},
				blas32.General{Rows: br, Cols: bc, Stride: ldb, Data: y.f32[ob : ob+nb]},
				float32(beta), blas32.General{Rows: m, Cols: n, Stride: n, Data: o.f32[oo : oo+m*n]})
		case device.Float16: // computed in float32, stored float16
			var c []float32 // dst's products, added to its values with Accumulate
			if s.Accumulate {
				c = widen(o, oo, m*n)
			} else {
				c = make([]float32, m*n)
			}
			blas32.Gemm(ta, tb, 1,
				blas32.General{Rows: ar, Cols: ac, Stride: ac, Data: widen(x, oa, m*k)},
				blas32.General{Rows: br, Cols: bc, Stride: ldb, Data: widen(y, ob, nb)},
				float32(beta), blas32.General{Rows: m, Cols: n, Stride: n, Data: c})
			for i, v := range c {
				o.set(oo+i, float64(v))
			}
		default:
			panic(fmt.Sprintf("cpu: MatMul on %v", o.dt))
		}
		fix()
	}
}

// patchNonFinite prepares to mend one product of a batch (op(A) at oa of
// x, op(B) at ob of y, C at oo of o) after gonum's BLAS has computed it.
// That BLAS skips the terms of a zero factor, so 0·Inf and 0·NaN vanish
// where IEEE 754, the WebGPU kernels and PyTorch give NaN. Only the
// entries C[i, j] whose row i of op(A) or column j of op(B) holds a NaN or
// an Inf can differ; the returned function sums those again term by term,
// in order, in the buffer's precision (float32 for float32 and float16),
// added to C's earlier value with Accumulate. Products of finite operands
// cost one scan of each.
func patchNonFinite(o, x, y *buffer, s device.GEMM, oa, ob, oo int) func() {
	m, k, n, ldb := s.M, s.K, s.N, s.RowB()
	a := func(i, l int) float64 {
		if s.TransA {
			return x.at(oa + l*m + i)
		}
		return x.at(oa + i*k + l)
	}
	b := func(l, j int) float64 {
		if s.TransB {
			return y.at(ob + j*ldb + l)
		}
		return y.at(ob + l*ldb + j)
	}
	inRow, inCol := make([]bool, m), make([]bool, n)
	var rows, cols []int
	nonFinite(x, oa, m*k, func(e int) {
		i := e / k
		if s.TransA {
			i = e % m
		}
		if !inRow[i] {
			inRow[i] = true
			rows = append(rows, i)
		}
	})
	br, bc := k, n
	if s.TransB {
		br, bc = n, k
	}
	for r := range br {
		nonFinite(y, ob+r*ldb, bc, func(c int) {
			j := c
			if s.TransB {
				j = r
			}
			if !inCol[j] {
				inCol[j] = true
				cols = append(cols, j)
			}
		})
	}
	if rows == nil && cols == nil {
		return func() {}
	}
	// The entries to sum again, and C's values there before the product.
	var at []int
	for _, i := range rows {
		for j := range n {
			at = append(at, i*n+j)
		}
	}
	for _, j := range cols {
		for i := range m {
			if !inRow[i] {
				at = append(at, i*n+j)
			}
		}
	}
	before := make([]float64, len(at))
	if s.Accumulate {
		for e, ij := range at {
			before[e] = o.at(oo + ij)
		}
	}
	return func() {
		for e, ij := range at {
			i, j := ij/n, ij%n
			if o.dt == device.Float64 {
				acc := before[e]
				for l := range k {
					acc += a(i, l) * b(l, j)
				}
				o.set(oo+ij, acc)
				continue
			}
			acc := float32(before[e])
			for l := range k {
				acc += float32(a(i, l)) * float32(b(l, j))
			}
			o.set(oo+ij, float64(acc))
		}
	}
}

// nonFinite calls visit(e) for each e < n whose element off + e of
// b is a NaN or an Inf.
func nonFinite(b *buffer, off, n int, visit func(e int)) {
	switch b.dt {
	case device.Float32:
		for e := range n {
			if v := b.f32[off+e]; v-v != 0 {
				visit(e)
			}
		}
	case device.Float64:
		for e := range n {
			if v := b.f64[off+e]; v-v != 0 {
				visit(e)
			}
		}
	case device.Float16:
		for e := range n {
			if b.f16[off+e]&0x7c00 == 0x7c00 {
				visit(e)
			}
		}
	}
}

// widen returns elements off… of the float16 buffer b as float32.
func widen(b *buffer, off, n int) []float32 {
	w := make([]float32, n)
	for i := range w {
		w[i] = half.ToFloat32(b.f16[off+i])
	}
	return w
}
