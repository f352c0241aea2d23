package ops

import (
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/tensor"
)

// linearShape checks Linear's operands and returns the number of rows of
// x (its leading axes flattened), in and out.
func linearShape(op string, x, w, b *tensor.Tensor) (rows, in, out int) {
	if w.Rank() != 2 {
		tensor.Panicf(op, tensor.ErrShape, "weight has shape %v; want [out, in]", w.Shape())
	}
	out, in = w.Dim(0), w.Dim(1)
	if x.Rank() == 0 || x.Dim(x.Rank()-1) != in {
		tensor.Panicf(op, tensor.ErrShape, "x has shape %v, weight %v; want x's last dimension %d", x.Shape(), w.Shape(), in)
	}
	if b != nil && !equal(b.Shape(), []int{out}) {
		tensor.Panicf(op, tensor.ErrShape, "bias has shape %v; want [%d]", b.Shape(), out)
	}
	return device.Numel(x.Shape()[:x.Rank()-1]), in, out
}

// layerOperands checks Linear's tensors (b may be nil) and returns the
// device and dtype.
func layerOperands(op string, x, w, b *tensor.Tensor, more ...*tensor.Tensor) (device.Device, device.DType) {
	ts := append([]*tensor.Tensor{x, w}, more...)
	if b != nil {
		ts = append(ts, b)
	}
	return operands(op, ts...), floats(op, ts...)
}

// Linear returns x·Wᵀ + b, PyTorch's linear layer: w is [out, in], x has
// any leading batch shape and in features last, b is [out] or nil (no
// bias). The result has x's leading shape and out features last. On a
// device whose storage binding the weight (as float32) would pass
// (device.BindingLimit), the products take its rows a chunk at a time,
// forward and backward.
func Linear[V Operand[E], E any](x, w, b V) V {
	return call(LinearOp, nil, inputs("ops.Linear", []V{x, w}, b)...)
}

func linear(x, w, b *tensor.Tensor) *tensor.Tensor {
	const op = "ops.Linear"
	dev, dt := layerOperands(op, x, w, b)
	if _, in, out := linearShape(op, x, w, b); weightRows(dev, out, in) < out {
		return linearChunks(x, w, b, weightRows(dev, out, in))
	}
	// The bias rides in the product (device.GEMM.Bias), added in float32
	// before a float16 result rounds once.
	rows, in, out := linearShape(op, x, w, b)
	shape := append(x.Shape()[:x.Rank()-1], out)
	ins := []*tensor.Tensor{x, w}
	if b != nil {
		ins = append(ins, b)
	}
	y, ok := output(dev, dt, shape, ins...)
	if ok && y.Len() > 0 {
		s := device.GEMM{Batch: 1, M: rows, K: in, N: out, TransB: true}
		if b != nil {
			s.Bias = b.Buffer()
		}
		gemm(dev, y, operand{t: x}, operand{t: w}, s)
	}
	return y
}

// weightRows returns how many rows of a weight [out, in] one product
// takes on dev: out, or fewer where the weight, or the float32 stand-in
// of a float16 one, would pass the device's storage binding
// (device.BindingLimit).
func weightRows(dev device.Device, out, in int) int {
	lim, ok := dev.(device.BindingLimit)
	if !ok || in == 0 {
		return out
	}
	if per := lim.MaxBinding() / 4 / in; per >= 1 && per < out {
		return per
	}
	return out
}

// linearChunks is linear over the weight's rows per at a time, the
// results joined along the last axis.
func linearChunks(x, w, b *tensor.Tensor, per int) *tensor.Tensor {
	out := w.Dim(0)
	var ys []*tensor.Tensor
	for r0 := 0; r0 < out; r0 += per {
		r1 := min(out, r0+per)
		wc := slice(w, 0, r0, r1, 1)
		var bc *tensor.Tensor
		if b != nil {
			bc = slice(b, 0, r0, r1, 1)
		}
		ys = append(ys, linear(x, wc, bc))
		wc.Release()
		if bc != nil {
			bc.Release()
		}
	}
	y := concat(ys, ys[0].Rank()-1)
	for _, p := range ys {
		p.Release()
	}
	return y
}

// LinearBackward returns the gradients of Linear for the upstream
// gradient g (shaped like its result): gx = g·W, gw = gᵀ·x summed over
// every row of the batch, and gb = g summed to [out] (nil when b is nil).
func LinearBackward(x, w, b, g *tensor.Tensor) (gx, gw, gb *tensor.Tensor) {
	return linearBackward(x, w, b, g, true)
}

// linearBackward is LinearBackward, gx left nil unless wantX.
func linearBackward(x, w, b, g *tensor.Tensor, wantX bool) (gx, gw, gb *tensor.Tensor) {
	const op = "ops.LinearBackward"
	// float16 is read as it is: each gradient is one product or sum,
	// computed in float32 and rounded once.
	dev, dt := layerOperands(op, x, w, b, g)
	rows, in, out := linearShape(op, x, w, b)
	sameShape(op, "upstream gradient", g, append(x.Shape()[:x.Rank()-1], out))
	if per := weightRows(dev, out, in); per < out {
		return linearBackwardChunks(x, w, b, g, wantX, per)
	}
	if wantX {
		var ok bool
		gx, ok = output(dev, dt, x.Shape(), x, w, g)
		if ok && gx.Len() > 0 {
			gemm(dev, gx, operand{t: g}, operand{t: w}, device.GEMM{Batch: 1, M: rows, K: out, N: in})
		}
	}
	// gb is gᵀ's row sums: the product of gw sums them (device.GEMM.Sums).
	gw, ok := output(dev, dt, w.Shape(), x, w, g)
	if ok && gw.Len() > 0 {
		s := device.GEMM{Batch: 1, M: out, K: rows, N: in, TransA: true}
		if b != nil {
			if gb, ok = output(dev, dt, b.Shape(), x, w, g); ok {
				s.Sums = gb.Buffer()
			}
		}
		gemm(dev, gw, operand{t: g}, operand{t: x}, s)
	} else if b != nil {
		g2 := g.Reshape(rows, out)
		gb = sumTo(g2, b.Shape())
		g2.Release()
	}
	return gx, gw, gb
}

