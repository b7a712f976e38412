package vi

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/ad/optim"
	"github.com/permlab/permlab/dist"
	"github.com/permlab/permlab/perm"
)

// GumbelSinkhorn is a guide for B latent N×N permutations with
// q(P_b) = GS(X_b, τ): a sample is P_b = S((X_b + ε_b)/τ) with ε iid standard
// Gumbel and S the L-step Sinkhorn operator. The prior is GS(X₀, τ_prior),
// X₀ = PriorLogits (zero by default), and the divergence is the closed-form
// Gumbel-space KL KL((X + ε)/τ ‖ (X₀ + ε')/τ_prior) of Mena et al. (2018),
// summed over the allowed entries.
//
// Entry by entry the two nodes are Gumbel(x/τ, 1/τ) and
// Gumbel(x₀/τ_prior, 1/τ_prior). With r = τ_prior/τ the KL between
// Gumbel(μ₁, β₁) and Gumbel(μ₂, β₂),
//
//	log(β₂/β₁) + γ(β₁/β₂ − 1) + (μ₁ − μ₂)/β₂ + Γ(1 + β₁/β₂) exp(−(μ₁ − μ₂)/β₂) − 1,
//
// has β₁/β₂ = r and (μ₁ − μ₂)/β₂ = r x − x₀ = r (x − x₀ τ/τ_prior): it is the
// zero-location KL of dist.GumbelKL evaluated at x − x₀ τ/τ_prior.
//
// TauPrior = 0 makes the prior temperature follow τ at every step (r = 1).
// The KL is then that of the untempered nodes, KL(X + ε ‖ X₀ + ε'), and does
// not depend on τ, so τ only sets how far the likelihood's argument
// S((X + ε)/τ) is relaxed; as τ → 0 the ELBO tends to the one of the
// Gumbel-Matching family GM(X) under the prior GM(X₀). A fixed τ_prior with
// τ → 0 instead has r → ∞ and a KL that pins X to a constant.
//
// Candidate masks forbid entries: a forbidden (i, j) has logit −∞, so
// P_b[i][j] = 0 in every sample, and it takes no part in the KL.
//
// Rsample returns a Var of shape (K, B, N, N).
type GumbelSinkhorn struct {
	Site     string
	X        *ad.Param      // logits, shape (B, N, N)
	Tau      optim.Schedule // temperature τ by step
	TauPrior float64        // prior temperature; 0 means equal to τ at every step
	Iters    int            // Sinkhorn iterations L
	NoKL     bool           // drop the KL term ("no regularization")

	// PriorLogits, if not nil, are the prior's logits X₀, laid out as X
	// (B·N·N values, row-major); nil means X₀ = 0.
	PriorLogits []float64

	b, n    int
	allowed []bool // B·N·N, nil when nothing is forbidden
	idx     []int  // flat indices of allowed entries
	keepK   []bool // allowed tiled K times
	noise   *ad.Tensor
	compact []float64 // the allowed entries' noise, K·len(idx)
}

// NewGumbelSinkhorn returns a guide over b permutations of size n with
// zero logits. masks is nil (everything allowed) or holds one n×n mask per
// permutation; every mask must admit a perfect matching. tauPrior is the
// prior temperature, > 0, or 0 to follow τ.
func NewGumbelSinkhorn(name string, b, n int, masks []*perm.Mask, tau optim.Schedule, tauPrior float64, iters int) (*GumbelSinkhorn, error) {
	if b < 1 || n < 1 {
		return nil, fmt.Errorf("vi: NewGumbelSinkhorn: need b, n >= 1, got %d, %d", b, n)
	}
	if tau == nil {
		return nil, fmt.Errorf("vi: NewGumbelSinkhorn: nil temperature schedule")
	}
	if !(tauPrior >= 0) || math.IsInf(tauPrior, 0) {
		return nil, fmt.Errorf("vi: NewGumbelSinkhorn: prior temperature must be finite and > 0 (or 0 to follow τ), got %v", tauPrior)
	}
	if iters < 1 {
		return nil, fmt.Errorf("vi: NewGumbelSinkhorn: iters must be >= 1, got %d", iters)
	}
	g := &GumbelSinkhorn{Site: name, X: ad.NewParam(name+".X", ad.Zeros(b, n, n)), Tau: tau, TauPrior: tauPrior, Iters: iters, b: b, n: n}
	if masks != nil {
		allowed, err := flattenMasks("NewGumbelSinkhorn", masks, b, n)
		if err != nil {
			return nil, err
		}
		g.allowed = allowed
	}
	for i := 0; i < b*n*n; i++ {
		if g.allowed == nil || g.allowed[i] {
			g.idx = append(g.idx, i)
		}
	}
	return g, nil
}

// flattenMasks lays out b masks of size n×n as one (b, n, n) row-major
// slice: allowed[(k·n+i)·n+j] says whether entry (i, j) of permutation k is
// allowed. A nil masks allows everything.
func flattenMasks(fn string, masks []*perm.Mask, b, n int) ([]bool, error) {
	allowed := make([]bool, b*n*n)
	if masks == nil {
		for i := range allowed {
			allowed[i] = true
		}
		return allowed, nil
	}
	if len(masks) != b {
		return nil, fmt.Errorf("vi: %s: %d masks for %d permutations", fn, len(masks), b)
	}
	for k, m := range masks {
		if m == nil || m.Size() != n {
			return nil, fmt.Errorf("vi: %s: mask %d is nil or not %d×%d", fn, k, n, n)
		}
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				allowed[(k*n+i)*n+j] = m.Allowed(i, j)
			}
		}
	}
	return allowed, nil
}

// Name implements Guide.
func (g *GumbelSinkhorn) Name() string { return g.Site }

