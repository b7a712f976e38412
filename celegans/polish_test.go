package celegans

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/perm"
)

// collapsedLogLik is log p(Y | P) with W integrated out.
func collapsedLogLik(t *testing.T, p *Problem, sigmaW float64, perms []perm.Perm) float64 {
	t.Helper()
	m := NewModel(p)
	m.SigmaW = sigmaW
	v, err := Collapsed{m}.CollapsedLogLik(&models.State{Perms: map[string][]perm.Perm{SiteP: perms}})
	require.NoError(t, err)
	return v
}

// TestSolvePolish: without a budget every method reaches the same estimate
// before polishing, so polishing raises the collapsed likelihood by
// exactly the gain it reports, never lowers it, and NoPolish reports NaN.
func TestSolvePolish(t *testing.T) {
	p, _ := smallProblem(t, 24, 2, 3, 0.4, 11)
	for _, m := range Methods {
		s := DefaultSettings()
		s.Steps, s.Sweeps, s.Draws, s.PlateauWindow = 80, 200, 5, 0
		s.NoPolish = true
		plain, err := Solve(context.Background(), p, m, s, 4)
		require.NoError(t, err)
		assert.True(t, math.IsNaN(plain.PolishGain), "%s", m)
		s.NoPolish = false
		pol, err := Solve(context.Background(), p, m, s, 4)
		require.NoError(t, err)
		require.GreaterOrEqual(t, pol.PolishGain, 0.0, "%s", m)
		before := collapsedLogLik(t, p, s.SigmaW, plain.Perms)
		after := collapsedLogLik(t, p, s.SigmaW, pol.Perms)
		assert.InDelta(t, before+pol.PolishGain, after, 1e-6*math.Abs(after), "%s", m)
		for j, q := range pol.Perms {
			require.True(t, p.Masks[j].Admits(q), "%s worm %d", m, j)
		}
		t.Logf("%s: accuracy %.3f -> %.3f, gain %.2f nats", m, plain.Accuracy, pol.Accuracy, pol.PolishGain)
	}
}

// TestMaximizeConditional: the W that MaximizeConditional sets is the
// maximum of the log joint over W for the given permutations: its
// directional derivatives vanish and moving away lowers it.
func TestMaximizeConditional(t *testing.T) {
	p, _ := smallProblem(t, 16, 2, 2, 0.4, 5)
	m := NewModel(p)
	s := &models.State{Perms: map[string][]perm.Perm{SiteP: p.Truth}, Reals: map[string][]float64{SiteW: make([]float64, len(p.support))}}
	require.NoError(t, m.MaximizeConditional(s, SiteW))
	f := func(w []float64) float64 {
		st := &models.State{Perms: s.Perms, Reals: map[string][]float64{SiteW: w}}
		v, err := m.LogLikState(st)
		require.NoError(t, err)
		return v + m.wPrior().LogProb(w)
	}
	w0 := s.Reals[SiteW]
	f0 := f(w0)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 5 {
		d := make([]float64, len(w0))
		for i := range d {
			d[i] = rng.NormFloat64()
		}
		at := func(h float64) float64 {
			w := make([]float64, len(w0))
			for i := range w {
				w[i] = w0[i] + h*d[i]
			}
			return f(w)
		}
		const h = 1e-4
		assert.InDelta(t, 0, (at(h)-at(-h))/(2*h), 1e-4*math.Abs(f0), "directional derivative")
		assert.Less(t, at(0.05), f0)
		assert.Less(t, at(-0.05), f0)
	}
	require.ErrorContains(t, m.MaximizeConditional(s, SiteP), "no conditional")
}
