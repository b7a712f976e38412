package celegans

import (
	"context"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/internal/racedetect"
	"github.com/permlab/permlab/mcmc"
	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/perm"
)

// swapDeltaOnly is the model without its SwapPreparer fast path: every
// other fast path, so that the engine falls back to SwapDelta.
type swapDeltaOnly struct{ m *Model }

func (w swapDeltaOnly) Sites() []models.Site                         { return w.m.Sites() }
func (w swapDeltaOnly) LogLik(t *ad.Tape, z *models.Sample) *ad.Var  { return w.m.LogLik(t, z) }
func (w swapDeltaOnly) LogLikState(s *models.State) (float64, error) { return w.m.LogLikState(s) }
func (w swapDeltaOnly) ConjugateSites() []string                     { return w.m.ConjugateSites() }
func (w swapDeltaOnly) SwapDelta(s *models.State, site string, b, i, k int) (float64, error) {
	return w.m.SwapDelta(s, site, b, i, k)
}
func (w swapDeltaOnly) SampleConditional(rng *rand.Rand, s *models.State, site string) error {
	return w.m.SampleConditional(rng, s, site)
}

// The prepared swap delta is LogLik's difference over several swaps of one
// preparation (models.CheckFastPaths), it is seen as soon as W changes in
// the same state, and RunModel makes the same chains with it as with the
// per-call SwapDelta, as the MCMC baseline runs them (Gibbs draws of W,
// block moves, several chains).
func TestModelPreparedSwap(t *testing.T) {
	p, _ := smallProblem(t, 14, 3, 3, 0.5, 2)
	m := NewModel(p)
	var _ models.SwapPreparer = m
	require.NoError(t, models.CheckFastPaths(m, 20, 7, 1e-9))

	spec, err := models.Check(m)
	require.NoError(t, err)
	s, err := models.NewState(spec, rand.New(rand.NewPCG(1, 2)))
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(3, 4))
	require.NoError(t, m.SampleConditional(rng, s, SiteW))
	free := spec.Perms[0].Free[1]
	var i, k int
	for i = range free {
		if free[i] {
			break
		}
	}
	for k = i + 1; k < len(free) && !(free[k] && p.Masks[1].Allowed(i, s.Perms[SiteP][1][k]) && p.Masks[1].Allowed(k, s.Perms[SiteP][1][i])); k++ {
	}
	require.Less(t, k, len(free), "a swap the mask admits")
	delta := func() float64 {
		d, err := m.PrepareSwap(s, SiteP, 1)
		require.NoError(t, err)
		return d(s.Perms[SiteP][1], i, k)
	}
	before := delta()
	require.NoError(t, m.SampleConditional(rng, s, SiteW)) // a new W in the same state
	after := delta()
	want, err := m.SwapDelta(s, SiteP, 1, i, k)
	require.NoError(t, err)
	assert.NotEqual(t, before, after)
	assert.Equal(t, want, after)
	_, err = m.PrepareSwap(s, SiteW, 0)
	assert.ErrorContains(t, err, "not a permutation site")
	_, err = m.PrepareSwap(s, SiteP, 3)
	assert.ErrorContains(t, err, "out of range")

	o := mcmc.ModelOptions{Seed: 4, Chains: 2, Burn: 20, Draws: 60, Thin: 2, Temperatures: 1, BlockMoves: 2}
	a, err := mcmc.RunModel(context.Background(), swapDeltaOnly{m}, o)
	require.NoError(t, err)
	b, err := mcmc.RunModel(context.Background(), m, o)
	require.NoError(t, err)
	da, db := a.Posterior.Perms[SiteP].Draws, b.Posterior.Perms[SiteP].Draws
	require.Len(t, db, len(da))
	moved := 0
	for d := range da {
		require.Equal(t, da[d], db[d], "draw %d", d)
		if d > 0 && !equalPerms(da[d], da[d-1]) {
			moved++
		}
	}
	assert.Positive(t, moved, "the chains moved")
	assert.Equal(t, a.Posterior.Reals[SiteW].Draws, b.Posterior.Reals[SiteW].Draws)
	assert.Equal(t, a.LogLik, b.LogLik)
}

func equalPerms(a, b []perm.Perm) bool {
	for j := range a {
		if !a[j].Equal(b[j]) {
			return false
		}
	}
	return true
}

