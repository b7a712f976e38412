package celegans

import (
	"context"
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
		s.Steps, s.Mean, s.PlateauWindow = 240, 5, window
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
