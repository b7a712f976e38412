package mcmc_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permlab/permlab/mcmc"
	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/models/matching"
)

// TestRunModelDiscard: a negative Burn records from the first sweep, and
// Discard drops the leading share of each chain's draws after the run,
// from the posterior and the log-likelihood traces alike.
func TestRunModelDiscard(t *testing.T) {
	m, err := matching.GenerateRegression(matching.RegressionConfig{N: 6, D: 1, S: 0.1, Seed: 1})
	require.NoError(t, err)
	ctx := context.Background()
	o := mcmc.ModelOptions{Seed: 2, Chains: 2, Burn: -1, Draws: 41, Temperatures: 2}
	full, err := mcmc.RunModel(ctx, m, o)
	require.NoError(t, err)
	assert.Equal(t, 41, full.Sweeps, "no burn-in")
	assert.Equal(t, []int{41, 41}, full.ChainSweeps)
	o.Discard = 0.5
	half, err := mcmc.RunModel(ctx, m, o)
	require.NoError(t, err)
	assert.Equal(t, 41, half.Sweeps)
	require.Equal(t, 21, half.Draws, "⌊0.5·41⌋ = 20 of 41 discarded")
	fd, hd := full.Posterior.Perms["P"].Draws, half.Posterior.Perms["P"].Draws
	require.Len(t, hd, 2*21)
	for c := range 2 {
		assert.Equal(t, full.LogLik[c][20:], half.LogLik[c], "chain %d", c)
		assert.Equal(t, fd[c*41+20:(c+1)*41], hd[c*21:(c+1)*21], "chain %d", c)
		assert.Equal(t, full.Posterior.Reals["beta"].Draws[c*41+20:(c+1)*41], half.Posterior.Reals["beta"].Draws[c*21:(c+1)*21])
	}
	assert.Contains(t, strings.Join(half.Posterior.Notes, "\n"), "Discard")

	// The smallest share that drops a draw, and the largest: one draw is
	// always kept.
	o.Discard = 1.0 / 41
	one, err := mcmc.RunModel(ctx, m, o)
	require.NoError(t, err)
	assert.Equal(t, 40, one.Draws)
	o.Discard = 0.999
	last, err := mcmc.RunModel(ctx, m, o)
	require.NoError(t, err)
	assert.Equal(t, 1, last.Draws)
	assert.Equal(t, fd[40], last.Posterior.Perms["P"].Draws[0])
}

// TestRunModelRecordAndDiagnostics: Record leaves the sites it does not
// name out of the posterior without changing the chains, and
// LogLikDiagnostics reports the log-likelihood trace's R̂ and ESS for every
// site.
func TestRunModelRecordAndDiagnostics(t *testing.T) {
	m, err := matching.GenerateRegression(matching.RegressionConfig{N: 6, D: 2, S: 0.3, Seed: 3})
	require.NoError(t, err)
	ctx := context.Background()
	o := mcmc.ModelOptions{Seed: 4, Chains: 3, Burn: 50, Draws: 200}
	all, err := mcmc.RunModel(ctx, m, o)
	require.NoError(t, err)
	o.Record = []string{matching.Site}
	o.LogLikDiagnostics = true
	some, err := mcmc.RunModel(ctx, m, o)
	require.NoError(t, err)
	assert.Empty(t, some.Posterior.Reals)
	require.Contains(t, some.Posterior.Perms, matching.Site)
	pa, ps := all.Posterior.Perms[matching.Site], some.Posterior.Perms[matching.Site]
	assert.Equal(t, pa.Draws, ps.Draws, "the same chains")
	assert.Equal(t, pa.Mode, ps.Mode)
	assert.Equal(t, all.LogLik, some.LogLik)
	rhat, err := mcmc.RankRHat(some.LogLik)
	require.NoError(t, err)
	ess, err := mcmc.BulkESS(some.LogLik)
	require.NoError(t, err)
	assert.Equal(t, rhat, ps.RHat)
	assert.Equal(t, ess, ps.ESS)
	assert.GreaterOrEqual(t, pa.RHat, ps.RHat, "the worst over the rows includes the trace")
	assert.Contains(t, strings.Join(some.Posterior.Notes, "\n"), "Record")

	o.Record = []string{matching.BetaSite}
	beta, err := mcmc.RunModel(ctx, m, o)
	require.NoError(t, err)
	assert.Empty(t, beta.Posterior.Perms)
	rb := beta.Posterior.Reals[matching.BetaSite]
	require.NotNil(t, rb)
	assert.Nil(t, rb.RHat, "no per-coordinate diagnostics")
	assert.Equal(t, all.Posterior.Reals[matching.BetaSite].Mean, rb.Mean)
}

