package celegans

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/mcmc"
	"github.com/permlab/permlab/perm"
	"github.com/permlab/permlab/relax"
)

// solveMCMC runs the MCMC baseline. With a budget, the run stops when one
// more sweep would leave less than the final estimate needs: reserveSafety
// times the matching's cost, timed on the random scores of the initial
// state, and the counting's, taken to be half the time recording the draws
// took.
func solveMCMC(ctx context.Context, p *Problem, s Settings, seed uint64, c clock) (*Outcome, error) {
	n, b := p.N(), p.Worms()
	model := NewModel(p)
	model.SigmaW = s.SigmaW
	support := p.supportRows()
	gibbs := model.gibbsW()
	st := &mcState{w: mat.NewDense(n, n, nil), g: mat.NewDense(n, n, nil)}
	targets := model.wormTargets(st)
	// Draws are kept thinned; the posterior mean of each P_j is the
	// frequency of each assignment over the second half of them.
	const thin = 10
	var draws [][]uint16
	tr := &tracer{p: p, every: s.TraceEvery, start: c.start}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	sw := &stepper{c: c}
	var match, recording time.Duration // measured costs of the estimate's parts
	setReserve := func() {
		sw.reserve = time.Duration(reserveSafety * float64(match+recording/2))
	}
	pooledSxx := mat.NewSymDense(n, nil)
	pooledSyx := mat.NewDense(n, n, nil)
	sampler := &mcmc.Sampler[*mcState]{
		Chains: 1, Samples: max(s.Sweeps/thin, 1), Thin: thin, Seed: seed, Workers: 1,
		Init: func(_ int, rng *rand.Rand) (*mcState, []mcmc.Stage[*mcState], error) {
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
			match = time.Since(t0)
			stages := []mcmc.Stage[*mcState]{{Name: "W", Kernel: mcmc.KernelFunc[*mcState](func(rng *rand.Rand, s *mcState) (bool, error) {
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
				kern, err := mcmc.NewSwapMH(n, targets[j], p.Masks[j], fixed)
				if err != nil {
					return nil, nil, err
				}
				jj := j
				stages = append(stages, mcmc.Stage[*mcState]{Name: fmt.Sprintf("P%d", j), Repeat: max(n-len(p.Known[j]), 1),
					Kernel: mcmc.KernelFunc[*mcState](func(rng *rand.Rand, s *mcState) (bool, error) {
						return kern.Step(rng, s.perms[jj])
					})})
			}
			if c.limited() {
				// The last stage of each sweep decides whether another fits.
				stages = append(stages, mcmc.Stage[*mcState]{Name: "budget", Kernel: mcmc.KernelFunc[*mcState](func(*rand.Rand, *mcState) (bool, error) {
					sw.done()
					setReserve()
					if !sw.another() {
						cancel()
					}
					return false, nil
				})})
				setReserve()
				if !sw.another() {
					cancel()
				}
				sw.begin()
			}
			return st, stages, nil
		},
		Record: func(dst []float64, s *mcState) []float64 {
			t0 := time.Now()
			draws = append(draws, flatPerms(s.perms))
			recording += time.Since(t0)
			if tr.every > 0 && (len(draws)*thin)%tr.every < thin {
				tr.add(s.perms)
			}
			return dst
		},
	}
	res, err := sampler.Run(runCtx)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		return nil, err
	}
	if res.Chains[0].Sweeps == 0 {
		return nil, c.tooShort("sweep")
	}
	if len(draws) == 0 {
		// Fewer sweeps than the thinning: the state reached is the estimate.
		draws = append(draws, flatPerms(st.perms))
	}
	counts := make([]*mat.Dense, b)
	for j := range counts {
		counts[j] = mat.NewDense(n, n, nil)
	}
	for _, d := range draws[len(draws)/2:] {
		for j := range counts {
			raw := counts[j].RawMatrix().Data
			for m := 0; m < n; m++ {
				raw[m*n+int(d[j*n+m])]++
			}
		}
	}
	perms, err := p.matchAll(counts)
	if err != nil {
		return nil, err
	}
	return &Outcome{Perms: perms, Iterations: res.Chains[0].Sweeps, Trace: tr.pts}, nil
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
