package dist

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/integrate/quad"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/permlab/permlab/ad"
)

// softmaxLast returns y = softmax(t, 0) (the last logit pinned at 0), the
// map from logit coordinates t_i = log(y_i/y_k) to the simplex, and
// Σ_i log y_i = log |det ∂y/∂t|.
func softmaxLast(t []float64) (y []float64, logJac float64) {
	ext := append(append([]float64{}, t...), 0)
	lse := logSumExp(ext)
	y = make([]float64, len(ext))
	for i, v := range ext {
		y[i] = math.Exp(v - lse)
		logJac += v - lse
	}
	return y, logJac
}

// densityInLogits returns the Concrete density transported to logit
// coordinates, p(y(t)) Π_i y_i. Near the faces of the simplex, where p(y)
// behaves like y_i^{λ-1} (unbounded for λ < 1), this integrand decays like
// exp(-λ|t|) instead, and it is analytic in a strip around the real axis,
// so the trapezoid rule on a truncated grid converges geometrically.
func densityInLogits(t *testing.T, c Concrete, tt []float64) float64 {
	y, logJac := softmaxLast(tt)
	lp, err := c.LogProb(y)
	require.NoError(t, err)
	return math.Exp(lp + logJac)
}

// The density integrates to one. For k = 2 and integer λ directly in y_1 on
// [0, 1] with 200-point Gauss-Legendre: there the integrand
// λ α_1 α_2 (y_1 y_2)^{λ-1} / (α_1 y_2^λ + α_2 y_1^λ)² is a rational
// function without poles on [0, 1], so the rule converges geometrically
// (for non-integer λ it behaves like y^{λ-1} at the edges and converges
// only algebraically). For k = 2 and 3 with λ down to 0.5, in logit
// coordinates with the trapezoid rule, step h = 0.3/λ on [-T, T]^{k-1}
// with T = (max|l| + 32)/λ, so the truncated tails weigh below e^{-30}; the
// integrand is analytic in a strip of half-width about π/λ, where the
// trapezoid error is about exp(-2π²/(λh)) = e^{-66}. The step-halving
// difference |I_h - I_2h| and |I_h - 1| are asserted below 1e-9 (observed
// ~1e-14).
func TestConcreteNormalised(t *testing.T) {
	t.Run("LegendreK2", func(t *testing.T) {
		for _, c := range []Concrete{
			{Logits: []float64{0.3, -0.4}, Temp: 1},
			{Logits: []float64{1, -1}, Temp: 2},
			{Logits: []float64{0, 0}, Temp: 3},
		} {
			f := func(u float64) float64 {
				lp, err := c.LogProb([]float64{u, 1 - u})
				require.NoError(t, err)
				return math.Exp(lp)
			}
			i := quad.Fixed(f, 0, 1, 200, quad.Legendre{}, 0)
			assert.InDelta(t, 1, i, 1e-9, "%+v", c)
		}
	})
	trapezoid := func(c Concrete, h float64) float64 {
		lmax := 0.0
		for _, l := range c.Logits {
			lmax = math.Max(lmax, math.Abs(l))
		}
		T := (lmax + 32) / c.Temp
		n := int(math.Ceil(T / h))
		var sum float64
		switch len(c.Logits) {
		case 2:
			for i := -n; i <= n; i++ {
				sum += densityInLogits(t, c, []float64{float64(i) * h})
			}
			return sum * h
		case 3:
			for i := -n; i <= n; i++ {
				for j := -n; j <= n; j++ {
					sum += densityInLogits(t, c, []float64{float64(i) * h, float64(j) * h})
				}
			}
			return sum * h * h
		}
		panic("unreachable")
	}
	for _, c := range []Concrete{
		{Logits: []float64{0.3, -0.4}, Temp: 0.5},
		{Logits: []float64{2, 0}, Temp: 0.7},
		{Logits: []float64{0.5, -0.2, 1}, Temp: 0.5},
		{Logits: []float64{0, 0, 0}, Temp: 1},
		{Logits: []float64{-1, 1.5, 0.2}, Temp: 2},
	} {
		ih := trapezoid(c, 0.3/c.Temp)
		i2h := trapezoid(c, 0.6/c.Temp)
		assert.InDelta(t, ih, i2h, 1e-9, "step halving %+v", c)
		assert.InDelta(t, 1, ih, 1e-9, "%+v", c)
	}
}

