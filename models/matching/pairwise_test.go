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

func TestGeneratePairwise(t *testing.T) {
	cfg := PairwiseConfig{N: 7, Sigma: 0.05, Radius: 0.5, Fixed: 2, Seed: 11}
	a, err := GeneratePairwise(cfg)
	require.NoError(t, err)
	b, err := GeneratePairwise(cfg)
	require.NoError(t, err)
	assert.Equal(t, a.ObsDist, b.ObsDist, "same seed, same problem")
	assert.Equal(t, a.RefDist, b.RefDist)
	assert.Equal(t, a.Truth, b.Truth)
	assert.Equal(t, a.Fixed, b.Fixed)
	require.NoError(t, a.Truth.Validate())
	require.NotNil(t, a.Mask)
	assert.True(t, a.Mask.Admits(a.Truth), "the truth is always a candidate")
	assert.Less(t, a.Mask.Count(), 49, "radius 0.5 must exclude some pairs")
	pinned := 0
	for i, j := range a.Fixed {
		if j >= 0 {
			pinned++
			assert.Equal(t, a.Truth[i], j, "fixed rows are pinned to the truth")
		} else {
			assert.Equal(t, -1, j)
		}
	}
	assert.Equal(t, 2, pinned)
	for j := range 7 {
		for l := range 7 {
			assert.InDelta(t, math.Sqrt(sqDist(a.Ref[j], a.Ref[l])), a.RefDist.At(j, l), 1e-15)
			assert.Equal(t, a.ObsDist.At(j, l), a.ObsDist.At(l, j))
		}
		assert.Equal(t, 0.0, a.ObsDist.At(j, j))
	}

	c, err := GeneratePairwise(PairwiseConfig{N: 7, Sigma: 0.05, Seed: 12})
	require.NoError(t, err)
	assert.NotEqual(t, a.ObsDist, c.ObsDist)
	assert.Nil(t, c.Mask)
	assert.Nil(t, c.Fixed)
	all, err := GeneratePairwise(PairwiseConfig{N: 4, Sigma: 1, Fixed: 4, Seed: 1})
	require.NoError(t, err)
	assert.Equal(t, []int(all.Truth), all.Fixed)

	// The noise of the observed distances has standard deviation Sigma.
	big, err := GeneratePairwise(PairwiseConfig{N: 60, Sigma: 0.2, Seed: 3})
	require.NoError(t, err)
	var res []float64
	for i := range 60 {
		for k := i + 1; k < 60; k++ {
			res = append(res, big.ObsDist.At(i, k)-big.RefDist.At(big.Truth[i], big.Truth[k]))
		}
	}
	assert.InDelta(t, 0.2, math.Sqrt(floats.Dot(res, res)/float64(len(res))), 0.01)

	for name, cfg := range map[string]PairwiseConfig{
		"n":         {N: 0, Sigma: 1},
		"sigma":     {N: 3, Sigma: 0},
		"sigma NaN": {N: 3, Sigma: math.NaN()},
		"sigma Inf": {N: 3, Sigma: math.Inf(1)},
		"radius":    {N: 3, Sigma: 1, Radius: math.NaN()},
		"fixed":     {N: 3, Sigma: 1, Fixed: 4},
		"fixed < 0": {N: 3, Sigma: 1, Fixed: -1},
	} {
		_, err := GeneratePairwise(cfg)
		assert.Error(t, err, name)
	}
}

