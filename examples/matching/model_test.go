package main

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/permlab/permlab/mcmc"
	"github.com/permlab/permlab/perm"
)

func TestGenerate(t *testing.T) {
	cfg := Config{N: 7, Sigma: 0.3, Radius: 0.6, Seed: 11}
	a, err := Generate(cfg)
	require.NoError(t, err)
	b, err := Generate(cfg)
	require.NoError(t, err)
	assert.Equal(t, a.Obs, b.Obs, "same seed, same problem")
	assert.Equal(t, a.Truth, b.Truth)
	require.NoError(t, a.Truth.Validate())
	require.NotNil(t, a.Mask)
	assert.True(t, a.Mask.Admits(a.Truth), "the truth is always a candidate")
	assert.Less(t, a.Mask.Count(), 49, "radius 0.6 must exclude some pairs")
	c, err := Generate(Config{N: 7, Sigma: 0.3, Seed: 12})
	require.NoError(t, err)
	assert.NotEqual(t, a.Obs, c.Obs)
	assert.Nil(t, c.Mask)

	for name, cfg := range map[string]Config{
		"n":         {N: 0, Sigma: 1},
		"sigma":     {N: 3, Sigma: 0},
		"sigma NaN": {N: 3, Sigma: math.NaN()},
		"radius":    {N: 3, Sigma: 1, Radius: math.NaN()},
		"too big":   {N: MaxMaskedN + 1, Sigma: 1, Radius: 0.5},
	} {
		_, err := Generate(cfg)
		assert.Error(t, err, name)
	}
	_, err = NewProblem([][2]float64{{0, 0}}, [][2]float64{{0, math.Inf(1)}}, 1, nil)
	assert.Error(t, err)
	_, err = NewProblem([][2]float64{{0, 0}}, nil, 1, nil)
	assert.Error(t, err)
	empty, err := perm.NewMask(2)
	require.NoError(t, err)
	_, err = NewProblem([][2]float64{{0, 0}, {1, 1}}, [][2]float64{{0, 0}, {1, 1}}, 1, empty)
	assert.Error(t, err, "mask admitting nothing")
}

// TestLogJoint compares LogJoint with the Gaussian density computed by
// gonum's distuv (the isotropic 2-D normal is a product of two univariate
// ones) and the uniform prior over the admitted permutations.
func TestLogJoint(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, radius := range []float64{0, 0.7} {
		pr, err := Generate(Config{N: 6, Sigma: 0.25, Radius: radius, Seed: 3})
		require.NoError(t, err)
		admitted := allTuples(6, pr.Mask)
		assert.InDelta(t, -math.Log(float64(len(admitted))), pr.LogPrior(), 1e-12)
		for range 20 {
			p := admitted[rng.IntN(len(admitted))]
			want := pr.LogPrior()
			for i, j := range p {
				for d := range 2 {
					want += distuv.Normal{Mu: pr.Ref[j][d], Sigma: 0.25}.LogProb(pr.Obs[i][d])
				}
			}
			got, err := pr.LogJoint(p)
			require.NoError(t, err)
			assert.InDelta(t, want, got, 1e-10)
		}
	}
	pr, err := Generate(Config{N: 6, Sigma: 0.25, Radius: 0.3, Seed: 3})
	require.NoError(t, err)
	for _, p := range allTuples(6, nil) {
		if !pr.Mask.Admits(p) {
			v, err := pr.LogJoint(p)
			require.NoError(t, err)
			assert.True(t, math.IsInf(v, -1))
			break
		}
	}
	_, err = pr.LogJoint(perm.Perm{0, 1, 2})
	assert.Error(t, err)
	_, err = pr.LogJoint(perm.Perm{0, 1, 2, 3, 4, 4})
	assert.Error(t, err)
}

func TestSwapDelta(t *testing.T) {
	pr, err := Generate(Config{N: 8, Sigma: 0.3, Seed: 4})
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(5, 6))
	for range 20 {
		p := perm.Random(8, rng)
		i, j := rng.IntN(8), rng.IntN(8)
		q := p.Clone()
		q[i], q[j] = q[j], q[i]
		assert.InDelta(t, pr.LogDensity(q)-pr.LogDensity(p), pr.SwapDelta(p, i, j), 1e-9)
	}
	var _ mcmc.SwapDeltaTarget = pr
}

func TestLogits(t *testing.T) {
	pr, err := Generate(Config{N: 4, Sigma: 0.5, Seed: 9})
	require.NoError(t, err)
	x := pr.Logits()
	for i := range 4 {
		for j := range 4 {
			dx, dy := pr.Obs[i][0]-pr.Ref[j][0], pr.Obs[i][1]-pr.Ref[j][1]
			assert.InDelta(t, -(dx*dx+dy*dy)/(2*0.25), x.At(i, j), 1e-12)
		}
	}
	x.Set(0, 0, 99)
	assert.NotEqual(t, 99.0, pr.Logits().At(0, 0), "Logits returns a copy")
}

func TestExactMAPIsTruthForSmallNoise(t *testing.T) {
	// Reference points are ~0.3 apart; noise 0.005 cannot confuse them.
	pr, err := Generate(Config{N: 8, Sigma: 0.005, Seed: 5})
	require.NoError(t, err)
	ex, err := pr.Exact()
	require.NoError(t, err)
	assert.Equal(t, pr.Truth, ex.MAP)
	assert.Equal(t, 40320, ex.Count)
	for i, j := range pr.Truth {
		assert.InDelta(t, 1, ex.Marginals.At(i, j), 1e-6)
	}
}

