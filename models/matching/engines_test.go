package matching

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/internal/longtest"
	"github.com/permlab/permlab/mcmc"
	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/perm"
	"github.com/permlab/permlab/vi"
)

func rowTV(a, b mat.Matrix, i int) float64 {
	_, n := a.Dims()
	s := 0.0
	for j := range n {
		s += math.Abs(a.At(i, j) - b.At(i, j))
	}
	return s / 2
}

// exactProb returns the exact posterior probability of p.
func exactProb(t *testing.T, pr *Problem, ex *models.ExactResult, p perm.Perm) float64 {
	ll, err := pr.LogLikState(&models.State{Perms: map[string][]perm.Perm{Site: {p}}})
	require.NoError(t, err)
	return math.Exp(ll - ex.LogEvidence)
}

// TestMCMCMatchesExact runs mcmc.RunModel on problems small enough to
// enumerate and compares its marginals with models.Exact.
//
// Bound. Row i of the estimate is a categorical distribution estimated
// from correlated draws; with N_eff effective draws its entries have
// standard deviations sd_ij = sqrt(M_ij (1 − M_ij) / N_eff), and since
// E|N(0, s²)| = s sqrt(2/π),
//
//	E[TV_i] ≈ ½ sqrt(2/π) Σ_j sd_ij.
//
// N_eff is the smallest ESS (mcmc.ESS over the chains) of the indicators
// 1[σ(i) = j] with M_ij ≥ 0.01, a conservative choice for every entry. The
// test requires TV_i < 4 E[TV_i] for every row and, so that an
// overestimated ESS cannot loosen it, also TV_i < 0.03: the bound of the
// example this package replaces, kept unchanged. To show that the bound has
// teeth, the test also checks that the exact marginals under a 15% wrong
// noise level are farther than the bound from the truth.
func TestMCMCMatchesExact(t *testing.T) {
	cases := []struct {
		cfg  Config
		seed uint64
	}{
		{Config{N: 5, Sigma: 0.3, Seed: 5}, 1},
		{Config{N: 6, Sigma: 0.3, Radius: 0.6, Seed: 6}, 2},
		{Config{N: 7, Sigma: 0.3, Seed: 7}, 3},
		{Config{N: 7, Sigma: 0.3, Radius: 0.6, Seed: 7}, 4},
	}
	if !longtest.Enabled {
		cases = cases[1:2]
	}
	const draws = 10000
	for _, tc := range cases {
		pr, err := Generate(tc.cfg)
		require.NoError(t, err)
		n := pr.N()
		ex, err := models.Exact(pr)
		require.NoError(t, err)
		res, err := mcmc.RunModel(context.Background(), pr, mcmc.ModelOptions{Seed: tc.seed, Draws: draws})
		require.NoError(t, err)
		post := res.Posterior.Perms[Site]
		chains := len(res.LogLik)
		require.Len(t, post.Draws, chains*draws, "draws are pooled chain after chain")
		assert.Empty(t, res.Posterior.Warnings)

		nEff := math.Inf(1)
		for i := range n {
			for j := range n {
				if ex.Perms[Site].Marginals[0].At(i, j) < 0.01 {
					continue
				}
				ind := make([][]float64, chains)
				for c := range ind {
					ind[c] = make([]float64, draws)
					for k, d := range post.Draws[c*draws : (c+1)*draws] {
						if d[0][i] == j {
							ind[c][k] = 1
						}
					}
				}
				e, err := mcmc.ESS(ind)
				require.NoError(t, err)
				if !math.IsNaN(e) {
					nEff = math.Min(nEff, e)
				}
			}
		}
		require.False(t, math.IsInf(nEff, 1))

		// A 15% error in the noise level, for comparison.
		wrong, err := NewProblem(pr.Ref, pr.Obs, 1.15*pr.Sigma, pr.Mask)
		require.NoError(t, err)
		exWrong, err := models.Exact(wrong)
		require.NoError(t, err)

		exact := ex.Perms[Site].Marginals[0]
		maxTV, maxBound, maxWrong := 0.0, 0.0, 0.0
		for i := range n {
			expected := 0.0
			for j := range n {
				m := exact.At(i, j)
				expected += 0.5 * math.Sqrt(2/math.Pi) * math.Sqrt(m*(1-m)/nEff)
			}
			// 1e-12 absorbs rounding in rows the mask fixes (M_ij = 1).
			bound := math.Min(4*expected, 0.03) + 1e-12
			got := rowTV(post.Marginals[0], exact, i)
			assert.Lessf(t, got, bound, "n = %d, row %d", n, i)
			maxTV = math.Max(maxTV, got)
			maxBound = math.Max(maxBound, bound)
			maxWrong = math.Max(maxWrong, rowTV(exWrong.Perms[Site].Marginals[0], exact, i))
		}
		assert.Greater(t, maxWrong, maxBound, "the bound must be able to tell a 15%% error in sigma")
		assert.Less(t, post.RHat, 1.01)
		t.Logf("n = %d, mask %v (%d perms): max row TV %.4f (bound %.4f; sigma off by 15%%: %.4f), N_eff %.0f of %d, R-hat %.4f",
			n, pr.Mask != nil, ex.States, maxTV, maxBound, maxWrong, nEff, chains*draws, post.RHat)
	}
}

