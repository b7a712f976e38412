package vi

import (
	"fmt"
	"math"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/dist"
)

// Normal is a mean-field Gaussian guide over a vector of D latents,
// q(z) = Π_d N(z_d; μ_d, σ_d²) with σ_d = softplus(ρ_d), and the prior
// p(z) = Π_d N(z_d; 0, PriorStd²). Its KL is in closed form:
//
//	KL = Σ_d [log(PriorStd/σ_d) + (σ_d² + μ_d²)/(2 PriorStd²) − 1/2].
//
// Rsample returns a (K, D) Var.
type Normal struct {
	Site     string
	Mu, Rho  *ad.Param
	PriorStd float64
	eps      *ad.Tensor
}

// NewNormal returns a Normal guide over d latents with means mu0 (len d, or
// nil for zeros), initial standard deviation std0 and prior standard
// deviation priorStd.
func NewNormal(name string, d int, mu0 []float64, std0, priorStd float64) (*Normal, error) {
	if d < 1 {
		return nil, fmt.Errorf("vi: NewNormal: dimension must be >= 1, got %d", d)
	}
	if mu0 != nil && len(mu0) != d {
		return nil, fmt.Errorf("vi: NewNormal: %d initial means for dimension %d", len(mu0), d)
	}
	if !(std0 > 0) || !(priorStd > 0) || math.IsInf(std0, 0) || math.IsInf(priorStd, 0) {
		return nil, fmt.Errorf("vi: NewNormal: standard deviations must be finite and > 0, got %v and %v", std0, priorStd)
	}
	mu := ad.Zeros(d)
	if mu0 != nil {
		copy(mu.Data, mu0)
	}
	rho := ad.Zeros(d)
	r0 := invSoftplus(std0)
	for i := range rho.Data {
		rho.Data[i] = r0
	}
	return &Normal{Site: name, Mu: ad.NewParam(name+".mu", mu), Rho: ad.NewParam(name+".rho", rho), PriorStd: priorStd}, nil
}

// invSoftplus returns ρ with softplus(ρ) = s.
func invSoftplus(s float64) float64 {
	if s > 30 {
		return s
	}
	return math.Log(math.Expm1(s))
}

// Name implements Guide.
func (g *Normal) Name() string { return g.Site }

// Params implements Guide.
func (g *Normal) Params() []*ad.Param { return []*ad.Param{g.Mu, g.Rho} }

// Std returns the current standard deviations σ = softplus(ρ).
func (g *Normal) Std() []float64 {
	out := make([]float64, len(g.Rho.Value.Data))
	for i, r := range g.Rho.Value.Data {
		out[i] = softplus(r)
	}
	return out
}

func softplus(x float64) float64 {
	if x > 0 {
		return x + math.Log1p(math.Exp(-x))
	}
	return math.Log1p(math.Exp(x))
}

// Rsample implements Guide: z = μ + σ ⊙ ε with ε ~ N(0, I), shape (K, D),
// and the closed-form KL of dist.KLNormalStdVar.
func (g *Normal) Rsample(t *ad.Tape, s Step) (*ad.Var, Divergence, error) {
	d := len(g.Mu.Value.Data)
	if g.eps == nil || len(g.eps.Data) != s.K*d {
		g.eps = ad.Zeros(s.K, d)
	}
	dist.FillNormal(g.eps.Data, s.Rng)
	mu := t.Param(g.Mu)
	sigma := ad.Softplus(t.Param(g.Rho))
	z := ad.Add(ad.Mul(t.Const(g.eps), sigma), mu)
	kl := dist.KLNormalStdVar(mu, sigma, 0, g.PriorStd)
	return z, Divergence{KL: kl}, t.Err()
}
