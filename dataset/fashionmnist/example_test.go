package fashionmnist_test

import (
	"fmt"
	"log"

	"github.com/extensor/extensor/dataset/fashionmnist"
)

func ExampleLoad() {
	train, test, err := fashionmnist.Load(fashionmnist.DefaultDir)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("train: %d images of %d×%d\n", train.N, train.Rows, train.Cols)
	fmt.Printf("test: %d images\n", test.N)

	// Iterate over the training set in batches of 64.
	const batchSize = 64
	images := make([]float32, batchSize*train.Features())
	labels := make([]int32, batchSize)
	for start := 0; start < train.N; start += batchSize {
		n := train.Batch(start, batchSize, images, labels)
		_ = images[:n*train.Features()] // feed to a model
		_ = labels[:n]
	}
}