// Params implements Guide.
func (g *GumbelSinkhorn) Params() []*ad.Param { return []*ad.Param{g.X} }

// Rsample implements Guide.
func (g *GumbelSinkhorn) Rsample(t *ad.Tape, s Step) (*ad.Var, Divergence, error) {
	tau := g.Tau.At(s.Index)
	if !(tau > 0) || math.IsInf(tau, 0) {
		return nil, Divergence{}, fmt.Errorf("temperature at step %d is %v", s.Index, tau)
	}
	size := g.b * g.n * g.n
	if g.noise == nil || len(g.noise.Data) != s.K*size {
		g.noise = ad.Zeros(s.K, g.b, g.n, g.n)
		if g.allowed != nil {
			// A forbidden entry's noise is −∞ once and for all: it
			// makes the pair −∞ in every sample of
			// dist.GumbelSinkhornVar, with no gradient to X.
			g.keepK = make([]bool, s.K*size)
			for k := 0; k < s.K; k++ {
				copy(g.keepK[k*size:], g.allowed)
			}
			for i, keep := range g.keepK {
				if !keep {
					g.noise.Data[i] = math.Inf(-1)
				}
			}
		}
	}
	if g.keepK == nil {
		dist.FillGumbel(g.noise.Data, s.Rng)
	} else {
		// Draw only the allowed entries, in order, with FillGumbel's
		// vectorised logarithms (the bits of StandardGumbel).
		if len(g.compact) != s.K*len(g.idx) {
			g.compact = make([]float64, s.K*len(g.idx))
		}
		dist.FillGumbel(g.compact, s.Rng)
		for k := range s.K {
			row := g.noise.Data[k*size : (k+1)*size]
			for e, i := range g.idx {
				row[i] = g.compact[k*len(g.idx)+e]
			}
		}
	}
	x := t.Param(g.X)
	q := dist.GumbelSinkhornVar{X: x, Tau: tau, Iters: g.Iters}
	p := ad.Reshape(q.RsampleNoise(g.noise).Soft, s.K, g.b, g.n, g.n)
	var d Divergence
	if !g.NoKL {
		kl, err := g.kl(t, x, tau)
		if err != nil {
			return nil, Divergence{}, err
		}
		d.KL = kl
	}
	return p, d, t.Err()
}

// kl records the Gumbel-space KL of the allowed entries of x at
// temperature tau.
func (g *GumbelSinkhorn) kl(t *ad.Tape, x *ad.Var, tau float64) (*ad.Var, error) {
	if g.PriorLogits != nil && len(g.PriorLogits) != g.b*g.n*g.n {
		return nil, fmt.Errorf("%d prior logits for %d×%d×%d parameters", len(g.PriorLogits), g.b, g.n, g.n)
	}
	prior := func(e int) float64 { return g.PriorLogits[g.idx[e]] }
	if g.PriorLogits == nil {
		prior = nil
	}
	return gumbelSpaceKL(t, ad.Take(ad.Reshape(x, g.b*g.n*g.n), g.idx), prior, tau, g.TauPrior)
}

// gumbelSpaceKL records Σ_e KL((x_e + ε)/τ ‖ (x₀_e + ε')/τ_prior) over the
// entries of x, with x₀_e = prior(e) (nil: zero) and τ_prior = tauPrior, or
// τ when tauPrior is 0: the zero-location KL of dist.GumbelKLVar at
// x − x₀ τ/τ_prior (see GumbelSinkhorn).
func gumbelSpaceKL(t *ad.Tape, x *ad.Var, prior func(e int) float64, tau, tauPrior float64) (*ad.Var, error) {
	tp := tauPrior
	switch {
	case tp == 0:
		tp = tau
	case !(tp > 0) || math.IsInf(tp, 0):
		return nil, fmt.Errorf("prior temperature is %v", tp)
	}
	if prior != nil {
		shift := t.Alloc(x.Size())
		for e := range shift {
			shift[e] = prior(e) * tau / tp
		}
		x = ad.Sub(x, t.Const(&ad.Tensor{Shape: []int{len(shift)}, Data: shift}))
	}
	return dist.GumbelKLVar(x, tau, tp), nil
}

// Logits returns a copy of X_b with forbidden entries set to −∞.
func (g *GumbelSinkhorn) Logits(b int) *mat.Dense {
	n := g.n
	out := mat.NewDense(n, n, append([]float64(nil), g.X.Value.Data[b*n*n:(b+1)*n*n]...))
	if g.allowed != nil {
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				if !g.allowed[(b*n+i)*n+j] {
					out.Set(i, j, math.Inf(-1))
				}
			}
		}
	}
	return out
}

// Mean estimates the posterior mean E_q[P_b] of each permutation by
// averaging samples S((X_b + ε)/τ) at the temperature of step step.
func (g *GumbelSinkhorn) Mean(samples, step int, rng *rand.Rand) ([]*mat.Dense, error) {
	if samples < 1 {
		return nil, fmt.Errorf("vi: GumbelSinkhorn.Mean: samples must be >= 1, got %d", samples)
	}
	tau := g.Tau.At(step)
	n := g.n
	out := make([]*mat.Dense, g.b)
	soft := mat.NewDense(n, n, nil)
	for b := 0; b < g.b; b++ {
		q := dist.GumbelSinkhorn{X: g.Logits(b), Tau: tau, Iters: g.Iters}
		acc := mat.NewDense(n, n, nil)
		for k := 0; k < samples; k++ {
			if _, err := q.RandSoft(soft, rng); err != nil {
				return nil, err
			}
			acc.Add(acc, soft)
		}
		acc.Scale(1/float64(samples), acc)
		out[b] = acc
	}
	return out, nil
}
