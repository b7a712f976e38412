package vi_test

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/mcmc"
	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/models/matching"
	"github.com/permlab/permlab/perm"
	"github.com/permlab/permlab/vi"
)

// regression6 is permutation regression at n = 6, noise 0.1: on seed 4 the
// plain method's mode is 140 nats less probable than the exact MAP (VI
// settles in the wrong sign of β), on seed 1 it is right.
func regression6(t *testing.T, seed uint64) *matching.Regression {
	t.Helper()
	m, err := matching.GenerateRegression(matching.RegressionConfig{N: 6, D: 1, S: 0.1, Seed: seed})
	require.NoError(t, err)
	return m
}

func hasWarning(p *models.Posterior, part string) bool {
	for _, w := range p.Warnings {
		if strings.Contains(w, part) {
			return true
		}
	}
	return false
}

func TestCheckFixesAConfidentlyWrongFit(t *testing.T) {
	m := regression6(t, 4)
	ex, err := models.Exact(m)
	require.NoError(t, err)
	ctx := context.Background()

	plain, err := vi.FitModel(ctx, m, vi.ModelOptions{Seed: 1, Polish: vi.Polish{Off: true}})
	require.NoError(t, err)
	require.Nil(t, plain.Polish)
	pPlain, err := ex.Prob(&models.State{Perms: map[string][]perm.Perm{"P": plain.Posterior.Perms["P"].Mode}})
	require.NoError(t, err)
	pMAP, err := ex.Prob(ex.MAP)
	require.NoError(t, err)
	require.Less(t, pPlain, 1e-6*pMAP, "the plain method is wrong here (else the test shows nothing)")
	require.Empty(t, plain.Posterior.Warnings, "and says nothing")

	res, err := vi.FitModel(ctx, m, vi.ModelOptions{Seed: 1})
	require.NoError(t, err)
	rep := res.Polish
	require.NotNil(t, rep)
	mode := res.Posterior.Perms["P"].Mode
	assert.Equal(t, ex.MAP.Perms["P"], mode, "the answer is the exact MAP")
	assert.Equal(t, rep.State.Perms["P"], mode)
	assert.Greater(t, rep.Gain, float64(vi.DefaultPolishWarnNats))
	assert.InDelta(t, rep.LogJoint-rep.ModeLogJoint, rep.Gain, 1e-12)
	assert.True(t, hasWarning(res.Posterior, "nats (more than 2) more probable"), "warnings: %v", res.Posterior.Warnings)

	// The report's log joint is the model's: it matches Exact's odds.
	sc, err := models.NewScorer(m)
	require.NoError(t, err)
	j, err := sc.LogJoint(rep.State)
	require.NoError(t, err)
	assert.InDelta(t, rep.LogJoint, j, 1e-9)
	// The plain mode, scored the same way, is the fit's own mode.
	s := rep.State.Clone()
	s.Perms["P"] = plain.Posterior.Perms["P"].Mode
	j0, err := sc.LogJoint(s)
	require.NoError(t, err)
	assert.InDelta(t, rep.ModeLogJoint, j0, 1e-9)
	lpMAP, err := ex.LogProb(ex.MAP)
	require.NoError(t, err)
	lp0, err := ex.LogProb(s)
	require.NoError(t, err)
	assert.InDelta(t, lpMAP-lp0, rep.Gain, 1e-6, "J differences are exact log odds")

	// Candidates are sorted, the answer first; States are distinct.
	for k := 1; k < len(rep.Candidates); k++ {
		assert.GreaterOrEqual(t, rep.Candidates[k-1].LogJoint, rep.Candidates[k].LogJoint)
	}
	assert.Len(t, rep.Candidates, 1+4+4)
	states := rep.States(10)
	require.NotEmpty(t, states)
	assert.Equal(t, mode, states[0].Perms["P"])
	for a := range states {
		for b := a + 1; b < len(states); b++ {
			assert.NotEqual(t, states[a].Perms, states[b].Perms)
		}
	}
}

func TestCheckIsQuietWhenTheFitIsRight(t *testing.T) {
	m := regression6(t, 1)
	ex, err := models.Exact(m)
	require.NoError(t, err)
	res, err := vi.FitModel(context.Background(), m, vi.ModelOptions{Seed: 1})
	require.NoError(t, err)
	assert.Equal(t, ex.MAP.Perms["P"], res.Posterior.Perms["P"].Mode)
	assert.Empty(t, res.Posterior.Warnings)
	assert.Less(t, res.Polish.Gain, float64(vi.DefaultPolishWarnNats))
	assert.Equal(t, 0, res.Polish.Fit)
}

