package main

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/internal/longtest"
	"github.com/permlab/permlab/mcmc"
	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/perm"
	"github.com/permlab/permlab/vi"
)

// exactA returns the exact posterior mean of A, Σ_σ p(σ | Y) E[A | Y, σ],
// by enumeration with the collapsed model.
func exactA(t *testing.T, m *Alignment) []float64 {
	c := collapsed{m}
	var logw []float64
	var means [][]float64
	s := &models.State{Perms: map[string][]perm.Perm{}, Reals: map[string][]float64{}}
	require.NoError(t, perm.Enumerate(m.Ref.Shape[0], nil, func(p perm.Perm) error {
		s.Perms["P"] = []perm.Perm{p}
		_, mu, ll, err := c.posteriorA(s)
		if err != nil {
			return err
		}
		logw = append(logw, ll)
		means = append(means, []float64{mu[0].AtVec(0), mu[0].AtVec(1), mu[1].AtVec(0), mu[1].AtVec(1)})
		return nil
	}))
	best := math.Inf(-1)
	for _, w := range logw {
		best = math.Max(best, w)
	}
	mean, z := make([]float64, 4), 0.0
	for k, w := range logw {
		e := math.Exp(w - best)
		z += e
		for d := range mean {
			mean[d] += e * means[k][d]
		}
	}
	for d := range mean {
		mean[d] /= z
	}
	return mean
}

// TestMCMCAgreesWithExact runs mcmc.RunModel with its default options on the
// tutorial's problem (the data of `go run ./examples/tutorial`, whose
// posterior splits rows 0 and 3 between two columns 0.69 / 0.31) and
// compares it with the exact posterior of the collapsed model.
//
// Tolerance. A row of the estimated marginals is a categorical distribution
// estimated from N_eff effective draws, with standard deviations
// sd_ij = sqrt(M_ij (1 − M_ij) / N_eff) around the exact M_ij, so that
// E[TV_i] ≈ ½ sqrt(2/π) Σ_j sd_ij. The test takes for N_eff the smallest
// ESS MCMC reports for the site and requires TV_i < 4 E[TV_i] for every
// row, a bound that a 15% error in the noise level exceeds (checked). The
// mean of A must be within 4 Monte Carlo standard errors (posterior standard
// deviation over sqrt(ESS)) of the exact posterior mean.
func TestMCMCAgreesWithExact(t *testing.T) {
	longtest.Skip(t, "MCMC with its default options, tens of seconds")
	m, _ := Simulate(6, trueA, 0.1, 1)
	ex, err := models.Exact(collapsed{m})
	require.NoError(t, err)
	res, err := mcmc.RunModel(context.Background(), m, mcmc.ModelOptions{Seed: 1})
	require.NoError(t, err)
	assert.Empty(t, res.Posterior.Warnings)
	post, exact := res.Posterior.Perms["P"], ex.Perms["P"].Marginals[0]
	require.Greater(t, post.ESS, 100.0)

	wrong, _ := Simulate(6, trueA, 0.1, 1)
	wrong.S *= 1.15
	exWrong, err := models.Exact(collapsed{wrong})
	require.NoError(t, err)

	maxWrong, maxBound := 0.0, 0.0
	for i := range 6 {
		expected := 0.0
		for j := range 6 {
			p := exact.At(i, j)
			expected += 0.5 * math.Sqrt(2/math.Pi) * math.Sqrt(p*(1-p)/post.ESS)
		}
		bound := 4*expected + 1e-12
		assert.Less(t, rowTV(post.Marginals[0], exact, i), bound, "row %d", i)
		maxBound = math.Max(maxBound, bound)
		maxWrong = math.Max(maxWrong, rowTV(exWrong.Perms["P"].Marginals[0], exact, i))
	}
	assert.Greater(t, maxWrong, maxBound, "the bound must tell a 15%% error in s")

	a := res.Posterior.Reals["A"]
	for d, want := range exactA(t, m) {
		assert.InDelta(t, want, a.Mean[d], 4*a.Std[d]/math.Sqrt(a.ESS[d]), "A coordinate %d", d)
	}
}

