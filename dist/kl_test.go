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

// The closed-form Gumbel-space KL against a Monte Carlo estimate of
// E[log q(z) - log p(z)], z = (x + ε)/τ, with q = Gumbel(x/τ, 1/τ) and
// p = Gumbel(0, 1/τ_prior) evaluated by gonum (independent of this package's
// densities). 200000 draws per case; the estimate must lie within 3
// standard errors (fixed seed). r = τ_prior/τ is kept <= 3 so that the
// log ratio, which contains exp(-r ε), has a modest variance. A sign error
// in any term of the formula moves it by far more than 3 SE.
func TestGumbelKLMonteCarlo(t *testing.T) {
	cases := []struct {
		name          string
		x             []float64
		tau, tauPrior float64
	}{
		{"r=1", []float64{0.5}, 1, 1},
		{"r=2", []float64{-1}, 0.5, 1},
		{"r=0.3", []float64{2}, 1, 0.3},
		{"r=3", []float64{0.25}, 0.2, 0.6},
		{"matrix", []float64{0.3, -0.5, 1.2, 0, 2, -1, 0.7, 0.1, -0.2}, 0.7, 1.1},
	}
	const m = 200000
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			kl, err := GumbelKL(c.x, c.tau, c.tauPrior)
			require.NoError(t, err)
			rng := rand.New(rand.NewPCG(31, 41))
			std := distuv.GumbelRight{Mu: 0, Beta: 1}
			prior := distuv.GumbelRight{Mu: 0, Beta: 1 / c.tauPrior}
			var s, s2 float64
			for i := 0; i < m; i++ {
				var lr float64
				for _, x := range c.x {
					eps := std.Quantile(rng.Float64()) // inversion, independent of StandardGumbel
					z := (x + eps) / c.tau
					q := distuv.GumbelRight{Mu: x / c.tau, Beta: 1 / c.tau}
					lr += q.LogProb(z) - prior.LogProb(z)
				}
				s += lr
				s2 += lr * lr
			}
			mean := s / m
			se := math.Sqrt((s2/m - mean*mean) / m)
			assert.InDelta(t, kl, mean, 3*se, "closed %v, MC %v ± %v", kl, mean, se)
		})
	}
}

// KL is 0 when q equals the prior and positive otherwise.
func TestGumbelKLZeroAndPositive(t *testing.T) {
	kl, err := GumbelKL([]float64{0, 0, 0}, 0.8, 0.8)
	require.NoError(t, err)
	assert.InDelta(t, 0, kl, 1e-14)
	for _, x := range []float64{-3, -0.5, 0.5, 3} {
		for _, tau := range []float64{0.1, 1, 5} {
			for _, tp := range []float64{0.1, 1, 5} {
				kl, err := GumbelKL([]float64{x}, tau, tp)
				require.NoError(t, err)
				assert.Greater(t, kl, 0.0, "x=%v tau=%v tauPrior=%v", x, tau, tp)
			}
		}
	}
	// Masked (-Inf) entries are left out.
	a, err := GumbelKL([]float64{0.3, math.Inf(-1), -1}, 0.5, 1)
	require.NoError(t, err)
	b, err := GumbelKL([]float64{0.3, -1}, 0.5, 1)
	require.NoError(t, err)
	assert.Equal(t, b, a)
}

// Large r (τ = 0.01, τ_prior = 1) with large x: Γ(101) ≈ 9e157 times
// exp(-100 x) must not overflow before it is multiplied out.
func TestGumbelKLLargeRatio(t *testing.T) {
	x := 5.0
	kl, err := GumbelKL([]float64{x}, 0.01, 1)
	require.NoError(t, err)
	lg, _ := math.Lgamma(101)
	want := math.Log(0.01) - 1 + EulerGamma*99 + 100*x + math.Exp(lg-100*x)
	assert.InEpsilon(t, want, kl, 1e-12)
	assert.False(t, math.IsInf(kl, 0))
}

