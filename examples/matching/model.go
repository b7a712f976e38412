package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/mcmc"
	"github.com/permlab/permlab/perm"
)

// Problem is a point-matching problem: n observed points y_i in the plane
// are noisy copies of n reference points r_j under an unknown permutation,
//
//	y_i = r_{p(i)} + ε_i,   ε_i ~ N(0, σ² I₂),
//
// with a prior on p that is uniform over the permutations admitted by Mask
// (uniform over all n! permutations when Mask is nil). The posterior is
//
//	p(P | Y) ∝ exp(⟨P, X⟩) 1[P admitted],   X_ij = -‖y_i - r_j‖² / (2σ²),
//
// a Gumbel-Matching-type distribution with logits X (see Logits).
type Problem struct {
	Ref   [][2]float64 // reference points r_j
	Obs   [][2]float64 // observed points y_i
	Sigma float64      // noise standard deviation σ
	Mask  *perm.Mask   // candidate mask, nil when every assignment is allowed
	Truth perm.Perm    // the permutation that generated Obs; nil if unknown

	logits   *mat.Dense
	logPrior float64 // log prior mass of each admitted permutation
}

// Config describes a random Problem.
type Config struct {
	N     int     // number of points (>= 1)
	Sigma float64 // noise standard deviation (> 0)
	// Radius, if > 0, builds a candidate mask in the manner of the C.
	// elegans experiments: observed point i may be matched to reference
	// point j only if ‖r_{Truth(i)} - r_j‖ < Radius, so the truth is always
	// a candidate. With a mask N may be at most MaxMaskedN.
	Radius float64
	Seed   uint64
}

// MaxMaskedN is the largest size of a masked problem: the prior normaliser,
// the number of admitted permutations, is counted exactly in O(2^n n).
const MaxMaskedN = 20

// Generate draws a Problem: reference points uniform on the unit square, a
// uniform random true permutation, and Gaussian observation noise, all from
// cfg.Seed.
func Generate(cfg Config) (*Problem, error) {
	if cfg.N < 1 {
		return nil, fmt.Errorf("matching: Generate: N must be >= 1, got %d", cfg.N)
	}
	if !(cfg.Sigma > 0) || math.IsInf(cfg.Sigma, 1) {
		return nil, fmt.Errorf("matching: Generate: Sigma must be finite and > 0, got %v", cfg.Sigma)
	}
	if math.IsNaN(cfg.Radius) {
		return nil, errors.New("matching: Generate: Radius is NaN")
	}
	n := cfg.N
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6d61746368)) // "match"
	ref := make([][2]float64, n)
	for j := range ref {
		ref[j] = [2]float64{rng.Float64(), rng.Float64()}
	}
	truth := perm.Random(n, rng)
	obs := make([][2]float64, n)
	for i := range obs {
		r := ref[truth[i]]
		obs[i] = [2]float64{r[0] + cfg.Sigma*rng.NormFloat64(), r[1] + cfg.Sigma*rng.NormFloat64()}
	}
	var mask *perm.Mask
	if cfg.Radius > 0 {
		var err error
		if mask, err = perm.NewMask(n); err != nil {
			return nil, fmt.Errorf("matching: Generate: %w", err)
		}
		for i := range n {
			for j := range n {
				if sqDist(ref[truth[i]], ref[j]) < cfg.Radius*cfg.Radius {
					_ = mask.Set(i, j, true) // indices are in range
				}
			}
		}
	}
	pr, err := NewProblem(ref, obs, cfg.Sigma, mask)
	if err != nil {
		return nil, fmt.Errorf("matching: Generate: %w", err)
	}
	pr.Truth = truth
	return pr, nil
}

// NewProblem returns the matching problem of the given points. ref and obs
// must have the same length n >= 1 and finite coordinates, sigma must be
// finite and > 0, and mask, if not nil, must be n x n, admit at least one
// permutation, and n must be at most MaxMaskedN. The slices are copied.
func NewProblem(ref, obs [][2]float64, sigma float64, mask *perm.Mask) (*Problem, error) {
	n := len(ref)
	switch {
	case n < 1:
		return nil, errors.New("matching: NewProblem: no points")
	case len(obs) != n:
		return nil, fmt.Errorf("matching: NewProblem: %d observed points, %d reference points", len(obs), n)
	case !(sigma > 0) || math.IsInf(sigma, 1):
		return nil, fmt.Errorf("matching: NewProblem: sigma must be finite and > 0, got %v", sigma)
	}
	for k, pts := range [][][2]float64{ref, obs} {
		for i, pt := range pts {
			for _, v := range pt {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					return nil, fmt.Errorf("matching: NewProblem: %s point %d is not finite: %v", [...]string{"reference", "observed"}[k], i, pt)
				}
			}
		}
	}
	pr := &Problem{
		Ref:   append([][2]float64(nil), ref...),
		Obs:   append([][2]float64(nil), obs...),
		Sigma: sigma,
	}
	if mask == nil {
		lg, _ := math.Lgamma(float64(n + 1))
		pr.logPrior = -lg
	} else {
		if mask.Size() != n {
			return nil, fmt.Errorf("matching: NewProblem: mask is %d x %d, want %d x %d", mask.Size(), mask.Size(), n, n)
		}
		if n > MaxMaskedN {
			return nil, fmt.Errorf("matching: NewProblem: masked problems are limited to n <= %d, got %d", MaxMaskedN, n)
		}
		count := countAdmitted(mask)
		if count == 0 {
			return nil, errors.New("matching: NewProblem: the mask admits no permutation")
		}
		pr.Mask = mask.Clone()
		pr.logPrior = -math.Log(float64(count))
	}
	pr.logits = mat.NewDense(n, n, nil)
	for i := range n {
		for j := range n {
			pr.logits.Set(i, j, -sqDist(pr.Obs[i], pr.Ref[j])/(2*sigma*sigma))
		}
	}
	return pr, nil
}

