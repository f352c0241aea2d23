package nn_test

import (
	"fmt"
	"log"
	"slices"

	"github.com/extensor/extensor/autograd"
	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/nn"
	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/tensor"
)

func ExampleSequential() {
	dev := cpu.New()
	// A 4→8→3 classifier, its weights drawn from seeds as PyTorch's
	// defaults draw them.
	l1, err := nn.Linear(dev, device.Float32, 4, 8, 1)
	if err != nil {
		log.Fatal(err)
	}
	l2, err := nn.Linear(dev, device.Float32, 8, 3, 2)
	if err != nil {
		log.Fatal(err)
	}
	net := nn.Sequential{l1, nn.Relu, l2}

	x := autograd.Leaf(tensor.Must(tensor.Uniform(dev, device.Float32, -1, 1, 3, 5, 4)), false)
	y := autograd.Leaf(tensor.Must(tensor.FromInt32(dev, []int32{0, 2, 1, 1, 0}, 5)), false)
	loss := ops.CrossEntropyLoss(net.Forward(x), y, ops.MeanReduction)
	if err := loss.Backward(); err != nil {
		log.Fatal(err)
	}
	// PyTorch's state_dict names, each parameter with its gradient.
	names := net.ParamNames()
	for i, p := range net.Params() {
		fmt.Println(names[i], p.Value().Shape(), slices.Equal(p.Grad().Shape(), p.Value().Shape()))
	}
	// Output:
	// 0.weight [8 4] true
	// 0.bias [8] true
	// 2.weight [3 8] true
	// 2.bias [3] true
}
