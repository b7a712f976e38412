package matching

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/models"
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
		"sigma Inf": {N: 3, Sigma: math.Inf(1)},
		"radius":    {N: 3, Sigma: 1, Radius: math.NaN()},
	} {
		_, err := Generate(cfg)
		assert.Error(t, err, name)
	}
}

func TestNewProblemErrors(t *testing.T) {
	two := [][2]float64{{0, 0}, {1, 1}}
	empty, err := perm.NewMask(2)
	require.NoError(t, err)
	small, err := perm.FullMask(3)
	require.NoError(t, err)
	for name, f := range map[string]func() (*Problem, error){
		"no points":      func() (*Problem, error) { return NewProblem(nil, nil, 1, nil) },
		"lengths":        func() (*Problem, error) { return NewProblem(two, two[:1], 1, nil) },
		"sigma":          func() (*Problem, error) { return NewProblem(two, two, -1, nil) },
		"not finite":     func() (*Problem, error) { return NewProblem(two, [][2]float64{{0, 0}, {0, math.Inf(1)}}, 1, nil) },
		"NaN reference":  func() (*Problem, error) { return NewProblem([][2]float64{{math.NaN(), 0}, {1, 1}}, two, 1, nil) },
		"mask size":      func() (*Problem, error) { return NewProblem(two, two, 1, small) },
		"mask admits no": func() (*Problem, error) { return NewProblem(two, two, 1, empty) },
	} {
		_, err := f()
		assert.Error(t, err, name)
	}
	ref := [][2]float64{{0, 0}, {1, 1}}
	pr, err := NewProblem(ref, ref, 1, nil)
	require.NoError(t, err)
	ref[0][0] = 5
	assert.Equal(t, 0.0, pr.Ref[0][0], "NewProblem copies the points")
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

// gaussLogLik is log p(Y | σ) computed independently of the package, as a
// product of univariate normal densities from gonum's distuv.
func gaussLogLik(pr *Problem, p perm.Perm) float64 {
	ll := 0.0
	for i, j := range p {
		for d := range 2 {
			ll += distuv.Normal{Mu: pr.Ref[j][d], Sigma: pr.Sigma}.LogProb(pr.Obs[i][d])
		}
	}
	return ll
}

// TestLogLik compares every evaluation of the likelihood (the tape on
// one-hot values, the state fast path and the swap delta) with the Gaussian
// density of distuv.
func TestLogLik(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, radius := range []float64{0, 0.7} {
		pr, err := Generate(Config{N: 6, Sigma: 0.25, Radius: radius, Seed: 3})
		require.NoError(t, err)
		spec, err := models.Check(pr)
		require.NoError(t, err)
		tape := ad.NewTape()
		for range 20 {
			p := perm.Random(6, rng)
			s := &models.State{Perms: map[string][]perm.Perm{Site: {p}}}
			want := gaussLogLik(pr, p)
			got, err := pr.LogLikState(s)
			require.NoError(t, err)
			assert.InDelta(t, want, got, 1e-10)

			tape.Reset()
			z, _, err := models.HardSample(tape, spec, s)
			require.NoError(t, err)
			assert.InDelta(t, want, pr.LogLik(tape, z).Item(), 1e-10)

			i, j := rng.IntN(6), rng.IntN(6)
			q := p.Clone()
			q[i], q[j] = q[j], q[i]
			d, err := pr.SwapDelta(s, Site, 0, i, j)
			require.NoError(t, err)
			assert.InDelta(t, gaussLogLik(pr, q)-want, d, 1e-10)
		}
	}
}

func TestFastPathsAgreeWithLogLik(t *testing.T) {
	for _, cfg := range []Config{
		{N: 1, Sigma: 0.3, Seed: 1},
		{N: 7, Sigma: 0.3, Seed: 2},
		{N: 9, Sigma: 0.1, Radius: 0.5, Seed: 3},
	} {
		pr, err := Generate(cfg)
		require.NoError(t, err)
		assert.NoError(t, models.CheckFastPaths(pr, 50, cfg.Seed, 1e-12), "%+v", cfg)
	}
}

func TestFastPathErrors(t *testing.T) {
	pr, err := Generate(Config{N: 4, Sigma: 0.3, Seed: 1})
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
}

// TestLogLikRelaxed checks LogLik on relaxed, doubly stochastic matrices:
// its value is ⟨P, X⟩ − n log(2π s²) for each of the K samples, and its
// gradient with respect to P, X, agrees with finite differences.
func TestLogLikRelaxed(t *testing.T) {
	const n, k = 5, 3
	pr, err := Generate(Config{N: n, Sigma: 0.4, Seed: 4})
	require.NoError(t, err)
	spec, err := models.Check(pr)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(4, 5))
	// A mixture of permutation matrices is doubly stochastic.
	data := make([]float64, k*n*n)
	for s := range k {
		for range 4 {
			w := rng.Float64() / 4
			for i, j := range perm.Random(n, rng) {
				data[s*n*n+i*n+j] += w
			}
		}
	}
	x := pr.Logits().RawMatrix().Data
	logZ0 := n * math.Log(2*math.Pi*pr.Sigma*pr.Sigma)
	f := func(tape *ad.Tape, xs []*ad.Var) *ad.Var {
		z := models.NewSample(tape, spec, k, false)
		z.Set(Site, xs[0])
		return pr.LogLik(tape, z)
	}
	tape := ad.NewTape()
	ll := f(tape, []*ad.Var{tape.Const(&ad.Tensor{Shape: []int{k, 1, n, n}, Data: data})})
	require.NoError(t, tape.Err())
	require.Equal(t, []int{k}, ll.Shape())
	for s := range k {
		assert.InDelta(t, floats.Dot(data[s*n*n:(s+1)*n*n], x)-logZ0, ll.Value()[s], 1e-12)
	}
	sum := func(tape *ad.Tape, xs []*ad.Var) *ad.Var { return ad.Sum(f(tape, xs)) }
	assert.NoError(t, ad.CheckGradient(sum, &ad.Tensor{Shape: []int{k, 1, n, n}, Data: data}))
}

