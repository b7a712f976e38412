package matching

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/perm"
)

func TestRegressionErrors(t *testing.T) {
	x := mat.NewDense(3, 2, []float64{1, 2, 3, 4, 5, 6})
	y := []float64{1, 2, 3}
	for name, f := range map[string]func() (*Regression, error){
		"length":      func() (*Regression, error) { return NewRegression(x, y[:2], 1, 1) },
		"s":           func() (*Regression, error) { return NewRegression(x, y, 0, 1) },
		"s Inf":       func() (*Regression, error) { return NewRegression(x, y, math.Inf(1), 1) },
		"prior sigma": func() (*Regression, error) { return NewRegression(x, y, 1, math.NaN()) },
		"NaN data":    func() (*Regression, error) { return NewRegression(x, []float64{1, math.NaN(), 3}, 1, 1) },
		"N":           func() (*Regression, error) { return GenerateRegression(RegressionConfig{N: 0, D: 2, S: 1}) },
		"D":           func() (*Regression, error) { return GenerateRegression(RegressionConfig{N: 3, D: 0, S: 1}) },
	} {
		_, err := f()
		assert.Error(t, err, name)
	}
	r, err := GenerateRegression(RegressionConfig{N: 4, D: 2, S: 0.3, Seed: 1})
	require.NoError(t, err)
	for name, s := range map[string]*models.State{
		"no perm":   {Perms: map[string][]perm.Perm{}, Reals: map[string][]float64{BetaSite: {0, 0}}},
		"perm size": {Perms: map[string][]perm.Perm{Site: {perm.Identity(3)}}, Reals: map[string][]float64{BetaSite: {0, 0}}},
		"beta size": {Perms: map[string][]perm.Perm{Site: {perm.Identity(4)}}, Reals: map[string][]float64{BetaSite: {0}}},
	} {
		_, err := r.LogLikState(s)
		assert.Error(t, err, name)
		_, err = r.SwapDelta(s, Site, 0, 0, 1)
		assert.Error(t, err, name)
	}
	ok := &models.State{Perms: map[string][]perm.Perm{Site: {perm.Identity(4)}}, Reals: map[string][]float64{BetaSite: {0, 0}}}
	_, err = r.SwapDelta(ok, BetaSite, 0, 0, 1)
	assert.Error(t, err)
	_, err = r.SwapDelta(ok, Site, 0, 0, 4)
	assert.Error(t, err)
}

// TestRegressionLogLik checks the likelihood on exact values against
// distuv's normal density, the fast paths against LogLik, and the gradient
// of LogLik on relaxed values against finite differences.
func TestRegressionLogLik(t *testing.T) {
	const n, d = 5, 2
	r, err := GenerateRegression(RegressionConfig{N: n, D: d, S: 0.4, Seed: 2})
	require.NoError(t, err)
	spec, err := models.Check(r)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(3, 3))
	tape := ad.NewTape()
	for range 10 {
		s, err := models.NewState(spec, rng)
		require.NoError(t, err)
		want := 0.0
		for i, j := range s.Perms[Site][0] {
			mean := floats.Dot(r.X.RawRowView(j), s.Reals[BetaSite])
			want += distuv.Normal{Mu: mean, Sigma: r.S}.LogProb(r.Y[i])
		}
		got, err := r.LogLikState(s)
		require.NoError(t, err)
		assert.InDelta(t, want, got, 1e-10)
		tape.Reset()
		z, _, err := models.HardSample(tape, spec, s)
		require.NoError(t, err)
		assert.InDelta(t, want, r.LogLik(tape, z).Item(), 1e-10)
	}
	require.NoError(t, models.CheckFastPaths(r, 50, 4, 1e-12))

	const k = 2
	pData := make([]float64, k*n*n)
	for s := range k {
		for range 3 {
			w := rng.Float64() / 3
			for i, j := range perm.Random(n, rng) {
				pData[s*n*n+i*n+j] += w
			}
		}
	}
	bData := []float64{0.3, -1.2, 0.8, 0.1}
	f := func(tape *ad.Tape, xs []*ad.Var) *ad.Var {
		z := models.NewSample(tape, spec, k, false)
		z.Set(Site, xs[0])
		z.Set(BetaSite, xs[1])
		return ad.Sum(r.LogLik(tape, z))
	}
	assert.NoError(t, ad.CheckGradient(f,
		&ad.Tensor{Shape: []int{k, 1, n, n}, Data: pData},
		&ad.Tensor{Shape: []int{k, d}, Data: bData}))
}

// normalLogProb returns the log density of N(mu, cov) at x, directly from
// the definition.
func normalLogProb(t *testing.T, x, mu []float64, cov *mat.SymDense) float64 {
	var chol mat.Cholesky
	require.True(t, chol.Factorize(cov))
	diff := mat.NewVecDense(len(x), nil)
	diff.SubVec(mat.NewVecDense(len(x), x), mat.NewVecDense(len(mu), mu))
	var sol mat.VecDense
	require.NoError(t, chol.SolveVecTo(&sol, diff))
	return -0.5 * (float64(len(x))*math.Log(2*math.Pi) + chol.LogDet() + mat.Dot(diff, &sol))
}

