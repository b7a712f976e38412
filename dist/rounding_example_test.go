package dist_test

import (
	"fmt"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/dist"
	"github.com/permlab/permlab/relax"
)

func ExampleRounding() {
	// A mean near the permutation [1 0 2] and small noise.
	mu := mat.NewDense(3, 3, []float64{
		0.1, 0.8, 0.1,
		0.7, 0.2, 0.1,
		0.2, 0.0, 0.8,
	})
	sigma := mat.NewDense(3, 3, []float64{
		0.1, 0.1, 0.1,
		0.1, 0.1, 0.1,
		0.1, 0.1, 0.1,
	})
	d := dist.Rounding{Mu: mu, Sigma: sigma, Tau: 0.1}
	rng := rand.New(rand.NewPCG(1, 2))
	pt, err := d.Rand(nil, rng)
	if err != nil {
		fmt.Println(err)
		return
	}
	p, _ := relax.Round(pt)
	lp, _ := d.LogProb(pt)
	fmt.Printf("P~ =\n%.3f\nround(P~) = %v\nlog q(P~) = %.2f\n", mat.Formatted(pt), p, lp)
	// Output:
	// P~ =
	// ⎡ 0.014   0.981   0.012⎤
	// ⎢ 0.959   0.016  -0.021⎥
	// ⎣ 0.039   0.017   0.979⎦
	// round(P~) = [1 0 2]
	// log q(P~) = 24.24
}

func ExampleRoundingVar() {
	// One reparameterized draw of the rounding relaxation, scored by the
	// mixture prior: log p(P~) − log q(P~), a one-sample ELBO term
	// (without a likelihood), differentiated with respect to the mean.
	tape := ad.NewTape()
	mu := tape.Variable(&ad.Tensor{Shape: []int{2, 2}, Data: []float64{0.8, 0.2, 0.2, 0.8}})
	logSigma := tape.Const(ad.Scalar(-1))
	q := dist.RoundingVar{Mu: mu, LogSigma: logSigma, Tau: 0.2}
	pt, logq := q.Rsample(rand.New(rand.NewPCG(3, 4)))
	elbo := ad.Sub(dist.RoundingPrior{Std: 0.2}.LogProbVar(pt), logq)
	if err := tape.Backward(elbo); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("P~ = %.3f\nELBO term = %.3f\ngradient = %.3f\n", pt.Value(), elbo.Item(), mu.Grad())
	// Output:
	// P~ = [1.018 0.034 0.080 0.983]
	// ELBO term = -6.368
	// gradient = [-0.090 -0.172 -0.398 0.086]
}
