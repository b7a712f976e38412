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

// Log density and entropy against sums of gonum's univariate normals; same
// closed forms, so agreement is to rounding (1e-12 relative).
func TestNormalAgainstDistuv(t *testing.T) {
	cases := []Normal{
		{Mu: []float64{0, 1, -2}, Sigma: []float64{1, 0.5, 3}},
		{Mu: []float64{0.3, -0.7}, Sigma: []float64{2}},
	}
	x := []float64{0.4, 1.2, -5}
	for _, n := range cases {
		require.NoError(t, n.Validate())
		xs := x[:n.Dim()]
		var want, wantH float64
		for i, m := range n.Mu {
			ref := distuv.Normal{Mu: m, Sigma: n.sigma(i)}
			want += ref.LogProb(xs[i])
			wantH += ref.Entropy()
		}
		lp, err := n.LogProb(xs)
		require.NoError(t, err)
		assert.InEpsilon(t, want, lp, 1e-12)
		h, err := n.Entropy()
		require.NoError(t, err)
		assert.InEpsilon(t, wantH, h, 1e-12)
	}
}

// Sample means of 100000 draws within 4 standard errors σ/√n (fixed seed).
func TestNormalRand(t *testing.T) {
	n := Normal{Mu: []float64{1, -2}, Sigma: []float64{0.5, 3}}
	rng := rand.New(rand.NewPCG(9, 9))
	const m = 100000
	sum := make([]float64, 2)
	buf := make([]float64, 2)
	for i := 0; i < m; i++ {
		_, err := n.Rand(buf, rng)
		require.NoError(t, err)
		sum[0] += buf[0]
		sum[1] += buf[1]
	}
	for i := range sum {
		assert.InDelta(t, n.Mu[i], sum[i]/m, 4*n.Sigma[i]/math.Sqrt(m))
	}
}

func TestNormalInvalid(t *testing.T) {
	bad := []Normal{
		{Mu: []float64{0, 1}, Sigma: []float64{1, 0}},
		{Mu: []float64{0, 1}, Sigma: []float64{-1}},
		{Mu: []float64{0, 1}, Sigma: []float64{1, 2, 3}},
		{Mu: []float64{math.NaN()}, Sigma: []float64{1}},
		{Mu: []float64{0}, Sigma: []float64{math.Inf(1)}},
		{Mu: []float64{0}},
	}
	for _, n := range bad {
		assert.Error(t, n.Validate(), "%+v", n)
		_, err := n.LogProb(make([]float64, len(n.Mu)))
		assert.Error(t, err)
		_, err = n.Rand(nil, nil)
		assert.Error(t, err)
		_, err = n.Entropy()
		assert.Error(t, err)
		_, err = KLNormal(n, n)
		assert.Error(t, err)
	}
	good := Normal{Mu: []float64{0, 1}, Sigma: []float64{1}}
	_, err := good.LogProb([]float64{1})
	assert.Error(t, err)
	_, err = good.Rand(make([]float64, 3), nil)
	assert.Error(t, err)
	_, err = KLNormal(good, Normal{Mu: []float64{0}, Sigma: []float64{1}})
	assert.Error(t, err)
}

// KL(q‖p) closed form against a Monte Carlo mean of log q(x) - log p(x),
// x ~ q, with 100000 draws: within 3 standard errors (fixed seed).
func TestKLNormalMonteCarlo(t *testing.T) {
	q := Normal{Mu: []float64{0.5, -1, 2}, Sigma: []float64{0.8, 1.5, 0.3}}
	p := Normal{Mu: []float64{0, 0, 1}, Sigma: []float64{1, 2, 0.5}}
	kl, err := KLNormal(q, p)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(5, 6))
	const m = 100000
	var s, s2 float64
	x := make([]float64, 3)
	for i := 0; i < m; i++ {
		_, err := q.Rand(x, rng)
		require.NoError(t, err)
		var lr float64
		for j := range x { // independent reference densities
			lr += distuv.Normal{Mu: q.Mu[j], Sigma: q.Sigma[j]}.LogProb(x[j]) -
				distuv.Normal{Mu: p.Mu[j], Sigma: p.Sigma[j]}.LogProb(x[j])
		}
		s += lr
		s2 += lr * lr
	}
	mean := s / m
	se := math.Sqrt((s2/m - mean*mean) / m)
	assert.InDelta(t, kl, mean, 3*se, "closed %v, MC %v ± %v", kl, mean, se)
	self, err := KLNormal(q, q)
	require.NoError(t, err)
	assert.InDelta(t, 0, self, 1e-15)
}

