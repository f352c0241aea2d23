package im2col

import (
	"fmt"

	"github.com/extensor/extensor/device"
)

// ColsBudget bounds the elements of one chunk's im2col matrix (8 MiB of
// float32), so that the columns of a large batch never outgrow a binding
// nor dominate the memory of a training step: at batch 256, the CNN of
// examples/cnn peaked at 134.5 MiB with chunks of 2²⁴ elements, 87.5 MiB
// with these.
const ColsBudget = 1 << 21

// Budgeter is a device that bounds one chunk's im2col matrix itself
// (elements), in place of ColsBudget: a GPU's larger chunks batch more
// images' products into one dispatch, filling more of its cores.
type Budgeter interface {
	ColumnBudget() int
}

// SaveBudget bounds the columns that Conv2d keeps for Conv2dBackward
// (elements over the whole batch, 64 MiB of float32): past it, backward
// computes them again, a chunk at a time.
const SaveBudget = 1 << 24

// plan is a convolution's im2col lowering.
type plan struct {
	dev            device.Device
	dt             device.DType
	c              device.Conv2D
	cg, og, kk, hw int // channels and filters per group, taps, output pixels
	pitch          int // the columns' rows: hw rounded up to a multiple of 4
	budget         int // the elements of one chunk's columns: ColsBudget, or the device's (Budgeter)
}

func planOf(dev device.Device, dt device.DType, c device.Conv2D) plan {
	c.Groups = max(c.Groups, 1)
	oh, ow := c.Out()
	p := plan{dev: dev, dt: dt, c: c, cg: c.C / c.Groups, og: c.F / c.Groups, kk: c.KH * c.KW, hw: oh * ow}
	p.pitch = (p.hw + 3) &^ 3
	p.budget = ColsBudget
	if b, ok := dev.(Budgeter); ok {
		p.budget = max(b.ColumnBudget(), 1)
	}
	return p
}

// fused reports whether a bias rides in the products: without groups,
// the filters gain a last column holding the bias and each image's
// columns a last row of ones (device.Window2D.Ones), so that the products
// add the bias and the filters' gradient carries the bias's, with no pass
// of their own over the output.
func (p plan) fused(bias bool) bool { return bias && p.c.Groups == 1 }

// rows returns the rows of each image's (and group's) columns: the taps,
// and the row of ones if fused.
func (p plan) rows(fused bool) int { return p.cg*p.kk + b2i(fused) }

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// scratch allocates n elements of the convolution's dtype, naming what
// for a failure.
func (p plan) scratch(n int, what string) (device.Buffer, error) {
	b, err := p.dev.Alloc(p.dt, n)
	if err != nil {
		return nil, fmt.Errorf("im2col: %s of %d elements: %w", what, n, err)
	}
	return b, nil
}

// window returns the geometry of images n0… (nb of them) for the window
// kernels: rows of p.pitch, a row of ones if ones.
func (p plan) window(n0, nb int, ones bool) device.Window2D {
	g := p.c.Window2D
	g.N, g.N0, g.Ones, g.Pitch = nb, n0, ones, p.pitch
	return g
}

// Conv2d implements device.Convolver's Conv2d on dev's kernels: per chunk
// of images whose columns fit the budget (ColsBudget, or the device's), im2col (each image's taps as a
// (C·KH·KW)×(OH·OW) matrix, its rows padded with zeros to a multiple of 4
// so that the products read them by vec4s) and one batched matrix product
// of the filters with every image's matrix per group. The bias rides in
// the products (see plan.fused); with groups, the products add to the
// bias, copied into every pixel first. With keep, it returns the columns
// when they fit SaveBudget.
func Conv2d(dev device.Device, out, x, w, b device.Buffer, c device.Conv2D, keep bool) ([]device.Buffer, error) {
	p := planOf(dev, out.DType(), c)
	if out.Len() == 0 {
		return nil, nil
	}
	fused := p.fused(b != nil)
	kr, filters := p.rows(fused), w
	if fused {
		// The filters with the bias as their last column, stored
		// transposed: a [taps + 1, F] matrix, so that the product reads 4
		// filters' taps as a vec4.
		k := p.cg * p.kk
		wb, err := p.scratch((k+1)*c.F, "the filters with their bias")
		if err != nil {
			return nil, err
		}
		defer dev.Free(wb)
		dev.CopyStrided(wb, w, device.Strided{Shape: []int{c.F, k}, SrcStrides: []int{k, 1}, DstStrides: []int{1, c.F}})
		dev.CopyStrided(wb, b, device.Strided{Shape: []int{c.F}, SrcStrides: []int{1}, DstStrides: []int{1}, DstOffset: k * c.F})
		filters = wb
	} else if b != nil {
		// The bias in every pixel, to which the products add (in float32,
		// so that a float16 result is rounded once).
		dev.CopyStrided(out, b, device.Strided{Shape: []int{c.N, c.F, p.hw},
			SrcStrides: []int{0, 1, 0}, DstStrides: []int{c.F * p.hw, p.hw, 1}})
	}
	keep = keep && c.N*kr*p.pitch <= SaveBudget
	return p.columns(x, fused, nil, keep, func(n0, nb int, cols device.Buffer, _ bool) error {
		// out[n, g] (+)= W_g · cols[n, g] for every image and group.
		dev.MatMul(out, filters, cols, device.GEMM{Batch: nb * c.Groups, M: p.og, K: kr, N: p.hw, TransA: fused,
			StrideA: p.og * kr, CycleA: c.Groups, StrideB: kr * p.pitch, LdB: p.pitch, OffDst: n0 * c.F * p.hw, Accumulate: b != nil && !fused})
		return nil
	})
}

