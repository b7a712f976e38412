package dist_test

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/dist"
)

// A relaxed one-hot sample y = softmax((l + g)/λ) and its log density.
func ExampleConcrete() {
	c := dist.Concrete{Logits: []float64{math.Log(0.2), math.Log(0.5), math.Log(0.3)}, Temp: 0.1}
	y, err := c.Rand(nil, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		fmt.Println(err)
		return
	}
	lp, _ := c.LogProb(y)
	fmt.Printf("y = %.4f, log p(y) = %.4f\n", y, lp)
	// Output: y = [0.0068 0.1426 0.8506], log p(y) = -0.2644
}

// The KL terms of the three categorical-VAE variants of the seed for one
// latent with k = 4 categories, on the tape: a Monte Carlo estimate of
// KL(Concrete(l, λ) ‖ Concrete(0, λ_prior)) in log space (ExpConcrete
// densities, stable at small λ), and the closed-form Gumbel-space KL.
func ExampleConcreteVar() {
	tp := ad.NewTape()
	logits := tp.Variable(&ad.Tensor{Shape: []int{1, 4}, Data: []float64{1, 0, -1, 0.5}})
	q := dist.ConcreteVar{Logits: logits, Temp: 0.5}
	p := dist.ConcreteVar{Logits: tp.Const(ad.Zeros(4)), Temp: 0.5}
	_, z := q.Rsample(rand.New(rand.NewPCG(3, 4)))
	x := ad.LogSoftmax(z, -1) // log of the relaxed one-hot sample
	klMC := ad.Sum(ad.Sub(q.LogProbLog(x), p.LogProbLog(x)))
	klGumbel := dist.GumbelKLVar(logits, 0.5, 0.5)
	loss := ad.Add(klMC, klGumbel)
	if err := tp.Backward(loss); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("gradient shape:", len(logits.Grad()))
	fmt.Printf("Gumbel-space KL: %.4f\n", klGumbel.Item())
	// Output:
	// gradient shape: 4
	// Gumbel-space KL: 1.1927
}
