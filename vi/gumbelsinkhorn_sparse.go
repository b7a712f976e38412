package vi

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/ad/optim"
	"github.com/permlab/permlab/dist"
	"github.com/permlab/permlab/perm"
	"github.com/permlab/permlab/relax"
)

// SparseGumbelSinkhorn is the GumbelSinkhorn guide stored on the candidate
// patterns of its permutations: the same family q(P_b) = GS(X_b, τ), the
// same prior and the same closed-form Gumbel-space KL, with logits,
// noise and Sinkhorn iterations over the allowed entries only
// (relax.SparseSinkhornVar). A step costs O(K·L·NNZ) time and memory
// instead of O(K·L·B·N²), which is what makes sites of thousands of rows
// with a few dozen candidates each affordable. FitModel chooses it for a
// masked site whose masks allow at most SparseDensity of the entries (see
// ModelOptions.PermLayout).
//
// Given equal logits and noise, its samples and KL equal the dense guide's
// up to rounding: the noise is drawn in the dense guide's order (sample,
// permutation, then the allowed entries row by row), so that with one seed
// both layouts draw the same Gumbel variables.
//
// Rsample returns the site's value in the sparse layout of package models,
// shape (K, NNZ) (see models.Sample.SetSparse).
type SparseGumbelSinkhorn struct {
	Site     string
	X        *ad.Param      // logits of the allowed entries, shape (NNZ): permutation b's at [Offset(b), Offset(b+1))
	Tau      optim.Schedule // temperature τ by step
	TauPrior float64        // prior temperature; 0 means equal to τ at every step
	Iters    int            // Sinkhorn iterations L
	NoKL     bool           // drop the KL term ("no regularization")

	// PriorLogits, if not nil, are the prior's logits X₀ of the allowed
	// entries, laid out as X; nil means X₀ = 0.
	PriorLogits []float64

	pats    []*relax.SparsePattern
	off     []int
	noise   []*ad.Tensor // per permutation, shape (K, NNZ_b)
	compact []float64    // one step's noise in drawing order, K·NNZ
}

// NewSparseGumbelSinkhorn returns a guide with zero logits over the
// permutations whose candidate patterns pats gives (one per permutation,
// each admitting a perfect matching, as every SparsePattern does).
// tauPrior is the prior temperature, > 0, or 0 to follow τ.
func NewSparseGumbelSinkhorn(name string, pats []*relax.SparsePattern, tau optim.Schedule, tauPrior float64, iters int) (*SparseGumbelSinkhorn, error) {
	if len(pats) == 0 {
		return nil, fmt.Errorf("vi: NewSparseGumbelSinkhorn: no patterns")
	}
	if tau == nil {
		return nil, fmt.Errorf("vi: NewSparseGumbelSinkhorn: nil temperature schedule")
	}
	if !(tauPrior >= 0) || math.IsInf(tauPrior, 0) {
		return nil, fmt.Errorf("vi: NewSparseGumbelSinkhorn: prior temperature must be finite and > 0 (or 0 to follow τ), got %v", tauPrior)
	}
	if iters < 1 {
		return nil, fmt.Errorf("vi: NewSparseGumbelSinkhorn: iters must be >= 1, got %d", iters)
	}
	off := make([]int, len(pats)+1)
	for b, p := range pats {
		if p == nil {
			return nil, fmt.Errorf("vi: NewSparseGumbelSinkhorn: pattern %d is nil", b)
		}
		if p.N() != pats[0].N() {
			return nil, fmt.Errorf("vi: NewSparseGumbelSinkhorn: pattern %d is %d×%d, pattern 0 %d×%d", b, p.N(), p.N(), pats[0].N(), pats[0].N())
		}
		off[b+1] = off[b] + p.NNZ()
	}
	return &SparseGumbelSinkhorn{
		Site: name, X: ad.NewParam(name+".X", ad.Zeros(off[len(pats)])),
		Tau: tau, TauPrior: tauPrior, Iters: iters,
		pats: append([]*relax.SparsePattern(nil), pats...), off: off,
	}, nil
}

// Name implements Guide.
func (g *SparseGumbelSinkhorn) Name() string { return g.Site }

// Params implements Guide.
func (g *SparseGumbelSinkhorn) Params() []*ad.Param { return []*ad.Param{g.X} }

// Patterns returns the candidate pattern of every permutation.
func (g *SparseGumbelSinkhorn) Patterns() []*relax.SparsePattern { return g.pats }

// Offset returns where permutation b's logits start in X (b = B gives NNZ).
func (g *SparseGumbelSinkhorn) Offset(b int) int { return g.off[b] }

// Logits returns permutation b's logits on its pattern (a copy).
func (g *SparseGumbelSinkhorn) Logits(b int) *relax.SparseLogits {
	return &relax.SparseLogits{Pattern: g.pats[b], Values: append([]float64(nil), g.X.Value.Data[g.off[b]:g.off[b+1]]...)}
}

