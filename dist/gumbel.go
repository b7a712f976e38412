package dist

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/internal/f64"
	"github.com/permlab/permlab/internal/par"
)

// EulerGamma is the Euler-Mascheroni constant γ, the mean of the standard
// Gumbel distribution.
const EulerGamma = 0.57721566490153286060651209008240243104215933593992

// Gumbel is the (right-skewed, maximum) Gumbel distribution with location Mu
// and scale Beta > 0, with density
//
//	p(x) = 1/β · exp(-(z + exp(-z))),  z = (x - μ)/β,
//
// and distribution function F(x) = exp(-exp(-z)). The standard Gumbel has
// μ = 0, β = 1. If g is standard Gumbel then μ + βg is Gumbel(μ, β), so the
// Gumbel-space variable (x + g)/τ of the Gumbel-Sinkhorn and Concrete
// distributions is Gumbel(x/τ, 1/τ).
//
// Methods return NaN when the parameters are invalid (β <= 0 or not finite,
// μ not finite); Validate reports why.
type Gumbel struct {
	Mu   float64
	Beta float64
}

// Validate returns an error if β is not a finite positive number or μ is not
// finite.
func (g Gumbel) Validate() error {
	if math.IsNaN(g.Mu) || math.IsInf(g.Mu, 0) {
		return fmt.Errorf("dist: Gumbel: Mu must be finite, got %v", g.Mu)
	}
	if !(g.Beta > 0) || math.IsInf(g.Beta, 1) {
		return fmt.Errorf("dist: Gumbel: Beta must be finite and > 0, got %v", g.Beta)
	}
	return nil
}

func (g Gumbel) ok() bool { return g.Validate() == nil }

// LogProb returns log p(x).
func (g Gumbel) LogProb(x float64) float64 {
	if !g.ok() {
		return math.NaN()
	}
	z := (x - g.Mu) / g.Beta
	return -math.Log(g.Beta) - z - math.Exp(-z)
}

// Prob returns the density p(x).
func (g Gumbel) Prob(x float64) float64 { return math.Exp(g.LogProb(x)) }

// CDF returns P(X <= x) = exp(-exp(-(x-μ)/β)).
func (g Gumbel) CDF(x float64) float64 {
	if !g.ok() {
		return math.NaN()
	}
	return math.Exp(-math.Exp(-(x - g.Mu) / g.Beta))
}

// Quantile returns the inverse of CDF, μ - β log(-log p), for p in [0, 1]
// (-Inf at 0, +Inf at 1) and NaN outside.
func (g Gumbel) Quantile(p float64) float64 {
	if !g.ok() || !(p >= 0 && p <= 1) {
		return math.NaN()
	}
	return g.Mu - g.Beta*math.Log(-math.Log(p))
}

// Rand returns a sample by inversion, μ - β log(-log U) with U uniform on the
// open interval (0, 1), so the result is always finite. A nil rng uses the
// global source of math/rand/v2 (not reproducible).
func (g Gumbel) Rand(rng *rand.Rand) float64 {
	if !g.ok() {
		return math.NaN()
	}
	return g.Mu + g.Beta*StandardGumbel(rng)
}

// Mean returns μ + βγ.
func (g Gumbel) Mean() float64 {
	if !g.ok() {
		return math.NaN()
	}
	return g.Mu + g.Beta*EulerGamma
}

// Variance returns π²β²/6.
func (g Gumbel) Variance() float64 {
	if !g.ok() {
		return math.NaN()
	}
	return math.Pi * math.Pi * g.Beta * g.Beta / 6
}

// StdDev returns the standard deviation πβ/√6.
func (g Gumbel) StdDev() float64 { return math.Sqrt(g.Variance()) }

// Mode returns μ.
func (g Gumbel) Mode() float64 {
	if !g.ok() {
		return math.NaN()
	}
	return g.Mu
}

// Entropy returns the differential entropy log β + γ + 1.
func (g Gumbel) Entropy() float64 {
	if !g.ok() {
		return math.NaN()
	}
	return math.Log(g.Beta) + EulerGamma + 1
}