// columns calls f, for each run of images n0… (nb of them) whose columns
// fit the budget, with their im2col matrix (with a row of ones per image
// if fused; rows of p.pitch, zeros past p.hw), freed after f; kept tells
// f that the columns are saved ones, which it must leave unchanged. With
// saved columns of this convolution, f gets those instead; with keep, the
// columns are returned instead of freed. It stops at, and returns, the
// first failure.
func (p plan) columns(x device.Buffer, fused bool, saved []device.Buffer, keep bool,
	f func(n0, nb int, cols device.Buffer, kept bool) error) ([]device.Buffer, error) {
	rows := p.c.C*p.kk + b2i(fused)
	if p.isSaved(rows, saved) {
		n0 := 0
		for _, cols := range saved {
			nb := cols.Len() / (rows * p.pitch)
			if err := f(n0, nb, cols, true); err != nil {
				return nil, err
			}
			n0 += nb
		}
		return nil, nil
	}
	step := max(p.budget/max(rows*p.pitch, 1), 1)
	var kept []device.Buffer
	fail := func(err error) ([]device.Buffer, error) {
		for _, c := range kept {
			p.dev.Free(c)
		}
		return nil, err
	}
	for n0 := 0; n0 < p.c.N; n0 += step {
		nb := min(step, p.c.N-n0)
		cols, err := p.scratch(nb*rows*p.pitch, "the columns")
		if err != nil {
			return fail(err)
		}
		p.dev.Window(device.Im2Col, cols, x, nil, p.window(n0, nb, fused))
		err = f(n0, nb, cols, false)
		if keep && err == nil {
			kept = append(kept, cols)
		} else {
			p.dev.Free(cols)
		}
		if err != nil {
			return fail(err)
		}
	}
	return kept, nil
}

// isSaved reports whether saved holds this convolution's columns: whole
// images of rows rows each, in the convolution's dtype, all N of them.
func (p plan) isSaved(rows int, saved []device.Buffer) bool {
	if len(saved) == 0 {
		return false
	}
	n, per := 0, rows*p.pitch
	for _, c := range saved {
		if c.DType() != p.dt || per == 0 || c.Len()%per != 0 {
			return false
		}
		n += c.Len() / per
	}
	return n == p.c.N
}

// padded returns the upstream gradient gy (N, F, OH·OW) as (N, F, pitch),
// zeros past OH·OW (a buffer to free, or gy itself when no row needs
// padding).
func (p plan) padded(gy device.Buffer) (device.Buffer, error) {
	if p.pitch == p.hw {
		return gy, nil
	}
	gp, err := p.scratch(p.c.N*p.c.F*p.pitch, "the upstream gradient with padded rows")
	if err != nil {
		return nil, err
	}
	p.dev.Fill(gp, 0)
	p.dev.CopyStrided(gp, gy, device.Strided{Shape: []int{p.c.N * p.c.F, p.hw}, SrcStrides: []int{p.hw, 1}, DstStrides: []int{p.pitch, 1}})
	return gp, nil
}

// imagesGrad sets images n0…n0+nb−1 of gx to their gradient for the
// (row-padded) upstream gradient gp: the columns' gradient W_gᵀ · gp[n, g]
// into dc ((nb, C·KH·KW, pitch)), then col2im.
func (p plan) imagesGrad(gx, dc, w, gp device.Buffer, n0, nb int) {
	c := p.c
	p.dev.MatMul(dc, w, gp, device.GEMM{Batch: nb * c.Groups, M: p.cg * p.kk, K: p.og, N: p.pitch, TransA: true,
		StrideA: p.og * p.cg * p.kk, CycleA: c.Groups, StrideB: p.og * p.pitch, OffB: n0 * c.F * p.pitch})
	p.dev.Window(device.Col2Im, gx, dc, nil, p.window(n0, nb, false))
}