// Histogram of 50000 samples of y_1 (k = 2) in 10 equal bins against bin
// probabilities integrated from LogProb (Gauss-Legendre in logit
// coordinates per bin): Pearson statistic below the 0.999 quantile of χ²(9)
// (fixed seed). The bin probabilities are also checked against the exact
// CDF P(y_1 <= u) = σ(λ logit(u) - (l_1 - l_2)): for k = 2 the logit of a
// Concrete sample is logistic.
func TestConcreteHistogram(t *testing.T) {
	c := Concrete{Logits: []float64{0.4, -0.3}, Temp: 0.7}
	const bins, n = 10, 50000
	logit := func(u float64) float64 { return math.Log(u / (1 - u)) }
	sigmoid := func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }
	cdf := func(u float64) float64 {
		switch u {
		case 0:
			return 0
		case 1:
			return 1
		}
		return sigmoid(c.Temp*logit(u) - (c.Logits[0] - c.Logits[1]))
	}
	probs := make([]float64, bins)
	for b := range probs {
		lo, hi := float64(b)/bins, float64(b+1)/bins
		f := func(s float64) float64 { return densityInLogits(t, c, []float64{s}) }
		tlo, thi := -80.0, 80.0
		if lo > 0 {
			tlo = logit(lo)
		}
		if hi < 1 {
			thi = logit(hi)
		}
		probs[b] = quad.Fixed(f, tlo, thi, 400, quad.Legendre{}, 0)
		assert.InDelta(t, cdf(hi)-cdf(lo), probs[b], 1e-9, "bin %d", b)
	}
	rng := rand.New(rand.NewPCG(12, 34))
	counts := make([]int, bins)
	y := make([]float64, 2)
	for i := 0; i < n; i++ {
		_, err := c.Rand(y, rng)
		require.NoError(t, err)
		counts[min(int(y[0]*bins), bins-1)]++
	}
	assert.Less(t, chiSquare(counts, probs, n), distuv.ChiSquared{K: bins - 1}.Quantile(0.999), "counts %v", counts)
}

func TestConcreteViews(t *testing.T) {
	c := Concrete{Logits: []float64{0.5, -1, 2, 0}, Temp: 0.6}
	z, err := c.RandGumbelSpace(nil, rand.New(rand.NewPCG(1, 1)))
	require.NoError(t, err)
	y, err := c.Rand(nil, rand.New(rand.NewPCG(1, 1)))
	require.NoError(t, err)
	lse := logSumExp(z)
	var sum float64
	x := make([]float64, len(z))
	for i := range z {
		x[i] = z[i] - lse
		assert.InDelta(t, math.Exp(x[i]), y[i], 1e-15, "y = softmax(z)")
		sum += y[i]
	}
	assert.InDelta(t, 1, sum, 1e-14)

	// ExpConcrete density = Concrete density + Σ log y.
	lpy, err := c.LogProb(y)
	require.NoError(t, err)
	lpx, err := c.LogProbLog(x)
	require.NoError(t, err)
	var sx float64
	for _, v := range x {
		sx += v
	}
	assert.InDelta(t, lpy+sx, lpx, 1e-12)

	// Gumbel-space density = product of Gumbel(l/λ, 1/λ) densities.
	lpz, err := c.LogProbGumbelSpace(z)
	require.NoError(t, err)
	var want float64
	for i, l := range c.Logits {
		want += distuv.GumbelRight{Mu: l / c.Temp, Beta: 1 / c.Temp}.LogProb(z[i])
	}
	assert.InDelta(t, want, lpz, 1e-12)

	// Off the simplex: -Inf, not an error.
	for _, bad := range [][]float64{{0.5, 0.5, 0.5, -0.5}, {0.2, 0.2, 0.2, 0.2}, {1, 0, 0, 0}} {
		lp, err := c.LogProb(bad)
		require.NoError(t, err)
		assert.True(t, math.IsInf(lp, -1), "%v", bad)
	}
	lp, err := c.LogProbLog([]float64{0, 0, 0, 0})
	require.NoError(t, err)
	assert.True(t, math.IsInf(lp, -1))
}

