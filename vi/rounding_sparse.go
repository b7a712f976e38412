package vi

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/dist"
	"github.com/permlab/permlab/perm"
	"github.com/permlab/permlab/relax"
)

// SparseRounding is the Rounding guide stored on the candidate patterns of
// its permutations: the same family, prior and divergence, with Θ, ρ, the
// noise, the Sinkhorn projection (relax.SparseSinkhornVar) and the rounding
// (relax.SparseMatcher) over the allowed entries only. Forbidden entries of
// the dense guide carry no noise and stay 0; here they are not stored, and
// the prior counts them as the zeros they are. A step costs O(K·L·NNZ) time
// and O(NNZ) parameters instead of O(K·L·B·N²) and 2·B·N². FitModel chooses
// it as it chooses SparseGumbelSinkhorn (ModelOptions.PermLayout).
//
// Given equal parameters and noise, its samples and divergence equal the
// dense guide's up to rounding: the noise is drawn in the dense guide's
// order (sample, permutation, allowed entries row by row).
//
// Rsample returns the site's value in the sparse layout of package models,
// shape (K, NNZ).
type SparseRounding struct {
	Site  string
	Theta *ad.Param // logits of the mean on the allowed entries, (NNZ)
	Rho   *ad.Param // noise scales σ = softplus(ρ), (NNZ)
	Tau   float64   // rounding temperature in (0, 1]
	Iters int       // Sinkhorn iterations for the mean
	Prior dist.RoundingPrior

	pats  []*relax.SparsePattern
	off   []int
	n     int
	noise []*ad.Tensor // per permutation, (K, NNZ_b)
	zz    []float64    // per sample, Σ Z²
}

// NewSparseRounding returns a rounding guide with uniform mean over the
// permutations whose candidate patterns pats gives, with initial noise
// scale std0, rounding temperature tau and the prior's component standard
// deviation priorStd (see NewRounding).
func NewSparseRounding(name string, pats []*relax.SparsePattern, std0, tau, priorStd float64, iters int) (*SparseRounding, error) {
	if len(pats) == 0 {
		return nil, fmt.Errorf("vi: NewSparseRounding: no patterns")
	}
	if !(std0 > 0) || math.IsInf(std0, 0) {
		return nil, fmt.Errorf("vi: NewSparseRounding: noise scale must be finite and > 0, got %v", std0)
	}
	if !(tau > 0 && tau <= 1) {
		return nil, fmt.Errorf("vi: NewSparseRounding: tau must be in (0, 1], got %v", tau)
	}
	if iters < 1 {
		return nil, fmt.Errorf("vi: NewSparseRounding: iters must be >= 1, got %d", iters)
	}
	pr := dist.RoundingPrior{Std: priorStd}
	if err := pr.Validate(); err != nil {
		return nil, fmt.Errorf("vi: NewSparseRounding: %w", err)
	}
	off := make([]int, len(pats)+1)
	for b, p := range pats {
		if p == nil {
			return nil, fmt.Errorf("vi: NewSparseRounding: pattern %d is nil", b)
		}
		if p.N() != pats[0].N() {
			return nil, fmt.Errorf("vi: NewSparseRounding: pattern %d is %d×%d, pattern 0 %d×%d", b, p.N(), p.N(), pats[0].N(), pats[0].N())
		}
		off[b+1] = off[b] + p.NNZ()
	}
	rho := ad.Zeros(off[len(pats)])
	r0 := invSoftplus(std0)
	for i := range rho.Data {
		rho.Data[i] = r0
	}
	return &SparseRounding{
		Site: name, Theta: ad.NewParam(name+".theta", ad.Zeros(off[len(pats)])), Rho: ad.NewParam(name+".rho", rho),
		Tau: tau, Iters: iters, Prior: pr,
		pats: append([]*relax.SparsePattern(nil), pats...), off: off, n: pats[0].N(),
	}, nil
}

// Name implements Guide.
func (g *SparseRounding) Name() string { return g.Site }

// Params implements Guide.
func (g *SparseRounding) Params() []*ad.Param { return []*ad.Param{g.Theta, g.Rho} }

// Patterns returns the candidate pattern of every permutation.
func (g *SparseRounding) Patterns() []*relax.SparsePattern { return g.pats }

// Offset returns where permutation b's entries start in Θ and ρ (b = B
// gives NNZ).
func (g *SparseRounding) Offset(b int) int { return g.off[b] }