func TestNewPairwiseErrors(t *testing.T) {
	d := mat.NewDense(3, 3, []float64{0, 1, 2, 1, 0, 3, 2, 3, 0})
	asym := mat.NewDense(3, 3, []float64{0, 1, 2, 1, 0, 3, 2, 3.5, 0})
	inf := mat.NewDense(3, 3, []float64{0, 1, math.Inf(1), 1, 0, 3, math.Inf(1), 3, 0})
	empty, err := perm.NewMask(3)
	require.NoError(t, err)
	small, err := perm.FullMask(2)
	require.NoError(t, err)
	diag, err := perm.NewMask(3)
	require.NoError(t, err)
	for i := range 3 {
		require.NoError(t, diag.Set(i, i, true))
	}
	for name, f := range map[string]func() (*Pairwise, error){
		"nil":            func() (*Pairwise, error) { return NewPairwise(nil, d, 1, nil, nil) },
		"not square":     func() (*Pairwise, error) { return NewPairwise(mat.NewDense(3, 2, nil), d, 1, nil, nil) },
		"sizes":          func() (*Pairwise, error) { return NewPairwise(d, mat.NewDense(2, 2, nil), 1, nil, nil) },
		"sigma":          func() (*Pairwise, error) { return NewPairwise(d, d, 0, nil, nil) },
		"sigma NaN":      func() (*Pairwise, error) { return NewPairwise(d, d, math.NaN(), nil, nil) },
		"asymmetric ref": func() (*Pairwise, error) { return NewPairwise(asym, d, 1, nil, nil) },
		"asymmetric obs": func() (*Pairwise, error) { return NewPairwise(d, asym, 1, nil, nil) },
		"not finite":     func() (*Pairwise, error) { return NewPairwise(d, inf, 1, nil, nil) },
		"mask size":      func() (*Pairwise, error) { return NewPairwise(d, d, 1, small, nil) },
		"mask admits no": func() (*Pairwise, error) { return NewPairwise(d, d, 1, empty, nil) },
		"fixed length":   func() (*Pairwise, error) { return NewPairwise(d, d, 1, nil, []int{-1, 0}) },
		"fixed range":    func() (*Pairwise, error) { return NewPairwise(d, d, 1, nil, []int{-1, 3, -1}) },
		"fixed twice":    func() (*Pairwise, error) { return NewPairwise(d, d, 1, nil, []int{1, 1, -1}) },
		"fixed vs mask":  func() (*Pairwise, error) { return NewPairwise(d, d, 1, diag, []int{1, -1, -1}) },
	} {
		_, err := f()
		assert.Error(t, err, name)
	}
	// The diagonals are ignored; everything is copied.
	withDiag := mat.NewDense(3, 3, []float64{math.NaN(), 1, 2, 1, 7, 3, 2, 3, 0})
	fixed := []int{-1, 2, -1}
	pr, err := NewPairwise(withDiag, d, 1, diag.Clone(), []int{0, -1, -1})
	require.NoError(t, err)
	assert.Equal(t, 0.0, pr.RefDist.At(0, 0))
	assert.Equal(t, 0.0, pr.RefDist.At(1, 1))
	pr, err = NewPairwise(d, d, 1, nil, fixed)
	require.NoError(t, err)
	fixed[1] = -1
	d.Set(0, 1, 9)
	assert.Equal(t, 2, pr.Fixed[1], "NewPairwise copies the fixed rows")
	assert.Equal(t, 1.0, pr.ObsDist.At(0, 1), "NewPairwise copies the matrices")
	spec, err := models.Check(pr)
	require.NoError(t, err)
	assert.Equal(t, []bool{true, false, true}, spec.Perms[0].Free[0])
}

// pairLogLik is log p(D^obs | σ) computed independently of the package, as
// a product over pairs i < k of distuv's Gaussian densities.
func pairLogLik(pr *Pairwise, p perm.Perm) float64 {
	n := pr.N()
	ll := 0.0
	for i := range n {
		for k := i + 1; k < n; k++ {
			ll += distuv.Normal{Mu: pr.RefDist.At(p[i], p[k]), Sigma: pr.Sigma}.LogProb(pr.ObsDist.At(i, k))
		}
	}
	return ll
}

