package vi

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/dist"
	"github.com/permlab/permlab/perm"
	"github.com/permlab/permlab/relax"
)

// Rounding is the guide of Linderman et al. (2018) for B latent N×N
// permutations. The mean M_b = S(Θ_b) is the Sinkhorn projection of free
// logits Θ_b onto the Birkhoff polytope, Ψ_b = M_b + σ_b ⊙ Z with Z iid
// N(0, 1) and σ_b = softplus(ρ_b), and the sample
//
//	P̃_b = τ Ψ_b + (1 − τ) round(Ψ_b)
//
// pulls Ψ_b towards its nearest permutation (allowed by the mask). The map
// Ψ ↦ P̃ is invertible with Jacobian τ per entry, so
// log q(P̃) = log N(Ψ; M, σ²) − (#entries) log τ. The prior is the
// two-Gaussian mixture of dist.RoundingPrior, and the divergence is the
// Monte Carlo log q(P̃) − log p(P̃).
//
// Forbidden entries carry no noise and stay at 0; they add only a constant to
// the divergence.
type Rounding struct {
	Site  string
	Theta *ad.Param // logits of the mean, (B, N, N)
	Rho   *ad.Param // noise scales σ = softplus(ρ), (B, N, N)
	Tau   float64   // rounding temperature in (0, 1]
	Iters int       // Sinkhorn iterations for the mean
	Prior dist.RoundingPrior

	b, n    int
	masks   []*perm.Mask
	allowed []bool
	nAllow  int
	keepK   []bool
	noise   *ad.Tensor
}

// NewRounding returns a rounding guide over b permutations of size n with
// uniform mean, initial noise scale std0, rounding temperature tau, and the
// prior's component standard deviation priorStd. masks is nil or one mask
// per permutation.
func NewRounding(name string, b, n int, masks []*perm.Mask, std0, tau, priorStd float64, iters int) (*Rounding, error) {
	if b < 1 || n < 1 {
		return nil, fmt.Errorf("vi: NewRounding: need b, n >= 1, got %d, %d", b, n)
	}
	if !(std0 > 0) || math.IsInf(std0, 0) {
		return nil, fmt.Errorf("vi: NewRounding: noise scale must be finite and > 0, got %v", std0)
	}
	if !(tau > 0 && tau <= 1) {
		return nil, fmt.Errorf("vi: NewRounding: tau must be in (0, 1], got %v", tau)
	}
	if iters < 1 {
		return nil, fmt.Errorf("vi: NewRounding: iters must be >= 1, got %d", iters)
	}
	pr := dist.RoundingPrior{Std: priorStd}
	if err := pr.Validate(); err != nil {
		return nil, fmt.Errorf("vi: NewRounding: %w", err)
	}
	rho := ad.Zeros(b, n, n)
	r0 := invSoftplus(std0)
	for i := range rho.Data {
		rho.Data[i] = r0
	}
	allowed, err := flattenMasks("NewRounding", masks, b, n)
	if err != nil {
		return nil, err
	}
	g := &Rounding{Site: name, Theta: ad.NewParam(name+".theta", ad.Zeros(b, n, n)), Rho: ad.NewParam(name+".rho", rho),
		Tau: tau, Iters: iters, Prior: pr, b: b, n: n, allowed: allowed, masks: make([]*perm.Mask, b)}
	if masks != nil {
		copy(g.masks, masks)
	}
	for _, ok := range allowed {
		if ok {
			g.nAllow++
		}
	}
	return g, nil
}

// Name implements Guide.
func (g *Rounding) Name() string { return g.Site }

// Params implements Guide.
func (g *Rounding) Params() []*ad.Param { return []*ad.Param{g.Theta, g.Rho} }

// meanVar returns M = S(Θ) on the tape, shape (B, N, N).
func (g *Rounding) meanVar(t *ad.Tape) *ad.Var {
	theta := ad.Mask(t.Param(g.Theta), g.allowed, math.Inf(-1))
	return relax.SinkhornVar(theta, 1, g.Iters)
}

// Rsample implements Guide; the sample has shape (K, B, N, N).
func (g *Rounding) Rsample(t *ad.Tape, s Step) (*ad.Var, Divergence, error) {
	size := g.b * g.n * g.n
	if g.noise == nil || len(g.noise.Data) != s.K*size {
		g.noise = ad.Zeros(s.K, g.b, g.n, g.n)
		g.keepK = make([]bool, s.K*size)
		for k := 0; k < s.K; k++ {
			copy(g.keepK[k*size:], g.allowed)
		}
	}
	for i := range g.noise.Data {
		z := 0.0
		if g.keepK[i] {
			z = s.Rng.NormFloat64()
		}
		g.noise.Data[i] = z
	}
	mean := g.meanVar(t)
	sigma := ad.Softplus(t.Param(g.Rho))
	psi := ad.Add(ad.Mul(t.Const(g.noise), sigma), mean) // (K, B, N, N)
	// Round each (sample, permutation) matrix under its own mask.
	parts := make([]*ad.Var, 0, s.K*g.b)
	flat := ad.Reshape(psi, s.K*g.b, g.n, g.n)
	for q := 0; q < s.K*g.b; q++ {
		pt, _ := relax.RoundingVar(ad.Index(flat, q), g.Tau, g.masks[q%g.b])
		parts = append(parts, ad.Reshape(pt, 1, g.n, g.n))
	}
	pt := ad.Reshape(ad.Concat(parts...), s.K, g.b, g.n, g.n)
	// log q(P̃) per sample: Σ_allowed [−Z²/2 − log σ − log √2π] − #allowed·log τ.
	// The Z part does not depend on the parameters; it enters as a constant.
	logSigma := ad.Sum(ad.Mask(ad.Log(sigma), g.allowed, 0))
	perSampleConst := -float64(g.nAllow) * (0.5*math.Log(2*math.Pi) + math.Log(g.Tau))
	logq := make([]float64, s.K)
	for k := 0; k < s.K; k++ {
		zz := 0.0
		for _, z := range g.noise.Data[k*size : (k+1)*size] {
			zz += z * z
		}
		logq[k] = -0.5*zz + perSampleConst
	}
	lq := ad.Sub(t.Const(&ad.Tensor{Shape: []int{s.K}, Data: logq}), logSigma)
	lp := ad.Reshape(ad.SumAxis(g.Prior.LogProbVar(pt), 1), s.K)
	return pt, Divergence{LogRatio: ad.Sub(lq, lp)}, t.Err()
}

// Mean returns the current mean M_b = S(Θ_b) of each permutation.
func (g *Rounding) Mean() ([]*mat.Dense, error) {
	out := make([]*mat.Dense, g.b)
	n := g.n
	for b := 0; b < g.b; b++ {
		x := mat.NewDense(n, n, append([]float64(nil), g.Theta.Value.Data[b*n*n:(b+1)*n*n]...))
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				if !g.allowed[(b*n+i)*n+j] {
					x.Set(i, j, math.Inf(-1))
				}
			}
		}
		m, err := relax.Sinkhorn(x, 1, g.Iters)
		if err != nil {
			return nil, err
		}
		out[b] = m
	}
	return out, nil
}