// linearBackwardChunks is linearBackward over the weight's rows per at a
// time: gx accumulates g's columns of each chunk times its rows, gw joins
// each chunk's gᵀ·x.
func linearBackwardChunks(x, w, b, g *tensor.Tensor, wantX bool, per int) (gx, gw, gb *tensor.Tensor) {
	dev, dt := x.Device(), x.DType()
	out, in := w.Dim(0), w.Dim(1)
	rows := x.Len() / max(in, 1)
	g2, x2 := g.Reshape(rows, out), x.Reshape(rows, in)
	defer g2.Release()
	defer x2.Release()
	var ok bool
	if wantX {
		gx, ok = output(dev, dt, x.Shape(), x, w, g)
		wantX = ok && gx.Len() > 0
	}
	var parts []*tensor.Tensor
	for r0 := 0; r0 < out; r0 += per {
		r1 := min(out, r0+per)
		gc, wc := slice(g2, 1, r0, r1, 1), slice(w, 0, r0, r1, 1)
		if wantX {
			gemm(dev, gx, operand{t: gc}, operand{t: wc}, device.GEMM{Batch: 1, M: rows, K: r1 - r0, N: in, Accumulate: r0 > 0})
		}
		p, ok := output(dev, dt, []int{r1 - r0, in}, x, w, g) // a failed p carries its error into gw
		if ok && p.Len() > 0 {
			gemm(dev, p, operand{t: gc}, operand{t: x2}, device.GEMM{Batch: 1, M: r1 - r0, K: rows, N: in, TransA: true})
		}
		parts = append(parts, p)
		gc.Release()
		wc.Release()
	}
	gw = concat(parts, 0)
	for _, p := range parts {
		p.Release()
	}
	if b != nil {
		gb = sumTo(g2, b.Shape())
	}
	return gx, gw, gb
}

// embedding checks Embedding's operands and returns the device, dtype and
// the number of indices, rows and row length.
func embedding(op string, idx, w *tensor.Tensor, more ...*tensor.Tensor) (dev device.Device, dt device.DType, n, v, d int) {
	dev = operands(op, append([]*tensor.Tensor{idx, w}, more...)...)
	dt = floats(op, append([]*tensor.Tensor{w}, more...)...)
	if idx.DType() != device.Int32 {
		tensor.Panicf(op, tensor.ErrDType, "indices are %v; want int32", idx.DType())
	}
	if w.Rank() != 2 {
		tensor.Panicf(op, tensor.ErrShape, "weight has shape %v; want [rows, features]", w.Shape())
	}
	return dev, dt, idx.Len(), w.Dim(0), w.Dim(1)
}

// embeddingAs is Embedding reported as op.
func embeddingAs(op string, idx, w *T) *T {
	dev, dt, n, v, d := embedding(op, idx, w)
	out, ok := output(dev, dt, append(idx.Shape(), d), idx, w)
	if ok && out.Len() > 0 {
		dev.Gather(out.Buffer(), w.Buffer(), idx.Buffer(), device.Take{Site: op, N: n, C: v, D: d, Table: true, Scale: 1})
	}
	return out
}

// Embedding returns the rows of the table w ([rows, features]) that the
// int32 indices idx (any shape) name: a tensor of idx's shape with
// features last, as PyTorch's embedding. An index outside [0, rows) gives
// NaN for its row and is reported, naming the op, the index and the row
// count, by the next readback or Sync.
func Embedding[V Operand[E], E any](idx, w V) V { return call(EmbeddingOp, nil, idx, w) }

func embeddingOf(idx, w *tensor.Tensor) *tensor.Tensor {
	return embeddingAs("ops.Embedding", idx, w)
}

// EmbeddingBackward returns the gradient of Embedding for the table w: row
// r holds the sum of the upstream gradient's rows whose index is r
// (repeated indices accumulate, in index order), zero for rows never
// taken. The indices get no gradient. Each row of the result gathers its
// sum over every index, so its cost grows as rows × indices × features.
func EmbeddingBackward(idx, w, g *tensor.Tensor) *tensor.Tensor {
	const op = "ops.EmbeddingBackward"
	dev, dt, n, v, d := embedding(op, idx, w, g)
	sameShape(op, "upstream gradient", g, append(idx.Shape(), d))
	out, ok := output(dev, dt, w.Shape(), idx, w, g)
	if ok && out.Len() > 0 {
		dev.GatherGrad(out.Buffer(), idx.Buffer(), g.Buffer(), device.Take{Site: op, N: n, C: v, D: d, Table: true, Scale: 1})
	}
	return out
}
