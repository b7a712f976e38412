package celegans

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/mcmc"
	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/perm"
	"github.com/permlab/permlab/relax"
)

// MCMC estimators: which recorded draws give the estimate of each P_j.
const (
	EstimateHalf = "half" // the matching of the assignment frequencies over the second half of the draws (the default)
	EstimateTail = "tail" // the same over the last 90% of the draws
	EstimateBest = "best" // the recorded draw with the highest likelihood
)

// estimators lists the valid Settings.Estimator values ("" means EstimateHalf).
var estimators = []string{EstimateHalf, EstimateTail, EstimateBest}

// solveMCMC runs the MCMC baseline through mcmc.RunModel on the model of p
// (NewModel): s.Chains chains in parallel (one per core), each sweep
// moving every worm's labels by swap Metropolis-Hastings proposals (one per
// free row, with the model's prepared swap deltas; with s.BlockMoves, block
// proposals after them) and then drawing W exactly from its conditional
// (the model's Conjugate draw), without tempering, recording every s.Thin
// sweeps. The estimate comes from the recorded draws after the first half
// (EstimateHalf) or tenth (EstimateTail) of each chain (ModelOptions'
// Discard, since a budget decides the run's length): the masked matching of
// their assignment frequencies, or the draw with the highest likelihood
// (EstimateBest).
//
// With a budget, RunModel's Budget and Reserve end the chains before a
// sweep that would not end, timed like their latest sweeps, reserveSafety
// times the cost of the final estimate before the deadline: the matching,
// and what the summaries of the draws recorded so far add to it, both
// timed here first on synthetic inputs (finalCost). RunModel records the
// permutations alone and diagnoses the log-likelihood trace alone, so that
// what follows the sampling is little more than that matching.
func solveMCMC(ctx context.Context, p *Problem, s Settings, seed uint64, c clock) (*Outcome, error) {
	model := NewModel(p)
	model.SigmaW = s.SigmaW
	thin := s.Thin
	if thin == 0 {
		thin = 10
	}
	o := mcmc.ModelOptions{
		Chains: max(s.Chains, 1), Burn: -1, Draws: max(s.Sweeps/thin, 1), Thin: thin,
		Seed: seed, Workers: max(s.Chains, 1),
		Temperatures: 1, BlockMoves: -1, MaxBlock: 4,
		Discard: 0.5,
		Record:  []string{SiteP}, LogLikDiagnostics: true,
	}
	if s.BlockMoves > 0 {
		o.BlockMoves = s.BlockMoves
	}
	if s.Estimator == EstimateTail {
		o.Discard = 0.1
	}
	var tr *tracer
	if s.TraceEvery > 0 && p.Truth != nil {
		tr = &tracer{p: p, every: s.TraceEvery, start: c.start}
		o.TraceEvery = s.TraceEvery
		o.Trace = func(tp mcmc.TracePoint) {
			if tp.Chain == 0 {
				tr.add(tp.State.Perms[SiteP], tp.Sweep)
			}
		}
	}
	if c.limited() {
		fixed, perDraw, err := finalCost(p, o.Chains, seed)
		if err != nil {
			return nil, err
		}
		o.Reserve = func(draws int) time.Duration {
			return time.Duration(reserveSafety * float64(fixed+time.Duration(draws)*perDraw))
		}
		if o.Budget = c.left(); o.Budget <= o.Reserve(0) {
			return nil, c.tooShort("sweep")
		}
	}
	res, err := mcmc.RunModel(ctx, model, o)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var be *mcmc.BudgetError
		if errors.As(err, &be) {
			// The budget ended before every chain's first draw, one every
			// thin sweeps.
			if be.Sweeps == 0 {
				return nil, c.tooShort("sweep")
			}
			return nil, c.tooShort(fmt.Sprintf("draw of %d sweeps", thin))
		}
		return nil, err
	}
	out := &Outcome{Iterations: res.ChainSweeps[0]}
	for _, sw := range res.ChainSweeps {
		out.Sweeps += sw
	}
	out.RHat, out.ESS = diagnostics(res.LogLik)
	post := res.Posterior.Perms[SiteP]
	out.Perms = post.Mode
	if s.Estimator == EstimateBest {
		best, bd := math.Inf(-1), 0
		for ci, lls := range res.LogLik {
			for d, ll := range lls {
				if ll > best {
					best, bd = ll, ci*res.Draws+d
				}
			}
		}
		out.Perms = post.Draws[bd]
	}
	if tr != nil {
		out.Trace = tr.pts
	}
	return out, nil
}

// costDraws is the number of synthetic draws per chain on which finalCost
// times the summaries of the draws.
const costDraws = 200

