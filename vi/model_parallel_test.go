package vi

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Multi-start fits run in parallel give exactly what they give one at a
// time, and progress reports are never concurrent.
func TestFitModelParallelStarts(t *testing.T) {
	m := newPermRegression(1, 0.3)
	run := func(workers int) *ModelResult {
		t.Helper()
		var mu sync.Mutex
		inside := false
		calls := 0
		o := ModelOptions{Seed: 4, Steps: 150, Starts: 3, Workers: workers, ELBOSamples: 300, PosteriorDraws: 20,
			ProgressEvery: 10, Progress: func(ModelProgress) {
				mu.Lock()
				require.False(t, inside, "concurrent progress calls")
				inside = true
				mu.Unlock()
				calls++
				mu.Lock()
				inside = false
				mu.Unlock()
			}}
		res, err := FitModel(context.Background(), m, o)
		require.NoError(t, err)
		assert.Equal(t, 3*15, calls, "workers %d", workers)
		return res
	}
	one, three := run(1), run(3)
	assert.Equal(t, one.FitELBO, three.FitELBO)
	assert.Equal(t, one.Best, three.Best)
	assert.Equal(t, one.ELBO, three.ELBO)
	assert.Equal(t, one.Posterior.Perms["P"].Marginals, three.Posterior.Perms["P"].Marginals)

	_, err := FitModel(context.Background(), m, ModelOptions{Seed: 1, Workers: -1})
	assert.ErrorContains(t, err, "Workers")
}

// A cancelled multi-start run returns the context's error.
func TestFitModelParallelCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := FitModel(ctx, newPermRegression(1, 0.3), ModelOptions{Seed: 1, Steps: 50, Starts: 4})
	assert.ErrorIs(t, err, context.Canceled)
}