func TestNormalVar(t *testing.T) {
	mu := &ad.Tensor{Shape: []int{2, 3}, Data: []float64{0.1, -0.4, 1, 2, 0, -1}}
	logSigma := &ad.Tensor{Shape: []int{3}, Data: []float64{-0.3, 0.2, 0.5}}
	x := &ad.Tensor{Shape: []int{2, 3}, Data: []float64{0.5, 0.1, -1, 1.5, 0.3, 0}}

	t.Run("LogProbValues", func(t *testing.T) {
		tp := ad.NewTape()
		lp := NormalVar{tp.Const(mu), tp.Const(logSigma)}.LogProb(tp.Const(x))
		require.NoError(t, tp.Err())
		require.Equal(t, []int{2, 3}, lp.Shape())
		for i, v := range lp.Value() {
			ref := distuv.Normal{Mu: mu.Data[i], Sigma: math.Exp(logSigma.Data[i%3])}
			assert.InDelta(t, ref.LogProb(x.Data[i]), v, 1e-12)
		}
	})
	t.Run("Gradients", func(t *testing.T) {
		require.NoError(t, ad.CheckGradient(func(_ *ad.Tape, xs []*ad.Var) *ad.Var {
			return NormalVar{xs[0], xs[1]}.LogProb(xs[2])
		}, mu, logSigma, x))
		// The noise is held fixed by re-seeding on every evaluation.
		require.NoError(t, ad.CheckGradient(func(_ *ad.Tape, xs []*ad.Var) *ad.Var {
			return NormalVar{xs[0], xs[1]}.Rsample(rand.New(rand.NewPCG(1, 2)))
		}, mu, logSigma))
		require.NoError(t, ad.CheckGradient(func(_ *ad.Tape, xs []*ad.Var) *ad.Var {
			return NormalVar{xs[0], xs[1]}.Entropy()
		}, mu, logSigma))
		muP := &ad.Tensor{Shape: []int{3}, Data: []float64{0, 0.5, -0.5}}
		require.NoError(t, ad.CheckGradient(func(_ *ad.Tape, xs []*ad.Var) *ad.Var {
			return KLNormalVar(NormalVar{xs[0], xs[1]}, NormalVar{xs[2], xs[3]})
		}, mu, logSigma, muP, ad.Scalar(0.3)))
	})
	t.Run("RsampleMatchesNoise", func(t *testing.T) {
		tp := ad.NewTape()
		n := NormalVar{tp.Const(mu), tp.Const(logSigma)}
		y := n.Rsample(rand.New(rand.NewPCG(4, 4)))
		rng := rand.New(rand.NewPCG(4, 4))
		for i, v := range y.Value() {
			assert.InDelta(t, mu.Data[i]+math.Exp(logSigma.Data[i%3])*rng.NormFloat64(), v, 1e-14)
		}
		// A stack of 5 noise tensors gives 5 samples at once.
		eps := ad.Zeros(5, 2, 3)
		z := n.RsampleNoise(eps)
		require.NoError(t, tp.Err())
		assert.Equal(t, []int{5, 2, 3}, z.Shape())
		assert.Equal(t, mu.Data, z.Value()[12:18])
	})
	t.Run("EntropyAndKLValues", func(t *testing.T) {
		tp := ad.NewTape()
		q := NormalVar{tp.Const(mu), tp.Const(logSigma)}
		h := q.Entropy()
		sig := make([]float64, 6)
		for i := range sig {
			sig[i] = math.Exp(logSigma.Data[i%3])
		}
		fq := Normal{Mu: mu.Data, Sigma: sig}
		wantH, err := fq.Entropy()
		require.NoError(t, err)
		assert.InDelta(t, wantH, h.Item(), 1e-12)
		p := NormalVar{tp.ConstScalar(0.2), tp.ConstScalar(math.Log(1.5))}
		kl := KLNormalVar(q, p)
		require.NoError(t, tp.Err())
		want, err := KLNormal(fq, Normal{Mu: []float64{0.2, 0.2, 0.2, 0.2, 0.2, 0.2}, Sigma: []float64{1.5}})
		require.NoError(t, err)
		assert.InDelta(t, want, kl.Item(), 1e-12)
	})
	t.Run("Errors", func(t *testing.T) {
		tp := ad.NewTape()
		NormalVar{tp.Const(mu), nil}.Rsample(nil)
		assert.Error(t, tp.Err())
		tp.Reset()
		NormalVar{tp.Const(mu), tp.Const(ad.Zeros(2))}.LogProb(tp.Const(x))
		assert.Error(t, tp.Err(), "shapes (2,3) and (2) do not broadcast")
		tp.Reset()
		NormalVar{tp.Const(mu), tp.Const(logSigma)}.RsampleNoise(nil)
		assert.Error(t, tp.Err())
		tp.Reset()
		NormalVar{tp.Const(mu), tp.Const(logSigma)}.LogProb(nil)
		assert.Error(t, tp.Err())
		assert.Nil(t, NormalVar{}.Rsample(nil))
		other := ad.NewTape()
		tp.Reset()
		KLNormalVar(NormalVar{tp.Const(mu), tp.Const(logSigma)}, NormalVar{other.ConstScalar(0), other.ConstScalar(0)})
		assert.Error(t, tp.Err())
	})
}

// FillNormal is the generator's NormFloat64 stream, in order, and the
// noise of NormalVar.Rsample.
func TestFillNormal(t *testing.T) {
	got := FillNormal(make([]float64, 7), rand.New(rand.NewPCG(3, 4)))
	rng := rand.New(rand.NewPCG(3, 4))
	for i, v := range got {
		assert.Equal(t, rng.NormFloat64(), v, "draw %d", i)
	}
	tp := ad.NewTape()
	y := NormalVar{tp.ConstScalar(0), tp.ConstScalar(0)}.Rsample(rand.New(rand.NewPCG(3, 4)))
	require.NoError(t, tp.Err())
	assert.Equal(t, got[:1], y.Value())
}
