package dist

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/permlab/permlab/ad"
)

// llCase is one pair of shapes of the log-likelihood helpers: parameters of
// shape (K, E...) and observations of shape E (shared) or (K, E...).
type llCase struct {
	name   string
	param  []int
	shared bool
}

var llCases = []llCase{
	{"K=3 E=(4) shared", []int{3, 4}, true},
	{"K=3 E=(4) per sample", []int{3, 4}, false},
	{"K=2 E=(2,3) shared", []int{2, 2, 3}, true},
	{"K=2 E=(2,3) per sample", []int{2, 2, 3}, false},
	{"K=3 E=() shared", []int{3}, true},
	{"K=1 E=(5) shared", []int{1, 5}, true},
}

func (c llCase) sizes() (k, m int) {
	k, m = c.param[0], 1
	for _, d := range c.param[1:] {
		m *= d
	}
	return k, m
}

func (c llCase) obsShape() []int {
	if c.shared {
		return append([]int{}, c.param[1:]...)
	}
	return append([]int{}, c.param...)
}

// obs returns observation e of sample s from the flat data of y.
func (c llCase) obs(y []float64, s, e int) float64 {
	_, m := c.sizes()
	if c.shared {
		return y[e]
	}
	return y[s*m+e]
}

func tensor(shape []int, f func(i int) float64) *ad.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	data := make([]float64, n)
	for i := range data {
		data[i] = f(i)
	}
	return &ad.Tensor{Shape: shape, Data: data}
}

// checkValues evaluates ll on constants and compares each of the K values
// with Σ_e ref(y_e, θ_{k,e}).
func checkValues(t *testing.T, c llCase, y, theta *ad.Tensor, ll func(y, theta *ad.Var) *ad.Var, ref func(y, theta float64) float64, tol float64) {
	t.Helper()
	tp := ad.NewTape()
	out := ll(tp.Const(y), tp.Const(theta))
	require.NoError(t, tp.Err(), c.name)
	k, m := c.sizes()
	require.Equal(t, []int{k}, out.Shape(), c.name)
	for s := range k {
		want := 0.0
		for e := range m {
			want += ref(c.obs(y.Data, s, e), theta.Data[s*m+e])
		}
		assert.InDelta(t, want, out.Value()[s], tol*math.Max(1, math.Abs(want)), "%s sample %d", c.name, s)
	}
}

// gradInParams checks the gradient of ll with respect to the parameters,
// with the observations a constant.
func gradInParams(t *testing.T, c llCase, y, theta *ad.Tensor, ll func(y, theta *ad.Var) *ad.Var) {
	t.Helper()
	f := func(tp *ad.Tape, xs []*ad.Var) *ad.Var { return ll(tp.Const(y), xs[0]) }
	assert.NoError(t, ad.CheckGradient(f, theta), c.name)
}

// gradInObs checks the gradient with respect to the observations.
func gradInObs(t *testing.T, c llCase, y, theta *ad.Tensor, ll func(y, theta *ad.Var) *ad.Var) {
	t.Helper()
	f := func(tp *ad.Tape, xs []*ad.Var) *ad.Var { return ll(xs[0], tp.Const(theta)) }
	assert.NoError(t, ad.CheckGradient(f, y), c.name)
}

func TestNormalLogLik(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	const sigma = 0.7
	ll := func(y, mu *ad.Var) *ad.Var { return NormalLogLik(y, mu, sigma) }
	ref := func(y, mu float64) float64 { return distuv.Normal{Mu: mu, Sigma: sigma}.LogProb(y) }
	for _, c := range llCases {
		y := tensor(c.obsShape(), func(int) float64 { return rng.NormFloat64() })
		mu := tensor(c.param, func(int) float64 { return rng.NormFloat64() })
		checkValues(t, c, y, mu, ll, ref, 1e-12)
		gradInParams(t, c, y, mu, ll)
		gradInObs(t, c, y, mu, ll)
	}
}

