package sorting_test

import (
	"context"
	"fmt"
	"log"

	"github.com/permlab/permlab/networks/sorting"
)

// Train a Sinkhorn network on lists of five numbers from U(0, 1), sort a
// list from another interval with it, and measure it on 1000 test lists.
func Example() {
	cfg := sorting.DefaultConfig(5)
	cfg.Steps = 300
	net, err := sorting.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	if err := net.Train(context.Background(), nil); err != nil {
		log.Fatal(err)
	}

	list := []float64{10.7, 10.2, 10.9, 10.1, 10.4}
	ps, err := net.Sort([][]float64{list})
	if err != nil {
		log.Fatal(err)
	}
	inv, err := ps[0].Inverse() // list[i] goes to position ps[0][i]
	if err != nil {
		log.Fatal(err)
	}
	sorted, err := inv.Apply(list)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("positions:", ps[0])
	fmt.Println("sorted:   ", sorted)

	m, err := sorting.Evaluate(net, 0, 1, 1000, 2)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("U(0,1): prop. any wrong %.3f, Kendall tau %.3f\n", m.PropAnyWrong, m.KendallTau)
	// Output:
	// positions: [3 1 4 0 2]
	// sorted:    [10.1 10.2 10.4 10.7 10.9]
	// U(0,1): prop. any wrong 0.000, Kendall tau 1.000
}