// Rsample implements Guide.
func (g *SparseRounding) Rsample(t *ad.Tape, s Step) (*ad.Var, Divergence, error) {
	nb := len(g.pats)
	nnz := g.off[nb]
	if len(g.noise) != nb || g.noise[0].Shape[0] != s.K {
		g.noise = make([]*ad.Tensor, nb)
		for b, p := range g.pats {
			g.noise[b] = ad.Zeros(s.K, p.NNZ())
		}
		g.zz = make([]float64, s.K)
	}
	// The dense guide's order: sample, permutation, allowed entries.
	for k := range s.K {
		zz := 0.0
		for b, p := range g.pats {
			w := p.NNZ()
			z := g.noise[b].Data[k*w : (k+1)*w]
			for e := range z {
				z[e] = s.Rng.NormFloat64()
				zz += z[e] * z[e]
			}
		}
		g.zz[k] = zz
	}
	theta, rho := t.Param(g.Theta), t.Param(g.Rho)
	sigma := ad.Softplus(rho)
	parts := make([]*ad.Var, nb)
	for b, p := range g.pats {
		tb, sb := theta, sigma
		if nb > 1 {
			tb, sb = ad.Slice(theta, g.off[b], g.off[b+1]), ad.Slice(sigma, g.off[b], g.off[b+1])
		}
		mean := relax.SparseSinkhornVar(tb, p, 1, g.Iters)
		psi := ad.Add(ad.Mul(t.Const(g.noise[b]), sb), mean) // (K, NNZ_b)
		parts[b] = sparseRoundingVar(psi, p, g.Tau)
	}
	pt := parts[0]
	if nb > 1 {
		pt = concatColumns(t, parts, s.K, g.off)
	}
	// log q(P̃) per sample: Σ_allowed [−Z²/2 − log σ − log √2π] − NNZ·log τ.
	logSigma := ad.Sum(ad.Log(sigma))
	perSampleConst := -float64(nnz) * (0.5*math.Log(2*math.Pi) + math.Log(g.Tau))
	logq := make([]float64, s.K)
	for k := range logq {
		logq[k] = -0.5*g.zz[k] + perSampleConst
	}
	lq := ad.Sub(t.Const(&ad.Tensor{Shape: []int{s.K}, Data: logq}), logSigma)
	lp := g.Prior.LogProbSparseVar(pt, g.n, nb*g.n*g.n-nnz)
	return pt, Divergence{LogRatio: ad.Sub(lq, lp)}, t.Err()
}

// sparseRoundingVar records P̃ = τ Ψ + (1 − τ) round(Ψ) for each row of psi
// (K, NNZ) on the pattern p, round(Ψ) the matching of Ψ's values over the
// candidates (relax.RoundingVar's map in the sparse layout); its gradient
// in Ψ is τ.
func sparseRoundingVar(psi *ad.Var, p *relax.SparsePattern, tau float64) *ad.Var {
	t := psi.Tape()
	if t.Err() != nil {
		return psi
	}
	shape := psi.Shape()
	w := p.NNZ()
	k := shape[0]
	vals := psi.Value()
	out := t.Alloc(len(vals))
	var m relax.SparseMatcher
	for q := range k {
		row := vals[q*w : (q+1)*w]
		for e, v := range row {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fail(fmt.Errorf("vi: SparseRounding: Ψ entry %d of sample %d is %v", e, q, v))
				return t.Custom(nil, nil, nil, nil)
			}
		}
		sc, err := p.Scores(row)
		if err != nil {
			t.Fail(fmt.Errorf("vi: SparseRounding: %w", err))
			return t.Custom(nil, nil, nil, nil)
		}
		pi, err := m.Solve(nil, sc)
		if err != nil {
			t.Fail(fmt.Errorf("vi: SparseRounding: rounding sample %d: %w", q, err))
			return t.Custom(nil, nil, nil, nil)
		}
		dst := out[q*w : (q+1)*w]
		for e, v := range row {
			dst[e] = tau * v
		}
		for i, c := range pi {
			dst[p.Index(i, c)] += 1 - tau
		}
	}
	return t.Custom(shape, out, []*ad.Var{psi}, func(gOut []float64, gIn [][]float64) {
		if g := gIn[0]; g != nil {
			for i, v := range gOut {
				g[i] += tau * v
			}
		}
	})
}

// means returns the mean S(Θ_b) of every permutation on its pattern.
func (g *SparseRounding) means() ([][]float64, error) {
	out := make([][]float64, len(g.pats))
	for b, p := range g.pats {
		m, err := relax.SparseSinkhorn(&relax.SparseLogits{Pattern: p, Values: g.Theta.Value.Data[g.off[b]:g.off[b+1]]}, 1, g.Iters)
		if err != nil {
			return nil, err
		}
		out[b] = m.Values
	}
	return out, nil
}

// Mode returns round(S(Θ_b)) for every permutation: the matching of the
// mean over the candidates.
func (g *SparseRounding) Mode() ([]perm.Perm, error) {
	means, err := g.means()
	if err != nil {
		return nil, err
	}
	out := make([]perm.Perm, len(g.pats))
	var m relax.SparseMatcher
	for b, p := range g.pats {
		sc, err := p.Scores(means[b])
		if err != nil {
			return nil, err
		}
		if out[b], err = m.Solve(nil, sc); err != nil {
			return nil, fmt.Errorf("vi: SparseRounding: permutation %d: %w", b, err)
		}
	}
	return out, nil
}

// draws returns d draws round(Ψ_b), Ψ_b = S(Θ_b) + σ_b ⊙ Z, of every
// permutation, the noise drawn in the dense guide's order (permutation,
// draw, entry).
func (g *SparseRounding) draws(d int, rng *rand.Rand) ([][]perm.Perm, error) {
	means, err := g.means()
	if err != nil {
		return nil, err
	}
	out := make([][]perm.Perm, d)
	for k := range out {
		out[k] = make([]perm.Perm, len(g.pats))
	}
	var m relax.SparseMatcher
	for b, p := range g.pats {
		psi := make([]float64, p.NNZ())
		rho := g.Rho.Value.Data[g.off[b]:g.off[b+1]]
		for k := range d {
			for e, mu := range means[b] {
				psi[e] = mu + softplus(rho[e])*rng.NormFloat64()
			}
			sc, err := p.Scores(psi)
			if err != nil {
				return nil, err
			}
			if out[k][b], err = m.Solve(nil, sc); err != nil {
				return nil, fmt.Errorf("vi: SparseRounding: permutation %d: %w", b, err)
			}
		}
	}
	return out, nil
}
