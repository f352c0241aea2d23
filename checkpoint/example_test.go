package checkpoint_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/extensor/extensor/checkpoint"
	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/tensor"
)

func ExampleSave() {
	dev := cpu.New()
	dir, err := os.MkdirTemp("", "checkpoint")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "model.safetensors")

	w := tensor.Must(tensor.FromFloat32(dev, []float32{1, 2, 3, 4, 5, 6}, 2, 3))
	if err := checkpoint.Save(path, map[string]*tensor.Tensor{"fc.weight": w}, map[string]string{"step": "20"}); err != nil {
		log.Fatal(err)
	}
	// A safetensors file: PyTorch's safetensors.torch.load_file reads it.
	f, err := checkpoint.Read(path)
	if err != nil {
		log.Fatal(err)
	}
	back, err := f.Tensor(dev, "fc.weight")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(f.Names(), back)
	// Output:
	// [fc.weight] Tensor([2 3], float32, cpu)
	// [[1 2 3]
	//  [4 5 6]]
}