// uniformOpen returns a uniform number on the open interval (0, 1): the
// midpoint of one of 2⁵² equal cells, (k + ½)/2⁵², which is exact in
// float64 (with 2⁵³ cells the top midpoint would round to 1), so neither 0
// nor 1 can occur.
func uniformOpen(rng *rand.Rand) float64 {
	var u uint64
	if rng == nil {
		u = rand.Uint64()
	} else {
		u = rng.Uint64()
	}
	return (float64(u>>12) + 0.5) / (1 << 52)
}

// StandardGumbel returns one standard Gumbel sample -log(-log U), U uniform
// on (0, 1). Its values lie in about [-3.6, 36.7]. A nil rng uses the global
// source of math/rand/v2.
func StandardGumbel(rng *rand.Rand) float64 {
	return -math.Log(-math.Log(uniformOpen(rng)))
}

// FillGumbel fills dst with independent standard Gumbel samples, drawn in
// order from rng (nil: the global source), and returns dst. Each entry has
// the bits StandardGumbel would give it from the same draws: the uniforms
// are drawn first, then both logarithms are taken over the whole slice by
// f64.Log (math.Log's bits, four entries at a time where the CPU allows).
func FillGumbel(dst []float64, rng *rand.Rand) []float64 {
	for i := range dst {
		dst[i] = uniformOpen(rng)
	}
	// Elementwise from here on: on several goroutines for a long slice,
	// with the same bits (the closure only there, as in package ad).
	if len(dst) <= par.Grain {
		gumbelFromUniform(dst)
	} else {
		par.Range(len(dst), par.Grain, func(lo, hi int) { gumbelFromUniform(dst[lo:hi]) })
	}
	return dst
}

// gumbelFromUniform replaces each uniform u in d by −log(−log u).
func gumbelFromUniform(d []float64) {
	f64.Log(d, d)
	for i, v := range d {
		d[i] = -v
	}
	f64.Log(d, d)
	for i, v := range d {
		d[i] = -v
	}
}

// GumbelNoise returns a tensor of the given shape filled with independent
// standard Gumbel samples in row-major order. It returns an error for a
// negative dimension.
func GumbelNoise(rng *rand.Rand, shape ...int) (*ad.Tensor, error) {
	n := 1
	for _, d := range shape {
		if d < 0 {
			return nil, fmt.Errorf("dist: GumbelNoise: negative dimension in shape %v", shape)
		}
		n *= d
	}
	return &ad.Tensor{Shape: append([]int{}, shape...), Data: FillGumbel(make([]float64, n), rng)}, nil
}

// GumbelLogProbVar returns, elementwise on the tape, the Gumbel(μ, β) log
// density of z,
//
//	log p(z) = -log β - u - exp(-u),  u = (z - μ)/β,
//
// differentiable in z and μ; z and mu follow the broadcasting rules of
// package ad (mu may be a scalar). With μ = x/τ and β = 1/τ it is the log
// density of the Gumbel-space variable (x + g)/τ; with μ = 0 and β =
// 1/τ_prior, that of the prior g/τ_prior. β must be finite and > 0;
// otherwise the tape records an error.
func GumbelLogProbVar(z, mu *ad.Var, beta float64) *ad.Var {
	t := tapeOfVars(z, mu)
	switch {
	case t == nil:
		return nil
	case z == nil || mu == nil:
		return failVar(t, "GumbelLogProbVar: nil input")
	case !(beta > 0) || math.IsInf(beta, 1):
		return failVar(t, "GumbelLogProbVar: beta must be finite and > 0, got %v", beta)
	}
	u := ad.Scale(ad.Sub(z, mu), 1/beta)
	return ad.AddConst(ad.Neg(ad.Add(u, ad.Exp(ad.Neg(u)))), -math.Log(beta))
}

// tapeOfVars returns the tape of the first non-nil Var, or nil.
func tapeOfVars(vs ...*ad.Var) *ad.Tape {
	for _, v := range vs {
		if v != nil && v.Tape() != nil {
			return v.Tape()
		}
	}
	return nil
}

// failVar records a "dist: "-prefixed error on t (unless it already holds
// one) and returns the tape's dead Var.
func failVar(t *ad.Tape, format string, args ...any) *ad.Var {
	t.Fail(fmt.Errorf("dist: "+format, args...))
	return t.Custom(nil, nil, nil, nil)
}
