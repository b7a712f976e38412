package celegans

import (
	"math"
	"math/cmplx"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/perm"
)

func TestSampleWeights(t *testing.T) {
	c, err := Synthetic(0, 4)
	require.NoError(t, err)
	w, err := SampleWeights(c, DefaultRadiusFactor, 9)
	require.NoError(t, err)
	n := c.N()
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			require.Equal(t, -w.At(j, i), w.At(i, j), "antisymmetry at (%d, %d)", i, j)
			// Normal draws are non-zero, so the support is exactly A'.
			require.Equal(t, c.Connected(i, j), w.At(i, j) != 0, "support at (%d, %d)", i, j)
		}
	}
	// Spectral radius from the eigenvalues, independently of the singular
	// values used to scale: 1/1.1 up to eigensolver rounding.
	var eig mat.Eigen
	require.True(t, eig.Factorize(w, mat.EigenNone))
	rho := 0.0
	for _, v := range eig.Values(nil) {
		rho = math.Max(rho, cmplx.Abs(v))
		// Antisymmetric: purely imaginary eigenvalues.
		require.InDelta(t, 0, real(v), 1e-10)
	}
	assert.InDelta(t, 1/DefaultRadiusFactor, rho, 1e-10)

	w2, err := SampleWeights(c, DefaultRadiusFactor, 9)
	require.NoError(t, err)
	assert.True(t, mat.Equal(w, w2), "same seed, same W")

	empty, err := NewConnectome([]string{"a", "b"}, []float64{0, 1}, nil)
	require.NoError(t, err)
	w0, err := SampleWeights(empty, 1.1, 1)
	require.NoError(t, err)
	assert.Equal(t, 0.0, mat.Norm(w0, 1))

	for _, f := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		_, err := SampleWeights(c, f, 1)
		assert.Error(t, err, "factor %v", f)
	}
	_, err = SampleWeights(nil, 1.1, 1)
	assert.Error(t, err)
}

func TestSimulateShapes(t *testing.T) {
	c, err := Synthetic(40, 5)
	require.NoError(t, err)
	cfg := SimConfig{Worms: 3, T: 50, KnownFraction: 0.4}
	sim, err := Simulate(c, cfg, 11)
	require.NoError(t, err)
	require.Len(t, sim.Worms, 3)
	assert.Equal(t, 1.0, sim.NoiseVar)
	assert.Same(t, c, sim.Connectome)
	for j, w := range sim.Worms {
		r, cc := w.Y.Dims()
		assert.Equal(t, 50, r)
		assert.Equal(t, 40, cc)
		require.NoError(t, w.Perm.Validate(), "worm %d", j)
		assert.Len(t, w.Known, 16) // round(0.4 * 40)
		assert.True(t, sort.IntsAreSorted(w.Known))
		for k := 1; k < len(w.Known); k++ {
			assert.NotEqual(t, w.Known[k-1], w.Known[k])
		}
	}
	assert.False(t, sim.Worms[0].Perm.Equal(sim.Worms[1].Perm), "worms have their own permutations")

	again, err := Simulate(c, cfg, 11)
	require.NoError(t, err)
	other, err := Simulate(c, cfg, 12)
	require.NoError(t, err)
	for j := range sim.Worms {
		assert.True(t, mat.Equal(sim.Worms[j].Y, again.Worms[j].Y), "same seed, same data")
		assert.Equal(t, sim.Worms[j].Perm, again.Worms[j].Perm)
		assert.Equal(t, sim.Worms[j].Known, again.Worms[j].Known)
	}
	assert.False(t, mat.Equal(sim.W, other.W))
	assert.False(t, mat.Equal(sim.Worms[0].Y, other.Worms[0].Y))

	// Defaults: one worm of DefaultT steps.
	def, err := Simulate(c, SimConfig{}, 1)
	require.NoError(t, err)
	require.Len(t, def.Worms, 1)
	r, _ := def.Worms[0].Y.Dims()
	assert.Equal(t, DefaultT, r)
	assert.Empty(t, def.Worms[0].Known)
}