// TestMCMCDeterministic checks that the draws depend on the seed alone,
// not on how many chains run at once.
func TestMCMCDeterministic(t *testing.T) {
	pr, err := Generate(Config{N: 6, Sigma: 0.3, Radius: 0.6, Seed: 1})
	require.NoError(t, err)
	o := mcmc.ModelOptions{Chains: 3, Burn: 10, Draws: 200, Seed: 9, Workers: 1}
	a, err := mcmc.RunModel(context.Background(), pr, o)
	require.NoError(t, err)
	o.Workers = 3
	b, err := mcmc.RunModel(context.Background(), pr, o)
	require.NoError(t, err)
	assert.Equal(t, a.Posterior.Perms[Site].Draws, b.Posterior.Perms[Site].Draws)
	for _, d := range a.Posterior.Perms[Site].Draws {
		require.True(t, pr.Mask.Admits(d[0]))
	}
}

// viOptions are the options of vi.FitModel in these tests. With vi's
// defaults (logits initialised at random with InitScale 1, one start, K = 8)
// the fit locks onto a wrong matching on 4 of the 16 problems at s = 0.05
// below: the mode of q has exact probability 0.012 where the MAP has 0.988
// (n = 6, seed 2), 0.226 against 0.766 (n = 7, seed 1), and 0.000 against
// 0.316 and 0.566 (n = 8, seeds 3 and 4). Starting at zero logits with 16
// samples per step meets every criterion of the test.
func viOptions(seed uint64) vi.ModelOptions {
	return vi.ModelOptions{Seed: seed, InitScale: -1, K: 16}
}

// TestVIMatchesExact runs vi.FitModel (options viOptions) against the
// exact posterior. Reverse-KL variational inference with a Gumbel-space
// mean-field family is mode-seeking: on a concentrated posterior it must
// find the mode and match the marginals; on one split between a few
// permutations it must lock onto one of the main modes rather than
// something in between. These are the criteria of the example this package
// replaces, kept unchanged.
func TestVIMatchesExact(t *testing.T) {
	var concentrated int
	sigmas, sizes := []float64{0.05, 0.08}, []int{5, 6, 7, 8}
	if !longtest.Enabled {
		sigmas, sizes = sigmas[:1], sizes[:2]
	}
	for _, sigma := range sigmas {
		for _, n := range sizes {
			for seed := uint64(1); seed <= 4; seed++ {
				pr, err := Generate(Config{N: n, Sigma: sigma, Seed: seed})
				require.NoError(t, err)
				ex, err := models.Exact(pr)
				require.NoError(t, err)
				res, err := vi.FitModel(context.Background(), pr, viOptions(seed))
				require.NoError(t, err)
				q := res.Posterior.Perms[Site]
				exMode := ex.MAP.Perms[Site][0]
				pMAP := exactProb(t, pr, ex, exMode)
				pMode := exactProb(t, pr, ex, q.Mode[0])
				tv, err := q.MaxRowTV(ex.Perms[Site])
				require.NoError(t, err)
				t.Logf("σ=%g n=%d seed=%d P(MAP)=%.3f P(mode of q)=%.3f max row TV=%.3f", sigma, n, seed, pMAP, pMode, tv)
				assert.GreaterOrEqual(t, pMode, 0.5*pMAP, "σ=%g n=%d seed=%d", sigma, n, seed)
				if pMAP >= 0.9 {
					concentrated++
					assert.True(t, q.Mode[0].Equal(exMode), "σ=%g n=%d seed=%d: mode %v, MAP %v", sigma, n, seed, q.Mode[0], exMode)
					// The sampling error of the 1000 hard draws is below
					// 0.016 per entry; the rest is the approximation.
					assert.Less(t, tv, 0.1, "σ=%g n=%d seed=%d", sigma, n, seed)
				}
			}
		}
	}
	require.GreaterOrEqual(t, concentrated, 3, "enough concentrated cases to test")
}