func TestConcreteInvalid(t *testing.T) {
	for _, c := range []Concrete{
		{Logits: []float64{0, 1}, Temp: 0},
		{Logits: []float64{0, 1}, Temp: -1},
		{Logits: []float64{0, 1}, Temp: math.NaN()},
		{Logits: []float64{0, math.Inf(-1)}, Temp: 1},
		{Logits: []float64{0, math.NaN()}, Temp: 1},
		{Logits: nil, Temp: 1},
	} {
		assert.Error(t, c.Validate(), "%+v", c)
		_, err := c.Rand(nil, nil)
		assert.Error(t, err)
		_, err = c.LogProb([]float64{0.5, 0.5})
		assert.Error(t, err)
		_, err = c.LogProbLog([]float64{-math.Ln2, -math.Ln2})
		assert.Error(t, err)
		_, err = c.LogProbGumbelSpace([]float64{0, 0})
		assert.Error(t, err)
	}
	c := Concrete{Logits: []float64{0, 1}, Temp: 1}
	_, err := c.LogProb([]float64{1})
	assert.Error(t, err)
	_, err = c.LogProb([]float64{math.NaN(), 0.5})
	assert.Error(t, err)
	_, err = c.Rand(make([]float64, 3), nil)
	assert.Error(t, err)
}

