package dist

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/internal/longtest"
	"github.com/permlab/permlab/relax"
)

// sbdParams returns Mu ~ N(0, 1) and Sigma ~ U(0.3, 1.3), both n×n.
func sbdParams(rng *rand.Rand, n int) (mu, sigma *mat.Dense) {
	mu, sigma = mat.NewDense(n, n, nil), mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			mu.Set(i, j, rng.NormFloat64())
			sigma.Set(i, j, 0.3+rng.Float64())
		}
	}
	return mu, sigma
}

// sbdGaussLogPdf returns Σ log N(x_ij; μ_ij, σ_ij²).
func sbdGaussLogPdf(x, mu, sigma mat.Matrix) float64 {
	r, c := x.Dims()
	var lp float64
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			s := sigma.At(i, j)
			z := (x.At(i, j) - mu.At(i, j)) / s
			lp += -0.5*z*z - math.Log(s) - 0.5*math.Log(2*math.Pi)
		}
	}
	return lp
}

// The sample is SB(μ + σε) with ε drawn in row-major order, and LogProb
// (through the inverse map) equals log N(ψ) − log |det J| computed on the
// forward side from the same ψ.
func TestStickBreakingRandLogProb(t *testing.T) {
	rng := rand.New(rand.NewPCG(20, 1))
	for _, N := range []int{2, 3, 5, 9} {
		n := N - 1
		mu, sigma := sbdParams(rng, n)
		d := StickBreaking{Mu: mu, Sigma: sigma}
		require.NoError(t, d.Validate())
		for k := 0; k < 5; k++ {
			seed := uint64(100 + k)
			x, err := d.Rand(nil, rand.New(rand.NewPCG(seed, 0)))
			require.NoError(t, err)

			src := rand.New(rand.NewPCG(seed, 0))
			psi := mat.NewDense(n, n, nil)
			for i := 0; i < n; i++ {
				for j := 0; j < n; j++ {
					psi.Set(i, j, mu.At(i, j)+sigma.At(i, j)*src.NormFloat64())
				}
			}
			want, logDet, err := relax.StickBreaking(psi)
			require.NoError(t, err)
			require.Equal(t, want.RawMatrix().Data, x.RawMatrix().Data)

			lp, err := d.LogProb(x)
			require.NoError(t, err)
			// The inverse recovers ψ to ~1e-12 for these parameters
			// (see relax's round-trip test); the log density follows.
			assert.InDelta(t, sbdGaussLogPdf(psi, mu, sigma)-logDet, lp, 1e-8, "N=%d draw %d", N, k)

			dst := mat.NewDense(N, N, nil)
			got, err := d.Rand(dst, rand.New(rand.NewPCG(seed, 0)))
			require.NoError(t, err)
			require.Same(t, dst, got)
			require.Equal(t, x.RawMatrix().Data, dst.RawMatrix().Data)
		}
	}
}

// For N = 2 the density of x00 integrates to one over (0, 1).
func TestStickBreakingNormalizedN2(t *testing.T) {
	for _, p := range [][2]float64{{0, 1}, {0.3, 0.8}, {-1.5, 0.4}, {2, 2}} {
		d := StickBreaking{Mu: mat.NewDense(1, 1, []float64{p[0]}), Sigma: mat.NewDense(1, 1, []float64{p[1]})}
		const K = 20000
		var sum float64
		x := mat.NewDense(2, 2, nil)
		for k := 0; k < K; k++ {
			a := (float64(k) + 0.5) / K
			copy(x.RawMatrix().Data, []float64{a, 1 - a, 1 - a, a})
			lp, err := d.LogProb(x)
			require.NoError(t, err)
			sum += math.Exp(lp) / K
		}
		// The midpoint rule on a smooth density that vanishes at both
		// ends: error O(K⁻²) times q'' — far below 1e-5 here.
		assert.InDelta(t, 1, sum, 1e-5, "mu=%g sigma=%g", p[0], p[1])
	}
}

// For N = 3 the density integrates to one over the four free entries:
// Monte Carlo over the unit cube, where LogProb is −Inf off the polytope.
func TestStickBreakingNormalizedN3(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 1))
	d := StickBreaking{
		Mu:    mat.NewDense(2, 2, []float64{0.3, -0.2, 0.5, 0.1}),
		Sigma: mat.NewDense(2, 2, []float64{1.0, 1.2, 0.9, 1.1}),
	}
	K := 200000
	if !longtest.Enabled {
		K = 50000
	}
	var s, s2 float64
	x := mat.NewDense(3, 3, nil)
	for k := 0; k < K; k++ {
		a, b, c, e := rng.Float64(), rng.Float64(), rng.Float64(), rng.Float64()
		row := []float64{
			a, b, 1 - a - b,
			c, e, 1 - c - e,
			1 - a - c, 1 - b - e, a + b + c + e - 1,
		}
		copy(x.RawMatrix().Data, row)
		lp, err := d.LogProb(x)
		require.NoError(t, err)
		q := math.Exp(lp)
		s += q
		s2 += q * q
	}
	mean := s / float64(K)
	se := math.Sqrt((s2/float64(K) - mean*mean) / float64(K))
	t.Logf("∫q = %.4f ± %.4f", mean, se)
	require.Less(t, se, 0.03, "Monte Carlo too noisy to test anything")
	// Five standard errors: a false alarm has probability ~1e-6, and the
	// seed is fixed.
	assert.InDelta(t, 1, mean, 5*se)
}