// exactBeta returns the exact posterior mean of β, Σ_σ p(σ | y) E[β | y, σ].
func exactBeta(t *testing.T, r *Regression, ex *models.ExactResult) []float64 {
	n, d := r.X.Dims()
	mean := make([]float64, d)
	s := &models.State{Perms: map[string][]perm.Perm{}}
	require.NoError(t, perm.Enumerate(n, nil, func(p perm.Perm) error {
		s.Perms[Site] = []perm.Perm{p}
		ll, err := r.CollapsedLogLik(s)
		if err != nil {
			return err
		}
		_, m, err := r.posteriorMean(p)
		if err != nil {
			return err
		}
		w := math.Exp(ll - ex.LogEvidence)
		for k := range mean {
			mean[k] += w * m.AtVec(k)
		}
		return nil
	}))
	return mean
}

// TestRegressionEnginesMatchExact fits permutation regression (n = 6,
// d = 2, s = 0.1), whose posterior over σ is multimodal, with both engines
// and compares them with models.Exact.
//
// MCMC, with its default options, moves σ under the collapsed likelihood.
// Its row marginals must be within 4 E[TV_i] of the exact ones, E[TV_i] ≈
// ½ sqrt(2/π) Σ_j sqrt(M_ij (1 − M_ij) / N_eff) with N_eff the smallest ESS
// it reports (see TestMCMCMatchesExact), and its mean of β within 4 Monte
// Carlo standard errors of the exact posterior mean.
//
// VI is mode-seeking and finds one mode per fit; with one fit from a random
// start (the default) it lands on a wrong σ with max row TV above 0.99 for
// seeds 2 and 3. With the best of eight fits (Starts: 8) its mode must be
// the exact mode, and its mean of β within one posterior standard deviation
// of E[β | y, σ = mode].
func TestRegressionEnginesMatchExact(t *testing.T) {
	longtest.Skip(t, "eight VI fits per problem take several seconds")
	for seed := uint64(1); seed <= 3; seed++ {
		r, err := GenerateRegression(RegressionConfig{N: 6, D: 2, S: 0.1, Seed: seed})
		require.NoError(t, err)
		ex, err := models.Exact(r)
		require.NoError(t, err)
		exact := ex.Perms[Site]

		mc, err := mcmc.RunModel(context.Background(), r, mcmc.ModelOptions{Seed: seed})
		require.NoError(t, err)
		assert.Empty(t, mc.Posterior.Warnings)
		post := mc.Posterior.Perms[Site]
		for i := range 6 {
			expected := 0.0
			for j := range 6 {
				m := exact.Marginals[0].At(i, j)
				expected += 0.5 * math.Sqrt(2/math.Pi) * math.Sqrt(m*(1-m)/post.ESS)
			}
			assert.Less(t, rowTV(post.Marginals[0], exact.Marginals[0], i), 4*expected+1e-12, "seed %d row %d", seed, i)
		}
		beta := mc.Posterior.Reals[BetaSite]
		for k, want := range exactBeta(t, r, ex) {
			assert.InDelta(t, want, beta.Mean[k], 4*beta.Std[k]/math.Sqrt(beta.ESS[k]), "seed %d β_%d", seed, k)
		}

		q, err := vi.FitModel(context.Background(), r, vi.ModelOptions{Seed: seed, Starts: 8})
		require.NoError(t, err)
		mode := exact.Mode[0]
		assert.Equal(t, mode, q.Posterior.Perms[Site].Mode[0], "seed %d", seed)
		_, mean, err := r.posteriorMean(mode)
		require.NoError(t, err)
		var cov mat.SymDense
		require.NoError(t, r.chol.InverseTo(&cov))
		for k := range 2 {
			assert.InDelta(t, mean.AtVec(k), q.Posterior.Reals[BetaSite].Mean[k], math.Sqrt(cov.At(k, k)), "seed %d β_%d", seed, k)
		}
	}
}