// TestPairwiseLogLik compares every evaluation of the likelihood (the tape
// on one-hot values, the state fast path and the swap delta) with distuv's
// Gaussian density.
func TestPairwiseLogLik(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pr, err := GeneratePairwise(PairwiseConfig{N: 7, Sigma: 0.1, Seed: 3})
	require.NoError(t, err)
	spec, err := models.Check(pr)
	require.NoError(t, err)
	tape := ad.NewTape()
	for range 30 {
		p := perm.Random(7, rng)
		s := &models.State{Perms: map[string][]perm.Perm{Site: {p}}}
		want := pairLogLik(pr, p)
		got, err := pr.LogLikState(s)
		require.NoError(t, err)
		assert.InDelta(t, want, got, 1e-10*math.Max(1, math.Abs(want)))

		tape.Reset()
		z, _, err := models.HardSample(tape, spec, s)
		require.NoError(t, err)
		assert.InDelta(t, want, pr.LogLik(tape, z).Item(), 1e-10*math.Max(1, math.Abs(want)))

		i, j := rng.IntN(7), rng.IntN(7)
		q := p.Clone()
		q[i], q[j] = q[j], q[i]
		d, err := pr.SwapDelta(s, Site, 0, i, j)
		require.NoError(t, err)
		assert.InDelta(t, pairLogLik(pr, q)-want, d, 1e-10*math.Max(1, math.Abs(want)))
	}
	// One item: no pairs, log likelihood 0.
	one, err := GeneratePairwise(PairwiseConfig{N: 1, Sigma: 0.1, Seed: 1})
	require.NoError(t, err)
	ll, err := one.LogLikState(&models.State{Perms: map[string][]perm.Perm{Site: {perm.Identity(1)}}})
	require.NoError(t, err)
	assert.Equal(t, 0.0, ll)
}

func TestPairwiseFastPathsAgreeWithLogLik(t *testing.T) {
	for _, cfg := range []PairwiseConfig{
		{N: 1, Sigma: 0.3, Seed: 1},
		{N: 2, Sigma: 0.3, Seed: 1},
		{N: 7, Sigma: 0.1, Seed: 2},
		{N: 9, Sigma: 0.05, Radius: 0.6, Fixed: 2, Seed: 3},
		{N: 10, Sigma: 0.02, Radius: 0.4, Fixed: 1, Seed: 4},
	} {
		pr, err := GeneratePairwise(cfg)
		require.NoError(t, err)
		assert.NoError(t, models.CheckFastPaths(pr, 50, cfg.Seed, 1e-10), "%+v", cfg)
	}
}

func TestPairwiseFastPathErrors(t *testing.T) {
	pr, err := GeneratePairwise(PairwiseConfig{N: 4, Sigma: 0.3, Seed: 1})
	require.NoError(t, err)
	ok := &models.State{Perms: map[string][]perm.Perm{Site: {perm.Identity(4)}}}
	for name, s := range map[string]*models.State{
		"no site":   {Perms: map[string][]perm.Perm{}},
		"two perms": {Perms: map[string][]perm.Perm{Site: {perm.Identity(4), perm.Identity(4)}}},
		"size":      {Perms: map[string][]perm.Perm{Site: {perm.Identity(3)}}},
	} {
		_, err := pr.LogLikState(s)
		assert.Error(t, err, name)
		_, err = pr.SwapDelta(s, Site, 0, 0, 1)
		assert.Error(t, err, name)
	}
	for name, f := range map[string]func() (float64, error){
		"site":  func() (float64, error) { return pr.SwapDelta(ok, "Q", 0, 0, 1) },
		"batch": func() (float64, error) { return pr.SwapDelta(ok, Site, 1, 0, 1) },
		"row":   func() (float64, error) { return pr.SwapDelta(ok, Site, 0, 0, 4) },
	} {
		_, err := f()
		assert.Error(t, err, name)
	}
	d, err := pr.SwapDelta(ok, Site, 0, 2, 2)
	require.NoError(t, err)
	assert.Equal(t, 0.0, d)
}

// TestPairwiseLogLikRelaxed checks LogLik on K = 3 relaxed, doubly
// stochastic matrices: shape (K), the value −Σ_{i≠k} (D^obs_ik − (P D^ref
// Pᵀ)_ik)²/(4s²) − const for each sample, and the gradient in P.
func TestPairwiseLogLikRelaxed(t *testing.T) {
	const n, k = 5, 3
	pr, err := GeneratePairwise(PairwiseConfig{N: n, Sigma: 0.2, Radius: 0.7, Fixed: 1, Seed: 4})
	require.NoError(t, err)
	spec, err := models.Check(pr)
	require.NoError(t, err)
	p := doublyStochastic(rand.New(rand.NewPCG(4, 5)), k, n)
	f := func(tape *ad.Tape, xs []*ad.Var) *ad.Var {
		z := models.NewSample(tape, spec, k, false)
		z.Set(Site, xs[0])
		return pr.LogLik(tape, z)
	}
	tape := ad.NewTape()
	ll := f(tape, []*ad.Var{tape.Const(p)})
	require.NoError(t, tape.Err())
	require.Equal(t, []int{k}, ll.Shape())
	logZ0 := float64(n*(n-1)/2) * math.Log(math.Sqrt(2*math.Pi)*pr.Sigma)
	for s := range k {
		ps := mat.NewDense(n, n, p.Data[s*n*n:(s+1)*n*n])
		var pred mat.Dense
		pred.Product(ps, pr.RefDist, ps.T())
		ss := 0.0
		for i := range n {
			for l := range n {
				if i != l {
					e := pr.ObsDist.At(i, l) - pred.At(i, l)
					ss += e * e
				}
			}
		}
		assert.InDelta(t, -ss/(4*pr.Sigma*pr.Sigma)-logZ0, ll.Value()[s], 1e-10, "sample %d", s)
	}
	assert.NoError(t, ad.CheckGradient(f, p))
}

