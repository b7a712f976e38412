package matching

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/perm"
)

func TestGenerateCounts(t *testing.T) {
	cfg := CountsConfig{N: 8, Seed: 11}
	a, err := GenerateCounts(cfg)
	require.NoError(t, err)
	b, err := GenerateCounts(cfg)
	require.NoError(t, err)
	assert.Equal(t, a.Y, b.Y, "same seed, same problem")
	assert.Equal(t, a.X, b.X)
	assert.Equal(t, a.Truth, b.Truth)
	require.NoError(t, a.Truth.Validate())
	assert.InDelta(t, math.Log(50), a.TrueA, 1e-15, "default MeanCount")
	assert.Equal(t, []float64{1}, a.W, "default D and Spread")
	assert.Equal(t, a.W, a.TrueW)
	assert.Nil(t, a.Mask)
	assert.Equal(t, models.Normal{Mu: 0, Sigma: 5}, a.APrior)
	n, d := a.X.Dims()
	assert.Equal(t, []int{8, 1}, []int{n, d})
	c, err := GenerateCounts(CountsConfig{N: 8, Seed: 12})
	require.NoError(t, err)
	assert.NotEqual(t, a.Y, c.Y)

	// The counts follow their rates: with MeanCount 1e4 they are within
	// 5 standard deviations of exp(a + x_{σ(i)}·w).
	big, err := GenerateCounts(CountsConfig{N: 20, MeanCount: 1e4, Spread: 0.5, Seed: 3})
	require.NoError(t, err)
	for i, j := range big.Truth {
		lam := math.Exp(big.TrueA + big.X.At(j, 0)*big.W[0])
		assert.InDelta(t, lam, float64(big.Y[i]), 5*math.Sqrt(lam), "unit %d", i)
	}

	two, err := GenerateCounts(CountsConfig{N: 6, D: 2, Spread: 1.5, MeanCount: 7, Radius: 1, Seed: 4})
	require.NoError(t, err)
	assert.InDelta(t, 1.5, floats.Norm(two.W, 2), 1e-12)
	assert.InDelta(t, math.Log(7), two.TrueA, 1e-15)
	require.NotNil(t, two.Mask)
	assert.True(t, two.Mask.Admits(two.Truth), "the truth is always a candidate")
	assert.Less(t, two.Mask.Count(), 36, "radius 1 must exclude some pairs")

	lat, err := GenerateCounts(CountsConfig{N: 5, LatentW: true, Seed: 5})
	require.NoError(t, err)
	assert.Nil(t, lat.W)
	assert.Equal(t, []float64{1}, lat.TrueW)
	assert.Nil(t, lat.Logits())
	spec, err := models.Check(lat)
	require.NoError(t, err)
	assert.Equal(t, []string{Site, ASite, WSite}, spec.Names())
	assert.Equal(t, models.Normal{Mu: 0, Sigma: 2}, lat.WPrior)

	for name, cfg := range map[string]CountsConfig{
		"n":            {N: 0},
		"D":            {N: 3, D: 3},
		"D negative":   {N: 3, D: -1},
		"latent D":     {N: 3, D: 2, LatentW: true},
		"mean":         {N: 3, MeanCount: -1},
		"mean NaN":     {N: 3, MeanCount: math.NaN()},
		"mean Inf":     {N: 3, MeanCount: math.Inf(1)},
		"spread":       {N: 3, Spread: -2},
		"spread NaN":   {N: 3, Spread: math.NaN()},
		"spread Inf":   {N: 3, Spread: math.Inf(1)},
		"radius NaN":   {N: 3, Radius: math.NaN()},
		"mean and D 0": {N: -5, D: 2},
	} {
		_, err := GenerateCounts(cfg)
		assert.Error(t, err, name)
	}
}

