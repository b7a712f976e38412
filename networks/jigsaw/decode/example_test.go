package decode_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/permlab/permlab/networks/jigsaw"
	"github.com/permlab/permlab/networks/jigsaw/decode"
)

// Decode 3 × 3 puzzles of smooth ramps with two briefly trained networks,
// alone and as an ensemble, whose decoder maximises the mean of their
// scores (here with the seam term and simulated annealing).
func ExampleEnsemble() {
	rng := rand.New(rand.NewPCG(3, 4))
	images := func(n int) []float64 {
		x := make([]float64, n*81)
		for b := range n {
			a, c := 0.5+0.5*rng.Float64(), 0.5+0.5*rng.Float64()
			for y := range 9 {
				for xx := range 9 {
					x[b*81+y*9+xx] = (a*float64(y) + c*float64(xx)) / 18
				}
			}
		}
		return x
	}
	cfg := jigsaw.Config{
		P: 3, Channels: 1, Height: 9, Width: 9,
		Filters: 4, Kernel: 3, Pool: 1, Heads: 1, Refine: 1,
		Tau: 1, Iters: 10, Samples: 1, Noise: 0.5,
	}
	train := images(200)
	var nets []*jigsaw.Net
	for seed := range uint64(2) {
		net, err := jigsaw.New(cfg, seed+1)
		if err != nil {
			fmt.Println(err)
			return
		}
		tc := jigsaw.TrainConfig{Steps: 100, Batch: 16, LR: 0.01, Seed: seed + 1}
		if _, err := net.Train(context.Background(), jigsaw.Data{Pixels: train}, tc); err != nil {
			fmt.Println(err)
			return
		}
		nets = append(nets, net)
	}
	ens, err := decode.NewEnsemble(nets...)
	if err != nil {
		fmt.Println(err)
		return
	}
	test, err := jigsaw.MakePuzzles(ens.Grid(), images(200), nil, rng)
	if err != nil {
		fmt.Println(err)
		return
	}
	d := decode.Decoder{Pairwise: 1, Seam: 100, Anneal: 2000, StartTemp: 1, EndTemp: 0.01, Seed: 1}
	for k, net := range nets {
		m, err := decode.Evaluate(net, test, d)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("network %d: %.1f%% of pieces wrong\n", k+1, 100*m.PropWrongIdentical)
	}
	m, err := ens.Evaluate(test, d)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("ensemble of %d: %.1f%% of pieces wrong\n", ens.Len(), 100*m.PropWrongIdentical)
	// Output:
	// network 1: 5.8% of pieces wrong
	// network 2: 4.9% of pieces wrong
	// ensemble of 2: 4.2% of pieces wrong
}

// Train a critic on 3 × 3 puzzles of smooth 18 × 18 images (sums of
// waves), then score new images assembled right and with two pieces
// swapped: the critic's log-odds D tell them apart.
func ExampleCritic() {
	rng := rand.New(rand.NewPCG(3, 1))
	waves := func(n int) []float64 {
		x := make([]float64, n*18*18)
		for b := range n {
			fy, fx, ph := 0.1+0.2*rng.Float64(), 0.1+0.2*rng.Float64(), 2*math.Pi*rng.Float64()
			for y := range 18 {
				for xx := range 18 {
					x[(b*18+y)*18+xx] = math.Sin(fy*float64(y) + fx*float64(xx) + ph)
				}
			}
		}
		return x
	}
	g, err := jigsaw.NewGrid(1, 18, 18, 3)
	if err != nil {
		panic(err)
	}
	critic, err := decode.NewCritic(g, 1)
	if err != nil {
		panic(err)
	}
	if _, err := critic.Train(context.Background(), jigsaw.Data{Pixels: waves(400)}, decode.CriticConfig{Epochs: 4, LR: 3e-3, Seed: 2}); err != nil {
		panic(err)
	}
	test := waves(100)
	swapped := make([]float64, len(test))
	copy(swapped, test)
	for b := range 100 { // swap the top-left and bottom-right 6 × 6 pieces
		img := swapped[b*324 : (b+1)*324]
		for y := range 6 {
			for x := range 6 {
				img[y*18+x], img[(y+12)*18+x+12] = img[(y+12)*18+x+12], img[y*18+x]
			}
		}
	}
	right, err := critic.Scores(test)
	if err != nil {
		panic(err)
	}
	wrong, err := critic.Scores(swapped)
	if err != nil {
		panic(err)
	}
	told := 0
	for b := range right {
		if right[b] > wrong[b] {
			told++
		}
	}
	fmt.Printf("right scored above swapped in %d of 100 images\n", told)
	// Output:
	// right scored above swapped in 99 of 100 images
}