// TestRunModelTraceEvery: the trace comes every TraceEvery sweeps of each
// chain, burn-in included.
func TestRunModelTraceEvery(t *testing.T) {
	m, err := matching.GenerateRegression(matching.RegressionConfig{N: 6, D: 1, S: 0.1, Seed: 1})
	require.NoError(t, err)
	sweeps := map[int][]int{}
	o := mcmc.ModelOptions{Seed: 1, Chains: 2, Burn: 10, Draws: 30, TraceEvery: 7, Trace: func(tp mcmc.TracePoint) {
		sweeps[tp.Chain] = append(sweeps[tp.Chain], tp.Sweep)
	}}
	_, err = mcmc.RunModel(context.Background(), m, o)
	require.NoError(t, err)
	assert.Equal(t, map[int][]int{0: {7, 14, 21, 28, 35}, 1: {7, 14, 21, 28, 35}}, sweeps)
}

// slowModel is a matching regression whose every sweep takes at least
// delay (its draw of the collapsed β waits).
type slowModel struct {
	*matching.Regression
	delay time.Duration
}

func (m slowModel) SampleCollapsed(rng *rand.Rand, s *models.State) error {
	time.Sleep(m.delay)
	return m.Regression.SampleCollapsed(rng, s)
}

// TestRunModelBudgetAhead: a budget stops each chain before a sweep that
// would not end within it, rather than after the sweep that passes it; a
// budget that ends before the first draw is a *BudgetError that says how
// far the chains came.
func TestRunModelBudgetAhead(t *testing.T) {
	r, err := matching.GenerateRegression(matching.RegressionConfig{N: 5, D: 1, S: 0.3, Seed: 2})
	require.NoError(t, err)
	m := slowModel{Regression: r, delay: 50 * time.Millisecond}
	ctx := context.Background()
	o := mcmc.ModelOptions{Seed: 1, Chains: 2, Burn: -1, Draws: 100, Temperatures: 1, Budget: 225 * time.Millisecond}
	began := time.Now()
	res, err := mcmc.RunModel(ctx, m, o)
	took := time.Since(began)
	require.NoError(t, err)
	assert.True(t, res.BudgetExhausted)
	t.Logf("sweeps %v in %v", res.ChainSweeps, took)
	// The chains' initial draws of β take about 50 ms, and sweeps of about
	// 50 ms then end at about 100, 150 and 200 ms; a fourth would end after
	// 225 ms, so none starts.
	assert.Less(t, res.Wall, o.Budget)
	assert.Len(t, res.ChainSweeps, 2)
	for _, sw := range res.ChainSweeps {
		assert.GreaterOrEqual(t, sw, res.Sweeps)
		assert.LessOrEqual(t, sw, 4)
	}
	assert.Equal(t, res.Sweeps, res.Draws)

	// A reserve of 60 ms: the third sweep would leave less.
	o.Reserve = func(int) time.Duration { return 60 * time.Millisecond }
	res, err = mcmc.RunModel(ctx, m, o)
	require.NoError(t, err)
	assert.Less(t, res.Wall, o.Budget-50*time.Millisecond)
	assert.LessOrEqual(t, slices.Max(res.ChainSweeps), 2)
	o.Reserve = nil

	o.Burn, o.Budget = 10, 120*time.Millisecond
	_, err = mcmc.RunModel(ctx, m, o)
	var be *mcmc.BudgetError
	require.True(t, errors.As(err, &be), "%v", err)
	assert.Equal(t, 11, be.Need)
	assert.Positive(t, be.Sweeps)
	assert.Less(t, be.Sweeps, 11)
	assert.ErrorContains(t, err, "shorter Burn")
}