func TestNormalLogLikLogSigma(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	const k, n, d = 3, 4, 2
	mu := tensor([]int{k, n, d}, func(int) float64 { return rng.NormFloat64() })
	for _, shared := range []bool{true, false} {
		yShape := []int{n, d}
		if !shared {
			yShape = []int{k, n, d}
		}
		y := tensor(yShape, func(int) float64 { return rng.NormFloat64() })
		obs := func(s, i, j int) float64 {
			if shared {
				return y.Data[i*d+j]
			}
			return y.Data[(s*n+i)*d+j]
		}
		// Each shape of logSigma and the index of σ for (sample s, row i, column j).
		for _, ls := range []struct {
			shape []int
			index func(s, i, j int) int
		}{
			{[]int{}, func(int, int, int) int { return 0 }},
			{[]int{1}, func(int, int, int) int { return 0 }},
			{[]int{k}, func(s, _, _ int) int { return s }},
			{[]int{k, 1, 1}, func(s, _, _ int) int { return s }},
			{[]int{d}, func(_, _, j int) int { return j }},
			{[]int{n, d}, func(_, i, j int) int { return i*d + j }},
			{[]int{k, n, 1}, func(s, i, _ int) int { return s*n + i }},
			{[]int{k, n, d}, func(s, i, j int) int { return (s*n+i)*d + j }},
		} {
			logSigma := tensor(ls.shape, func(int) float64 { return 0.5 * rng.NormFloat64() })
			tp := ad.NewTape()
			out := NormalLogLikLogSigma(tp.Const(y), tp.Const(mu), tp.Const(logSigma))
			require.NoError(t, tp.Err(), "logSigma %v", ls.shape)
			require.Equal(t, []int{k}, out.Shape())
			for s := range k {
				want := 0.0
				for i := range n {
					for j := range d {
						sd := math.Exp(logSigma.Data[ls.index(s, i, j)])
						want += distuv.Normal{Mu: mu.Data[(s*n+i)*d+j], Sigma: sd}.LogProb(obs(s, i, j))
					}
				}
				assert.InDelta(t, want, out.Value()[s], 1e-11, "logSigma %v sample %d", ls.shape, s)
			}
			f := func(tp *ad.Tape, xs []*ad.Var) *ad.Var {
				return NormalLogLikLogSigma(tp.Const(y), xs[0], xs[1])
			}
			assert.NoError(t, ad.CheckGradient(f, mu, logSigma), "logSigma %v", ls.shape)
		}
	}
	// NormalLogLik is the special case of one shared σ.
	tp := ad.NewTape()
	y := tensor([]int{n, d}, func(int) float64 { return rng.NormFloat64() })
	a := NormalLogLik(tp.Const(y), tp.Const(mu), 0.3)
	b := NormalLogLikLogSigma(tp.Const(y), tp.Const(mu), tp.ConstScalar(math.Log(0.3)))
	require.NoError(t, tp.Err())
	assert.InDeltaSlice(t, a.Value(), b.Value(), 1e-11)
}

func TestBernoulliLogitLogLik(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	ll := BernoulliLogitLogLik
	ref := func(y, x float64) float64 { return distuv.Bernoulli{P: 1 / (1 + math.Exp(-x))}.LogProb(y) }
	for _, c := range llCases {
		y := tensor(c.obsShape(), func(int) float64 { return float64(rng.IntN(2)) })
		x := tensor(c.param, func(int) float64 { return 3 * rng.NormFloat64() })
		checkValues(t, c, y, x, ll, ref, 1e-12)
		gradInParams(t, c, y, x, ll)
		// Fractional outcomes: the cross-entropy, differentiable in y.
		yf := tensor(c.obsShape(), func(int) float64 { return rng.Float64() })
		checkValues(t, c, yf, x, ll, func(y, x float64) float64 {
			p := 1 / (1 + math.Exp(-x))
			return y*math.Log(p) + (1-y)*math.Log(1-p)
		}, 1e-12)
		gradInObs(t, c, yf, x, ll)
	}
}

