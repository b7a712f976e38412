package mcmc_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permlab/permlab/internal/longtest"
	"github.com/permlab/permlab/mcmc"
	"github.com/permlab/permlab/models/matching"
)

// TestRunModelBudget: a budget far below what the sweeps need stops every
// chain, the posterior holds the draws all chains reached, and the result
// says so; one shorter than the burn-in is an error that says what to do;
// one that is not reached changes nothing.
func TestRunModelBudget(t *testing.T) {
	longtest.Skip(t, "a wall-clock budget test: it needs the cores to itself, which the long stage of CI gives it (one package at a time)")
	m, err := matching.GenerateRegression(matching.RegressionConfig{N: 6, D: 1, S: 0.1, Seed: 1})
	require.NoError(t, err)
	ctx := context.Background()
	res, err := mcmc.RunModel(ctx, m, mcmc.ModelOptions{Seed: 1, Burn: 100, Draws: 10_000_000, Budget: 300 * time.Millisecond})
	require.NoError(t, err)
	assert.True(t, res.BudgetExhausted)
	assert.Less(t, res.Draws, 10_000_000)
	assert.Positive(t, res.Draws)
	assert.Len(t, res.Posterior.Perms["P"].Draws, 4*res.Draws)
	assert.GreaterOrEqual(t, res.Sweeps, 100+res.Draws)
	assert.Less(t, res.Wall, 20*time.Second)
	assert.Contains(t, strings.Join(res.Posterior.Notes, "\n"), "the budget of 300ms stopped the chains")

	_, err = mcmc.RunModel(ctx, m, mcmc.ModelOptions{Seed: 1, Burn: 100_000_000, Budget: 50 * time.Millisecond})
	require.ErrorContains(t, err, "shorter Burn")

	o := mcmc.ModelOptions{Seed: 1, Burn: 200, Draws: 200}
	a, err := mcmc.RunModel(ctx, m, o)
	require.NoError(t, err)
	o.Budget = time.Hour
	b, err := mcmc.RunModel(ctx, m, o)
	require.NoError(t, err)
	assert.False(t, b.BudgetExhausted)
	assert.Equal(t, a.Posterior.Perms["P"].Draws, b.Posterior.Perms["P"].Draws)
	assert.Equal(t, 200, b.Draws)

	_, err = mcmc.RunModel(ctx, m, mcmc.ModelOptions{Budget: -time.Second})
	require.ErrorContains(t, err, "Budget")
}

// TestRunModelTrace: the trace reports each chain's β = 1 state about a
// hundred times, in order of sweeps per chain, and tracing changes nothing.
func TestRunModelTrace(t *testing.T) {
	m, err := matching.GenerateRegression(matching.RegressionConfig{N: 6, D: 1, S: 0.1, Seed: 1})
	require.NoError(t, err)
	ctx := context.Background()
	o := mcmc.ModelOptions{Seed: 1, Burn: 200, Draws: 300}
	plain, err := mcmc.RunModel(ctx, m, o)
	require.NoError(t, err)
	last := map[int]int{}
	count := 0
	o.Trace = func(tp mcmc.TracePoint) {
		count++
		assert.Greater(t, tp.Sweep, last[tp.Chain])
		last[tp.Chain] = tp.Sweep
		require.NoError(t, tp.State.Perms["P"][0].Validate())
	}
	res, err := mcmc.RunModel(ctx, m, o)
	require.NoError(t, err)
	assert.Equal(t, plain.Posterior.Perms["P"].Draws, res.Posterior.Perms["P"].Draws)
	assert.Equal(t, map[int]int{0: 500, 1: 500, 2: 500, 3: 500}, last)
	assert.Equal(t, 4*100, count)
}
