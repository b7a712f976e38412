package jigsaw_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/permlab/permlab/networks/jigsaw"
)

// Train a Sinkhorn network on 2 × 2 puzzles of synthetic 8 × 8 images (a
// blob near the centre, so each quadrant shows a different corner of it),
// then solve new puzzles exactly with the matching operator.
func Example() {
	rng := rand.New(rand.NewPCG(1, 2))
	images := func(n int) []float64 {
		x := make([]float64, n*64)
		for b := range n {
			a := 0.6 + 0.4*rng.Float64()
			for y := range 8 {
				for xx := range 8 {
					r2 := (float64(y)-3.5)*(float64(y)-3.5) + (float64(xx)-3.5)*(float64(xx)-3.5)
					x[b*64+y*8+xx] = a * math.Exp(-r2/6)
				}
			}
		}
		return x
	}
	cfg := jigsaw.Config{
		P: 2, Channels: 1, Height: 8, Width: 8,
		Filters: 4, Kernel: 3, Pool: 2, Heads: 1,
		Tau: 1, Iters: 10, Samples: 1, Noise: 0.5,
	}
	net, err := jigsaw.New(cfg, 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	tc := jigsaw.TrainConfig{Steps: 200, Batch: 16, LR: 0.01, Seed: 1}
	if _, err := net.Train(context.Background(), jigsaw.Data{Pixels: images(200)}, tc); err != nil {
		fmt.Println(err)
		return
	}
	test, err := jigsaw.MakePuzzles(net.Grid(), images(100), nil, rng)
	if err != nil {
		fmt.Println(err)
		return
	}
	m, err := net.Evaluate(test)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d puzzles: Kendall tau %.2f, prop. wrong %.2f, l1 %.2f\n", m.Puzzles, m.KendallTau, m.PropWrong, m.L1)
	// Output:
	// 100 puzzles: Kendall tau 1.00, prop. wrong 0.00, l1 0.00
}