// Confident predictions: the softplus form keeps the result accurate
// relative to its size where log σ(x) and log(1 − σ(x)) underflow or
// overflow.
func TestBernoulliLogitLogLikExtremeLogits(t *testing.T) {
	tp := ad.NewTape()
	y := tp.Const(&ad.Tensor{Shape: []int{4}, Data: []float64{1, 0, 1, 0}})
	x := tp.Const(&ad.Tensor{Shape: []int{4, 4}, Data: []float64{
		40, -40, 800, -800, // right: log p ≈ −e^{−|x|}
		-40, 40, -800, 800, // wrong: log p ≈ −|x|
		0, 0, 0, 0,
		1e-300, -1e-300, 745, -745,
	}})
	out := BernoulliLogitLogLik(y, ad.Reshape(x, 4, 4))
	require.NoError(t, tp.Err())
	v := out.Value()
	assert.InEpsilon(t, -2*math.Exp(-40)-2*math.Exp(-800), v[0], 1e-12) // e^{−800} underflows to 0
	assert.InEpsilon(t, -2*(40+math.Log1p(math.Exp(-40)))-2*800, v[1], 1e-15)
	assert.InEpsilon(t, 4*math.Log(0.5), v[2], 1e-15)
	assert.InEpsilon(t, 2*math.Log(0.5)-2*math.Exp(-745), v[3], 1e-12)
	for _, w := range v {
		assert.False(t, math.IsNaN(w) || math.IsInf(w, 0))
	}
	// The gradient y − σ(x) at extreme logits is finite too.
	f := func(tp *ad.Tape, xs []*ad.Var) *ad.Var {
		return BernoulliLogitLogLik(tp.Const(&ad.Tensor{Shape: []int{2}, Data: []float64{1, 0}}), xs[0])
	}
	assert.NoError(t, ad.CheckGradient(f, &ad.Tensor{Shape: []int{2, 2}, Data: []float64{60, 60, -60, -60}}))
}

func TestPoissonLogLik(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	ll := PoissonLogLik
	ref := func(y, eta float64) float64 { return distuv.Poisson{Lambda: math.Exp(eta)}.LogProb(y) }
	for _, c := range llCases {
		y := tensor(c.obsShape(), func(int) float64 { return float64(rng.IntN(12)) })
		eta := tensor(c.param, func(int) float64 { return 1 + rng.NormFloat64() })
		checkValues(t, c, y, eta, ll, ref, 1e-12)
		gradInParams(t, c, y, eta, ll)
		// Non-integer counts: the continuous extension, with the digamma
		// adjoint of log Γ(y + 1).
		yf := tensor(c.obsShape(), func(int) float64 { return 0.1 + 10*rng.Float64() })
		checkValues(t, c, yf, eta, ll, func(y, eta float64) float64 {
			lg, _ := math.Lgamma(y + 1)
			return y*eta - math.Exp(eta) - lg
		}, 1e-12)
		gradInObs(t, c, yf, eta, ll)
	}
	// Large counts and rates: no overflow in y!.
	tp := ad.NewTape()
	out := PoissonLogLik(tp.Const(ad.Scalar(1000)), tp.Const(&ad.Tensor{Shape: []int{1}, Data: []float64{math.Log(1000)}}))
	require.NoError(t, tp.Err())
	assert.InEpsilon(t, distuv.Poisson{Lambda: 1000}.LogProb(1000), out.Item(), 1e-12)
}