// Conv2dBackward implements device.Convolver's Conv2dBackward on dev's
// kernels: per chunk of images, the filters' gradient as gy times each
// image's columns (kept ones if given), summed over the batch, with the
// bias's as its last column when it rides in the products; the images'
// as col2im of Wᵀ·gy.
func Conv2dBackward(dev device.Device, gx, gw, gb, x, w, gy device.Buffer, c device.Conv2D, kept []device.Buffer) error {
	p := planOf(dev, gy.DType(), c)
	if gy.Len() == 0 || c.N*c.C*c.H*c.W == 0 {
		// No products: gradients of zeros (an empty batch, no filters or
		// no channels), but for the bias's, gy's sum.
		for _, b := range []device.Buffer{gx, gw} {
			if b != nil {
				dev.Fill(b, 0)
			}
		}
		if gb != nil {
			dev.Reduce(device.Sum, gb, gy, []int{c.N, c.F, p.hw}, []int{0, 2})
		}
		return nil
	}
	gp, err := p.padded(gy)
	if err != nil {
		return err
	}
	if gp != gy {
		defer dev.Free(gp)
	}
	fused := gw != nil && p.fused(gb != nil)
	if gb != nil && !fused {
		dev.Reduce(device.Sum, gb, gy, []int{c.N, c.F, p.hw}, []int{0, 2})
	}
	if gw == nil {
		return p.inputGrad(gx, w, gp)
	}
	kr, acc := p.rows(fused), gw // acc: the filters' gradient, with the bias's if fused
	if fused {
		if acc, err = p.scratch(c.F*kr, "the filters' gradient with the bias's"); err != nil {
			return err
		}
		defer dev.Free(acc)
	}
	var chunk device.Buffer // a later chunk's sum over its images, added to acc
	defer func() {
		if chunk != nil {
			dev.Free(chunk)
		}
	}()
	first := true
	_, err = p.columns(x, fused, kept, false, func(n0, nb int, cols device.Buffer, kept bool) error {
		// Per image and group, gy[n, g] · cols[n, g]ᵀ; summed over images.
		part, err := p.scratch(nb*c.F*kr, "the filters' gradient per image")
		if err != nil {
			return err
		}
		defer dev.Free(part)
		dev.MatMul(part, gp, cols, device.GEMM{Batch: nb * c.Groups, M: p.og, K: p.pitch, N: kr, TransB: true,
			StrideA: p.og * p.pitch, OffA: n0 * c.F * p.pitch, StrideB: kr * p.pitch})
		if first {
			dev.Reduce(device.Sum, acc, part, []int{nb, c.F * kr}, []int{0})
		} else {
			if chunk == nil {
				if chunk, err = p.scratch(c.F*kr, "the filters' gradient of a chunk"); err != nil {
					return err
				}
			}
			dev.Reduce(device.Sum, chunk, part, []int{nb, c.F * kr}, []int{0})
			dev.Axpy(acc, chunk, 1)
		}
		first = false
		if gx == nil {
			return nil
		}
		// The columns' gradient, W_gᵀ · gy[n, g], into cols (as (nb,
		// C·KH·KW, pitch): no row of ones), or into a matrix of its own if
		// cols are kept ones, then col2im.
		dc := cols
		if kept {
			if dc, err = p.scratch(nb*c.C*p.kk*p.pitch, "the columns' gradient"); err != nil {
				return err
			}
			defer dev.Free(dc)
		}
		p.imagesGrad(gx, dc, w, gp, n0, nb)
		return nil
	})
	if err != nil || !fused {
		return err
	}
	// Split acc ([F, taps + 1], the bias's gradient its last column).
	k := kr - 1
	dev.CopyStrided(gw, acc, device.Strided{Shape: []int{c.F, k}, SrcStrides: []int{kr, 1}, DstStrides: []int{k, 1}})
	dev.CopyStrided(gb, acc, device.Strided{Shape: []int{c.F}, SrcStrides: []int{kr}, DstStrides: []int{1}, SrcOffset: k})
	return nil
}

// inputGrad sets gx alone (conv_transpose2d's forward), from the
// row-padded upstream gradient gp: per chunk of images, W_gᵀ · gp[n, g]
// and col2im, with neither the images' columns nor the filters' gradient.
func (p plan) inputGrad(gx, w, gp device.Buffer) error {
	if gx == nil {
		return nil
	}
	step := max(p.budget/max(p.c.C*p.kk*p.pitch, 1), 1)
	for n0 := 0; n0 < p.c.N; n0 += step {
		nb := min(step, p.c.N-n0)
		dc, err := p.scratch(nb*p.c.C*p.kk*p.pitch, "the columns' gradient")
		if err != nil {
			return err
		}
		p.imagesGrad(gx, dc, w, gp, n0, nb)
		p.dev.Free(dc)
	}
	return nil
}
