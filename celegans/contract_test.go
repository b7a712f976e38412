package celegans

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/internal/longtest"
	"github.com/permlab/permlab/mcmc"
	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/vi"
)

func TestModelContract(t *testing.T) {
	p, _ := smallProblem(t, 12, 3, 2, 0.5, 1)
	m := NewModel(p)
	spec, err := models.Check(m)
	require.NoError(t, err)
	assert.Equal(t, []string{SiteP, SiteW}, spec.Names())
	// The known neurons are fixed rows of P.
	for j, known := range p.Known {
		for _, k := range known {
			assert.False(t, spec.Perms[0].Free[j][k], "worm %d, known neuron %d", j, k)
		}
	}
	// The value MCMC sees (LogLikState, SwapDelta) is LogLik's, at random
	// states with W drawn from its prior.
	require.NoError(t, models.CheckFastPaths(m, 20, 3, 1e-9))
	// A larger σ_W, with larger W, exercises the quadratic term more.
	m.SigmaW = 1
	require.NoError(t, models.CheckFastPaths(m, 20, 4, 1e-9))
}

// The fast paths cache the dense W per state: a changed W in the same state
// must be seen.
func TestModelFastPathCache(t *testing.T) {
	p, _ := smallProblem(t, 10, 2, 1, 1, 2)
	m := NewModel(p)
	spec, err := models.Check(m)
	require.NoError(t, err)
	s, err := models.NewState(spec, rand.New(rand.NewPCG(1, 1)))
	require.NoError(t, err)
	before, err := m.LogLikState(s)
	require.NoError(t, err)
	for e := range s.Reals[SiteW] {
		s.Reals[SiteW][e] *= 3
	}
	after, err := m.LogLikState(s)
	require.NoError(t, err)
	tp := ad.NewTape()
	want, err := models.LogLikState(struct{ models.Model }{m}, spec, tp, s) // the tape, not the fast path
	require.NoError(t, err)
	assert.NotEqual(t, before, after)
	assert.InDelta(t, want, after, 1e-9*math.Abs(want))
}

// CollapsedLogLik is checked by the identity
// p(Y | P) = p(Y | P, W) p(W) / p(W | P, Y), which holds for every W.
func TestCollapsedIdentity(t *testing.T) {
	p, _ := smallProblem(t, 10, 2, 1, 1, 5)
	m := NewModel(p)
	spec, err := models.Check(m)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(2, 3))
	g := m.gibbsW()
	n := p.N()
	for trial := 0; trial < 5; trial++ {
		s, err := models.NewState(spec, rng)
		require.NoError(t, err)
		collapsed, err := Collapsed{m}.CollapsedLogLik(s)
		require.NoError(t, err)
		ll, err := m.LogLikState(s)
		require.NoError(t, err)
		prior := m.wPrior().LogProb(s.Reals[SiteW])
		// log p(W | P, Y), row by row of the canonical W.
		sxx, syx := mat.NewSymDense(n, nil), mat.NewDense(n, n, nil)
		p.pooledCanonical(s.Perms[SiteP], sxx, syx)
		w := p.DenseW(s.Reals[SiteW])
		post := 0.0
		for r, cols := range p.supportRows() {
			if len(cols) == 0 {
				continue
			}
			rp, err := g.Posterior(r, sxx, syx)
			require.NoError(t, err)
			var chol mat.Cholesky
			require.True(t, chol.Factorize(rp.Precision))
			d := len(cols)
			diff := mat.NewVecDense(d, nil)
			for a, c := range cols {
				diff.SetVec(a, w.At(r, c)-rp.Mean[a])
			}
			var pd mat.VecDense
			pd.MulVec(rp.Precision, diff)
			post += 0.5*chol.LogDet() - 0.5*float64(d)*math.Log(2*math.Pi) - 0.5*mat.Dot(diff, &pd)
		}
		want := ll + prior - post
		assert.InDelta(t, want, collapsed, 1e-7*math.Abs(want), "trial %d", trial)
	}
}

// Both engines, through the generic paths and with default options, against
// exact enumeration on a problem small enough to enumerate: 2 worms of 5
// neurons, one known each, every identity a candidate.
func TestEnginesMatchExact(t *testing.T) {
	longtest.Skip(t, "runs both engines")
	p, sim := smallProblem(t, 5, 2, 1, 1, 4)
	m := NewModel(p)
	ex, err := models.Exact(Collapsed{m})
	require.NoError(t, err)
	exact := ex.Perms[SiteP]
	t.Logf("exact: %d states, mode %v (truth %v %v)", ex.States, exact.Mode, sim.Worms[0].Perm, sim.Worms[1].Perm)

	// MCMC on the full model (Gibbs draws of W, swap deltas) and on the
	// collapsed one: both within Monte Carlo error of the exact marginals.
	// The full model needs the default tempering and more draws: with 2
	// temperatures its chains stay in different relabelings (R̂ far above
	// 1.1, max row TV 0.25), because W drawn given a wrong labeling fits
	// that labeling; with 1000 draws ESS stays below 100.
	for _, tc := range []struct {
		name  string
		model models.Model
	}{{"gibbs", m}, {"collapsed", Collapsed{m}}} {
		res, err := mcmc.RunModel(context.Background(), tc.model, mcmc.ModelOptions{Seed: 1, Draws: 3000})
		require.NoError(t, err, tc.name)
		post := res.Posterior.Perms[SiteP]
		tv, err := post.MaxRowTV(exact)
		require.NoError(t, err)
		t.Logf("mcmc %s: max row TV %.4f, warnings %v", tc.name, tv, res.Posterior.Warnings)
		assert.Less(t, tv, 0.05, tc.name)
		assert.Empty(t, res.Posterior.Warnings, tc.name)
	}

	// VI: the mode of the exact posterior.
	res, err := vi.FitModel(context.Background(), m, vi.ModelOptions{Seed: 1, Starts: 4})
	require.NoError(t, err)
	assert.Equal(t, exact.Mode, res.Posterior.Perms[SiteP].Mode)
	tv, err := res.Posterior.Perms[SiteP].MaxRowTV(exact)
	require.NoError(t, err)
	t.Logf("vi: mode %v, max row TV %.4f", res.Posterior.Perms[SiteP].Mode, tv)
}

// Every method identifies the unknown neurons of a small synthetic problem
// far better than chance: the known neurons are given by the masks, so
// only the unknown ones say whether a method works.
func TestMethodsBeatChance(t *testing.T) {
	p, _ := smallProblem(t, 24, 4, 8, 0.3, 6)
	// Chance: a uniformly random candidate for each unknown neuron.
	chance, count := 0.0, 0
	for j, mk := range p.Masks {
		known := map[int]bool{}
		for _, k := range p.Known[j] {
			known[k] = true
		}
		for i := 0; i < p.N(); i++ {
			if !known[i] {
				chance += 1 / float64(len(mk.Row(i)))
				count++
			}
		}
	}
	chance /= float64(count)
	for _, m := range Methods {
		s := DefaultSettings()
		s.Steps, s.Sweeps, s.Draws = 400, 2000, 10
		out, err := Solve(context.Background(), p, m, s, 1)
		require.NoError(t, err, "%s", m)
		t.Logf("%s: unknown neurons %.3f (chance %.3f), all %.3f", m, out.AccuracyUnknown, chance, out.Accuracy)
		assert.Greater(t, out.AccuracyUnknown, 3*chance, "%s", m)
	}
}
