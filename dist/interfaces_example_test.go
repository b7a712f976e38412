package dist_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/permlab/permlab/dist"
)

// entropy estimates −E[log p(X)] from n draws: one generic function for
// every distribution with a sampler and a density over the same type.
func entropy[T any](r dist.Rander[T], lp dist.LogProber[T], n int, rng *rand.Rand) (float64, error) {
	var h float64
	for range n {
		x, err := r.Rand(rng)
		if err != nil {
			return 0, err
		}
		l, err := lp.LogProb(x)
		if err != nil {
			return 0, err
		}
		h -= l / float64(n)
	}
	return h, nil
}

// Generic code over distributions: Categorical is a Rander[int] and a
// LogProber[int]; Normal fills a caller's buffer (a Filler) and Allocating
// makes it a Rander; the distuv-style Gumbel goes through the function
// adapters.
func Example_interfaces() {
	rng := rand.New(rand.NewPCG(1, 2))

	c := dist.Categorical{Logits: []float64{0, 1, 2}}
	h, err := entropy[int](c, c, 10000, rng)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("Categorical: %.2f\n", h) // exact 0.83

	n := dist.Normal{Mu: []float64{0, 3}, Sigma: []float64{1, 2}}
	h, err = entropy(dist.Allocating[[]float64](n), dist.LogProber[[]float64](n), 10000, rng)
	if err != nil {
		fmt.Println(err)
		return
	}
	exact, _ := n.Entropy()
	fmt.Printf("Normal: %.2f (exact %.2f)\n", h, exact)

	g := dist.Gumbel{Mu: 0, Beta: 2}
	r := dist.RandFunc[float64](func(rng *rand.Rand) (float64, error) { return g.Rand(rng), g.Validate() })
	lp := dist.LogProbFunc[float64](func(x float64) (float64, error) { return g.LogProb(x), g.Validate() })
	h, err = entropy(r, lp, 10000, rng)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("Gumbel: %.2f (exact %.2f)\n", h, g.Entropy())
	// Output:
	// Categorical: 0.83
	// Normal: 3.54 (exact 3.53)
	// Gumbel: 2.26 (exact 2.27)
}