// finalCost times what follows the sampling of the MCMC baseline, on
// synthetic inputs of p's size: fixed, the masked matching of every worm
// (on random scores; the estimate matches the assignment frequencies), and
// perDraw, what each draw a chain records adds to it: RunModel's counting
// of the draws and its diagnosis of the log-likelihood trace, and this
// package's diagnostics of the same trace (on costDraws draws per chain).
func finalCost(p *Problem, chains int, seed uint64) (fixed, perDraw time.Duration, err error) {
	n, b := p.N(), p.Worms()
	rng := rand.New(rand.NewPCG(seed, 0x6d61746368))
	if models.SparseSummary(p.Masks) {
		return finalCostSparse(p, chains, rng)
	}
	scores := make([]*mat.Dense, b)
	for j := range scores {
		raw := make([]float64, n*n)
		for i := range raw {
			raw[i] = rng.Float64()
		}
		scores[j] = mat.NewDense(n, n, raw)
	}
	trace := costTrace(chains, rng)
	row := make([]float64, b*n) // a recorded draw: the permutations, row by row
	for k := range row {
		row[k] = float64(k % n)
	}
	t0 := time.Now()
	if _, err := p.matchAll(scores); err != nil {
		return 0, 0, err
	}
	fixed = time.Since(t0)
	t0 = time.Now()
	counts := make([]float64, b*n*n)
	for range chains * costDraws {
		flat := make([]int, b*n)
		for k, v := range row {
			flat[k] = int(v)
		}
		for k, c := range flat {
			counts[(k/n)*n*n+(k%n)*n+c]++
		}
	}
	diagnoseTrace(trace)
	return fixed, time.Since(t0) / costDraws, nil
}

// finalCostSparse is finalCost for masks whose posterior summary stays on
// the candidates (models.SparseSummary), timed on what that summary does:
// the matching of random scores on every worm's candidates, and the count
// of each draw's entries; nothing N × N is formed.
func finalCostSparse(p *Problem, chains int, rng *rand.Rand) (fixed, perDraw time.Duration, err error) {
	pats := make([]*relax.SparsePattern, len(p.Masks))
	for j, m := range p.Masks {
		if pats[j], err = relax.SparsePatternFromMask(m); err != nil {
			return 0, 0, err
		}
	}
	t0 := time.Now()
	for _, pat := range pats {
		values := make([]float64, pat.NNZ())
		for i := range values {
			values[i] = rng.Float64()
		}
		sc, err := pat.Scores(values)
		if err != nil {
			return 0, 0, err
		}
		if _, err := relax.MatchingSparse(*sc); err != nil {
			return 0, 0, err
		}
	}
	fixed = time.Since(t0)
	trace := costTrace(chains, rng)
	// A recorded draw, row by row as RunModel reads it: a matching on the
	// candidates of every worm.
	n := p.N()
	row := make([]float64, 0, len(pats)*n)
	counts := make([][]float64, len(pats))
	for j, pat := range pats {
		for _, c := range pat.Matching() {
			row = append(row, float64(c))
		}
		counts[j] = make([]float64, pat.NNZ())
	}
	t0 = time.Now()
	for range chains * costDraws {
		flat := make([]int, len(row))
		for k, v := range row {
			flat[k] = int(v)
		}
		for k, c := range flat {
			j := k / n
			counts[j][pats[j].Index(k%n, c)]++
		}
	}
	diagnoseTrace(trace)
	return fixed, time.Since(t0) / costDraws, nil
}

// costTrace returns a synthetic log-likelihood trace of costDraws draws per
// chain, for finalCost to time its diagnosis on.
func costTrace(chains int, rng *rand.Rand) [][]float64 {
	trace := make([][]float64, chains)
	for ci := range trace {
		trace[ci] = make([]float64, costDraws)
		for d := range trace[ci] {
			trace[ci][d] = rng.NormFloat64()
		}
	}
	return trace
}

// diagnoseTrace runs on trace what the end of a run does to the
// log-likelihood trace: this package's diagnostics and RunModel's.
func diagnoseTrace(trace [][]float64) {
	diagnostics(trace)
	_, _ = mcmc.RankRHat(trace)
	_, _ = mcmc.BulkESS(trace)
}

// diagnostics returns the rank-normalised split R̂ and the effective sample
// size of the chains' log-likelihood traces, NaN where there are too few
// draws for them.
func diagnostics(chains [][]float64) (rhat, ess float64) {
	rhat, ess = math.NaN(), math.NaN()
	shortest := math.MaxInt
	for _, c := range chains {
		shortest = min(shortest, len(c))
	}
	if len(chains) == 0 || shortest < 4 {
		return
	}
	trimmed := make([][]float64, len(chains))
	for i, c := range chains {
		trimmed[i] = c[len(c)-shortest:]
	}
	if r, err := mcmc.RankRHat(trimmed); err == nil {
		rhat = r
	}
	if e, err := mcmc.ESS(trimmed); err == nil {
		ess = e
	}
	return
}

// pooledCanonical sums the worms' statistics in canonical order under the
// permutations perms: Sxx = Σ_j P_jᵀ Sxx_j P_j and likewise Syx.
func (p *Problem) pooledCanonical(perms []perm.Perm, sxx *mat.SymDense, syx *mat.Dense) {
	n := p.N()
	sxx.Zero()
	syx.Zero()
	for j, s := range p.Stats {
		q := perms[j]
		for m := 0; m < n; m++ {
			for mm := m; mm < n; mm++ {
				a, c := q[m], q[mm]
				sxx.SetSym(a, c, sxx.At(a, c)+s.Sxx.At(m, mm))
			}
			for mm := 0; mm < n; mm++ {
				syx.Set(q[m], q[mm], syx.At(q[m], q[mm])+s.Syx.At(m, mm))
			}
		}
	}
}

// gram sets g = WᵀW for W with the given row supports, in O(Σ_r deg_r²).
func gram(w *mat.Dense, support [][]int, g *mat.Dense) {
	g.Zero()
	raw := g.RawMatrix()
	for r, cols := range support {
		for _, c := range cols {
			wc := w.At(r, c)
			for _, cc := range cols {
				raw.Data[c*raw.Stride+cc] += wc * w.At(r, cc)
			}
		}
	}
}
