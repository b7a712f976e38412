package celegans

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/perm"
)

func randomDense(rng *rand.Rand, r, c int) *mat.Dense {
	d := mat.NewDense(r, c, nil)
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			d.Set(i, j, rng.NormFloat64())
		}
	}
	return d
}

// naiveLogLik is Σ_t log N(y_t; A y_{t-1}, eta2 I), one step at a time.
func naiveLogLik(y, a *mat.Dense, eta2 float64) float64 {
	t, n := y.Dims()
	ll := 0.0
	for s := 1; s < t; s++ {
		for i := 0; i < n; i++ {
			mu := 0.0
			for j := 0; j < n; j++ {
				mu += a.At(i, j) * y.At(s-1, j)
			}
			r := y.At(s, i) - mu
			ll += -r*r/(2*eta2) - 0.5*math.Log(2*math.Pi*eta2)
		}
	}
	return ll
}

func TestStatsSums(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	y := randomDense(rng, 40, 6)
	s, err := NewStats(y)
	require.NoError(t, err)
	assert.Equal(t, 6, s.N)
	assert.Equal(t, 39, s.Count)
	for i := 0; i < 6; i++ {
		for j := 0; j < 6; j++ {
			var xx, yx, yy float64
			for k := 1; k < 40; k++ {
				xx += y.At(k-1, i) * y.At(k-1, j)
				yx += y.At(k, i) * y.At(k-1, j)
				yy += y.At(k, i) * y.At(k, j)
			}
			// 39 products of unit normals: sums of size ~6, rounding ~1e-14.
			assert.InDelta(t, xx, s.Sxx.At(i, j), 1e-12)
			assert.InDelta(t, yx, s.Syx.At(i, j), 1e-12)
			assert.InDelta(t, yy, s.Syy.At(i, j), 1e-12)
		}
	}
}

// TestLogLik compares the trace form with the naive sum over time. Both
// sum about T*N terms of size ~1, so they agree to ~1e-12 relative.
func TestLogLik(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	for _, tc := range []struct {
		t, n int
		eta2 float64
	}{{2, 1, 1}, {50, 7, 1}, {80, 12, 0.3}, {30, 5, 4}} {
		y := randomDense(rng, tc.t, tc.n)
		a := randomDense(rng, tc.n, tc.n)
		a.Scale(0.3, a)
		s, err := NewStats(y)
		require.NoError(t, err)
		got, err := s.LogLik(a, tc.eta2)
		require.NoError(t, err)
		want := naiveLogLik(y, a, tc.eta2)
		assert.InEpsilon(t, want, got, 1e-12, "%+v", tc)
	}
}

// TestStatsCanonical: the observed-frame likelihood of P W Pᵀ equals the
// canonical-frame likelihood of W, and pooled statistics add likelihoods.
func TestStatsCanonical(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	const n = 9
	w := randomDense(rng, n, n)
	var stats []*Stats
	total := 0.0
	for k := 0; k < 3; k++ {
		y := randomDense(rng, 25, n)
		p := perm.Random(n, rng)
		s, err := NewStats(y)
		require.NoError(t, err)
		pm, err := p.Matrix()
		require.NoError(t, err)
		var a mat.Dense
		a.Product(pm, w, pm.T())
		obs, err := s.LogLik(&a, 0.7)
		require.NoError(t, err)
		cs, err := s.Canonical(p)
		require.NoError(t, err)
		can, err := cs.LogLik(w, 0.7)
		require.NoError(t, err)
		assert.InEpsilon(t, obs, can, 1e-12)
		stats = append(stats, cs)
		total += can
	}
	sum, err := SumStats(stats...)
	require.NoError(t, err)
	assert.Equal(t, 72, sum.Count)
	pooled, err := sum.LogLik(w, 0.7)
	require.NoError(t, err)
	assert.InEpsilon(t, total, pooled, 1e-12)

	_, err = stats[0].Canonical(perm.Perm{0, 1})
	assert.ErrorContains(t, err, "length 2")
	_, err = stats[0].Canonical(perm.Perm{0, 0, 1, 2, 3, 4, 5, 6, 7})
	assert.Error(t, err)
	_, err = SumStats()
	assert.Error(t, err)
	small, err := NewStats(randomDense(rng, 3, 2))
	require.NoError(t, err)
	_, err = SumStats(stats[0], small)
	assert.ErrorContains(t, err, "statistics 1 have 2 neurons, want 9")
	_, err = SumStats(stats[0], nil)
	assert.Error(t, err)
}

func TestStatsErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	y := randomDense(rng, 10, 3)
	y.Set(4, 2, math.NaN())
	_, err := NewStats(y)
	assert.ErrorContains(t, err, "y[4][2] = NaN is not finite")
	y.Set(4, 2, math.Inf(-1))
	_, err = NewStats(y)
	assert.ErrorContains(t, err, "not finite")
	_, err = NewStats(randomDense(rng, 1, 3))
	assert.ErrorContains(t, err, "at least 2 time steps")
	_, err = NewStats(nil)
	assert.Error(t, err)

	s, err := NewStats(randomDense(rng, 10, 3))
	require.NoError(t, err)
	_, err = s.LogLik(mat.NewDense(2, 3, nil), 1)
	assert.ErrorContains(t, err, "A is 2 x 3, want 3 x 3")
	for _, v := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		_, err = s.LogLik(mat.NewDense(3, 3, nil), v)
		assert.Error(t, err, "noise %v", v)
	}
	_, err = s.LogLik(nil, 1)
	assert.Error(t, err)
}