func TestConcreteVar(t *testing.T) {
	logits := &ad.Tensor{Shape: []int{2, 3}, Data: []float64{0.5, -1, 0.2, 1, 0, -0.5}}
	const temp = 0.7
	rows := func(d []float64, i int) []float64 { return d[3*i : 3*i+3] }

	t.Run("SampleAndDensitiesMatchFloat", func(t *testing.T) {
		tp := ad.NewTape()
		c := ConcreteVar{Logits: tp.Const(logits), Temp: temp}
		y, z := c.Rsample(rand.New(rand.NewPCG(3, 3)))
		lp := c.LogProb(y)
		lpx := c.LogProbLog(ad.LogSoftmax(z, -1))
		lpz := c.LogProbGumbelSpace(z)
		require.NoError(t, tp.Err())
		require.Equal(t, []int{2}, lp.Shape())
		require.Equal(t, []int{2, 3}, lpz.Shape())
		rng := rand.New(rand.NewPCG(3, 3)) // same draws, row after row
		for i := 0; i < 2; i++ {
			fc := Concrete{Logits: rows(logits.Data, i), Temp: temp}
			wantZ, err := fc.RandGumbelSpace(nil, rng)
			require.NoError(t, err)
			assert.InDeltaSlice(t, wantZ, rows(z.Value(), i), 1e-14)
			wantY := rows(y.Value(), i)
			want, err := fc.LogProb(wantY)
			require.NoError(t, err)
			assert.InDelta(t, want, lp.Value()[i], 1e-12)
			x := make([]float64, 3)
			for j := range x {
				x[j] = math.Log(wantY[j])
			}
			want, err = fc.LogProbLog(x)
			require.NoError(t, err)
			assert.InDelta(t, want, lpx.Value()[i], 1e-12)
			want, err = fc.LogProbGumbelSpace(wantZ)
			require.NoError(t, err)
			var got float64
			for _, v := range rows(lpz.Value(), i) {
				got += v
			}
			assert.InDelta(t, want, got, 1e-12)
		}
	})
	t.Run("Gradients", func(t *testing.T) {
		y := &ad.Tensor{Shape: []int{2, 3}, Data: []float64{0.2, 0.5, 0.3, 0.6, 0.1, 0.3}}
		require.NoError(t, ad.CheckGradient(func(_ *ad.Tape, xs []*ad.Var) *ad.Var {
			return ConcreteVar{Logits: xs[0], Temp: temp}.LogProb(xs[1])
		}, logits, y))
		x := &ad.Tensor{Shape: []int{2, 3}, Data: make([]float64, 6)}
		for i, v := range y.Data {
			x.Data[i] = math.Log(v)
		}
		require.NoError(t, ad.CheckGradient(func(_ *ad.Tape, xs []*ad.Var) *ad.Var {
			return ConcreteVar{Logits: xs[0], Temp: temp}.LogProbLog(xs[1])
		}, logits, x))
		// Through the sample, noise fixed by re-seeding: the relaxed
		// one-hot, its Gumbel-space variable, and the MC KL integrand
		// log q(y) - log p(y) with a uniform prior at temperature 0.5.
		require.NoError(t, ad.CheckGradient(func(_ *ad.Tape, xs []*ad.Var) *ad.Var {
			y, z := ConcreteVar{Logits: xs[0], Temp: temp}.Rsample(rand.New(rand.NewPCG(5, 5)))
			return ad.Concat(ad.Reshape(y, -1), ad.Reshape(z, -1))
		}, logits))
		require.NoError(t, ad.CheckGradient(func(tp *ad.Tape, xs []*ad.Var) *ad.Var {
			q := ConcreteVar{Logits: xs[0], Temp: temp}
			_, z := q.Rsample(rand.New(rand.NewPCG(5, 5)))
			lx := ad.LogSoftmax(z, -1)
			p := ConcreteVar{Logits: tp.Const(ad.Zeros(3)), Temp: 0.5}
			return ad.Sum(ad.Sub(q.LogProbLog(lx), p.LogProbLog(lx)))
		}, logits))
	})
	t.Run("NoiseStack", func(t *testing.T) {
		tp := ad.NewTape()
		g := ad.Zeros(4, 2, 3)
		y, z := ConcreteVar{Logits: tp.Const(logits), Temp: temp}.RsampleNoise(g)
		require.NoError(t, tp.Err())
		assert.Equal(t, []int{4, 2, 3}, y.Shape())
		assert.InDeltaSlice(t, []float64{0.5 / temp, -1 / temp, 0.2 / temp}, z.Value()[18:21], 1e-15)
	})
	t.Run("Errors", func(t *testing.T) {
		tp := ad.NewTape()
		ConcreteVar{Logits: tp.Const(logits), Temp: 0}.Rsample(nil)
		assert.Error(t, tp.Err())
		tp.Reset()
		ConcreteVar{Logits: tp.Const(logits), Temp: 1}.LogProb(tp.Const(ad.Zeros(2, 1)))
		assert.Error(t, tp.Err(), "last axes 1 and 3 differ")
		tp.Reset()
		ConcreteVar{Logits: tp.ConstScalar(1), Temp: 1}.Rsample(nil)
		assert.Error(t, tp.Err(), "scalar logits")
		tp.Reset()
		ConcreteVar{Logits: tp.Const(logits), Temp: 1}.RsampleNoise(nil)
		assert.Error(t, tp.Err())
		tp.Reset()
		ConcreteVar{Logits: tp.Const(logits), Temp: 1}.LogProbLog(nil)
		assert.Error(t, tp.Err())
		y, z := ConcreteVar{}.Rsample(nil)
		assert.Nil(t, y)
		assert.Nil(t, z)
	})
}
