package dataset_test

import (
	"fmt"
	"log"

	"github.com/permlab/permlab/dataset"
)

// A held-out validation set is the tail of the training set, and a
// minibatch is a contiguous copy of whole images.
func ExampleImages_Split() {
	im := &dataset.Images{N: 6, Channels: 1, Height: 1, Width: 2,
		Pixels: []float64{0, .1, .2, .3, .4, .5, .6, .7, .8, .9, 1, 1},
		Labels: []int{0, 1, 2, 3, 4, 5}}
	fit, val, err := im.Split(4)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(fit.N, val.N, val.Labels)
	fmt.Println(fit.Batch([]int{3, 0}, nil), fit.BatchLabels([]int{3, 0}, nil))
	// Output:
	// 4 2 [4 5]
	// [0.6 0.7 0 0.1] [3 0]
}

// The usual MNIST set-up: fit on the first 50,000 training images,
// validate on the last 10,000, and test once.
func ExampleLoadMNIST() {
	train, test, err := dataset.LoadMNIST("../shared/data/mnist")
	if err != nil {
		log.Fatal(err) // says how to get the files
	}
	fit, val, err := train.Split(50000)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(fit.N, val.N, test.N) // 50000 10000 10000
}
