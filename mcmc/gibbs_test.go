package mcmc

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// regressionData simulates y_t = W x_t + e_t for t < tt and returns the
// design X (tt x d), responses Y (tt x m) and their sufficient statistics.
func regressionData(rng *rand.Rand, w *mat.Dense, tt int, noiseSD float64) (x, y *mat.Dense, sxx *mat.SymDense, syx *mat.Dense) {
	m, d := w.Dims()
	x = mat.NewDense(tt, d, nil)
	for t := range tt {
		for c := range d {
			x.Set(t, c, rng.NormFloat64())
		}
	}
	y = mat.NewDense(tt, m, nil)
	y.Mul(x, w.T())
	for t := range tt {
		for i := range m {
			y.Set(t, i, y.At(t, i)+noiseSD*rng.NormFloat64())
		}
	}
	sxx = mat.NewSymDense(d, nil)
	sxx.SymOuterK(1, x.T())
	syx = mat.NewDense(m, d, nil)
	syx.Mul(y.T(), x)
	return x, y, sxx, syx
}

var testSupport = [][]int{{0, 2, 4}, {1}, {}, {4, 3, 2, 1, 0}}

func TestRegressionRowsPosteriorDirect(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	const d, tt = 5, 40
	w := mat.NewDense(len(testSupport), d, nil)
	for i, s := range testSupport {
		for _, c := range s {
			w.Set(i, c, rng.NormFloat64())
		}
	}
	const eta2, sigma2 = 0.5, 2.0
	x, y, sxx, syx := regressionData(rng, w, tt, math.Sqrt(eta2))
	g := &RegressionRows{Support: testSupport, NoiseVar: eta2, PriorVar: sigma2}
	for i, s := range testSupport {
		rp, err := g.Posterior(i, sxx, syx)
		require.NoError(t, err)
		require.Equal(t, s, rp.Support)
		k := len(s)
		if k == 0 {
			assert.Empty(t, rp.Mean)
			continue
		}
		// Direct computation from the data: Λ = X_sᵀX_s/η² + I/σ²,
		// Σ = Λ⁻¹ by general inversion, μ = Σ X_sᵀ y_i / η².
		xs := mat.NewDense(tt, k, nil)
		for a, c := range s {
			for r := range tt {
				xs.Set(r, a, x.At(r, c))
			}
		}
		lam := mat.NewDense(k, k, nil)
		lam.Mul(xs.T(), xs)
		lam.Scale(1/eta2, lam)
		for a := range k {
			lam.Set(a, a, lam.At(a, a)+1/sigma2)
		}
		var cov mat.Dense
		require.NoError(t, cov.Inverse(lam))
		var xty, mu mat.VecDense
		xty.MulVec(xs.T(), y.ColView(i))
		mu.MulVec(&cov, &xty)
		mu.ScaleVec(1/eta2, &mu)

		// Agreement to rounding: the matrices are well conditioned (T = 40
		// standard normal regressors), so 1e-10 is generous.
		for a := range k {
			assert.InDelta(t, mu.AtVec(a), rp.Mean[a], 1e-10, "mean row %d", i)
		}
		gotCov, err := rp.Cov()
		require.NoError(t, err)
		for a := range k {
			for b := range k {
				assert.InDelta(t, cov.At(a, b), gotCov.At(a, b), 1e-10, "cov row %d", i)
				assert.InDelta(t, lam.At(a, b), rp.Precision.At(a, b), 1e-9, "precision row %d", i)
			}
		}

		// The log posterior computed from the raw data is a quadratic with
		// maximum at μ and curvature Λ: for any v,
		// log p(v) - log p(μ) = -½ (v-μ)ᵀ Λ (v-μ).
		logPost := func(v []float64) float64 {
			s2 := 0.0
			for r := range tt {
				pred := 0.0
				for a, c := range s {
					pred += v[a] * x.At(r, c)
				}
				res := y.At(r, i) - pred
				s2 += res * res
			}
			pr := 0.0
			for _, vv := range v {
				pr += vv * vv
			}
			return -s2/(2*eta2) - pr/(2*sigma2)
		}
		for range 5 {
			v := make([]float64, k)
			diff := mat.NewVecDense(k, nil)
			for a := range v {
				v[a] = rp.Mean[a] + rng.NormFloat64()
				diff.SetVec(a, v[a]-rp.Mean[a])
			}
			want := -0.5 * mat.Inner(diff, rp.Precision, diff)
			assert.InDelta(t, want, logPost(v)-logPost(rp.Mean), 1e-8)
		}
	}
}