// TestPairwiseExactAgainstBruteForce compares models.Exact on the model with
// an independent computation: every permutation by Heap's algorithm,
// filtered by the mask and the fixed rows, weighted by distuv's Gaussian
// densities.
func TestPairwiseExactAgainstBruteForce(t *testing.T) {
	for _, cfg := range []PairwiseConfig{
		{N: 3, Sigma: 0.2, Seed: 1},
		{N: 6, Sigma: 0.1, Seed: 2},
		{N: 7, Sigma: 0.1, Radius: 0.6, Fixed: 1, Seed: 3},
		{N: 7, Sigma: 0.2, Fixed: 3, Seed: 4},
	} {
		pr, err := GeneratePairwise(cfg)
		require.NoError(t, err)
		n := cfg.N
		ex, err := models.Exact(pr)
		require.NoError(t, err)

		var logw []float64
		var admitted []perm.Perm
	next:
		for _, p := range heapPerms(n) {
			if pr.Mask != nil && !pr.Mask.Admits(p) {
				continue
			}
			for i, j := range pr.Fixed {
				if j >= 0 && p[i] != j {
					continue next
				}
			}
			admitted = append(admitted, p)
			logw = append(logw, pairLogLik(pr, p))
		}
		logZ := floats.LogSumExp(logw)
		marg := make([]float64, n*n)
		for k, p := range admitted {
			for i, j := range p {
				marg[i*n+j] += math.Exp(logw[k] - logZ)
			}
		}
		require.Equal(t, len(admitted), ex.States, "%+v", cfg)
		assert.InDelta(t, logZ, ex.LogEvidence, 1e-9, "%+v", cfg)
		assert.Equal(t, admitted[floats.MaxIdx(logw)], ex.MAP.Perms[Site][0], "%+v", cfg)
		got := ex.Perms[Site].Marginals[0].RawMatrix().Data
		for i := range marg {
			assert.InDelta(t, marg[i], got[i], 1e-12, "%+v entry %d", cfg, i)
		}
	}
}

// At low noise the exact posterior of a masked problem with fixed rows
// (n = 7) is peaked at the truth; at high noise it is spread.
func TestPairwiseExactLowAndHighNoise(t *testing.T) {
	low, err := GeneratePairwise(PairwiseConfig{N: 7, Sigma: 0.01, Radius: 0.5, Fixed: 1, Seed: 5})
	require.NoError(t, err)
	ex, err := models.Exact(low)
	require.NoError(t, err)
	assert.Less(t, ex.States, 5040, "the mask and the fixed row restrict the support")
	assert.Equal(t, low.Truth, ex.MAP.Perms[Site][0])
	assert.Equal(t, low.Truth, ex.Perms[Site].Mode[0])
	for i, j := range low.Truth {
		assert.InDelta(t, 1, ex.Perms[Site].Marginals[0].At(i, j), 1e-6)
	}

	high, err := GeneratePairwise(PairwiseConfig{N: 7, Sigma: 0.3, Seed: 5})
	require.NoError(t, err)
	ex, err = models.Exact(high)
	require.NoError(t, err)
	assert.Equal(t, 5040, ex.States)
	ll, err := high.LogLikState(ex.MAP)
	require.NoError(t, err)
	assert.Less(t, math.Exp(ll-ex.LogEvidence), 0.5, "no permutation dominates at Sigma 0.3")
}