// N returns the number of points.
func (pr *Problem) N() int { return len(pr.Ref) }

// Logits returns a copy of the n x n matrix X with X_ij = -‖y_i - r_j‖²/(2σ²),
// so that log p(Y | P) = ⟨P, X⟩ - n log(2πσ²). Entries outside the mask are
// included; combine with Mask to restrict the support.
func (pr *Problem) Logits() *mat.Dense { return mat.DenseCopyOf(pr.logits) }

// LogPrior returns log p(P) for a permutation the mask admits: minus the log
// of the number of admitted permutations.
func (pr *Problem) LogPrior() float64 { return pr.logPrior }

// LogJoint returns log p(Y, P) = log p(Y | P) + log p(P) for the permutation
// p, or -Inf when the mask does not admit p. It returns an error if p is not
// a permutation of size n.
func (pr *Problem) LogJoint(p perm.Perm) (float64, error) {
	if len(p) != pr.N() {
		return 0, fmt.Errorf("matching: LogJoint: permutation has length %d, want %d", len(p), pr.N())
	}
	if err := p.Validate(); err != nil {
		return 0, fmt.Errorf("matching: LogJoint: %w", err)
	}
	return pr.LogDensity(p), nil
}

// LogDensity is LogJoint without the input checks; it makes Problem an
// mcmc.SwapDeltaTarget. p must be a permutation of size n.
func (pr *Problem) LogDensity(p perm.Perm) float64 {
	if pr.Mask != nil && !pr.Mask.Admits(p) {
		return math.Inf(-1)
	}
	n := pr.N()
	s := 0.0
	for i, j := range p {
		s += pr.logits.At(i, j)
	}
	return s - float64(n)*math.Log(2*math.Pi*pr.Sigma*pr.Sigma) + pr.logPrior
}

// SwapDelta returns LogDensity(p') - LogDensity(p) where p' is p with p[i]
// and p[j] exchanged, in O(1). Both p and p' must be admitted by the mask
// (SwapMH only proposes such swaps).
func (pr *Problem) SwapDelta(p perm.Perm, i, j int) float64 {
	x := pr.logits
	return x.At(i, p[j]) + x.At(j, p[i]) - x.At(i, p[i]) - x.At(j, p[j])
}

// MCMCConfig sets up RunMCMC. One sweep is n swap proposals.
type MCMCConfig struct {
	Chains  int    // independent chains (>= 1)
	Burn    int    // sweeps discarded per chain
	Samples int    // draws kept per chain (>= 1)
	Thin    int    // sweeps between kept draws; 0 means 1
	Seed    uint64 // master seed
	Workers int    // chains run at once; 0 means GOMAXPROCS
	// Progress, if not nil, receives the sampler's progress reports.
	Progress func(mcmc.Progress)
}

// DefaultMCMCConfig returns a configuration that is ample for n <= 10.
func DefaultMCMCConfig() MCMCConfig {
	return MCMCConfig{Chains: 4, Burn: 500, Samples: 10000, Thin: 1, Seed: 1}
}

// MCMCPosterior is the output of RunMCMC.
type MCMCPosterior struct {
	// Marginals[i][j] estimates P(p(i) = j | Y): the fraction of kept draws,
	// over all chains, with row i on column j.
	Marginals *mat.Dense
	// Acceptance is the swap acceptance rate after burn-in.
	Acceptance float64
	// RHat is the rank-normalized split R̂ and ESS the bulk effective sample
	// size of the log joint trace (NaN when the trace is constant).
	RHat, ESS float64
	// Result holds the traces: draw k of chain c is
	// Result.Chains[c].Trace[k] = (p[0], ..., p[n-1], log p(Y, p)).
	Result *mcmc.Result[perm.Perm]
}