func TestNewCountsErrors(t *testing.T) {
	x := mat.NewDense(3, 1, []float64{0, 1, 2})
	prior := models.Normal{Sigma: 1}
	empty, err := perm.NewMask(3)
	require.NoError(t, err)
	small, err := perm.FullMask(2)
	require.NoError(t, err)
	for name, f := range map[string]func() (*Counts, error){
		"nil x":       func() (*Counts, error) { return NewCounts(nil, []int{1, 2, 3}, []float64{1}, prior, nil) },
		"lengths":     func() (*Counts, error) { return NewCounts(x, []int{1, 2}, []float64{1}, prior, nil) },
		"weights":     func() (*Counts, error) { return NewCounts(x, []int{1, 2, 3}, []float64{1, 2}, prior, nil) },
		"nil weights": func() (*Counts, error) { return NewCounts(x, []int{1, 2, 3}, nil, prior, nil) },
		"negative":    func() (*Counts, error) { return NewCounts(x, []int{1, -2, 3}, []float64{1}, prior, nil) },
		"x not finite": func() (*Counts, error) {
			return NewCounts(mat.NewDense(3, 1, []float64{0, math.NaN(), 1}), []int{1, 2, 3}, []float64{1}, prior, nil)
		},
		"w not finite": func() (*Counts, error) { return NewCounts(x, []int{1, 2, 3}, []float64{math.Inf(1)}, prior, nil) },
		"a prior":      func() (*Counts, error) { return NewCounts(x, []int{1, 2, 3}, []float64{1}, models.Normal{}, nil) },
		"w prior": func() (*Counts, error) {
			return NewCountsLatentW(x, []int{1, 2, 3}, prior, models.Normal{Sigma: -1}, nil)
		},
		"latent lengths": func() (*Counts, error) {
			return NewCountsLatentW(x, []int{1}, prior, prior, nil)
		},
		"mask size":      func() (*Counts, error) { return NewCounts(x, []int{1, 2, 3}, []float64{1}, prior, small) },
		"mask admits no": func() (*Counts, error) { return NewCounts(x, []int{1, 2, 3}, []float64{1}, prior, empty) },
	} {
		_, err := f()
		assert.Error(t, err, name)
	}
	y, w := []int{1, 2, 3}, []float64{0.5}
	c, err := NewCounts(x, y, w, prior, nil)
	require.NoError(t, err)
	x.Set(0, 0, 9)
	y[0], w[0] = 9, 9
	assert.Equal(t, 0.0, c.X.At(0, 0), "NewCounts copies the covariates")
	assert.Equal(t, 1, c.Y[0], "NewCounts copies the counts")
	assert.Equal(t, 0.5, c.W[0], "NewCounts copies the weights")
	assert.True(t, math.IsNaN(c.TrueA))
}

// poissonLogLik is log p(y | σ, a, w) computed independently of the
// package, from distuv's Poisson mass.
func poissonLogLik(c *Counts, p perm.Perm, a float64, w []float64) float64 {
	ll := 0.0
	for i, j := range p {
		eta := a + floats.Dot(c.X.RawRowView(j), w)
		ll += distuv.Poisson{Lambda: math.Exp(eta)}.LogProb(float64(c.Y[i]))
	}
	return ll
}

// countsState returns the state of σ = p, a and (when latent) w.
func countsState(c *Counts, p perm.Perm, a float64, w []float64) *models.State {
	s := &models.State{Perms: map[string][]perm.Perm{Site: {p}}, Reals: map[string][]float64{ASite: {a}}}
	if c.W == nil {
		s.Reals[WSite] = w
	}
	return s
}