func TestCategoricalLogitLogLik(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for _, c := range []llCase{
		{"K=3 (n=4, C=3) shared", []int{3, 4, 3}, true},
		{"K=3 (n=4, C=3) per sample", []int{3, 4, 3}, false},
		{"K=2 (2, 2, C=5) shared", []int{2, 2, 2, 5}, true},
		{"K=4 (C=3) shared", []int{4, 3}, true},
		{"K=1 (n=3, C=1) shared", []int{1, 3, 1}, true},
	} {
		k := c.param[0]
		nc := c.param[len(c.param)-1]
		rows := 1
		for _, d := range c.param[1 : len(c.param)-1] {
			rows *= d
		}
		nLabels := rows
		if !c.shared {
			nLabels = k * rows
		}
		labels := make([]int, nLabels)
		for i := range labels {
			labels[i] = rng.IntN(nc)
		}
		label := func(s, r int) int {
			if c.shared {
				return labels[r]
			}
			return labels[s*rows+r]
		}
		logits := tensor(c.param, func(int) float64 { return 2 * rng.NormFloat64() })
		// One-hot observations of the same labels.
		oneHot := tensor(c.obsShape(), func(int) float64 { return 0 })
		for r := range len(oneHot.Data) / nc {
			oneHot.Data[r*nc+labels[r]] = 1
		}

		tp := ad.NewTape()
		a := CategoricalLogitLogLik(labels, tp.Const(logits))
		b := CategoricalLogitLogLikOneHot(tp.Const(oneHot), tp.Const(logits))
		require.NoError(t, tp.Err(), c.name)
		require.Equal(t, []int{k}, a.Shape(), c.name)
		require.Equal(t, []int{k}, b.Shape(), c.name)
		for s := range k {
			want := 0.0
			for r := range rows {
				w := make([]float64, nc)
				for j := range w {
					w[j] = math.Exp(logits.Data[(s*rows+r)*nc+j])
				}
				want += distuv.NewCategorical(w, nil).LogProb(float64(label(s, r)))
			}
			assert.InDelta(t, want, a.Value()[s], 1e-12, "%s sample %d", c.name, s)
			assert.InDelta(t, want, b.Value()[s], 1e-12, "%s sample %d (one-hot)", c.name, s)
		}
		f := func(tp *ad.Tape, xs []*ad.Var) *ad.Var { return CategoricalLogitLogLik(labels, xs[0]) }
		assert.NoError(t, ad.CheckGradient(f, logits), c.name)
		g := func(tp *ad.Tape, xs []*ad.Var) *ad.Var { return CategoricalLogitLogLikOneHot(tp.Const(oneHot), xs[0]) }
		assert.NoError(t, ad.CheckGradient(g, logits), c.name)
		// Probability rows: the cross-entropy, differentiable in y too.
		probs := tensor(c.obsShape(), func(int) float64 { return rng.Float64() })
		h := func(tp *ad.Tape, xs []*ad.Var) *ad.Var { return CategoricalLogitLogLikOneHot(xs[0], xs[1]) }
		assert.NoError(t, ad.CheckGradient(h, probs, logits), c.name)
	}
}

// Huge logits and impossible classes: the normalizer is a LogSumExp.
func TestCategoricalLogitLogLikStable(t *testing.T) {
	tp := ad.NewTape()
	logits := tp.Const(&ad.Tensor{Shape: []int{1, 2, 3}, Data: []float64{1000, 999, math.Inf(-1), -1000, -1001, -1002}})
	out := CategoricalLogitLogLik([]int{1, 0}, logits)
	require.NoError(t, tp.Err())
	lse := func(a, b, c float64) float64 {
		m := math.Max(a, math.Max(b, c))
		return m + math.Log(math.Exp(a-m)+math.Exp(b-m)+math.Exp(c-m))
	}
	want := (999 - lse(1000, 999, math.Inf(-1))) + (-1000 - lse(-1000, -1001, -1002))
	assert.InDelta(t, want, out.Item(), 1e-12)
	tp.Reset()
	impossible := CategoricalLogitLogLik([]int{2, 0}, tp.Const(&ad.Tensor{Shape: []int{1, 2, 3}, Data: []float64{0, 0, math.Inf(-1), 0, 0, 0}}))
	require.NoError(t, tp.Err())
	assert.Equal(t, math.Inf(-1), impossible.Item())
}