// heapPerms lists every permutation of size n by Heap's algorithm,
// independently of perm.Enumerate.
func heapPerms(n int) []perm.Perm {
	a := perm.Identity(n)
	out := []perm.Perm{a.Clone()}
	c := make([]int, n)
	for i := 0; i < n; {
		if c[i] < i {
			if i%2 == 0 {
				a[0], a[i] = a[i], a[0]
			} else {
				a[c[i]], a[i] = a[i], a[c[i]]
			}
			out = append(out, a.Clone())
			c[i]++
			i = 0
		} else {
			c[i] = 0
			i++
		}
	}
	return out
}

// TestExactAgainstBruteForce compares models.Exact on the model with an
// independent computation: every permutation by Heap's algorithm, filtered
// by the mask, weighted by distuv's Gaussian densities.
func TestExactAgainstBruteForce(t *testing.T) {
	cases := []Config{
		{N: 1, Sigma: 0.3, Seed: 1},
		{N: 3, Sigma: 0.3, Seed: 2},
		{N: 5, Sigma: 0.2, Radius: 0.5, Seed: 3},
		{N: 6, Sigma: 0.3, Seed: 4},
		{N: 7, Sigma: 0.25, Radius: 0.6, Seed: 5},
		{N: 8, Sigma: 0.15, Seed: 6},
	}
	for _, cfg := range cases {
		pr, err := Generate(cfg)
		require.NoError(t, err)
		n := cfg.N
		ex, err := models.Exact(pr)
		require.NoError(t, err)

		var logw []float64
		var admitted []perm.Perm
		for _, p := range heapPerms(n) {
			if pr.Mask != nil && !pr.Mask.Admits(p) {
				continue
			}
			admitted = append(admitted, p)
			logw = append(logw, gaussLogLik(pr, p))
		}
		logZ := floats.LogSumExp(logw)
		marg := make([]float64, n*n)
		best := floats.MaxIdx(logw)
		for k, p := range admitted {
			for i, j := range p {
				marg[i*n+j] += math.Exp(logw[k] - logZ)
			}
		}
		require.Equal(t, len(admitted), ex.States, "%+v", cfg)
		assert.InDelta(t, logZ, ex.LogEvidence, 1e-9, "%+v", cfg)
		assert.Equal(t, admitted[best], ex.MAP.Perms[Site][0], "%+v", cfg)
		got := ex.Perms[Site].Marginals[0].RawMatrix().Data
		for i := range marg {
			assert.InDelta(t, marg[i], got[i], 1e-12, "%+v entry %d", cfg, i)
		}
	}
}

func TestExactMAPIsTruthForSmallNoise(t *testing.T) {
	// Reference points are about 0.3 apart; noise 0.005 cannot confuse them.
	pr, err := Generate(Config{N: 8, Sigma: 0.005, Seed: 5})
	require.NoError(t, err)
	ex, err := models.Exact(pr)
	require.NoError(t, err)
	assert.Equal(t, pr.Truth, ex.MAP.Perms[Site][0])
	assert.Equal(t, pr.Truth, ex.Perms[Site].Mode[0])
	assert.Equal(t, 40320, ex.States)
	for i, j := range pr.Truth {
		assert.InDelta(t, 1, ex.Perms[Site].Marginals[0].At(i, j), 1e-6)
	}
}
