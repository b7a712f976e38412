package celegans

import (
	"context"
	"math"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSolveSettingsErrors(t *testing.T) {
	p, _ := smallProblem(t, 12, 1, 3, 0.3, 1)
	for _, w := range []int{-1, 1} {
		s := DefaultSettings()
		s.PlateauWindow = w
		_, err := Solve(context.Background(), p, GumbelSinkhorn, s, 1)
		assert.ErrorContains(t, err, "PlateauWindow", "window %d", w)
	}
}

func TestSolveRestarts(t *testing.T) {
	p, _ := smallProblem(t, 16, 2, 4, 0.3, 3)
	solve := func(window int) *Outcome {
		t.Helper()
		s := DefaultSettings()
		s.Steps, s.Draws, s.PlateauWindow = 240, 5, window
		out, err := Solve(context.Background(), p, GumbelSinkhorn, s, 7)
		require.NoError(t, err)
		assert.Equal(t, 240, out.Iterations, "window %d: the step count is shared by all fits", window)
		assert.GreaterOrEqual(t, out.Accuracy, 4.0/16, "window %d: the known neurons are right", window)
		return out
	}
	single := solve(0)
	assert.Equal(t, 1, single.Fits)

	// A window too long to ever fill twice: one fit, from the run's seed, so
	// the same result as no restarts at all.
	long := solve(200)
	assert.Equal(t, 1, long.Fits)
	assert.Equal(t, single.Perms, long.Perms)

	// A short window on a 16-neuron problem: the fits settle within far
	// fewer than 240 steps, so several run, and the run is reproducible.
	short := solve(10)
	assert.Greater(t, short.Fits, 2)
	t.Logf("fits: %d, accuracy %.3f (one fit: %.3f)", short.Fits, short.Accuracy, single.Accuracy)
	again := solve(10)
	assert.Equal(t, short.Fits, again.Fits)
	assert.Equal(t, short.Perms, again.Perms)
}

// The MCMC baseline's settings, as its tuning grid varies them: every
// variant runs, reports its diagnostics, beats chance on the unknown
// neurons and does not depend on GOMAXPROCS.
func TestMCMCSettings(t *testing.T) {
	p, _ := smallProblem(t, 24, 4, 8, 0.3, 6)
	for _, tc := range []struct {
		name string
		set  func(*Settings)
	}{
		{"default", func(*Settings) {}},
		{"chains 2", func(s *Settings) { s.Chains = 2 }},
		{"thin 1, tail", func(s *Settings) { s.Thin, s.Estimator = 1, EstimateTail }},
		{"best draw", func(s *Settings) { s.Estimator = EstimateBest }},
		{"block moves", func(s *Settings) { s.BlockMoves = 2 }},
	} {
		s := DefaultSettings()
		s.Sweeps = 1000
		tc.set(&s)
		solve := func() *Outcome {
			out, err := Solve(context.Background(), p, MCMC, s, 3)
			require.NoError(t, err, tc.name)
			return out
		}
		out := solve()
		t.Logf("%s: unknown %.3f, sweeps %d, R̂ %.3f, ESS %.1f", tc.name, out.AccuracyUnknown, out.Sweeps, out.RHat, out.ESS)
		assert.Equal(t, 1000, out.Iterations, tc.name)
		assert.Equal(t, 1000*max(s.Chains, 1), out.Sweeps, tc.name)
		assert.False(t, math.IsNaN(out.RHat) || math.IsNaN(out.ESS), tc.name)
		assert.Greater(t, out.AccuracyUnknown, 0.2, tc.name) // chance: 0.12
		prev := runtime.GOMAXPROCS(1)
		again := solve()
		runtime.GOMAXPROCS(prev)
		assert.Equal(t, out.Perms, again.Perms, "%s: GOMAXPROCS", tc.name)
		assert.Equal(t, out.RHat, again.RHat, "%s: GOMAXPROCS", tc.name)
	}
	s := DefaultSettings()
	s.Estimator = "mean"
	_, err := Solve(context.Background(), p, MCMC, s, 1)
	assert.ErrorContains(t, err, "estimator")
	s = DefaultSettings()
	s.Chains = -1
	_, err = Solve(context.Background(), p, MCMC, s, 1)
	assert.ErrorContains(t, err, "Chains")
}

// Rounding takes its own learning rate when RoundLR is set.
func TestRoundingLR(t *testing.T) {
	p, _ := smallProblem(t, 16, 2, 4, 0.3, 3)
	run := func(lr, roundLR float64) *Outcome {
		s := DefaultSettings()
		s.Steps, s.LR, s.RoundLR = 60, lr, roundLR
		out, err := Solve(context.Background(), p, Rounding, s, 2)
		require.NoError(t, err)
		return out
	}
	assert.Equal(t, run(0.05, 0).Perms, run(0.1, 0.05).Perms, "RoundLR replaces LR")
	assert.Equal(t, run(0.1, 0).Perms, run(0.1, 0.1).Perms)
}