// TestCheckRanksStartsByTheLogJoint: with several starts, the fit kept is
// the one whose polished states are most probable, and fits that end in
// different modes are reported.
func TestCheckRanksStartsByTheLogJoint(t *testing.T) {
	m := regression6(t, 4)
	o := vi.ModelOptions{Seed: 2, Starts: 4, Steps: 400, Polish: vi.Polish{Restarts: -1, Draws: -1}}
	res, err := vi.FitModel(context.Background(), m, o)
	require.NoError(t, err)
	rep := res.Polish
	require.Len(t, rep.FitLogJoint, 4)
	for i, j := range rep.FitLogJoint {
		assert.LessOrEqual(t, j, rep.FitLogJoint[res.Best], "fit %d", i)
	}
	assert.Len(t, rep.Candidates, 4, "one mode per fit, no draws, no restarts")
	assert.Equal(t, res.Best, rep.Fit)
	distinct := map[string]bool{}
	for _, c := range rep.Candidates {
		distinct[fmt.Sprint(c.State.Perms["P"][0])] = true
	}
	require.Greater(t, len(distinct), 1, "on this seed one fit of four settles in the other sign of β")
	assert.True(t, hasWarning(res.Posterior, "fit 1 ended"), "warnings: %v", res.Posterior.Warnings)
	// Of the fits that polish to the answer, the one whose own mode is the
	// answer is kept: no gain, no warning about moving it.
	assert.Equal(t, 0.0, rep.Gain)
	assert.False(t, hasWarning(res.Posterior, "more probable than fit"))
}

func TestCheckDoesNotDependOnGOMAXPROCS(t *testing.T) {
	m := regression6(t, 3)
	o := vi.ModelOptions{Seed: 5, Steps: 300, Starts: 2, ELBOSamples: 500}
	run := func(procs int) *vi.ModelResult {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		res, err := vi.FitModel(context.Background(), m, o)
		require.NoError(t, err)
		return res
	}
	a, b := run(1), run(3)
	assert.Equal(t, a.Polish.Candidates, b.Polish.Candidates)
	assert.Equal(t, a.Posterior.Perms["P"].Mode, b.Posterior.Perms["P"].Mode)
	assert.Equal(t, a.Posterior.Warnings, b.Posterior.Warnings)
	// Nor on Workers, which runs the searches one by one or at once.
	for _, w := range []int{1, 3} {
		o.Workers = w
		c := run(2)
		assert.Equal(t, a.Polish.Candidates, c.Polish.Candidates, "Workers %d", w)
	}
}

func TestStatesOfNoReport(t *testing.T) {
	var rep *vi.PolishReport
	assert.Nil(t, rep.States(4), "a fit whose check was off or failed has no polished states")
}

func TestCheckOptions(t *testing.T) {
	m := regression6(t, 1)
	ctx := context.Background()
	for _, p := range []vi.Polish{{WarnNats: -1}, {WarnNats: math.Inf(1)}, {MaxBlock: 1}, {MaxBlock: -2}} {
		_, err := vi.FitModel(ctx, m, vi.ModelOptions{Seed: 1, Steps: 10, Polish: p})
		require.ErrorContains(t, err, "Polish.", "%+v", p)
	}
	// A prior without a tractable mass: no check, and the notes say why.
	gs := &gsModel{Regression: m}
	res, err := vi.FitModel(ctx, gs, vi.ModelOptions{Seed: 1, Steps: 50})
	require.NoError(t, err)
	assert.Nil(t, res.Polish)
	assert.Contains(t, strings.Join(res.Posterior.Notes, "\n"), "was not checked against the model")
}

// gsModel is a regression whose permutation has a Gumbel-Sinkhorn prior,
// which has no tractable mass.
type gsModel struct{ *matching.Regression }

func (g *gsModel) Sites() []models.Site {
	sites := g.Regression.Sites()
	ps := *sites[0].(*models.PermSite)
	ps.Prior = models.GumbelSinkhornPrior{Tau: 1}
	return []models.Site{&ps, sites[1]}
}