func TestGumbelKLVar(t *testing.T) {
	x := &ad.Tensor{Shape: []int{2, 3, 3}, Data: make([]float64, 18)}
	rng := rand.New(rand.NewPCG(8, 8))
	for i := range x.Data {
		x.Data[i] = 3*rng.Float64() - 1.5
	}
	for _, tt := range [][2]float64{{1, 1}, {0.5, 1}, {1, 0.3}, {0.25, 0.75}} {
		tau, tauPrior := tt[0], tt[1]
		tp := ad.NewTape()
		kl := GumbelKLVar(tp.Const(x), tau, tauPrior)
		require.NoError(t, tp.Err())
		want, err := GumbelKL(x.Data, tau, tauPrior)
		require.NoError(t, err)
		assert.InEpsilon(t, want, kl.Item(), 1e-14)
		// Default step 1e-6 and tolerance 1e-6 relative to max(1,
		// |numeric|); r <= 3 keeps the summed values below about 1e3, so
		// central differences are accurate to about 1e-7.
		require.NoError(t, ad.CheckGradient(func(_ *ad.Tape, xs []*ad.Var) *ad.Var {
			return GumbelKLVar(xs[0], tau, tauPrior)
		}, x), "tau=%v tauPrior=%v", tau, tauPrior)
	}

	// -Inf entries: no contribution, zero gradient.
	tp := ad.NewTape()
	v := tp.Variable(&ad.Tensor{Shape: []int{3}, Data: []float64{0.3, math.Inf(-1), -1}})
	kl := GumbelKLVar(v, 0.5, 1)
	require.NoError(t, tp.Backward(kl))
	want, _ := GumbelKL([]float64{0.3, -1}, 0.5, 1)
	assert.Equal(t, want, kl.Item())
	assert.Equal(t, 0.0, v.Grad()[1])
	assert.InDelta(t, 2*(1-math.Gamma(3)*math.Exp(-0.6)), v.Grad()[0], 1e-14)
}

func TestGumbelKLErrors(t *testing.T) {
	bad := []struct {
		x             []float64
		tau, tauPrior float64
	}{
		{[]float64{0}, 0, 1},
		{[]float64{0}, -1, 1},
		{[]float64{0}, 1, 0},
		{[]float64{0}, math.NaN(), 1},
		{[]float64{0}, 1, math.Inf(1)},
		{[]float64{math.NaN()}, 1, 1},
		{[]float64{math.Inf(1)}, 1, 1},
	}
	for _, b := range bad {
		_, err := GumbelKL(b.x, b.tau, b.tauPrior)
		assert.Error(t, err, "%+v", b)
		tp := ad.NewTape()
		out := GumbelKLVar(tp.Const(&ad.Tensor{Shape: []int{1}, Data: b.x}), b.tau, b.tauPrior)
		assert.Error(t, tp.Err(), "%+v", b)
		assert.NotNil(t, out)
	}
	assert.Nil(t, GumbelKLVar(nil, 1, 1))
}

// The KL term of a 279×279 C. elegans permutation, forward and backward.
func BenchmarkGumbelKLVar(b *testing.B) {
	const n = 279
	x := ad.NewParam("X", ad.Zeros(n, n))
	tp := ad.NewTape()
	b.ReportAllocs()
	for b.Loop() {
		tp.Reset()
		if err := tp.Backward(GumbelKLVar(tp.Param(x), 0.5, 1)); err != nil {
			b.Fatal(err)
		}
	}
}

// KLNormalStdVar against the float64 KLNormal and the log σ form
// KLNormalVar (1e-12 relative), for several priors and a shared σ, and its
// finite-difference gradients.
func TestKLNormalStdVar(t *testing.T) {
	mu := &ad.Tensor{Shape: []int{4}, Data: []float64{0.5, -1, 2, 0}}
	sigma := &ad.Tensor{Shape: []int{4}, Data: []float64{0.8, 1.5, 0.3, 1}}
	shared := ad.Scalar(0.6)
	for _, c := range []struct {
		name        string
		sigma       *ad.Tensor
		prMu, prStd float64
	}{
		{"standard", sigma, 0, 1},
		{"wide", sigma, 0, 2.5},
		{"shifted", sigma, 0.7, 0.4},
		{"shared sigma", shared, -0.3, 1.2},
	} {
		t.Run(c.name, func(t *testing.T) {
			tp := ad.NewTape()
			got := KLNormalStdVar(tp.Const(mu), tp.Const(c.sigma), c.prMu, c.prStd)
			require.NoError(t, tp.Err())
			require.Equal(t, 1, got.Size())
			prior := Normal{Mu: []float64{c.prMu, c.prMu, c.prMu, c.prMu}, Sigma: []float64{c.prStd}}
			want, err := KLNormal(Normal{Mu: mu.Data, Sigma: c.sigma.Data}, prior)
			require.NoError(t, err)
			assert.InDelta(t, want, got.Value()[0], 1e-12*math.Max(1, math.Abs(want)))
			logSigma := make([]float64, len(c.sigma.Data))
			for i, s := range c.sigma.Data {
				logSigma[i] = math.Log(s)
			}
			viaLog := KLNormalVar(
				NormalVar{tp.Const(mu), tp.Const(&ad.Tensor{Shape: c.sigma.Shape, Data: logSigma})},
				NormalVar{tp.ConstScalar(c.prMu), tp.ConstScalar(math.Log(c.prStd))})
			require.NoError(t, tp.Err())
			assert.InDelta(t, viaLog.Value()[0], got.Value()[0], 1e-12*math.Max(1, math.Abs(want)))
			require.NoError(t, ad.CheckGradient(func(_ *ad.Tape, xs []*ad.Var) *ad.Var {
				return KLNormalStdVar(xs[0], xs[1], c.prMu, c.prStd)
			}, mu, c.sigma))
		})
	}
}

