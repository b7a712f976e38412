package dist_test

import (
	"fmt"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/dist"
	"github.com/permlab/permlab/relax"
)

// Fit the variational parameter X of q = GS(X, τ) so that its samples
// reconstruct a target permutation, with the Gumbel-space KL to the prior
// GS(0, τ_prior) as regulariser: the negative ELBO
//
//	(1/K) Σ_k ‖S((X + ε_k)/τ) - P‖² + β·KL((X + ε)/τ ‖ ε/τ_prior).
func ExampleGumbelSinkhornVar() {
	const n, k, tau, tauPrior = 4, 5, 0.5, 1.0
	target := []float64{ // the permutation 0→2, 1→0, 2→3, 3→1
		0, 0, 1, 0,
		1, 0, 0, 0,
		0, 0, 0, 1,
		0, 1, 0, 0,
	}
	x := ad.NewParam("X", ad.Zeros(n, n))
	rng := rand.New(rand.NewPCG(1, 2))
	tp := ad.NewTape()
	for step := 0; step < 300; step++ {
		tp.Reset()
		xv := tp.Param(x)
		s := dist.GumbelSinkhornVar{X: xv, Tau: tau, Iters: 20}.Rsample(rng, k)
		diff := ad.Sub(s.Soft, tp.Const(&ad.Tensor{Shape: []int{n, n}, Data: target}))
		fit := ad.Scale(ad.Sum(ad.Square(diff)), 1.0/k)
		loss := ad.Add(fit, ad.Scale(dist.GumbelKLVar(xv, tau, tauPrior), 0.01))
		if err := tp.Backward(loss); err != nil {
			fmt.Println(err)
			return
		}
		for i, g := range x.Grad.Data { // plain gradient descent
			x.Value.Data[i] -= 0.5 * g
		}
		x.ZeroGrad()
	}
	p, err := relax.Matching(mat.NewDense(n, n, x.Value.Data))
	if err != nil {
		fmt.Println(err)
		return
	}
	kl, _ := dist.GumbelKL(x.Value.Data, tau, tauPrior)
	fmt.Println("M(X) =", p)
	fmt.Println("KL > 0:", kl > 0)
	// Output:
	// M(X) = [2 0 3 1]
	// KL > 0: true
}

// The closed-form KL of the seed's appendix between the Gumbel-space
// variables (X + ε)/τ and ε/τ_prior; it is zero when q is the prior.
func ExampleGumbelKL() {
	kl0, _ := dist.GumbelKL([]float64{0, 0, 0, 0}, 1, 1)
	kl, _ := dist.GumbelKL([]float64{2, -1, -1, 2}, 0.5, 1)
	fmt.Printf("%.4f %.4f\n", kl0, kl)
	// Output: 0.0000 29.1658
}

// Exact samples of the Gumbel-Matching distribution GM(X) = M(X + ε).
func ExampleGumbelMatching() {
	x := mat.NewDense(3, 3, []float64{
		5, 0, 0,
		0, 0, 5,
		0, 5, 0,
	})
	ps, err := dist.GumbelMatching{X: x}.RandBatch(4, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(ps)
	// Output: [[0 2 1] [0 2 1] [0 2 1] [0 2 1]]
}
