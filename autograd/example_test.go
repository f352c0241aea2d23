package autograd_test

import (
	"fmt"
	"log"

	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/tensor"
)

func ExampleVar_Backward() {
	dev, err := device.Open("cpu")
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()

	// loss = Σ w·x with x given: the gradient of w is x.
	w := autograd.Leaf(tensor.Must(tensor.FromFloat32(dev, []float32{1, 2, 3})), true)
	x := autograd.Leaf(tensor.Must(tensor.FromFloat32(dev, []float32{4, 5, 6})), false)
	loss := ops.Sum(ops.Mul(w, x))
	if err := loss.Backward(); err != nil {
		log.Fatal(err)
	}
	fmt.Println(loss.Value())
	fmt.Println(w.Grad())

	// Evaluation: what flows from x.NoGrad() is not recorded, though w
	// requires a gradient.
	eval := ops.Sum(ops.Mul(w, x.NoGrad()))
	fmt.Println(loss.RequiresGrad(), eval.RequiresGrad())
	// Output:
	// Tensor([], float32, cpu)
	// 32
	// Tensor([3], float32, cpu)
	// [4 5 6]
	// true false
}
