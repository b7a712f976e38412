package models

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/dist"
)

// PermPrior is the prior of a permutation site. Two are provided:
//
//   - UniformPerm: uniform over the permutations the site's masks and fixed
//     rows admit. MCMC and Exact target it exactly. Variational inference in
//     Gumbel space cannot: the Gumbel-Sinkhorn family has no tractable
//     density, so vi replaces it by the surrogate GS(0, τ_prior) and says so
//     in its result (see package vi).
//   - GumbelSinkhornPrior: P = S((X₀ + ε)/τ_prior), ε iid standard Gumbel,
//     read as a prior on the Gumbel-space node Z = (X₀ + ε)/τ_prior. vi
//     targets it exactly (closed-form KL in Gumbel space). It has no
//     tractable probability mass on permutations, so MCMC and Exact refuse
//     it with an error naming the site.
//
// The Gumbel-Matching distribution GM(X₀), with samples M(X₀ + ε), is the
// τ_prior → 0 limit of GumbelSinkhornPrior in permutation space; its mass
// function is intractable too (a sum over Gumbel perturbations), so it is
// used through GumbelSinkhornPrior with a small temperature.
type PermPrior interface {
	// Validate checks the prior for permutations of size n.
	Validate(n int) error
	// Tractable reports whether the prior has a probability mass function
	// known up to a constant, which MCMC and exact enumeration need.
	Tractable() bool
	// LogMass returns log p(P) up to an additive constant for an admitted
	// permutation of a tractable prior; engines call it only then.
	LogMass(p []int) float64
	String() string
}

// UniformPerm is the uniform prior over the admitted permutations.
type UniformPerm struct{}

// Validate implements PermPrior.
func (UniformPerm) Validate(int) error { return nil }

// Tractable implements PermPrior: the mass is constant.
func (UniformPerm) Tractable() bool { return true }

// LogMass implements PermPrior; the constant is dropped.
func (UniformPerm) LogMass([]int) float64 { return 0 }

func (UniformPerm) String() string { return "uniform over admitted permutations" }

// GumbelSinkhornPrior is the prior GS(X₀, τ): the site's permutation matrix
// is P = S((X₀ + ε)/τ) with ε an N×N matrix of iid standard Gumbel noise.
// Logits nil means X₀ = 0, which makes every permutation equally likely a
// priori in the τ → 0 limit.
type GumbelSinkhornPrior struct {
	Logits *mat.Dense // X₀, N×N; nil for zero
	Tau    float64    // τ_prior > 0
}

// Validate implements PermPrior.
func (g GumbelSinkhornPrior) Validate(n int) error {
	if !(g.Tau > 0) || math.IsInf(g.Tau, 1) {
		return fmt.Errorf("GumbelSinkhornPrior: Tau must be finite and > 0, got %v", g.Tau)
	}
	if g.Logits == nil {
		return nil
	}
	r, c := g.Logits.Dims()
	if r != n || c != n {
		return fmt.Errorf("GumbelSinkhornPrior: logits are %d x %d, want %d x %d", r, c, n, n)
	}
	for i := range r {
		for j := range c {
			if !finite(g.Logits.At(i, j)) {
				return fmt.Errorf("GumbelSinkhornPrior: logit (%d, %d) is %v", i, j, g.Logits.At(i, j))
			}
		}
	}
	return nil
}

// Tractable implements PermPrior: the mass of GS on permutations is not
// available.
func (GumbelSinkhornPrior) Tractable() bool { return false }

// LogMass implements PermPrior; it is never called for this prior.
func (GumbelSinkhornPrior) LogMass([]int) float64 { return math.NaN() }

func (g GumbelSinkhornPrior) String() string {
	if g.Logits == nil {
		return fmt.Sprintf("GS(0, τ = %g) in Gumbel space", g.Tau)
	}
	return fmt.Sprintf("GS(X₀, τ = %g) in Gumbel space", g.Tau)
}

// RealPrior is the prior of a real site: independent coordinates with a
// log density, on plain values (MCMC) and on an ad tape (VI, HMC).
type RealPrior interface {
	Validate() error
	// LogProb returns the joint log density of the coordinates x.
	LogProb(x []float64) float64
	// LogProbVar returns, for x of shape (K, …), the K joint log densities
	// of its rows, shape (K).
	LogProbVar(x *ad.Var) *ad.Var
	// Rand fills x with a draw from the prior.
	Rand(x []float64, rng *rand.Rand)
	String() string
}

// Normal is the prior with independent N(Mu, Sigma²) coordinates.
type Normal struct {
	Mu, Sigma float64
}

// Validate implements RealPrior.
func (n Normal) Validate() error {
	if !finite(n.Mu) || !(n.Sigma > 0) || math.IsInf(n.Sigma, 1) {
		return fmt.Errorf("Normal: need finite Mu and finite Sigma > 0, got Mu = %v, Sigma = %v", n.Mu, n.Sigma)
	}
	return nil
}

// Dist returns the prior of d coordinates as a dist.Normal.
func (n Normal) Dist(d int) dist.Normal {
	mu := make([]float64, d)
	for i := range mu {
		mu[i] = n.Mu
	}
	return dist.Normal{Mu: mu, Sigma: []float64{n.Sigma}}
}

// LogProb implements RealPrior.
func (n Normal) LogProb(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		z := (v - n.Mu) / n.Sigma
		s += z * z
	}
	return -0.5*s - float64(len(x))*(math.Log(n.Sigma)+0.5*math.Log(2*math.Pi))
}

// LogProbVar implements RealPrior.
func (n Normal) LogProbVar(x *ad.Var) *ad.Var {
	sh := x.Shape()
	k := 1
	if len(sh) > 0 {
		k = sh[0]
	}
	d := x.Size() / max(k, 1)
	z := ad.Reshape(ad.Scale(ad.AddConst(x, -n.Mu), 1/n.Sigma), k, d)
	c := -float64(d) * (math.Log(n.Sigma) + 0.5*math.Log(2*math.Pi))
	return ad.AddConst(ad.Scale(ad.SumAxis(ad.Square(z), 1), -0.5), c)
}

// Rand implements RealPrior.
func (n Normal) Rand(x []float64, rng *rand.Rand) {
	for i := range x {
		x[i] = n.Mu + n.Sigma*rng.NormFloat64()
	}
}

func (n Normal) String() string { return fmt.Sprintf("N(%g, %g²)", n.Mu, n.Sigma) }