// TestCountsLogLik compares every evaluation of the likelihood (the tape on
// one-hot values, the state fast path and the swap delta) with distuv's
// Poisson mass.
func TestCountsLogLik(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, cfg := range []CountsConfig{
		{N: 6, Seed: 3},
		{N: 6, D: 2, MeanCount: 5, Radius: 1.2, Seed: 4},
		{N: 6, LatentW: true, Seed: 5},
	} {
		c, err := GenerateCounts(cfg)
		require.NoError(t, err)
		spec, err := models.Check(c)
		require.NoError(t, err)
		_, d := c.X.Dims()
		tape := ad.NewTape()
		for range 20 {
			p := perm.Random(6, rng)
			a := 3 + rng.NormFloat64()
			w := c.W
			if w == nil {
				w = []float64{rng.NormFloat64()}
			}
			require.Len(t, w, d)
			s := countsState(c, p, a, w)
			want := poissonLogLik(c, p, a, w)
			got, err := c.LogLikState(s)
			require.NoError(t, err)
			assert.InDelta(t, want, got, 1e-9*math.Max(1, math.Abs(want)), "%+v", cfg)

			tape.Reset()
			z, _, err := models.HardSample(tape, spec, s)
			require.NoError(t, err)
			assert.InDelta(t, want, c.LogLik(tape, z).Item(), 1e-9*math.Max(1, math.Abs(want)), "%+v", cfg)

			i, j := rng.IntN(6), rng.IntN(6)
			q := p.Clone()
			q[i], q[j] = q[j], q[i]
			delta, err := c.SwapDelta(s, Site, 0, i, j)
			require.NoError(t, err)
			assert.InDelta(t, poissonLogLik(c, q, a, w)-want, delta, 1e-9*math.Max(1, math.Abs(want)), "%+v", cfg)
		}
	}
}

func TestCountsFastPathsAgreeWithLogLik(t *testing.T) {
	for _, cfg := range []CountsConfig{
		{N: 1, Seed: 1},
		{N: 7, Seed: 2},
		{N: 9, D: 2, MeanCount: 200, Spread: 2, Seed: 3},
		{N: 8, Radius: 0.8, Seed: 4},
		{N: 7, LatentW: true, Seed: 5},
		{N: 8, LatentW: true, Radius: 0.5, MeanCount: 3, Seed: 6},
	} {
		c, err := GenerateCounts(cfg)
		require.NoError(t, err)
		assert.NoError(t, models.CheckFastPaths(c, 50, cfg.Seed, 1e-9), "%+v", cfg)
	}
}

func TestCountsFastPathErrors(t *testing.T) {
	c, err := GenerateCounts(CountsConfig{N: 4, Seed: 1})
	require.NoError(t, err)
	lat, err := GenerateCounts(CountsConfig{N: 4, LatentW: true, Seed: 1})
	require.NoError(t, err)
	id := perm.Identity(4)
	for name, s := range map[string]*models.State{
		"no site":   {Perms: map[string][]perm.Perm{}, Reals: map[string][]float64{ASite: {1}, WSite: {1}}},
		"two perms": {Perms: map[string][]perm.Perm{Site: {id, id}}, Reals: map[string][]float64{ASite: {1}, WSite: {1}}},
		"size":      {Perms: map[string][]perm.Perm{Site: {perm.Identity(3)}}, Reals: map[string][]float64{ASite: {1}, WSite: {1}}},
	} {
		for _, m := range []*Counts{c, lat} {
			_, err := m.LogLikState(s)
			assert.Error(t, err, name)
			_, err = m.SwapDelta(s, Site, 0, 0, 1)
			assert.Error(t, err, name)
		}
	}
	noA := &models.State{Perms: map[string][]perm.Perm{Site: {id}}, Reals: map[string][]float64{WSite: {1}}}
	_, err = c.LogLikState(noA)
	assert.Error(t, err, "a is missing")
	_, err = c.SwapDelta(noA, Site, 0, 0, 1)
	assert.NoError(t, err, "SwapDelta does not read a")
	noW := &models.State{Perms: map[string][]perm.Perm{Site: {id}}, Reals: map[string][]float64{ASite: {1}}}
	_, err = lat.LogLikState(noW)
	assert.Error(t, err, "w is missing")
	_, err = lat.SwapDelta(noW, Site, 0, 0, 1)
	assert.Error(t, err, "w is missing")
	_, err = c.LogLikState(noW)
	assert.NoError(t, err, "known w")
	ok := countsState(c, id, 1, nil)
	for name, f := range map[string]func() (float64, error){
		"site":  func() (float64, error) { return c.SwapDelta(ok, "Q", 0, 0, 1) },
		"batch": func() (float64, error) { return c.SwapDelta(ok, Site, 1, 0, 1) },
		"row":   func() (float64, error) { return c.SwapDelta(ok, Site, 0, 0, 4) },
		"row<0": func() (float64, error) { return c.SwapDelta(ok, Site, 0, -1, 1) },
	} {
		_, err := f()
		assert.Error(t, err, name)
	}
}

