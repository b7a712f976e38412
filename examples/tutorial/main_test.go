package main

import (
	"bytes"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/perm"
)

// TestLogLik checks the model's likelihood on exact values against a
// direct sum of Gaussian log densities, and its gradients on relaxed values
// (P doubly stochastic, A free) against finite differences.
func TestLogLik(t *testing.T) {
	const n = 5
	m, _ := Simulate(n, trueA, 0.2, 3)
	spec, err := models.Check(m)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(1, 1))
	tape := ad.NewTape()
	for range 10 {
		s, err := models.NewState(spec, rng)
		require.NoError(t, err)
		p, a := s.Perms["P"][0], s.Reals["A"]
		want := 0.0
		for i, j := range p {
			r := m.Ref.Data[2*j : 2*j+2]
			for d := range 2 {
				mean := a[2*d]*r[0] + a[2*d+1]*r[1]
				e := m.Obs.Data[2*i+d] - mean
				want += -e*e/(2*m.S*m.S) - 0.5*math.Log(2*math.Pi*m.S*m.S)
			}
		}
		got, err := models.LogLikState(m, spec, tape, s)
		require.NoError(t, err)
		assert.InDelta(t, want, got, 1e-9)
	}

	const k = 2
	pData := make([]float64, k*n*n)
	for s := range k {
		for range 3 {
			w := rng.Float64() / 3
			for i, j := range perm.Random(n, rng) {
				pData[s*n*n+i*n+j] += w
			}
		}
	}
	aData := make([]float64, k*4)
	for i := range aData {
		aData[i] = rng.NormFloat64()
	}
	f := func(tape *ad.Tape, xs []*ad.Var) *ad.Var {
		z := models.NewSample(tape, spec, k, false)
		z.Set("P", xs[0])
		z.Set("A", xs[1])
		return ad.Sum(m.LogLik(tape, z))
	}
	assert.NoError(t, ad.CheckGradient(f,
		&ad.Tensor{Shape: []int{k, 1, n, n}, Data: pData},
		&ad.Tensor{Shape: []int{k, 2, 2}, Data: aData}))
}

// normalLogProb returns the log density of N(mu, cov) at x, directly from
// the definition.
func normalLogProb(t *testing.T, x, mu []float64, cov *mat.SymDense) float64 {
	var chol mat.Cholesky
	require.True(t, chol.Factorize(cov))
	d := mat.NewVecDense(len(x), nil)
	d.SubVec(mat.NewVecDense(len(x), x), mat.NewVecDense(len(mu), mu))
	var sol mat.VecDense
	require.NoError(t, chol.SolveVecTo(&sol, d))
	return -0.5 * (float64(len(x))*math.Log(2*math.Pi) + chol.LogDet() + mat.Dot(d, &sol))
}

// TestCollapsed checks the closed form of p(Y | σ) against the n-variate
// normal N(y_d; 0, s² I + R_σR_σᵀ) evaluated directly, the conditional of A
// through Bayes' rule, log p(Y | σ) = log p(Y | σ, A) + log p(A) −
// log p(A | Y, σ) at any A, and the draws of A against that conditional.
func TestCollapsed(t *testing.T) {
	const n = 5
	m, _ := Simulate(n, trueA, 0.2, 4)
	c := collapsed{m}
	spec, err := models.Check(m)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(2, 2))
	tape := ad.NewTape()
	for range 5 {
		s, err := models.NewState(spec, rng)
		require.NoError(t, err)
		p := s.Perms["P"][0]

		cov := mat.NewSymDense(n, nil)
		for i := range n {
			for k := range n {
				ri, rk := m.Ref.Data[2*p[i]:2*p[i]+2], m.Ref.Data[2*p[k]:2*p[k]+2]
				v := ri[0]*rk[0] + ri[1]*rk[1]
				if i == k {
					v += m.S * m.S
				}
				cov.SetSym(i, k, v)
			}
		}
		want := 0.0
		for d := range 2 {
			want += normalLogProb(t, mat.Col(nil, d, mat.NewDense(n, 2, m.Obs.Data)), make([]float64, n), cov)
		}
		got, err := c.CollapsedLogLik(s)
		require.NoError(t, err)
		assert.InDelta(t, want, got, 1e-9)

		chol, mu, _, err := c.posteriorA(s)
		require.NoError(t, err)
		var lamInv mat.SymDense
		require.NoError(t, chol.InverseTo(&lamInv))
		ll, err := models.LogLikState(m, spec, tape, s)
		require.NoError(t, err)
		bayes := ll + models.Normal{Mu: 0, Sigma: 1}.LogProb(s.Reals["A"])
		for d := range 2 {
			bayes -= normalLogProb(t, s.Reals["A"][2*d:2*d+2], mu[d].RawVector().Data, &lamInv)
		}
		assert.InDelta(t, got, bayes, 1e-9)

		// 20000 draws: the standard error of each mean is at most
		// sqrt(Λ⁻¹_ee / 20000) < 0.01 · sd, so 5 standard errors is a
		// bound a wrong mean or covariance of 5% of an sd exceeds.
		const draws = 20000
		x := make([][]float64, 4)
		for range draws {
			require.NoError(t, c.SampleCollapsed(rng, s))
			for e, v := range s.Reals["A"] {
				x[e] = append(x[e], v)
			}
		}
		for e := range 4 {
			d, k := e/2, e%2
			sd := math.Sqrt(lamInv.At(k, k))
			assert.InDelta(t, mu[d].AtVec(k), stat.Mean(x[e], nil), 5*sd/math.Sqrt(draws), "coordinate %d", e)
			assert.InDelta(t, sd, stat.StdDev(x[e], nil), 0.03*sd, "coordinate %d", e)
		}
		assert.InDelta(t, lamInv.At(0, 1)/math.Sqrt(lamInv.At(0, 0)*lamInv.At(1, 1)),
			stat.Correlation(x[0], x[1], nil), 0.03, "correlation within a row")
		assert.InDelta(t, 0, stat.Correlation(x[0], x[2], nil), 0.03, "rows are independent")
	}
}

func TestRunErrors(t *testing.T) {
	assert.Error(t, fit(io.Discard, 1, 0.1, 1, 0), "one point")
	assert.Error(t, fit(io.Discard, 6, 0, 1, 0), "no noise")
	assert.Error(t, fit(io.Discard, 6, 0.1, 1, -1), "negative temperatures")
}

// Bad command lines exit with status 2 and a message naming the flag,
// before any work.
func TestBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-n", "1"}, "-n must be >= 2, got 1"},
		{[]string{"-n", "0"}, "-n must be >= 2, got 0"},
		{[]string{"-s", "0"}, "-s must be finite and > 0, got 0"},
		{[]string{"-s", "-0.1"}, "-s must be finite and > 0"},
		{[]string{"-s", "+Inf"}, "-s must be finite and > 0"},
		{[]string{"-temperatures", "-1"}, "-temperatures must be >= 0, got -1"},
		{[]string{"-seed", "-1"}, `invalid value "-1" for flag -seed`},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"-n", "4", "extra"}, `unexpected argument "extra"`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			assert.Equal(t, 2, run(tc.args, &stdout, &stderr))
			assert.Contains(t, stderr.String(), tc.want)
			assert.NotContains(t, stderr.String(), "tutorial: tutorial:")
			assert.Empty(t, stdout.String())
		})
	}
}