func TestRegressionRowsMonteCarlo(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	const d = 4
	// Few observations so that the prior matters and the posterior is
	// correlated.
	support := [][]int{{0, 1, 3}, {2}}
	w := mat.NewDense(2, d, []float64{1, -1, 0, 0.5, 0, 0, 2, 0})
	_, _, sxx, syx := regressionData(rng, w, 6, 1)
	g := &RegressionRows{Support: support, NoiseVar: 1, PriorVar: 1.5}
	rp, err := g.Posterior(0, sxx, syx)
	require.NoError(t, err)
	cov, err := rp.Cov()
	require.NoError(t, err)

	const n = 20000
	k := len(support[0])
	sum := make([]float64, k)
	prod := mat.NewDense(k, k, nil)
	wd := mat.NewDense(2, d, nil)
	for range n {
		require.NoError(t, g.Sample(rng, wd, sxx, syx))
		for c := range d { // zeros off the supports
			if c != 0 && c != 1 && c != 3 {
				require.Zero(t, wd.At(0, c))
			}
			if c != 2 {
				require.Zero(t, wd.At(1, c))
			}
		}
		for a, ca := range support[0] {
			sum[a] += wd.At(0, ca)
			for b, cb := range support[0] {
				prod.Set(a, b, prod.At(a, b)+wd.At(0, ca)*wd.At(0, cb))
			}
		}
	}
	// Each sample mean has standard error sqrt(Σ_aa/n), each sample
	// covariance sqrt((Σ_aa Σ_bb + Σ_ab²)/n) (Wishart); 5 standard errors.
	for a := range k {
		mean := sum[a] / n
		se := math.Sqrt(cov.At(a, a) / n)
		assert.InDelta(t, rp.Mean[a], mean, 5*se, "mean %d", a)
	}
	for a := range k {
		for b := range k {
			c := prod.At(a, b)/n - (sum[a]/n)*(sum[b]/n)
			se := math.Sqrt((cov.At(a, a)*cov.At(b, b) + cov.At(a, b)*cov.At(a, b)) / n)
			assert.InDelta(t, cov.At(a, b), c, 5*se, "cov %d %d", a, b)
		}
	}
	// The posterior is clearly correlated, so the covariance check has teeth.
	rho := cov.At(0, 1) / math.Sqrt(cov.At(0, 0)*cov.At(1, 1))
	t.Logf("posterior correlation of the first two coefficients: %.3f", rho)
}

func TestRegressionRowsDenseAndSampleRow(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	w := mat.NewDense(2, 3, []float64{1, 2, 3, -1, 0, 1})
	_, _, sxx, syx := regressionData(rng, w, 200, 0.1)
	g := &RegressionRows{NoiseVar: 0.01, PriorVar: 10}
	rp, err := g.Posterior(1, sxx, syx)
	require.NoError(t, err)
	assert.Equal(t, []int{0, 1, 2}, rp.Support)
	// 200 observations with noise sd 0.1: the posterior sd is about
	// 0.1/sqrt(200) ≈ 0.007, so the mean recovers W to 0.05.
	for c := range 3 {
		assert.InDelta(t, w.At(1, c), rp.Mean[c], 0.05)
	}
	wd := mat.NewDense(2, 3, []float64{9, 9, 9, 9, 9, 9})
	require.NoError(t, g.SampleRow(rng, wd, 0, sxx, syx))
	for c := range 3 {
		assert.InDelta(t, w.At(0, c), wd.At(0, c), 0.05)
		assert.Equal(t, 9.0, wd.At(1, c), "other rows untouched")
	}
}

func TestRegressionRowsErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	sxx := mat.NewSymDense(2, []float64{1, 0, 0, 1})
	syx := mat.NewDense(1, 2, []float64{1, 1})
	w := mat.NewDense(1, 2, nil)
	good := RegressionRows{Support: [][]int{{0, 1}}, NoiseVar: 1, PriorVar: 1}
	cases := map[string]struct {
		g   RegressionRows
		sxx mat.Symmetric
		syx mat.Matrix
		w   *mat.Dense
		row int
	}{
		"noise var":        {g: RegressionRows{NoiseVar: 0, PriorVar: 1}, sxx: sxx, syx: syx, w: w},
		"prior var":        {g: RegressionRows{NoiseVar: 1, PriorVar: math.NaN()}, sxx: sxx, syx: syx, w: w},
		"syx columns":      {g: good, sxx: sxx, syx: mat.NewDense(1, 3, nil), w: w},
		"support rows":     {g: RegressionRows{Support: [][]int{{0}, {1}}, NoiseVar: 1, PriorVar: 1}, sxx: sxx, syx: syx, w: w},
		"support range":    {g: RegressionRows{Support: [][]int{{0, 2}}, NoiseVar: 1, PriorVar: 1}, sxx: sxx, syx: syx, w: w},
		"support repeated": {g: RegressionRows{Support: [][]int{{1, 1}}, NoiseVar: 1, PriorVar: 1}, sxx: sxx, syx: syx, w: w},
		"W dims":           {g: good, sxx: sxx, syx: syx, w: mat.NewDense(2, 2, nil)},
		"row range":        {g: good, sxx: sxx, syx: syx, w: w, row: 1},
		"not PD":           {g: good, sxx: mat.NewSymDense(2, []float64{-5, 0, 0, 1}), syx: syx, w: w},
		"NaN stats":        {g: good, sxx: sxx, syx: mat.NewDense(1, 2, []float64{math.NaN(), 0}), w: w},
	}
	for name, tc := range cases {
		_, err := tc.g.Posterior(tc.row, tc.sxx, tc.syx)
		if name != "W dims" {
			assert.Error(t, err, "Posterior: %s", name)
		}
		assert.Error(t, tc.g.SampleRow(rng, tc.w, tc.row, tc.sxx, tc.syx), "SampleRow: %s", name)
		if name != "row range" {
			assert.Error(t, tc.g.Sample(rng, tc.w, tc.sxx, tc.syx), "Sample: %s", name)
		}
	}
}