// TestVIAgreesWithExact runs vi.FitModel against the exact posterior.
//
// On the tutorial's problem (s = 0.1), with vi's default options as the
// README uses them, where two rows split 0.69 / 0.31: the Gumbel-space
// mean-field family fitted by reverse KL is mode-seeking and overconfident.
// Its mode must be the exact one; it must put at least the exact mass (less
// 0.05, three standard deviations of the 1000 hard draws behind the
// marginals) on the mode's columns; and the rest of its error must be that
// sharpening alone, TV_i ≤ q_i,mode − p_i,mode + 0.05. The mean of A must be
// within one conditional posterior standard deviation of E[A | Y, σ = mode].
//
// On concentrated posteriors (s = 0.05, seeds 1-3) the fitted marginals must
// be within a max row TV of 0.1 of the exact ones: the sampling error of the
// hard draws is below 0.016 per entry, the rest is the approximation. There
// the test keeps the best of four fits (Starts: 4): with vi's default of one
// fit from random initial logits, the fit of seed 2 locks onto a wrong
// correspondence (and A), max row TV 1.0; so do those of seed 5 at s = 0.05
// and seeds 2, 3 and 5 at s = 0.1.
func TestVIAgreesWithExact(t *testing.T) {
	m, _ := Simulate(6, trueA, 0.1, 1)
	ex, err := models.Exact(collapsed{m})
	require.NoError(t, err)
	res, err := vi.FitModel(context.Background(), m, vi.ModelOptions{Seed: 1})
	require.NoError(t, err)
	q, p := res.Posterior.Perms["P"].Marginals[0], ex.Perms["P"].Marginals[0]
	mode := ex.Perms["P"].Mode[0]
	require.Equal(t, mode, res.Posterior.Perms["P"].Mode[0])
	for i, j := range mode {
		assert.GreaterOrEqual(t, q.At(i, j), p.At(i, j)-0.05, "row %d", i)
		assert.LessOrEqual(t, rowTV(q, p, i), q.At(i, j)-p.At(i, j)+0.05, "row %d", i)
	}
	s := &models.State{Perms: map[string][]perm.Perm{"P": {mode}}}
	chol, mu, _, err := collapsed{m}.posteriorA(s)
	require.NoError(t, err)
	var cov mat.SymDense
	require.NoError(t, chol.InverseTo(&cov))
	a := res.Posterior.Reals["A"]
	for d := range 4 {
		assert.InDelta(t, mu[d/2].AtVec(d%2), a.Mean[d], math.Sqrt(cov.At(d%2, d%2)), "A coordinate %d", d)
	}

	if !longtest.Enabled {
		return // three more data sets with four starts each: a long test
	}
	for seed := uint64(1); seed <= 3; seed++ {
		m, _ := Simulate(6, trueA, 0.05, seed)
		ex, err := models.Exact(collapsed{m})
		require.NoError(t, err)
		res, err := vi.FitModel(context.Background(), m, vi.ModelOptions{Seed: seed, Starts: 4})
		require.NoError(t, err)
		q := res.Posterior.Perms["P"]
		tv, err := q.MaxRowTV(ex.Perms["P"])
		require.NoError(t, err)
		assert.Equal(t, ex.Perms["P"].Mode[0], q.Mode[0], "s = 0.05, seed %d", seed)
		assert.Less(t, tv, 0.1, "s = 0.05, seed %d", seed)
		t.Logf("s = 0.05, seed %d: max row TV %.3f", seed, tv)
	}
}

func rowTV(a, b mat.Matrix, i int) float64 {
	_, n := a.Dims()
	s := 0.0
	for j := range n {
		s += math.Abs(a.At(i, j) - b.At(i, j))
	}
	return s / 2
}

// typo is the tutorial model with a mistyped site name in LogLik.
type typo struct{ *Alignment }

func (m typo) LogLik(t *ad.Tape, z *models.Sample) *ad.Var {
	return ad.Sum(z.Real("a"))
}

// TestMistypedSiteIsAnError checks the README's promise: reading a site
// that does not exist makes each engine return an error naming it.
func TestMistypedSiteIsAnError(t *testing.T) {
	m, _ := Simulate(4, trueA, 0.1, 1)
	_, err := vi.FitModel(context.Background(), typo{m}, vi.ModelOptions{Seed: 1, Steps: 2})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"a"`)
	_, err = mcmc.RunModel(context.Background(), typo{m}, mcmc.ModelOptions{Seed: 1, Burn: 1, Draws: 2})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"a"`)
}

// TestCalibratedMarginals: MCMC chains started from VI's polished states,
// with 650 sweeps each against default MCMC's 2000, recover the exact
// marginals of the tutorial's problem (rows 0 and 3 split 0.70 / 0.30)
// within row TV 0.05, where VI alone puts 0.99 on the mode; and VI's
// checked answer is the exact mode, silently (no warning is due: its own
// mode is the answer).
func TestCalibratedMarginals(t *testing.T) {
	m, _ := Simulate(6, trueA, 0.1, 1)
	ex, err := models.Exact(collapsed{m})
	require.NoError(t, err)
	ctx := context.Background()
	q, err := vi.FitModel(ctx, m, vi.ModelOptions{Seed: 1})
	require.NoError(t, err)
	require.Equal(t, ex.MAP.Perms["P"], q.Posterior.Perms["P"].Mode)
	assert.Equal(t, "Laplace", q.Polish.Integration, "A has four coordinates")
	// J is the exact collapsed log posterior: A enters linearly with
	// Gaussian noise, so Laplace's approximation is exact.
	lp, err := ex.LogProb(q.Polish.State)
	require.NoError(t, err)
	ll, err := collapsed{m}.CollapsedLogLik(q.Polish.State)
	require.NoError(t, err)
	assert.InDelta(t, ll, q.Polish.LogJoint, 1e-6)
	assert.InDelta(t, ex.LogEvidence+lp, ll, 1e-6)
	tvVI, err := q.Posterior.Perms["P"].MaxRowTV(ex.Perms["P"])
	require.NoError(t, err)
	assert.Greater(t, tvVI, 0.25, "VI alone is overconfident")

	cal, err := mcmc.RunModel(ctx, m, mcmc.CalibrationOptions(q.Polish.States(4), 1))
	require.NoError(t, err)
	tv, err := cal.Posterior.Perms["P"].MaxRowTV(ex.Perms["P"])
	require.NoError(t, err)
	assert.LessOrEqual(t, tv, 0.05)
	assert.Empty(t, cal.Posterior.Warnings)
}