// TestSimulateDynamics checks the permutation convention and the noise
// level by regression: the least-squares estimate Syx Sxx⁻¹ of the observed
// dynamics must approach P W Pᵀ, with (P W Pᵀ)[m][m'] = W[p[m]][p[m']].
// With T = 20000 and stationary covariance at least I, each entry's standard
// error is at most 1/sqrt(20000) = 0.007; the tolerance 0.04 is over five
// of them, while the wrong convention, p⁻¹, is off by the size of W's
// entries (about 0.3).
func TestSimulateDynamics(t *testing.T) {
	c, err := SyntheticConfig{N: 20, Density: 0.3}.Generate(6)
	require.NoError(t, err)
	const eta2 = 2.0
	sim, err := Simulate(c, SimConfig{T: 20000, NoiseVar: eta2}, 3)
	require.NoError(t, err)
	w := sim.Worms[0]
	st, err := w.Stats()
	require.NoError(t, err)

	var inv mat.Dense
	require.NoError(t, inv.Inverse(st.Sxx))
	var aHat mat.Dense
	aHat.Mul(st.Syx, &inv)

	n := c.N()
	q, err := w.Perm.Inverse()
	require.NoError(t, err)
	maxErr, maxWrong := 0.0, 0.0
	for m := 0; m < n; m++ {
		for k := 0; k < n; k++ {
			maxErr = math.Max(maxErr, math.Abs(aHat.At(m, k)-sim.W.At(w.Perm[m], w.Perm[k])))
			maxWrong = math.Max(maxWrong, math.Abs(aHat.At(m, k)-sim.W.At(q[m], q[k])))
		}
	}
	assert.Less(t, maxErr, 0.04)
	assert.Greater(t, maxWrong, 0.15)

	// Residuals with the true observed dynamics are the noise: their mean
	// square estimates eta^2 from 20000*20 draws, relative sd 0.0022; 1%
	// is over four sd.
	pm, err := w.Perm.Matrix()
	require.NoError(t, err)
	var a mat.Dense
	a.Product(pm, sim.W, pm.T())
	ll, err := st.LogLik(&a, eta2)
	require.NoError(t, err)
	df := float64(st.Count * n)
	meanSq := -2 * eta2 * (ll + df/2*math.Log(2*math.Pi*eta2)) / df
	assert.InEpsilon(t, eta2, meanSq, 0.01)
}

func TestSimulateWithErrors(t *testing.T) {
	c, err := Synthetic(10, 1)
	require.NoError(t, err)
	w, err := SampleWeights(c, 1.1, 1)
	require.NoError(t, err)
	tests := []struct {
		name string
		cfg  SimConfig
		want string
	}{
		{"negative worms", SimConfig{Worms: -1}, "worms must be >= 1"},
		{"short", SimConfig{T: 1}, "T must be >= 2"},
		{"noise", SimConfig{NoiseVar: -1}, "noise variance"},
		{"noise NaN", SimConfig{NoiseVar: math.NaN()}, "noise variance"},
		{"both known", SimConfig{KnownCount: 2, KnownFraction: 0.1}, "not both"},
		{"too many known", SimConfig{KnownCount: 11}, "KnownCount must be in [0, 10]"},
		{"fraction", SimConfig{KnownFraction: 1.5}, "KnownFraction"},
		{"radius", SimConfig{RadiusFactor: -1}, "RadiusFactor"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := SimulateWith(c, w, tc.cfg, 1)
			assert.ErrorContains(t, err, tc.want)
		})
	}

	_, err = SimulateWith(c, mat.NewDense(3, 3, nil), SimConfig{}, 1)
	assert.ErrorContains(t, err, "W is 3 x 3")
	bad := mat.DenseCopyOf(w)
	bad.Set(0, 1, math.NaN())
	_, err = SimulateWith(c, bad, SimConfig{}, 1)
	assert.ErrorContains(t, err, "not finite")
	// An unstable W overflows.
	big := mat.DenseCopyOf(w)
	big.Scale(1e6, w)
	_, err = SimulateWith(c, big, SimConfig{T: 200}, 1)
	assert.ErrorContains(t, err, "diverged")
	_, err = Simulate(nil, SimConfig{}, 1)
	assert.Error(t, err)
}

// TestSimulateKnownAllKnown: with every neuron known, masks pin the truth.
func TestSimulateKnownAll(t *testing.T) {
	c, err := Synthetic(12, 2)
	require.NoError(t, err)
	sim, err := Simulate(c, SimConfig{T: 10, KnownFraction: 1}, 4)
	require.NoError(t, err)
	masks, err := sim.PositionMasks(0.5)
	require.NoError(t, err)
	for m, j := range sim.Worms[0].Perm {
		assert.Equal(t, []int{j}, masks[0].Row(m))
	}
	assert.True(t, masks[0].Admits(perm.Perm(sim.Worms[0].Perm)))
}
