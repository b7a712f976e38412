package mcmc

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ar1 returns a stationary AR(1) sequence x_t = rho x_{t-1} + sqrt(1-rho²) e_t
// with unit marginal variance and mean mu.
func ar1(rng *rand.Rand, rho, mu float64, n int) []float64 {
	x := make([]float64, n)
	x[0] = rng.NormFloat64()
	s := math.Sqrt(1 - rho*rho)
	for t := 1; t < n; t++ {
		x[t] = rho*x[t-1] + s*rng.NormFloat64()
	}
	for t := range x {
		x[t] += mu
	}
	return x
}

func TestESSAR1(t *testing.T) {
	// For AR(1), τ = (1+ρ)/(1-ρ), so ESS = m n (1-ρ)/(1+ρ). A lag-window
	// estimate of τ cut at lag M has relative standard deviation about
	// sqrt(2(2M+1)/(m n)) (Priestley 1981, §6.2); with m n = 80000 that is
	// about 1% for ρ = 0 and 5% for ρ = 0.9 (M ≈ 70). Over 40 seeds we
	// measured relative standard deviations of 0.012, 0.018, 0.048 and
	// 0.020 for the four cases below; the tolerances are 4 of those, so
	// the test fails only for a real bias.
	const m, n = 4, 20000
	cases := []struct {
		rho, tol float64
		seed     uint64
	}{
		{rho: 0, tol: 0.05, seed: 1},
		{rho: 0.5, tol: 0.08, seed: 2},
		{rho: 0.9, tol: 0.20, seed: 3},
		{rho: -0.3, tol: 0.08, seed: 4},
	}
	for _, tc := range cases {
		rng := rand.New(rand.NewPCG(tc.seed, 7))
		draws := make([][]float64, m)
		for j := range draws {
			draws[j] = ar1(rng, tc.rho, 0, n)
		}
		want := float64(m*n) * (1 - tc.rho) / (1 + tc.rho)
		got, err := ESS(draws)
		require.NoError(t, err)
		assert.InEpsilonf(t, want, got, tc.tol, "ESS, rho = %v", tc.rho)
		bulk, err := BulkESS(draws)
		require.NoError(t, err)
		assert.InEpsilonf(t, want, bulk, tc.tol, "BulkESS, rho = %v", tc.rho)
		t.Logf("rho = %4.1f: ESS %.0f, BulkESS %.0f, exact %.0f", tc.rho, got, bulk, want)
	}
}

func TestRHat(t *testing.T) {
	const m, n = 4, 2000
	rng := rand.New(rand.NewPCG(11, 12))
	gen := func(rho float64, means []float64) [][]float64 {
		d := make([][]float64, len(means))
		for j, mu := range means {
			d[j] = ar1(rng, rho, mu, n)
		}
		return d
	}
	// Well-mixed chains: R̂ - 1 is of order τ/n (here at most 19/1000 for
	// the split halves of the ρ = 0.9 chains), so 1.01 leaves room for
	// iid and ρ = 0.5 chains, 1.05 for ρ = 0.9.
	for _, tc := range []struct {
		rho, bound float64
	}{{0, 1.01}, {0.5, 1.01}, {0.9, 1.05}} {
		d := gen(tc.rho, []float64{0, 0, 0, 0})
		r, err := SplitRHat(d)
		require.NoError(t, err)
		assert.Lessf(t, r, tc.bound, "SplitRHat, rho = %v", tc.rho)
		assert.Greater(t, r, 0.99)
		rr, err := RankRHat(d)
		require.NoError(t, err)
		assert.Lessf(t, rr, tc.bound, "RankRHat, rho = %v", tc.rho)
	}

	// One chain shifted by 2 sd: the split halves have means 0 (6 of them)
	// and 2 (2 of them), so B/n ≈ 4·(8/7)·(1/4)(3/4) ≈ 0.86 and
	// R̂ ≈ sqrt(1.86) ≈ 1.36.
	d := gen(0, []float64{0, 0, 0, 2})
	r, err := SplitRHat(d)
	require.NoError(t, err)
	assert.Greater(t, r, 1.1)
	assert.InDelta(t, 1.36, r, 0.05)
	rr, err := RankRHat(d)
	require.NoError(t, err)
	assert.Greater(t, rr, 1.1)
	t.Logf("one chain shifted by 2: SplitRHat %.3f, RankRHat %.3f", r, rr)

	// Chains with the same location but different scales look fine to the
	// classical R̂ (it compares means) and are caught by the folded (tail)
	// part of RankRHat.
	d = gen(0, []float64{0, 0, 0, 0})
	for t := range d[3] {
		d[3][t] *= 4
	}
	r, err = SplitRHat(d)
	require.NoError(t, err)
	assert.Less(t, r, 1.01, "SplitRHat compares locations only")
	rr, err = RankRHat(d)
	require.NoError(t, err)
	assert.Greater(t, rr, 1.1, "RankRHat must see a chain with 4x the scale")
	t.Logf("one chain with 4x the scale: SplitRHat %.3f, RankRHat %.3f", r, rr)

	// Every chain drifts linearly from -2 to 2 (plus unit noise): the full
	// chains agree with each other, so the classical R̂ is near 1, but the
	// halves have means ±1, so B/n = 8/7, W = 1 + 4/12 (noise plus the trend
	// within a half) and the split R̂ is sqrt(1 + (8/7)/(4/3)) ≈ 1.36.
	d = make([][]float64, m)
	for j := range d {
		d[j] = ar1(rng, 0, 0, n)
		for t := range d[j] {
			d[j][t] += -2 + 4*float64(t)/float64(n-1)
		}
	}
	assert.Less(t, rhat(d), 1.01, "unsplit R̂ cannot see a common trend")
	r, err = SplitRHat(d)
	require.NoError(t, err)
	assert.InDelta(t, 1.36, r, 0.05, "split R̂ must see the trend")
	t.Logf("common trend: unsplit R-hat %.3f, SplitRHat %.3f", rhat(d), r)
}

func TestSplitChains(t *testing.T) {
	got := SplitChains([][]float64{{1, 2, 3, 4, 5}, {6, 7, 8, 9, 10}})
	assert.Equal(t, [][]float64{{1, 2}, {4, 5}, {6, 7}, {9, 10}}, got)
}

func TestDiagnosticsErrors(t *testing.T) {
	fns := map[string]func([][]float64) (float64, error){
		"SplitRHat": SplitRHat, "RankRHat": RankRHat, "ESS": ESS, "BulkESS": BulkESS,
	}
	bad := map[string][][]float64{
		"no chains": nil,
		"short":     {{1, 2, 3}},
		"ragged":    {{1, 2, 3, 4}, {1, 2, 3, 4, 5}},
		"NaN":       {{1, 2, math.NaN(), 4}},
		"Inf":       {{1, 2, 3, math.Inf(-1)}},
	}
	for name, fn := range fns {
		for what, d := range bad {
			_, err := fn(d)
			assert.Errorf(t, err, "%s: %s", name, what)
		}
		v, err := fn([][]float64{{2, 2, 2, 2}, {2, 2, 2, 2}})
		require.NoError(t, err)
		assert.Truef(t, math.IsNaN(v), "%s of constant draws = %v, want NaN", name, v)
	}
}

func TestAcceptanceRate(t *testing.T) {
	assert.Equal(t, 0.25, AcceptanceRate(1, 4))
	assert.True(t, math.IsNaN(AcceptanceRate(0, 0)))
	assert.Equal(t, 0.5, StageStats{Steps: 10, Accepted: 5}.Rate())
}