// RunMCMC samples the posterior with Metropolis-Hastings swap moves that
// respect the mask (mcmc.SwapMH), running cfg.Chains chains in parallel, and
// returns the estimated marginals with convergence diagnostics. Each chain
// starts from a random admitted permutation.
func (pr *Problem) RunMCMC(ctx context.Context, cfg MCMCConfig) (*MCMCPosterior, error) {
	n := pr.N()
	sampler := mcmc.Sampler[perm.Perm]{
		Chains: cfg.Chains, Burn: cfg.Burn, Samples: cfg.Samples, Thin: cfg.Thin,
		Seed: cfg.Seed, Workers: cfg.Workers, Progress: cfg.Progress,
		Init: func(c int, rng *rand.Rand) (perm.Perm, []mcmc.Stage[perm.Perm], error) {
			p, err := randomAdmitted(n, pr.Mask, rng)
			if err != nil {
				return nil, nil, err
			}
			k, err := mcmc.NewSwapMH(n, pr, pr.Mask, nil)
			if err != nil {
				return nil, nil, err
			}
			return p, []mcmc.Stage[perm.Perm]{{Name: "swap", Kernel: k, Repeat: n}}, nil
		},
		Record: func(dst []float64, p perm.Perm) []float64 {
			for _, j := range p {
				dst = append(dst, float64(j))
			}
			return append(dst, pr.LogDensity(p))
		},
	}
	res, err := sampler.Run(ctx)
	if err != nil {
		return nil, fmt.Errorf("matching: RunMCMC: %w", err)
	}
	marg := mat.NewDense(n, n, nil)
	total := 0
	for _, ch := range res.Chains {
		for _, row := range ch.Trace {
			for i := range n {
				j := int(row[i])
				marg.Set(i, j, marg.At(i, j)+1)
			}
			total++
		}
	}
	marg.Scale(1/float64(total), marg)

	post := &MCMCPosterior{Marginals: marg, Acceptance: res.Acceptance()[0].Rate(), Result: res}
	lj, err := res.Draws(n)
	if err != nil {
		return nil, fmt.Errorf("matching: RunMCMC: %w", err)
	}
	post.RHat, post.ESS = math.NaN(), math.NaN()
	if len(lj[0]) >= 4 {
		if post.RHat, err = mcmc.RankRHat(lj); err != nil {
			return nil, fmt.Errorf("matching: RunMCMC: %w", err)
		}
		if post.ESS, err = mcmc.BulkESS(lj); err != nil {
			return nil, fmt.Errorf("matching: RunMCMC: %w", err)
		}
	}
	return post, nil
}

// randomAdmitted returns a random permutation admitted by mask (uniform when
// mask is nil). With a mask it runs Kuhn's augmenting-path matching with
// rows and candidate lists in random order; the result is random but not
// uniform, which burn-in makes irrelevant.
func randomAdmitted(n int, mask *perm.Mask, rng *rand.Rand) (perm.Perm, error) {
	if mask == nil {
		return perm.Random(n, rng), nil
	}
	cand := make([][]int, n)
	for i := range cand {
		cand[i] = mask.Row(i)
		rng.Shuffle(len(cand[i]), func(a, b int) { cand[i][a], cand[i][b] = cand[i][b], cand[i][a] })
	}
	rowOf := make([]int, n) // column -> row, -1 if free
	for j := range rowOf {
		rowOf[j] = -1
	}
	seen := make([]bool, n)
	var augment func(i int) bool
	augment = func(i int) bool {
		for _, j := range cand[i] {
			if seen[j] {
				continue
			}
			seen[j] = true
			if rowOf[j] < 0 || augment(rowOf[j]) {
				rowOf[j] = i
				return true
			}
		}
		return false
	}
	for _, i := range rng.Perm(n) {
		clear(seen)
		if !augment(i) {
			return nil, errors.New("matching: the mask admits no permutation")
		}
	}
	p := make(perm.Perm, n)
	for j, i := range rowOf {
		p[i] = j
	}
	return p, nil
}

// countAdmitted returns the number of permutations mask admits (the
// permanent of the 0-1 mask) by dynamic programming over column subsets:
// ways[S] counts the assignments of rows 0..|S|-1 onto the columns S.
// n must be at most MaxMaskedN, so counts fit in a uint64 (20! < 2^63).
func countAdmitted(mask *perm.Mask) uint64 {
	n := mask.Size()
	ways := make([]uint64, 1<<n)
	ways[0] = 1
	for s := 1; s < len(ways); s++ {
		row := bits.OnesCount(uint(s)) - 1 // the row placed last
		var w uint64
		for t := s; t != 0; t &= t - 1 {
			j := bits.TrailingZeros(uint(t))
			if mask.Allowed(row, j) {
				w += ways[s&^(1<<j)]
			}
		}
		ways[s] = w
	}
	return ways[len(ways)-1]
}

func sqDist(a, b [2]float64) float64 {
	dx, dy := a[0]-b[0], a[1]-b[1]
	return dx*dx + dy*dy
}