// directCollapsed returns log N(y; 0, s² I + v X_σX_σᵀ), from the n×n
// covariance.
func directCollapsed(t *testing.T, r *Regression, p perm.Perm) float64 {
	n, _ := r.X.Dims()
	cov := mat.NewSymDense(n, nil)
	v := r.PriorSigma * r.PriorSigma
	for i := range n {
		for k := i; k < n; k++ {
			c := v * floats.Dot(r.X.RawRowView(p[i]), r.X.RawRowView(p[k]))
			if i == k {
				c += r.S * r.S
			}
			cov.SetSym(i, k, c)
		}
	}
	return normalLogProb(t, r.Y, make([]float64, n), cov)
}

// TestRegressionCollapsed checks CollapsedLogLik against the n-variate
// normal evaluated directly, the conditional of β through Bayes' rule,
// log p(y | σ) = log p(y | σ, β) + log p(β) − log p(β | y, σ) at any β, and
// the draws of SampleCollapsed against that conditional.
func TestRegressionCollapsed(t *testing.T) {
	r, err := NewRegression(mat.NewDense(5, 2, []float64{
		0.3, -1.1, 1.4, 0.2, -0.7, 0.9, 0.1, 0.5, -1.6, -0.4,
	}), []float64{0.8, -0.3, 1.9, 0.4, -1.2}, 0.5, 1.5)
	require.NoError(t, err)
	spec, err := models.Check(r)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(5, 5))
	for range 5 {
		s, err := models.NewState(spec, rng)
		require.NoError(t, err)
		p := s.Perms[Site][0]
		got, err := r.CollapsedLogLik(s)
		require.NoError(t, err)
		assert.InDelta(t, directCollapsed(t, r, p), got, 1e-10)

		_, mean, err := r.posteriorMean(p)
		require.NoError(t, err)
		var cov mat.SymDense
		require.NoError(t, r.chol.InverseTo(&cov))
		ll, err := r.LogLikState(s)
		require.NoError(t, err)
		beta := s.Reals[BetaSite]
		bayes := ll + models.Normal{Mu: 0, Sigma: r.PriorSigma}.LogProb(beta) -
			normalLogProb(t, beta, mean.RawVector().Data, &cov)
		assert.InDelta(t, got, bayes, 1e-10)

		// 20000 draws: 5 standard errors of each mean, and 3% of each
		// standard deviation (about 7 of its standard errors).
		const draws = 20000
		x := [2][]float64{}
		for range draws {
			require.NoError(t, r.SampleCollapsed(rng, s))
			for k, v := range s.Reals[BetaSite] {
				x[k] = append(x[k], v)
			}
		}
		for k := range 2 {
			sd := math.Sqrt(cov.At(k, k))
			assert.InDelta(t, mean.AtVec(k), stat.Mean(x[k], nil), 5*sd/math.Sqrt(draws))
			assert.InDelta(t, sd, stat.StdDev(x[k], nil), 0.03*sd)
		}
		assert.InDelta(t, cov.At(0, 1)/math.Sqrt(cov.At(0, 0)*cov.At(1, 1)), stat.Correlation(x[0], x[1], nil), 0.03)
	}
}

// TestRegressionExactAgainstBruteForce compares models.Exact, which uses
// the collapsed likelihood, with every permutation weighted by the direct
// n-variate normal density.
func TestRegressionExactAgainstBruteForce(t *testing.T) {
	for _, cfg := range []RegressionConfig{{N: 4, D: 1, S: 0.5, Seed: 1}, {N: 6, D: 2, S: 0.3, Seed: 2}} {
		r, err := GenerateRegression(cfg)
		require.NoError(t, err)
		ex, err := models.Exact(r)
		require.NoError(t, err)
		all := heapPerms(cfg.N)
		logw := make([]float64, len(all))
		for k, p := range all {
			logw[k] = directCollapsed(t, r, p)
		}
		logZ := floats.LogSumExp(logw)
		assert.InDelta(t, logZ, ex.LogEvidence, 1e-9)
		assert.Equal(t, all[floats.MaxIdx(logw)], ex.MAP.Perms[Site][0])
		marg := make([]float64, cfg.N*cfg.N)
		for k, p := range all {
			for i, j := range p {
				marg[i*cfg.N+j] += math.Exp(logw[k] - logZ)
			}
		}
		got := ex.Perms[Site].Marginals[0].RawMatrix().Data
		for i := range marg {
			assert.InDelta(t, marg[i], got[i], 1e-12, "%+v entry %d", cfg, i)
		}
	}
}