func TestStickBreakingVar(t *testing.T) {
	rng := rand.New(rand.NewPCG(22, 1))
	tape := ad.NewTape()
	for _, N := range []int{2, 3, 5} {
		n := N - 1
		mu, sigma := sbdParams(rng, n)
		logSigma := mat.NewDense(n, n, nil)
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				logSigma.Set(i, j, math.Log(sigma.At(i, j)))
			}
		}
		muT := &ad.Tensor{Shape: []int{n, n}, Data: mu.RawMatrix().Data}
		lsT := &ad.Tensor{Shape: []int{n, n}, Data: logSigma.RawMatrix().Data}
		fd := StickBreaking{Mu: mu, Sigma: sigma}

		// Rsample draws what Rand draws, and its log q is LogProb's.
		tape.Reset()
		dv := StickBreakingVar{Mu: tape.Const(muT), LogSigma: tape.Const(lsT)}
		x, logq := dv.Rsample(rand.New(rand.NewPCG(7, 7)))
		require.NoError(t, tape.Err())
		want, err := fd.Rand(nil, rand.New(rand.NewPCG(7, 7)))
		require.NoError(t, err)
		require.Equal(t, []int{N, N}, x.Shape())
		require.InDeltaSlice(t, want.RawMatrix().Data, x.Value(), 1e-15)
		lp, err := fd.LogProb(want)
		require.NoError(t, err)
		require.InDelta(t, lp, logq.Item(), 1e-8)
		lpv := dv.LogProb(want)
		require.NoError(t, tape.Err())
		require.InDelta(t, lp, lpv.Item(), 1e-12)

		// Gradients with the noise held fixed.
		eps := &ad.Tensor{Shape: []int{n, n}, Data: sbdNoise(rng, n*n)}
		name := fmt.Sprintf("N=%d", N)
		require.NoError(t, ad.CheckGradient(func(tp *ad.Tape, vs []*ad.Var) *ad.Var {
			x, _ := StickBreakingVar{Mu: vs[0], LogSigma: vs[1]}.RsampleNoise(eps)
			return x
		}, muT, lsT), name)
		require.NoError(t, ad.CheckGradient(func(tp *ad.Tape, vs []*ad.Var) *ad.Var {
			_, logq := StickBreakingVar{Mu: vs[0], LogSigma: vs[1]}.RsampleNoise(eps)
			return logq
		}, muT, lsT), name)
		require.NoError(t, ad.CheckGradient(func(tp *ad.Tape, vs []*ad.Var) *ad.Var {
			return StickBreakingVar{Mu: vs[0], LogSigma: vs[1]}.LogProb(want)
		}, muT, lsT), name)
	}

	// A shared LogSigma equals a full matrix of the same value.
	tape.Reset()
	mu := tape.Const(&ad.Tensor{Shape: []int{2, 2}, Data: []float64{0.1, 0.2, 0.3, 0.4}})
	x1, l1 := StickBreakingVar{Mu: mu, LogSigma: tape.Const(ad.Scalar(-0.5))}.Rsample(rand.New(rand.NewPCG(1, 1)))
	full := &ad.Tensor{Shape: []int{2, 2}, Data: []float64{-0.5, -0.5, -0.5, -0.5}}
	x2, l2 := StickBreakingVar{Mu: mu, LogSigma: tape.Const(full)}.Rsample(rand.New(rand.NewPCG(1, 1)))
	require.NoError(t, tape.Err())
	assert.Equal(t, x2.Value(), x1.Value())
	assert.InDelta(t, l2.Item(), l1.Item(), 1e-13)
}

func sbdNoise(rng *rand.Rand, k int) []float64 {
	out := make([]float64, k)
	for i := range out {
		out[i] = rng.NormFloat64()
	}
	return out
}