// Rsample implements Guide.
func (g *SparseGumbelSinkhorn) Rsample(t *ad.Tape, s Step) (*ad.Var, Divergence, error) {
	tau := g.Tau.At(s.Index)
	if !(tau > 0) || math.IsInf(tau, 0) {
		return nil, Divergence{}, fmt.Errorf("temperature at step %d is %v", s.Index, tau)
	}
	nb := len(g.pats)
	if len(g.noise) != nb || g.noise[0].Shape[0] != s.K {
		g.noise = make([]*ad.Tensor, nb)
		for b, p := range g.pats {
			g.noise[b] = ad.Zeros(s.K, p.NNZ())
		}
	}
	// The dense guide's order: sample, permutation, allowed entries.
	nnz := g.off[nb]
	if len(g.compact) != s.K*nnz {
		g.compact = make([]float64, s.K*nnz)
	}
	dist.FillGumbel(g.compact, s.Rng)
	for k := range s.K {
		for b, p := range g.pats {
			w := p.NNZ()
			copy(g.noise[b].Data[k*w:(k+1)*w], g.compact[k*nnz+g.off[b]:k*nnz+g.off[b+1]])
		}
	}
	x := t.Param(g.X)
	parts := make([]*ad.Var, nb)
	for b, p := range g.pats {
		xb := x
		if nb > 1 {
			xb = ad.Slice(x, g.off[b], g.off[b+1])
		}
		parts[b] = relax.SparseSinkhornVar(ad.Add(t.Const(g.noise[b]), xb), p, tau, g.Iters)
	}
	out := parts[0]
	if nb > 1 {
		out = concatColumns(t, parts, s.K, g.off)
	}
	var d Divergence
	if !g.NoKL {
		kl, err := g.kl(t, x, tau)
		if err != nil {
			return nil, Divergence{}, err
		}
		d.KL = kl
	}
	return out, d, t.Err()
}

// kl records the Gumbel-space KL of the entries of x at temperature tau, as
// GumbelSinkhorn.kl does for its allowed entries.
func (g *SparseGumbelSinkhorn) kl(t *ad.Tape, x *ad.Var, tau float64) (*ad.Var, error) {
	if g.PriorLogits == nil {
		return gumbelSpaceKL(t, x, nil, tau, g.TauPrior)
	}
	if len(g.PriorLogits) != len(g.X.Value.Data) {
		return nil, fmt.Errorf("%d prior logits for %d allowed entries", len(g.PriorLogits), len(g.X.Value.Data))
	}
	return gumbelSpaceKL(t, x, func(e int) float64 { return g.PriorLogits[e] }, tau, g.TauPrior)
}

// concatColumns joins the (k, w_b) values parts side by side into one
// (k, Σ w_b) value; off holds the running widths.
func concatColumns(t *ad.Tape, parts []*ad.Var, k int, off []int) *ad.Var {
	width := off[len(parts)]
	out := t.AllocRaw(k * width)
	grad := false
	for b, p := range parts {
		w := off[b+1] - off[b]
		src := p.Value()
		for q := range k {
			copy(out[q*width+off[b]:q*width+off[b+1]], src[q*w:(q+1)*w])
		}
		grad = grad || p.RequiresGrad()
	}
	if !grad {
		return t.Custom([]int{k, width}, out, parts, nil)
	}
	return t.Custom([]int{k, width}, out, parts, func(g []float64, gIn [][]float64) {
		for b, gp := range gIn {
			if gp == nil {
				continue
			}
			w := off[b+1] - off[b]
			for q := range k {
				src := g[q*width+off[b] : q*width+off[b+1]]
				dst := gp[q*w : (q+1)*w]
				for e, v := range src {
					dst[e] += v
				}
			}
		}
	})
}

// Mode returns M(X_b) for every permutation: the exact matching of the
// logits over the candidates.
func (g *SparseGumbelSinkhorn) Mode() ([]perm.Perm, error) {
	out := make([]perm.Perm, len(g.pats))
	var m relax.SparseMatcher
	for b, p := range g.pats {
		sc, err := p.Scores(g.X.Value.Data[g.off[b]:g.off[b+1]])
		if err != nil {
			return nil, err
		}
		q, err := m.Solve(nil, sc)
		if err != nil {
			return nil, fmt.Errorf("vi: SparseGumbelSinkhorn: permutation %d: %w", b, err)
		}
		out[b] = q
	}
	return out, nil
}

// Draw returns one draw M(X_b + ε_b) of every permutation, a draw of the
// Gumbel-Matching distribution GM(X_b) that q(P_b) tends to as τ → 0.
func (g *SparseGumbelSinkhorn) Draw(rng *rand.Rand) ([]perm.Perm, error) {
	d, err := g.draws(1, rng)
	if err != nil {
		return nil, err
	}
	return d[0], nil
}

// draws returns d draws of every permutation, the noise drawn in order
// (draw, permutation, entry) from rng and the matchings solved in parallel,
// so that the result depends on rng alone.
func (g *SparseGumbelSinkhorn) draws(d int, rng *rand.Rand) ([][]perm.Perm, error) {
	nb := len(g.pats)
	scores := make([][]float64, d*nb)
	for k := range d {
		for b := range nb {
			x := g.X.Value.Data[g.off[b]:g.off[b+1]]
			v := dist.FillGumbel(make([]float64, len(x)), rng)
			for e, xe := range x {
				v[e] += xe
			}
			scores[k*nb+b] = v
		}
	}
	out := make([][]perm.Perm, d)
	for k := range out {
		out[k] = make([]perm.Perm, nb)
	}
	errs := make([]error, d*nb)
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(runtime.GOMAXPROCS(0), d*nb) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var m relax.SparseMatcher
			for q := range next {
				sc, err := g.pats[q%nb].Scores(scores[q])
				if err == nil {
					out[q/nb][q%nb], err = m.Solve(nil, sc)
				}
				errs[q] = err
			}
		}()
	}
	for q := range d * nb {
		next <- q
	}
	close(next)
	wg.Wait()
	for q, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("vi: SparseGumbelSinkhorn: permutation %d: %w", q%nb, err)
		}
	}
	return out, nil
}
