package celegans

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/mcmc"
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

// mcChain is the state of one chain of the MCMC baseline, with what it
// records: the draws (thinned) and their log likelihoods.
type mcChain struct {
	mcState
	chain   int
	sweeper *stepper
	draws   [][]uint16
	logLik  []float64
	targets []*wormTarget
}

// solveMCMC runs the MCMC baseline: s.Chains chains in parallel (one per
// core), each alternating an exact Gibbs draw of W with swap (and, with
// s.BlockMoves, block) Metropolis-Hastings moves of every worm's labels,
// recording every s.Thin sweeps. With a budget, the run stops when one more
// sweep would leave less than the final estimate needs: reserveSafety times
// the matching's cost, timed on the random scores of the initial state, and
// the counting's, taken to be half the time recording the draws took.
func solveMCMC(ctx context.Context, p *Problem, s Settings, seed uint64, c clock) (*Outcome, error) {
	n, b := p.N(), p.Worms()
	model := NewModel(p)
	model.SigmaW = s.SigmaW
	support := p.supportRows()
	gibbs := model.gibbsW()
	chains := max(s.Chains, 1)
	thin := s.Thin
	if thin == 0 {
		thin = 10
	}
	var constant float64
	for j := range p.Stats {
		constant += model.constant(j)
	}
	tr := &tracer{p: p, every: s.TraceEvery, start: c.start}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	states := make([]*mcChain, chains)
	var mu sync.Mutex                  // guards the two costs below, measured by every chain
	var match, recording time.Duration // measured costs of the estimate's parts
	reserve := func() time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return time.Duration(reserveSafety * float64(match+recording/time.Duration(chains)/2))
	}
	sampler := &mcmc.Sampler[*mcChain]{
		Chains: chains, Samples: max(s.Sweeps/thin, 1), Thin: thin, Seed: seed, Workers: chains,
		Init: func(ci int, rng *rand.Rand) (*mcChain, []mcmc.Stage[*mcChain], error) {
			st := &mcChain{mcState: mcState{w: mat.NewDense(n, n, nil), g: mat.NewDense(n, n, nil)}, chain: ci, sweeper: &stepper{c: c}}
			st.targets = model.wormTargets(&st.mcState)
			states[ci] = st
			// Start every worm at a random permutation admitted by its mask:
			// the matching of random scores under the mask.
			st.perms = make([]perm.Perm, b)
			t0 := time.Now()
			for j := range st.perms {
				sc := mat.NewDense(n, n, nil)
				raw := sc.RawMatrix().Data
				for i := range raw {
					raw[i] = rng.Float64()
				}
				q, err := relax.MatchingMasked(sc, p.Masks[j])
				if err != nil {
					return nil, nil, err
				}
				st.perms[j] = q
			}
			mu.Lock()
			match = max(match, time.Since(t0))
			mu.Unlock()
			pooledSxx := mat.NewSymDense(n, nil)
			pooledSyx := mat.NewDense(n, n, nil)
			stages := []mcmc.Stage[*mcChain]{{Name: "W", Kernel: mcmc.KernelFunc[*mcChain](func(rng *rand.Rand, s *mcChain) (bool, error) {
				p.pooledCanonical(s.perms, pooledSxx, pooledSyx)
				if err := gibbs.Sample(rng, s.w, pooledSxx, pooledSyx); err != nil {
					return false, err
				}
				gram(s.w, support, s.g)
				return true, nil
			})}}
			for j := 0; j < b; j++ {
				fixed := make([]bool, n)
				for _, k := range p.Known[j] {
					fixed[k] = true
				}
				kern, err := mcmc.NewSwapMH(n, st.targets[j], p.Masks[j], fixed)
				if err != nil {
					return nil, nil, err
				}
				jj := j
				stages = append(stages, mcmc.Stage[*mcChain]{Name: fmt.Sprintf("P%d", j), Repeat: max(n-len(p.Known[j]), 1),
					Kernel: mcmc.KernelFunc[*mcChain](func(rng *rand.Rand, s *mcChain) (bool, error) {
						return kern.Step(rng, s.perms[jj])
					})})
				if s.BlockMoves > 0 && n-len(p.Known[j]) >= 3 {
					block, err := mcmc.NewBlockMH(n, st.targets[j], p.Masks[j], fixed, 4)
					if err != nil {
						return nil, nil, err
					}
					stages = append(stages, mcmc.Stage[*mcChain]{Name: fmt.Sprintf("block P%d", j), Repeat: s.BlockMoves,
						Kernel: mcmc.KernelFunc[*mcChain](func(rng *rand.Rand, s *mcChain) (bool, error) {
							return block.Step(rng, s.perms[jj])
						})})
				}
			}
			if c.limited() {
				// The last stage of each sweep decides whether another fits.
				sw := st.sweeper
				stages = append(stages, mcmc.Stage[*mcChain]{Name: "budget", Kernel: mcmc.KernelFunc[*mcChain](func(*rand.Rand, *mcChain) (bool, error) {
					sw.done()
					sw.reserve = reserve()
					if !sw.another() {
						cancel()
					}
					return false, nil
				})})
				sw.reserve = reserve()
				if !sw.another() {
					cancel()
				}
				sw.begin()
			}
			return st, stages, nil
		},
		Record: func(dst []float64, s *mcChain) []float64 {
			t0 := time.Now()
			s.draws = append(s.draws, flatPerms(s.perms))
			ll := constant
			for j, wt := range s.targets {
				ll += wt.LogDensity(s.perms[j])
			}
			s.logLik = append(s.logLik, ll)
			if s.chain == 0 && tr.every > 0 && (len(s.draws)*thin)%tr.every < thin {
				tr.add(s.perms)
			}
			mu.Lock()
			recording += time.Since(t0)
			mu.Unlock()
			return append(dst, ll)
		},
	}
	res, err := sampler.Run(runCtx)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		return nil, err
	}
	sweeps := 0
	for _, ch := range res.Chains {
		sweeps += ch.Sweeps
	}
	if res.Chains[0].Sweeps == 0 {
		return nil, c.tooShort("sweep")
	}
	out := &Outcome{Iterations: res.Chains[0].Sweeps, Sweeps: sweeps, RHat: math.NaN(), ESS: math.NaN()}
	// The draws the estimate uses: the same part of every chain (the
	// chains may have recorded different numbers before the budget ended).
	kept := make([][]int, chains) // indices of the kept draws per chain
	var lls [][]float64
	for ci, st := range states {
		if st == nil {
			continue
		}
		if len(st.draws) == 0 {
			// Fewer sweeps than the thinning: the state reached is the estimate.
			st.draws = append(st.draws, flatPerms(st.perms))
			st.logLik = append(st.logLik, math.Inf(-1))
		}
		first := len(st.draws) / 2
		if s.Estimator == EstimateTail {
			first = len(st.draws) / 10
		}
		for d := first; d < len(st.draws); d++ {
			kept[ci] = append(kept[ci], d)
		}
		lls = append(lls, st.logLik[first:])
	}
	out.RHat, out.ESS = diagnostics(lls)
	var perms []perm.Perm
	if s.Estimator == EstimateBest {
		best, bc, bd := math.Inf(-1), 0, 0
		for ci, st := range states {
			for _, d := range kept[ci] {
				if st != nil && st.logLik[d] > best {
					best, bc, bd = st.logLik[d], ci, d
				}
			}
		}
		perms = unflatPerms(states[bc].draws[bd], b, n)
	} else {
		counts := make([]*mat.Dense, b)
		for j := range counts {
			counts[j] = mat.NewDense(n, n, nil)
		}
		for ci, st := range states {
			for _, di := range kept[ci] {
				d := st.draws[di]
				for j := range counts {
					raw := counts[j].RawMatrix().Data
					for m := 0; m < n; m++ {
						raw[m*n+int(d[j*n+m])]++
					}
				}
			}
		}
		if perms, err = p.matchAll(counts); err != nil {
			return nil, err
		}
	}
	out.Perms, out.Trace = perms, tr.pts
	return out, nil
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

// unflatPerms is the inverse of flatPerms for b permutations of size n.
func unflatPerms(d []uint16, b, n int) []perm.Perm {
	out := make([]perm.Perm, b)
	for j := range out {
		q := make(perm.Perm, n)
		for m := range q {
			q[m] = int(d[j*n+m])
		}
		out[j] = q
	}
	return out
}

// flatPerms returns the permutations one after the other, as a draw.
func flatPerms(perms []perm.Perm) []uint16 {
	size := 0
	for _, q := range perms {
		size += len(q)
	}
	d := make([]uint16, 0, size)
	for _, q := range perms {
		for _, c := range q {
			d = append(d, uint16(c))
		}
	}
	return d
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