func TestLogLikErrors(t *testing.T) {
	vec := func(tp *ad.Tape, data ...float64) *ad.Var {
		return tp.Const(&ad.Tensor{Shape: []int{len(data)}, Data: data})
	}
	mat := func(tp *ad.Tape, k, n int) *ad.Var { return tp.Const(ad.Zeros(k, n)) }
	cases := map[string]struct {
		f    func(tp *ad.Tape) *ad.Var
		want string
	}{
		"normal nil":         {func(tp *ad.Tape) *ad.Var { return NormalLogLik(nil, mat(tp, 2, 3), 1) }, "nil input"},
		"normal sigma 0":     {func(tp *ad.Tape) *ad.Var { return NormalLogLik(vec(tp, 0, 0, 0), mat(tp, 2, 3), 0) }, "sigma"},
		"normal sigma NaN":   {func(tp *ad.Tape) *ad.Var { return NormalLogLik(vec(tp, 0, 0, 0), mat(tp, 2, 3), math.NaN()) }, "sigma"},
		"normal sigma Inf":   {func(tp *ad.Tape) *ad.Var { return NormalLogLik(vec(tp, 0, 0, 0), mat(tp, 2, 3), math.Inf(1)) }, "sigma"},
		"normal shape":       {func(tp *ad.Tape) *ad.Var { return NormalLogLik(vec(tp, 0, 0), mat(tp, 2, 3), 1) }, "observations have shape [2]"},
		"normal transposed":  {func(tp *ad.Tape) *ad.Var { return NormalLogLik(mat(tp, 3, 2), mat(tp, 2, 3), 1) }, "want [3] (shared by the K samples) or [2 3]"},
		"normal scalar mean": {func(tp *ad.Tape) *ad.Var { return NormalLogLik(tp.ConstScalar(0), tp.ConstScalar(0), 1) }, "scalar"},
		"normal NaN obs":     {func(tp *ad.Tape) *ad.Var { return NormalLogLik(vec(tp, 0, math.NaN(), 0), mat(tp, 2, 3), 1) }, "observation 1 is NaN"},
		"normal Inf obs":     {func(tp *ad.Tape) *ad.Var { return NormalLogLik(vec(tp, 0, 0, math.Inf(-1)), mat(tp, 2, 3), 1) }, "observation 2 is -Inf"},
		"logsigma shape": {func(tp *ad.Tape) *ad.Var {
			return NormalLogLikLogSigma(vec(tp, 0, 0, 0), mat(tp, 2, 3), vec(tp, 0, 0, 0, 0))
		}, "logSigma has shape [4]"},
		"logsigma too big": {func(tp *ad.Tape) *ad.Var {
			return NormalLogLikLogSigma(vec(tp, 0, 0, 0), mat(tp, 2, 3), tp.Const(ad.Zeros(4, 2, 3)))
		}, "logSigma has shape [4 2 3]"},
		"logsigma nil": {func(tp *ad.Tape) *ad.Var { return NormalLogLikLogSigma(vec(tp, 0, 0, 0), mat(tp, 2, 3), nil) }, "nil input"},
		"bernoulli 2":  {func(tp *ad.Tape) *ad.Var { return BernoulliLogitLogLik(vec(tp, 0, 2, 1), mat(tp, 2, 3)) }, "observation 1 is 2; want an outcome in [0, 1]"},
		"bernoulli -1": {func(tp *ad.Tape) *ad.Var { return BernoulliLogitLogLik(vec(tp, -1, 1, 1), mat(tp, 2, 3)) }, "observation 0 is -1"},
		"bernoulli NaN": {func(tp *ad.Tape) *ad.Var {
			return BernoulliLogitLogLik(vec(tp, 1, 1, math.NaN()), mat(tp, 2, 3))
		}, "observation 2 is NaN"},
		"bernoulli shape":  {func(tp *ad.Tape) *ad.Var { return BernoulliLogitLogLik(mat(tp, 3, 3), mat(tp, 2, 3)) }, "observations have shape [3 3]"},
		"poisson negative": {func(tp *ad.Tape) *ad.Var { return PoissonLogLik(vec(tp, 1, -1, 0), mat(tp, 2, 3)) }, "observation 1 is -1; want a finite count >= 0"},
		"poisson NaN":      {func(tp *ad.Tape) *ad.Var { return PoissonLogLik(vec(tp, 1, math.NaN(), 0), mat(tp, 2, 3)) }, "observation 1 is NaN"},
		"poisson Inf":      {func(tp *ad.Tape) *ad.Var { return PoissonLogLik(vec(tp, 1, 0, math.Inf(1)), mat(tp, 2, 3)) }, "observation 2 is +Inf"},
		"poisson shape":    {func(tp *ad.Tape) *ad.Var { return PoissonLogLik(vec(tp, 1), mat(tp, 2, 3)) }, "observations have shape [1]"},
		"poisson nil rate": {func(tp *ad.Tape) *ad.Var { return PoissonLogLik(vec(tp, 1), nil) }, "nil input"},
		"labels count":     {func(tp *ad.Tape) *ad.Var { return CategoricalLogitLogLik([]int{0, 1}, tp.Const(ad.Zeros(2, 3, 4))) }, "2 labels"},
		"labels range":     {func(tp *ad.Tape) *ad.Var { return CategoricalLogitLogLik([]int{0, 4, 1}, tp.Const(ad.Zeros(2, 3, 4))) }, "label 1 is 4"},
		"labels negative":  {func(tp *ad.Tape) *ad.Var { return CategoricalLogitLogLik([]int{0, -1, 1}, tp.Const(ad.Zeros(2, 3, 4))) }, "label 1 is -1"},
		"labels rank":      {func(tp *ad.Tape) *ad.Var { return CategoricalLogitLogLik([]int{0}, vec(tp, 0, 0)) }, "want (K, ..., C)"},
		"one-hot rank":     {func(tp *ad.Tape) *ad.Var { return CategoricalLogitLogLikOneHot(tp.ConstScalar(1), vec(tp, 0, 0)) }, "want (K, ..., C)"},
		"one-hot negative": {func(tp *ad.Tape) *ad.Var { return CategoricalLogitLogLikOneHot(vec(tp, 1, -0.5, 0), mat(tp, 2, 3)) }, "observation 1 is -0.5"},
		"one-hot shape":    {func(tp *ad.Tape) *ad.Var { return CategoricalLogitLogLikOneHot(vec(tp, 1, 0), mat(tp, 2, 3)) }, "observations have shape [2]"},
	}
	for name, c := range cases {
		tp := ad.NewTape()
		out := c.f(tp)
		err := tp.Err()
		require.Error(t, err, name)
		assert.True(t, strings.HasPrefix(err.Error(), "dist: "), "%s: %v", name, err)
		assert.Contains(t, err.Error(), c.want, name)
		require.NotNil(t, out, name)
		assert.True(t, math.IsNaN(out.Item()), "%s: the dead value", name)
		assert.Error(t, tp.Backward(ad.Sum(out)), name)
	}
	// A tape that already holds an error keeps it.
	tp := ad.NewTape()
	first := NormalLogLik(vec(tp, 1), mat(tp, 2, 3), 1)
	require.Error(t, tp.Err())
	err := tp.Err()
	PoissonLogLik(vec(tp, -1, -1, -1), mat(tp, 2, 3))
	BernoulliLogitLogLik(vec(tp, 2, 2, 2), mat(tp, 2, 3))
	CategoricalLogitLogLik([]int{9}, mat(tp, 2, 3))
	assert.Equal(t, err, tp.Err())
	assert.True(t, math.IsNaN(first.Item()))
	// No tape at all.
	assert.Nil(t, NormalLogLik(nil, nil, 1))
	assert.Nil(t, NormalLogLikLogSigma(nil, nil, nil))
	assert.Nil(t, BernoulliLogitLogLik(nil, nil))
	assert.Nil(t, PoissonLogLik(nil, nil))
	assert.Nil(t, CategoricalLogitLogLik([]int{0}, nil))
	assert.Nil(t, CategoricalLogitLogLikOneHot(nil, nil))
}