// KLNormalStdVar records the ops of the composite
// Σ[(σ² + μ²)/(2s²) − log σ] + D(log s − ½) in this order, so that an ELBO
// in which σ also scales the sample (as in vi.Normal, whose golden tests pin
// its bits) has the same value and gradients to the last bit.
func TestKLNormalStdVarBitForBit(t *testing.T) {
	const k, d = 3, 4
	s := 1.7 // a variable: constant folding of s*s would round differently
	eps := &ad.Tensor{Shape: []int{k, d}, Data: FillNormal(make([]float64, k*d), rand.New(rand.NewPCG(1, 1)))}
	run := func(kl func(mu, sigma *ad.Var) *ad.Var) (float64, []float64, []float64) {
		muP := ad.NewParam("mu", &ad.Tensor{Shape: []int{d}, Data: []float64{0.3, -0.2, 1.1, 0.05}})
		rhoP := ad.NewParam("rho", &ad.Tensor{Shape: []int{d}, Data: []float64{-0.5, 0.1, 0.7, -1.3}})
		tp := ad.NewTape()
		mu := tp.Param(muP)
		sigma := ad.Softplus(tp.Param(rhoP))
		z := ad.Add(ad.Mul(tp.Const(eps), sigma), mu)
		loss := ad.Add(ad.Sum(ad.Square(ad.AddConst(z, -0.4))), kl(mu, sigma))
		require.NoError(t, tp.Backward(loss))
		return loss.Value()[0], muP.Grad.Data, rhoP.Grad.Data
	}
	l1, gm1, gr1 := run(func(mu, sigma *ad.Var) *ad.Var { return KLNormalStdVar(mu, sigma, 0, s) })
	l2, gm2, gr2 := run(func(mu, sigma *ad.Var) *ad.Var {
		v := s * s
		kl := ad.Sum(ad.Sub(ad.Scale(ad.Add(ad.Square(sigma), ad.Square(mu)), 1/(2*v)), ad.Log(sigma)))
		return ad.AddConst(kl, d*(math.Log(s)-0.5))
	})
	assert.Equal(t, math.Float64bits(l2), math.Float64bits(l1))
	assert.Equal(t, gm2, gm1)
	assert.Equal(t, gr2, gr1)
}

func TestKLNormalStdVarErrors(t *testing.T) {
	v := &ad.Tensor{Shape: []int{2}, Data: []float64{0.5, 1}}
	for name, f := range map[string]func(tp *ad.Tape) *ad.Var{
		"nil sigma":      func(tp *ad.Tape) *ad.Var { return KLNormalStdVar(tp.Const(v), nil, 0, 1) },
		"priorStd 0":     func(tp *ad.Tape) *ad.Var { return KLNormalStdVar(tp.Const(v), tp.Const(v), 0, 0) },
		"priorStd Inf":   func(tp *ad.Tape) *ad.Var { return KLNormalStdVar(tp.Const(v), tp.Const(v), 0, math.Inf(1)) },
		"priorMu NaN":    func(tp *ad.Tape) *ad.Var { return KLNormalStdVar(tp.Const(v), tp.Const(v), math.NaN(), 1) },
		"sigma 0":        func(tp *ad.Tape) *ad.Var { return KLNormalStdVar(tp.Const(v), tp.ConstScalar(0), 0, 1) },
		"mu Inf":         func(tp *ad.Tape) *ad.Var { return KLNormalStdVar(tp.ConstScalar(math.Inf(1)), tp.Const(v), 0, 1) },
		"shapes":         func(tp *ad.Tape) *ad.Var { return KLNormalStdVar(tp.Const(v), tp.Const(ad.Zeros(3)), 0, 1) },
		"different tape": func(tp *ad.Tape) *ad.Var { return KLNormalStdVar(tp.Const(v), ad.NewTape().Const(v), 0, 1) },
	} {
		tp := ad.NewTape()
		f(tp)
		assert.Error(t, tp.Err(), name)
	}
	assert.Nil(t, KLNormalStdVar(nil, nil, 0, 1))
}
