package digits_test

import (
	"fmt"
	"log"

	"github.com/permlab/permlab/dataset"
	"github.com/permlab/permlab/networks/digits"
)

func ExampleNew() {
	c, err := digits.New(1)
	if err != nil {
		log.Fatal(err)
	}
	for _, p := range c.Params() {
		fmt.Println(p.Name, p.Value.Shape)
	}
	blank := &dataset.Images{N: 1, Channels: 1, Height: 28, Width: 28, Pixels: make([]float64, 28*28)}
	z, err := c.Logits(blank)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(z), "logits")
	// Output:
	// conv1.W [32 25]
	// conv1.b [32]
	// conv2.W [64 800]
	// conv2.b [64]
	// hidden.W [1024 128]
	// hidden.b [128]
	// out.W [128 10]
	// out.b [10]
	// 10 logits
}