// doublyStochastic returns k mixtures of random permutation matrices of
// size n, row-major, shape (k, 1, n, n).
func doublyStochastic(rng *rand.Rand, k, n int) *ad.Tensor {
	data := make([]float64, k*n*n)
	for s := range k {
		for range 4 {
			w := rng.Float64() / 4
			for i, j := range perm.Random(n, rng) {
				data[s*n*n+i*n+j] += w
			}
		}
	}
	return &ad.Tensor{Shape: []int{k, 1, n, n}, Data: data}
}

// TestCountsLogLikRelaxed checks LogLik on K = 3 relaxed, doubly stochastic
// matrices: shape (K), the value Σ_i Poisson(y_i; exp(a + Σ_j P_ij x_jᵀ w))
// for each sample, and gradients in P, a and w.
func TestCountsLogLikRelaxed(t *testing.T) {
	const n, k = 5, 3
	rng := rand.New(rand.NewPCG(4, 5))
	for _, latent := range []bool{false, true} {
		c, err := GenerateCounts(CountsConfig{N: n, MeanCount: 10, LatentW: latent, Seed: 4})
		require.NoError(t, err)
		spec, err := models.Check(c)
		require.NoError(t, err)
		p := doublyStochastic(rng, k, n)
		a := &ad.Tensor{Shape: []int{k}, Data: []float64{2, 2.5, 3}}
		w := &ad.Tensor{Shape: []int{k, 1}, Data: []float64{1, -0.5, 0.3}}
		f := func(tape *ad.Tape, xs []*ad.Var) *ad.Var {
			z := models.NewSample(tape, spec, k, false)
			z.Set(Site, xs[0])
			z.Set(ASite, xs[1])
			if latent {
				z.Set(WSite, xs[2])
			}
			return c.LogLik(tape, z)
		}
		tape := ad.NewTape()
		ll := f(tape, []*ad.Var{tape.Const(p), tape.Const(a), tape.Const(w)})
		require.NoError(t, tape.Err())
		require.Equal(t, []int{k}, ll.Shape())
		for s := range k {
			ws := c.W
			if latent {
				ws = w.Data[s : s+1]
			}
			want := 0.0
			for i := range n {
				eta := a.Data[s]
				for j := range n {
					eta += p.Data[s*n*n+i*n+j] * c.X.At(j, 0) * ws[0]
				}
				lg, _ := math.Lgamma(float64(c.Y[i]) + 1)
				want += float64(c.Y[i])*eta - math.Exp(eta) - lg
			}
			assert.InDelta(t, want, ll.Value()[s], 1e-9*math.Abs(want), "latent %v sample %d", latent, s)
		}
		assert.NoError(t, ad.GradCheck{Tol: 1e-5}.Check(f, p, a, w), "latent %v", latent)
	}
}

// With w known, σ and a are independent a posteriori: LogLikState minus
// ⟨P_σ, Logits⟩ does not depend on σ.
func TestCountsLogits(t *testing.T) {
	c, err := GenerateCounts(CountsConfig{N: 6, D: 2, Seed: 7})
	require.NoError(t, err)
	x := c.Logits()
	rng := rand.New(rand.NewPCG(7, 7))
	for _, a := range []float64{0, 3.9, -2} {
		var first float64
		for k := range 10 {
			p := perm.Random(6, rng)
			ll, err := c.LogLikState(countsState(c, p, a, nil))
			require.NoError(t, err)
			lin := 0.0
			for i, j := range p {
				lin += x.At(i, j)
				assert.Equal(t, float64(c.Y[i])*(c.X.At(j, 0)*c.W[0]+c.X.At(j, 1)*c.W[1]), x.At(i, j))
			}
			if k == 0 {
				first = ll - lin
			}
			assert.InDelta(t, first, ll-lin, 1e-9*math.Abs(first))
		}
	}
}
