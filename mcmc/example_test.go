package mcmc_test

import (
	"context"
	"fmt"
	"log"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/mcmc"
	"github.com/permlab/permlab/perm"
)

// logits is a target over permutations of 3 items: log π(p) = Σ_i x[i][p[i]].
type logits [][]float64

func (x logits) LogDensity(p perm.Perm) float64 {
	s := 0.0
	for i, c := range p {
		s += x[i][c]
	}
	return s
}

// SwapDelta makes the kernel O(1) per step.
func (x logits) SwapDelta(p perm.Perm, i, j int) float64 {
	return x[i][p[j]] + x[j][p[i]] - x[i][p[i]] - x[j][p[j]]
}

// Sample a permutation with SwapMH under a candidate mask, four chains in
// parallel, and check the marginal of row 0 against the exact posterior.
func ExampleSwapMH() {
	x := logits{{2, 1, 0}, {0, 1, 0}, {0, 0, 1}}
	mask, _ := perm.FullMask(3)
	_ = mask.Set(2, 0, false) // row 2 may not take column 0

	sampler := mcmc.Sampler[perm.Perm]{
		Chains: 4, Burn: 200, Samples: 5000, Seed: 1,
		Init: func(c int, rng *rand.Rand) (perm.Perm, []mcmc.Stage[perm.Perm], error) {
			k, err := mcmc.NewSwapMH(3, x, mask, nil)
			if err != nil {
				return nil, nil, err
			}
			return perm.Identity(3), []mcmc.Stage[perm.Perm]{{Name: "swap", Kernel: k, Repeat: 3}}, nil
		},
		Record: func(dst []float64, p perm.Perm) []float64 { return append(dst, float64(p[0])) },
	}
	res, err := sampler.Run(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	est := make([]float64, 3)
	for _, ch := range res.Chains {
		for _, row := range ch.Trace {
			est[int(row[0])] += 1.0 / (4 * 5000)
		}
	}

	// Exact marginal of row 0 over the 4 admitted permutations.
	exact := make([]float64, 3)
	z := 0.0
	for _, p := range []perm.Perm{{0, 1, 2}, {1, 0, 2}, {0, 2, 1}, {2, 0, 1}, {1, 2, 0}, {2, 1, 0}} {
		if !mask.Admits(p) {
			continue
		}
		w := math.Exp(x.LogDensity(p))
		exact[p[0]] += w
		z += w
	}
	for c := range exact {
		exact[c] /= z
	}
	fmt.Printf("P(p[0] = c) MCMC:  %.2f\n", est)
	fmt.Printf("P(p[0] = c) exact: %.2f\n", exact)
	fmt.Printf("acceptance: %.2f\n", res.Acceptance()[0].Rate())
	// Output:
	// P(p[0] = c) MCMC:  [0.88 0.10 0.01]
	// P(p[0] = c) exact: [0.88 0.10 0.01]
	// acceptance: 0.24
}

// Draw the rows of a sparse regression matrix from their Gibbs conditional.
func ExampleRegressionRows() {
	// Statistics of 100 points x_t = (±1, 0), (0, ±1) with y_t = W x_t and
	// W = [[1, 2], [0, -1]]: Sxx = 50 I, Syx = 50 W.
	sxx := mat.NewSymDense(2, []float64{50, 0, 0, 50})
	syx := mat.NewDense(2, 2, []float64{50, 100, 0, -50})
	g := mcmc.RegressionRows{
		Support:  [][]int{{0, 1}, {1}}, // W[1][0] is structurally zero
		NoiseVar: 1,
		PriorVar: 100,
	}
	post, err := g.Posterior(0, sxx, syx)
	if err != nil {
		log.Fatal(err)
	}
	cov, _ := post.Cov()
	fmt.Printf("row 0: mean %.4f, variance %.4f\n", post.Mean, cov.At(0, 0))

	w := mat.NewDense(2, 2, nil)
	if err := g.Sample(rand.New(rand.NewPCG(1, 2)), w, sxx, syx); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("W[1][0] = %v\n", w.At(1, 0))
	// Output:
	// row 0: mean [0.9998 1.9996], variance 0.0200
	// W[1][0] = 0
}

// Diagnose chains: split R-hat and effective sample size.
func ExampleSplitRHat() {
	rng := rand.New(rand.NewPCG(7, 7))
	chains := make([][]float64, 4)
	for j := range chains {
		chains[j] = make([]float64, 1000)
		for t := range chains[j] {
			chains[j][t] = rng.NormFloat64()
		}
	}
	chains[3] = append([]float64(nil), chains[3]...)
	for t := range chains[3] {
		chains[3][t] += 3 // one chain stuck elsewhere
	}
	r, _ := mcmc.SplitRHat(chains)
	ess, _ := mcmc.ESS(chains[:3])
	fmt.Printf("R-hat with a stuck chain: %.2f\n", r)
	fmt.Printf("ESS of the 3 good chains (3000 independent draws): %.0f\n", ess)
	// Output:
	// R-hat with a stuck chain: 1.74
	// ESS of the 3 good chains (3000 independent draws): 2838
}