func TestCountAdmittedAndRandomAdmitted(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{1, 2, 4, 6} {
		full, err := perm.FullMask(n)
		require.NoError(t, err)
		lg, _ := math.Lgamma(float64(n + 1))
		assert.Equal(t, uint64(math.Round(math.Exp(lg))), countAdmitted(full))
		for range 5 {
			m := randomMask(t, n, 0.3, rng)
			assert.Equal(t, uint64(len(allTuples(n, m))), countAdmitted(m))
			p, err := randomAdmitted(n, m, rng)
			require.NoError(t, err)
			require.NoError(t, p.Validate())
			assert.True(t, m.Admits(p))
		}
	}
	m, err := perm.NewMask(3)
	require.NoError(t, err)
	for i := range 3 {
		require.NoError(t, m.Set(i, 0, true))
	}
	assert.Zero(t, countAdmitted(m))
	_, err = randomAdmitted(3, m, rng)
	assert.Error(t, err)
}

func rowTV(a, b mat.Matrix, i int) float64 {
	_, n := a.Dims()
	s := 0.0
	for j := range n {
		s += math.Abs(a.At(i, j) - b.At(i, j))
	}
	return s / 2
}

// TestMCMCMatchesExact runs the swap sampler on problems small enough to
// enumerate and compares the estimated marginals with the exact ones.
//
// Bound. Row i of the estimate is a categorical distribution estimated from
// correlated draws; with N_eff effective draws its entries have standard
// deviations sd_ij = sqrt(M_ij (1 - M_ij) / N_eff), and since E|N(0, s²)| =
// s sqrt(2/π),
//
//	E[TV_i] ≈ ½ sqrt(2/π) Σ_j sd_ij.
//
// N_eff is the smallest ESS (mcmc.ESS over the chains) of the indicators
// 1[p(i) = j] with M_ij ≥ 0.01, a conservative choice for every entry. The
// test requires TV_i < 4 E[TV_i] for every row and, so that an
// overestimated ESS cannot loosen it, also TV_i < 0.03. Calibration over 40
// sampler seeds for each case below: the largest ratio TV_i / E[TV_i] over
// all rows was 2.7 (median of the per-run maxima 1.1-1.3), and the largest
// TV_i was 0.017. To show that the bound has teeth, the test also checks that
// the exact marginals under a 15% wrong noise level are farther than the
// bound from the truth (0.06-0.15).
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
	const chains, samples = 4, 10000
	for _, tc := range cases {
		pr, err := Generate(tc.cfg)
		require.NoError(t, err)
		n := pr.N()
		ex, err := pr.Exact()
		require.NoError(t, err)
		post, err := pr.RunMCMC(context.Background(), MCMCConfig{Chains: chains, Burn: 200, Samples: samples, Seed: tc.seed})
		require.NoError(t, err)

		nEff := math.Inf(1)
		for i := range n {
			for j := range n {
				if ex.Marginals.At(i, j) < 0.01 {
					continue
				}
				ind := make([][]float64, chains)
				for c, ch := range post.Result.Chains {
					ind[c] = make([]float64, len(ch.Trace))
					for k, row := range ch.Trace {
						if int(row[i]) == j {
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
		exWrong, err := wrong.Exact()
		require.NoError(t, err)

		maxTV, maxBound, maxWrong := 0.0, 0.0, 0.0
		for i := range n {
			expected := 0.0
			for j := range n {
				m := ex.Marginals.At(i, j)
				expected += 0.5 * math.Sqrt(2/math.Pi) * math.Sqrt(m*(1-m)/nEff)
			}
			// 1e-12 absorbs rounding in rows the mask fixes (M_ij = 1).
			bound := math.Min(4*expected, 0.03) + 1e-12
			got := rowTV(post.Marginals, ex.Marginals, i)
			assert.Lessf(t, got, bound, "n = %d, row %d", n, i)
			maxTV = math.Max(maxTV, got)
			maxBound = math.Max(maxBound, bound)
			maxWrong = math.Max(maxWrong, rowTV(exWrong.Marginals, ex.Marginals, i))
		}
		assert.Greater(t, maxWrong, maxBound, "the bound must be able to tell a 15%% error in sigma")
		assert.Less(t, post.RHat, 1.01)
		t.Logf("n = %d, mask %v (%d perms): max row TV %.4f (bound %.4f; sigma off by 15%%: %.4f), N_eff %.0f of %d, acceptance %.3f, R-hat %.4f",
			n, pr.Mask != nil, ex.Count, maxTV, maxBound, maxWrong, nEff, chains*samples, post.Acceptance, post.RHat)
	}
}

func TestRunMCMCDeterministic(t *testing.T) {
	pr, err := Generate(Config{N: 6, Sigma: 0.3, Radius: 0.6, Seed: 1})
	require.NoError(t, err)
	cfg := MCMCConfig{Chains: 3, Burn: 10, Samples: 200, Seed: 9, Workers: 1}
	a, err := pr.RunMCMC(context.Background(), cfg)
	require.NoError(t, err)
	cfg.Workers = 3
	b, err := pr.RunMCMC(context.Background(), cfg)
	require.NoError(t, err)
	assert.True(t, mat.Equal(a.Marginals, b.Marginals))
	for _, ch := range a.Result.Chains {
		for _, row := range ch.Trace {
			p := make(perm.Perm, 6)
			for i := range p {
				p[i] = int(row[i])
			}
			require.True(t, pr.Mask.Admits(p))
		}
	}
}

func TestRunMCMCErrors(t *testing.T) {
	pr, err := Generate(Config{N: 4, Sigma: 0.3, Seed: 1})
	require.NoError(t, err)
	_, err = pr.RunMCMC(context.Background(), MCMCConfig{Chains: 0, Samples: 10})
	assert.Error(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = pr.RunMCMC(ctx, DefaultMCMCConfig())
	assert.ErrorIs(t, err, context.Canceled)
}
