package ops_test

import (
	"fmt"
	"log"
	"math"

	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/tensor"
)

func ExampleAdd() {
	dev, err := device.Open("cpu")
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()

	// A column (3×1) plus a row (1×2) broadcasts to a 3×2 matrix.
	col := tensor.Must(tensor.FromFloat32(dev, []float32{1, 2, 3}, 3, 1))
	defer col.Release()
	row := tensor.Must(tensor.FromFloat32(dev, []float32{10, 20}, 1, 2))
	defer row.Release()

	sum := ops.Add(col, row)
	defer sum.Release()
	fmt.Println(sum)

	// The gradients are summed back to each operand's shape.
	g := tensor.Must(tensor.Ones(dev, device.Float32, 3, 2))
	defer g.Release()
	gcol, grow := ops.AddBackward(col, row, g)
	defer gcol.Release()
	defer grow.Release()
	fmt.Println(gcol.Shape(), grow.Shape())
	// Output:
	// Tensor([3 2], float32, cpu)
	// [[11 21]
	//  [12 22]
	//  [13 23]]
	// [3 1] [1 2]
}

func ExampleMatMulBackward() {
	dev, err := device.Open("cpu")
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()

	a := tensor.Must(tensor.FromFloat64(dev, []float64{1, 2, 3, 4}, 2, 2))
	defer a.Release()
	b := tensor.Must(tensor.FromFloat64(dev, []float64{5, 6, 7, 8}, 2, 2))
	defer b.Release()
	c := ops.MatMul(a, b)
	defer c.Release()
	fmt.Println(c)

	// The upstream gradient of Sum(c) is all ones; then ga = g·bᵀ and
	// gb = aᵀ·g.
	g := tensor.Must(tensor.Ones(dev, device.Float64, 2, 2))
	defer g.Release()
	ga, gb := ops.MatMulBackward(a, b, g)
	defer ga.Release()
	defer gb.Release()
	fmt.Println(ga)
	fmt.Println(gb)
	// Output:
	// Tensor([2 2], float64, cpu)
	// [[19 22]
	//  [43 50]]
	// Tensor([2 2], float64, cpu)
	// [[11 15]
	//  [11 15]]
	// Tensor([2 2], float64, cpu)
	// [[4 4]
	//  [6 6]]
}

func ExampleSoftmaxCrossEntropy() {
	dev, err := device.Open("cpu")
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()

	// Logits this large would overflow a naive exp; the loss is still finite.
	logits := tensor.Must(tensor.FromFloat32(dev, []float32{1000, -1000, -1000, 1000}, 2, 2))
	defer logits.Release()
	labels := tensor.Must(tensor.FromInt32(dev, []int32{0, 0}))
	defer labels.Release()
	loss := ops.SoftmaxCrossEntropy(logits, labels)
	defer loss.Release()
	v, err := loss.Float32s()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(v[0])
	// Output:
	// 1000
}

func ExampleMaxBackward() {
	dev, err := device.Open("cpu")
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()

	// The gradient of a maximum is split equally among its ties.
	x := tensor.Must(tensor.FromFloat32(dev, []float32{1, 3, 2, 3}))
	g := tensor.Must(tensor.Scalar(dev, device.Float32, 1))
	fmt.Println(ops.Max(x), ops.ArgMax(x))
	fmt.Println(ops.MaxBackward(x, g, nil, false))
	// Output:
	// Tensor([], float32, cpu)
	// 3 Tensor([], int32, cpu)
	// 1
	// Tensor([4], float32, cpu)
	// [0 0.5 0 0.5]
}

func ExampleTable() {
	// Every op of the catalogue, with the WGSL kernel family that runs it.
	for _, op := range ops.Table()[:3] {
		fmt.Printf("%s (%s): %s\n", op.Name, op.Family, op.Doc)
	}
	exp := ops.ExpOp // an op's handle: autograd.Apply(ops.ExpOp, nil, x) records it on a tape
	fmt.Println(len(exp.Cases) > 0, exp.Backward != nil)
	// Output:
	// add (binary): a + b.
	// sub (binary): a − b.
	// mul (binary): a·b.
	// true true
}

func ExampleMatMul_batched() {
	dev, err := device.Open("cpu")
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()

	// Two 1×2 matrices times one shared 2×2 matrix: batch axes broadcast,
	// as in NumPy.
	a := tensor.Must(tensor.FromFloat32(dev, []float32{1, 2, 3, 4}, 2, 1, 2))
	defer a.Release()
	b := tensor.Must(tensor.FromFloat32(dev, []float32{1, 0, 0, 10}, 2, 2))
	defer b.Release()
	c := ops.MatMul(a, b)
	defer c.Release()
	fmt.Println(c)
	// Output:
	// Tensor([2 1 2], float32, cpu)
	// [[[1 20]]
	//  [[3 40]]]
}

func ExampleConv2d() {
	dev, err := device.Open("cpu")
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()

	// One 3×3 image, one 2×2 filter that sums its window, stride 1.
	x := tensor.Must(tensor.FromFloat32(dev, []float32{1, 2, 3, 4, 5, 6, 7, 8, 9}, 1, 1, 3, 3))
	defer x.Release()
	w := tensor.Must(tensor.Ones(dev, device.Float32, 1, 1, 2, 2))
	defer w.Release()
	y := ops.Conv2d(x, w, nil, ops.Window{Stride: [2]int{1, 1}})
	defer y.Release()
	fmt.Println(y)

	p := ops.MaxPool2d(x, ops.Window{Kernel: [2]int{2, 2}, Stride: [2]int{1, 1}})
	defer p.Release()
	fmt.Println(p)
	// Output:
	// Tensor([1 1 2 2], float32, cpu)
	// [[[[12 16]
	//    [24 28]]]]
	// Tensor([1 1 2 2], float32, cpu)
	// [[[[5 6]
	//    [8 9]]]]
}

func ExampleLayerNorm() {
	dev, err := device.Open("cpu")
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()

	// Each row of 4 is normalised to zero mean and unit variance, then
	// scaled by w and shifted by b; a constant row normalises to 0.
	x := tensor.Must(tensor.FromFloat64(dev, []float64{1, 2, 3, 4, 10, 10, 10, 10}, 2, 4))
	defer x.Release()
	w := tensor.Must(tensor.Full(dev, device.Float64, 2, 4))
	defer w.Release()
	b := tensor.Must(tensor.Full(dev, device.Float64, 1, 4))
	defer b.Release()
	y := ops.LayerNorm(x, []int{4}, w, b, ops.DefaultLayerNormEps)
	defer y.Release()
	v, _ := y.Float64s()
	fmt.Printf("%.4f\n", v)
	// Output:
	// [-1.6833 0.1056 1.8944 3.6833 1.0000 1.0000 1.0000 1.0000]
}

func ExampleMaskedFill() {
	dev, err := device.Open("cpu")
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()

	// A causal attention mask: scores above the diagonal become −Inf, so
	// that a softmax gives them no weight.
	scores := tensor.Must(tensor.Zeros(dev, device.Float32, 3, 3))
	defer scores.Release()
	ones := tensor.Must(tensor.Ones(dev, device.Float32, 3, 3))
	defer ones.Release()
	future := ops.Triu(ones, 1)
	defer future.Release()
	masked := ops.MaskedFill(scores, future, math.Inf(-1))
	defer masked.Release()
	p := ops.Softmax(masked, -1)
	defer p.Release()
	fmt.Println(p)
	// Output:
	// Tensor([3 3], float32, cpu)
	// [[1 0 0]
	//  [0.5 0.5 0]
	//  [0.333333 0.333333 0.333333]]
}
