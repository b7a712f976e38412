package dist

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/permlab/permlab/ad"
)

// Log density and CDF against gonum's independent implementation; both are
// a few flops of the same closed form, so they agree to rounding (1e-12
// relative leaves a margin of 10⁴ ulps).
func TestGumbelAgainstDistuv(t *testing.T) {
	cases := []struct{ mu, beta float64 }{{0, 1}, {1.5, 0.3}, {-2, 4}}
	xs := []float64{-3, -0.5, 0, 0.7, 2, 10}
	for _, c := range cases {
		g := Gumbel{Mu: c.mu, Beta: c.beta}
		ref := distuv.GumbelRight{Mu: c.mu, Beta: c.beta}
		require.NoError(t, g.Validate())
		for _, x := range xs {
			assert.InEpsilon(t, ref.LogProb(x), g.LogProb(x), 1e-12, "LogProb(%v) %+v", x, c)
			assert.InDelta(t, ref.CDF(x), g.CDF(x), 1e-14, "CDF(%v) %+v", x, c)
		}
		for _, p := range []float64{1e-6, 0.01, 0.3, 0.5, 0.9, 0.999} {
			assert.InEpsilon(t, p, g.CDF(g.Quantile(p)), 1e-12, "CDF(Quantile(%v))", p)
		}
		assert.True(t, math.IsInf(g.Quantile(0), -1))
		assert.True(t, math.IsInf(g.Quantile(1), 1))
		assert.InDelta(t, ref.Mean(), g.Mean(), 1e-14)
		assert.InDelta(t, ref.Variance(), g.Variance(), 1e-12)
		assert.InDelta(t, ref.Entropy(), g.Entropy(), 1e-14)
	}
}

// Sample mean and variance of 200000 draws. The standard error of the mean
// is σ/√n; that of the sample variance is σ² √((κ + 2)/n) with excess
// kurtosis κ = 12/5. The bounds are 4 standard errors: a correct sampler
// fails with probability below 1e-4 per seed, and the seed is fixed.
func TestGumbelMoments(t *testing.T) {
	const n = 200000
	for _, g := range []Gumbel{{0, 1}, {2, 0.5}, {-1, 3}} {
		rng := rand.New(rand.NewPCG(7, 11))
		var s, s2 float64
		for i := 0; i < n; i++ {
			x := g.Rand(rng)
			require.False(t, math.IsInf(x, 0) || math.IsNaN(x))
			s += x
			s2 += x * x
		}
		mean := s / n
		v := s2/n - mean*mean
		sd := g.StdDev()
		assert.InDelta(t, g.Mean(), mean, 4*sd/math.Sqrt(n), "mean %+v", g)
		assert.InDelta(t, g.Variance(), v, 4*sd*sd*math.Sqrt((12.0/5+2)/n), "variance %+v", g)
	}
}

// constSource is a rand.Source returning one value forever.
type constSource uint64

func (c constSource) Uint64() uint64 { return uint64(c) }

// The extreme outputs of the generator (0 and 2⁶⁴-1) still give finite
// samples: U is the midpoint of a cell of (0, 1), never 0 or 1.
func TestStandardGumbelGuardsEdges(t *testing.T) {
	lo := StandardGumbel(rand.New(constSource(0)))
	hi := StandardGumbel(rand.New(constSource(math.MaxUint64)))
	assert.False(t, math.IsInf(lo, 0) || math.IsNaN(lo))
	assert.False(t, math.IsInf(hi, 0) || math.IsNaN(hi))
	assert.Less(t, lo, -3.5)
	assert.Greater(t, hi, 36.0)
}

func TestGumbelInvalid(t *testing.T) {
	for _, g := range []Gumbel{{0, 0}, {0, -1}, {math.NaN(), 1}, {0, math.Inf(1)}, {0, math.NaN()}} {
		require.Error(t, g.Validate(), "%+v", g)
		assert.True(t, math.IsNaN(g.LogProb(0)))
		assert.True(t, math.IsNaN(g.CDF(0)))
		assert.True(t, math.IsNaN(g.Rand(nil)))
		assert.True(t, math.IsNaN(g.Mean()))
	}
	assert.True(t, math.IsNaN(Gumbel{0, 1}.Quantile(1.5)))
}

func TestGumbelNoise(t *testing.T) {
	a, err := GumbelNoise(rand.New(rand.NewPCG(3, 4)), 2, 3)
	require.NoError(t, err)
	assert.Equal(t, []int{2, 3}, a.Shape)
	b := FillGumbel(make([]float64, 6), rand.New(rand.NewPCG(3, 4)))
	assert.Equal(t, b, a.Data, "same seed, same noise, row-major")
	_, err = GumbelNoise(nil, 2, -1)
	assert.Error(t, err)
}

// FillGumbel draws all uniforms first and takes the logarithms over the
// slice; every sample must still have StandardGumbel's bits from the same
// draws, whatever the slice's length (vector groups and the tail).
func TestFillGumbelBits(t *testing.T) {
	for _, n := range []int{0, 1, 3, 4, 5, 7, 100_003} {
		got := FillGumbel(make([]float64, n), rand.New(rand.NewPCG(5, 6)))
		rng := rand.New(rand.NewPCG(5, 6))
		for i, g := range got {
			if w := StandardGumbel(rng); math.Float64bits(g) != math.Float64bits(w) {
				t.Fatalf("n=%d: sample %d = %v, StandardGumbel gives %v", n, i, g, w)
			}
		}
	}
}

func TestGumbelLogProbVar(t *testing.T) {
	z := &ad.Tensor{Shape: []int{2, 3}, Data: []float64{-1, 0, 0.5, 1, 2, 4}}
	mu := &ad.Tensor{Shape: []int{3}, Data: []float64{0.3, -0.2, 1}}
	const beta = 0.7
	tp := ad.NewTape()
	lp := GumbelLogProbVar(tp.Const(z), tp.Const(mu), beta)
	require.NoError(t, tp.Err())
	for i, v := range lp.Value() {
		want := distuv.GumbelRight{Mu: mu.Data[i%3], Beta: beta}.LogProb(z.Data[i])
		assert.InDelta(t, want, v, 1e-12)
	}
	require.NoError(t, ad.CheckGradient(func(_ *ad.Tape, xs []*ad.Var) *ad.Var {
		return GumbelLogProbVar(xs[0], xs[1], beta)
	}, z, mu))

	tp.Reset()
	GumbelLogProbVar(tp.Const(z), tp.Const(mu), 0)
	assert.Error(t, tp.Err())
	tp.Reset()
	GumbelLogProbVar(tp.Const(z), nil, 1)
	assert.Error(t, tp.Err())
	assert.Nil(t, GumbelLogProbVar(nil, nil, 1))
}

func BenchmarkFillGumbel(b *testing.B) {
	buf := make([]float64, 279*279)
	rng := rand.New(rand.NewPCG(1, 1))
	for b.Loop() {
		FillGumbel(buf, rng)
	}
}