// The helpers compose with the broadcasting of package ad as a model's
// LogLik uses them: a relaxed permutation applied to the parameters.
func TestLogLikWithRelaxedPermutation(t *testing.T) {
	const k, n = 2, 3
	rates := &ad.Tensor{Shape: []int{n, 1}, Data: []float64{0.5, 1.5, 2.5}}
	y := &ad.Tensor{Shape: []int{n}, Data: []float64{3, 0, 11}}
	p := &ad.Tensor{Shape: []int{k, n, n}, Data: []float64{
		0, 0, 1, 1, 0, 0, 0, 1, 0, // the permutation (2 0 1)
		0.2, 0.3, 0.5, 0.5, 0.2, 0.3, 0.3, 0.5, 0.2, // doubly stochastic
	}}
	f := func(tp *ad.Tape, xs []*ad.Var) *ad.Var {
		eta := ad.Reshape(ad.MatMul(xs[0], tp.Const(rates)), k, n)
		return PoissonLogLik(tp.Const(y), eta)
	}
	tp := ad.NewTape()
	out := f(tp, []*ad.Var{tp.Const(p)})
	require.NoError(t, tp.Err())
	want := 0.0
	for i, j := range []int{2, 0, 1} {
		want += distuv.Poisson{Lambda: math.Exp(rates.Data[j])}.LogProb(y.Data[i])
	}
	assert.InDelta(t, want, out.Value()[0], 1e-12)
	assert.NoError(t, ad.CheckGradient(f, p))
}