// SampleConditional reuses its scratch between calls and between models of
// other sizes, and concurrent chains draw what they would draw alone.
func TestSampleConditionalScratch(t *testing.T) {
	small, _ := smallProblem(t, 10, 2, 2, 0.5, 3)
	large, _ := smallProblem(t, 16, 2, 2, 0.5, 4)
	draw := func(m *Model, seed uint64, times int) []float64 {
		spec, err := models.Check(m)
		require.NoError(t, err)
		rng := rand.New(rand.NewPCG(seed, 1))
		s, err := models.NewState(spec, rng)
		require.NoError(t, err)
		for range times {
			require.NoError(t, m.SampleConditional(rng, s, SiteW))
		}
		return s.Reals[SiteW]
	}
	ms, ml := NewModel(small), NewModel(large)
	want := [][]float64{draw(ms, 1, 3), draw(ml, 2, 3)}
	var wg sync.WaitGroup
	got := make([][][]float64, 8)
	for g := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[g] = [][]float64{draw(ms, 1, 3), draw(ml, 2, 3)}
		}()
	}
	wg.Wait()
	for g := range got {
		assert.Equal(t, want, got[g], "goroutine %d", g)
	}
	// The draw is W's exact conditional: its mean over many draws, on the
	// same permutations, is the conditional mean given by the Gibbs kernel.
	spec, err := models.Check(ms)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(9, 9))
	s, err := models.NewState(spec, rng)
	require.NoError(t, err)
	mean := make([]float64, len(s.Reals[SiteW]))
	const draws = 400
	for range draws {
		require.NoError(t, ms.SampleConditional(rng, s, SiteW))
		for e, v := range s.Reals[SiteW] {
			mean[e] += v / draws
		}
	}
	n := small.N()
	sxx, syx := mat.NewSymDense(n, nil), mat.NewDense(n, n, nil)
	small.pooledCanonical(s.Perms[SiteP], sxx, syx)
	g := ms.gibbsW()
	worst := 0.0
	for r := range n {
		rp, err := g.Posterior(r, sxx, syx)
		require.NoError(t, err)
		cov, err := rp.Cov()
		require.NoError(t, err)
		for a, c := range rp.Support {
			for e, rc := range small.support {
				if rc[0] == r && rc[1] == c {
					worst = math.Max(worst, math.Abs(mean[e]-rp.Mean[a])/math.Sqrt(cov.At(a, a)/draws))
				}
			}
		}
	}
	assert.Less(t, worst, 4.5, "largest deviation of a mean from the conditional mean, in standard errors")
}

// Without a budget the MCMC baseline gives bit-identical estimates and
// diagnostics whatever GOMAXPROCS is, with several chains, each estimator
// and block moves.
func TestSolveMCMCDeterministic(t *testing.T) {
	p, _ := smallProblem(t, 30, 3, 5, 0.4, 8)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, tc := range []struct {
		name string
		set  func(*Settings)
	}{
		{"half", func(*Settings) {}},
		{"tail, blocks", func(s *Settings) { s.Estimator, s.BlockMoves = EstimateTail, 2 }},
		{"best", func(s *Settings) { s.Estimator = EstimateBest }},
	} {
		s := DefaultSettings()
		s.Sweeps, s.Chains, s.Thin = 400, 3, 4
		if racedetect.Enabled {
			// Under the detector the point is the chains' concurrency,
			// which fewer sweeps and no polish still exercise.
			s.Sweeps, s.NoPolish = 100, true
		}
		tc.set(&s)
		var first *Outcome
		for _, procs := range []int{1, 2, 8} {
			runtime.GOMAXPROCS(procs)
			out, err := Solve(context.Background(), p, MCMC, s, 5)
			require.NoError(t, err)
			assert.Equal(t, s.Sweeps, out.Iterations)
			assert.Equal(t, 3*s.Sweeps, out.Sweeps)
			if first == nil {
				first = out
				require.False(t, math.IsNaN(out.RHat), tc.name)
				continue
			}
			assert.Equal(t, first.Perms, out.Perms, "%s at GOMAXPROCS %d", tc.name, procs)
			assert.Equal(t, math.Float64bits(first.RHat), math.Float64bits(out.RHat), "%s at GOMAXPROCS %d", tc.name, procs)
			assert.Equal(t, math.Float64bits(first.ESS), math.Float64bits(out.ESS), "%s at GOMAXPROCS %d", tc.name, procs)
		}
	}
}

// The trace comes through RunModel's Trace, every TraceEvery sweeps of the
// first chain.
func TestSolveMCMCTrace(t *testing.T) {
	p, _ := smallProblem(t, 16, 2, 4, 0.3, 3)
	s := DefaultSettings()
	s.Sweeps, s.Chains, s.TraceEvery = 300, 2, 25
	out, err := Solve(context.Background(), p, MCMC, s, 1)
	require.NoError(t, err)
	require.Len(t, out.Trace, 300/25)
	for k, tp := range out.Trace {
		assert.GreaterOrEqual(t, tp.Accuracy, 4.0/16, "point %d: the known neurons are right", k)
		if k > 0 {
			assert.GreaterOrEqual(t, tp.Elapsed, out.Trace[k-1].Elapsed)
		}
	}
	assert.LessOrEqual(t, out.Trace[len(out.Trace)-1].Elapsed, out.Elapsed)
}