// TestCheckWarnsOfASecondMode: permutation regression with two modes at
// odds of about 1 to 2 (one per sign of β; see models.ExampleScorer_Polish).
// The check finds the more probable one, and some of its searches end in the
// other (a draw of the fit does too), 0.655 nats below: the warning says
// the marginals cover one mode.
func TestCheckWarnsOfASecondMode(t *testing.T) {
	m, err := matching.GenerateRegression(matching.RegressionConfig{N: 7, D: 1, S: 0.2, Seed: 2})
	require.NoError(t, err)
	ex, err := models.Exact(m)
	require.NoError(t, err)
	res, err := vi.FitModel(context.Background(), m, vi.ModelOptions{Seed: 1})
	require.NoError(t, err)
	require.Equal(t, ex.MAP.Perms["P"], res.Posterior.Perms["P"].Mode)
	require.True(t, hasWarning(res.Posterior, "ended in another local maximum only 0.655 nats"), "warnings: %v", res.Posterior.Warnings)
	// Chains started from the polished states (both modes) recover the
	// exact marginals.
	states := res.Polish.States(4)
	require.GreaterOrEqual(t, len(states), 2)
	cal, err := mcmc.RunModel(context.Background(), m, mcmc.CalibrationOptions(states, 1))
	require.NoError(t, err)
	tv, err := cal.Posterior.Perms["P"].MaxRowTV(ex.Perms["P"])
	require.NoError(t, err)
	require.Less(t, tv, 0.05)
}

// nanOnHard is point matching whose likelihood is NaN on one-hot
// permutations (it takes log P), as a model written only for relaxed
// values might be: the fit stands and says it could not be checked.
type nanOnHard struct{ pr *matching.Problem }

func (m nanOnHard) Sites() []models.Site { return m.pr.Sites() }

func (m nanOnHard) LogLik(t *ad.Tape, z *models.Sample) *ad.Var {
	ll := m.pr.LogLik(t, z)
	if z.Hard() {
		return ad.Add(ll, ad.Scale(ll, math.NaN()))
	}
	return ll
}

func TestCheckThatFailsLeavesTheFit(t *testing.T) {
	pr, err := matching.Generate(matching.Config{N: 5, Sigma: 0.1, Seed: 1})
	require.NoError(t, err)
	res, err := vi.FitModel(context.Background(), nanOnHard{pr}, vi.ModelOptions{Seed: 1, Steps: 200})
	require.NoError(t, err)
	assert.Nil(t, res.Polish)
	assert.True(t, hasWarning(res.Posterior, "could not be checked"), "warnings: %v", res.Posterior.Warnings)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = vi.FitModel(ctx, pr, vi.ModelOptions{Seed: 1, Steps: 200})
	require.Error(t, err, "a cancelled fit is an error, not a warning")
}

// wideMatch is point matching with an unrelated real site of more than
// models.MaxLaplaceDims coordinates, which the check can only profile.
type wideMatch struct{ pr *matching.Problem }

func (m wideMatch) Sites() []models.Site {
	return append(m.pr.Sites(), &models.RealSite{Name: "w", Shape: []int{models.MaxLaplaceDims + 1}, Prior: models.Normal{Sigma: 1}})
}

func (m wideMatch) LogLik(t *ad.Tape, z *models.Sample) *ad.Var {
	k := z.K()
	return ad.Add(m.pr.LogLik(t, z), ad.Scale(ad.SumAxis(ad.Reshape(ad.Square(z.Real("w")), k, -1), 1), -0.5))
}

// TestCheckWarnsOfAProfile: when J can only maximise over the real sites,
// a move of the mode comes with a warning that says J is a profile.
func TestCheckWarnsOfAProfile(t *testing.T) {
	pr, err := matching.Generate(matching.Config{N: 7, Sigma: 0.1, Seed: 1})
	require.NoError(t, err)
	res, err := vi.FitModel(context.Background(), wideMatch{pr}, vi.ModelOptions{Seed: 1, Steps: 5})
	require.NoError(t, err)
	require.Equal(t, "profile", res.Polish.Integration)
	require.Positive(t, res.Polish.Gain, "five steps leave the fit's mode short of the answer")
	assert.True(t, hasWarning(res.Posterior, "nats of a profile"), "warnings: %v", res.Posterior.Warnings)
}