func TestStickBreakingErrors(t *testing.T) {
	ok := mat.NewDense(2, 2, []float64{0, 0, 0, 0})
	one := mat.NewDense(2, 2, []float64{1, 1, 1, 1})
	for _, c := range []struct {
		name string
		d    StickBreaking
	}{
		{"nil", StickBreaking{}},
		{"non-square", StickBreaking{Mu: mat.NewDense(2, 3, nil), Sigma: mat.NewDense(2, 3, nil)}},
		{"size", StickBreaking{Mu: ok, Sigma: mat.NewDense(3, 3, nil)}},
		{"sigma 0", StickBreaking{Mu: ok, Sigma: mat.NewDense(2, 2, []float64{1, 0, 1, 1})}},
		{"sigma < 0", StickBreaking{Mu: ok, Sigma: mat.NewDense(2, 2, []float64{1, -1, 1, 1})}},
		{"sigma Inf", StickBreaking{Mu: ok, Sigma: mat.NewDense(2, 2, []float64{1, math.Inf(1), 1, 1})}},
		{"mu NaN", StickBreaking{Mu: mat.NewDense(2, 2, []float64{math.NaN(), 0, 0, 0}), Sigma: one}},
	} {
		require.Error(t, c.d.Validate(), c.name)
		_, err := c.d.Rand(nil, rand.New(rand.NewPCG(1, 1)))
		require.Error(t, err, c.name)
		_, err = c.d.LogProb(mat.NewDense(3, 3, nil))
		require.Error(t, err, c.name)
	}

	d := StickBreaking{Mu: ok, Sigma: one}
	_, err := d.Rand(mat.NewDense(2, 2, nil), nil)
	assert.Error(t, err, "dst size")
	_, err = d.LogProb(mat.NewDense(2, 2, nil))
	assert.Error(t, err, "x size")
	_, err = d.LogProb(nil)
	assert.Error(t, err, "x nil")
	_, err = d.LogProb(mat.NewDense(3, 3, []float64{math.NaN(), 0, 0, 0, 0, 0, 0, 0, 0}))
	assert.Error(t, err, "x NaN")
	// Off the polytope: zero density, no error.
	lp, err := d.LogProb(mat.NewDense(3, 3, nil))
	require.NoError(t, err)
	assert.Equal(t, math.Inf(-1), lp)
	lp, err = d.LogProb(mat.NewDense(3, 3, []float64{1, 0, 0, 0, 1, 0, 0, 0, 1}))
	require.NoError(t, err)
	assert.Equal(t, math.Inf(-1), lp, "vertex")

	tape := ad.NewTape()
	m2 := &ad.Tensor{Shape: []int{2, 2}, Data: make([]float64, 4)}
	for _, c := range []struct {
		name   string
		mu, ls *ad.Tensor
	}{
		{"rank", &ad.Tensor{Shape: []int{4}, Data: make([]float64, 4)}, ad.Scalar(0)},
		{"non-square", &ad.Tensor{Shape: []int{2, 3}, Data: make([]float64, 6)}, ad.Scalar(0)},
		{"logsigma shape", m2, &ad.Tensor{Shape: []int{2}, Data: make([]float64, 2)}},
		{"NaN", m2, ad.Scalar(math.NaN())},
	} {
		tape.Reset()
		dv := StickBreakingVar{Mu: tape.Variable(c.mu), LogSigma: tape.Variable(c.ls)}
		x, logq := dv.Rsample(nil)
		require.Error(t, tape.Err(), c.name)
		require.NotNil(t, x)
		require.NotNil(t, logq)
		require.Error(t, tape.Backward(logq), c.name)
		tape.Reset()
		dv = StickBreakingVar{Mu: tape.Variable(c.mu), LogSigma: tape.Variable(c.ls)}
		dv.LogProb(mat.NewDense(3, 3, nil))
		require.Error(t, tape.Err(), c.name)
	}
	tape.Reset()
	dv := StickBreakingVar{Mu: tape.Variable(m2), LogSigma: tape.Variable(ad.Scalar(0))}
	dv.RsampleNoise(&ad.Tensor{Shape: []int{3, 3}, Data: make([]float64, 9)})
	require.Error(t, tape.Err(), "noise shape")
	tape.Reset()
	dv = StickBreakingVar{Mu: tape.Variable(m2), LogSigma: tape.Variable(ad.Scalar(0))}
	dv.LogProb(mat.NewDense(2, 2, nil))
	require.Error(t, tape.Err(), "x size")
	tape.Reset()
	dv = StickBreakingVar{Mu: tape.Variable(m2), LogSigma: tape.Variable(ad.Scalar(0))}
	lpv := dv.LogProb(mat.NewDense(3, 3, nil))
	require.NoError(t, tape.Err())
	assert.Equal(t, math.Inf(-1), lpv.Item())
	x, logq := StickBreakingVar{}.Rsample(nil)
	assert.Nil(t, x)
	assert.Nil(t, logq)
}
