package tensor_test

import (
	"errors"
	"fmt"
	"log"

	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/tensor"
)

func ExampleFromFloat32() {
	dev, err := device.Open("cpu")
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()

	x, err := tensor.FromFloat32(dev, []float32{1, 2, 3, 4, 5, 6}, 2, 3)
	if err != nil {
		log.Fatal(err)
	}
	defer x.Release()
	fmt.Println(x)
	// Output:
	// Tensor([2 3], float32, cpu)
	// [[1 2 3]
	//  [4 5 6]]
}

func ExampleMaybe() {
	dev, err := device.Open("cpu")
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()
	x := tensor.Must(tensor.Zeros(dev, device.Float32, 2, 3))
	defer x.Release()

	// Reshaping six elements into four is a programmer error: Reshape
	// panics, and Maybe turns the panic back into an error.
	err = tensor.Maybe(func() { x.Reshape(4) })
	fmt.Println(errors.Is(err, tensor.ErrShape))
	fmt.Println(err)
	// Output:
	// true
	// Tensor.Reshape: 6 values do not fill shape [4] (4 elements)
}

func ExampleTensor_Reshape() {
	dev, err := device.Open("cpu")
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()
	x := tensor.Must(tensor.FromInt32(dev, []int32{1, 2, 3, 4, 5, 6}))
	defer x.Release()

	// -1 infers a dimension; the view shares x's memory.
	m := x.Reshape(-1, 2)
	defer m.Release()
	fmt.Println(m.Shape())
	fmt.Println(m)
	// Output:
	// [3 2]
	// Tensor([3 2], int32, cpu)
	// [[1 2]
	//  [3 4]
	//  [5 6]]
}

func ExampleTensor_Float64s() {
	dev, err := device.Open("cpu")
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()
	x := tensor.Must(tensor.Full(dev, device.Float32, 0.5, 3))
	defer x.Release()

	v, err := x.Float64s()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(v)

	// An int32 readback of a float tensor is an error.
	_, err = x.Int32s()
	fmt.Println(err)
	// Output:
	// [0.5 0.5 0.5]
	// Tensor.Int32s: tensor is float32; want int32
}

func ExampleTidy() {
	dev, err := device.Open("cpu")
	if err != nil {
		log.Fatal(err)
	}
	x := tensor.Must(tensor.FromFloat32(dev, []float32{1, 2, 3}, 3))
	var tmp, xv *tensor.Tensor
	y := tensor.Tidy(func(s *tensor.Scope) *tensor.Tensor {
		// A tensor made inside joins by Track, one from outside by Use;
		// what is computed from them joins by itself.
		tmp = s.Track(tensor.Must(tensor.Full(dev, device.Float32, 10, 3)))
		xv = s.Use(x).Reshape(1, 3)
		return tmp.Reshape(3, 1)
	})
	fmt.Println(tmp.Released(), xv.Released(), y.Released(), x.Released())
	fmt.Println(y.Shape())
	// Output:
	// true true false false
	// [3 1]
}
