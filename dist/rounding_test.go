package dist

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/perm"
	"github.com/permlab/permlab/relax"
)

// rndParams returns Mu ~ U(0, 1) and Sigma ~ U(0.2, 0.7), both n×n.
func rndParams(rng *rand.Rand, n int) (mu, sigma *mat.Dense) {
	mu, sigma = mat.NewDense(n, n, nil), mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			mu.Set(i, j, rng.Float64())
			sigma.Set(i, j, 0.2+0.5*rng.Float64())
		}
	}
	return mu, sigma
}

// Rand is τΨ + (1−τ)round(Ψ) for Ψ = μ + σε with ε drawn in row-major
// order, and LogProb equals log N(Ψ) − N² log τ at that Ψ.
func TestRoundingRandLogProb(t *testing.T) {
	rng := rand.New(rand.NewPCG(30, 1))
	for _, n := range []int{1, 2, 3, 6} {
		for _, tau := range []float64{0.05, 0.5, 1} {
			mu, sigma := rndParams(rng, n)
			var mask *perm.Mask
			if n > 2 {
				mask, _ = perm.FullMask(n)
				_ = mask.Set(0, 0, false)
			}
			d := Rounding{Mu: mu, Sigma: sigma, Tau: tau, Allowed: mask}
			require.NoError(t, d.Validate())
			for k := 0; k < 5; k++ {
				seed := uint64(200 + k)
				pt, err := d.Rand(nil, rand.New(rand.NewPCG(seed, 0)))
				require.NoError(t, err)

				src := rand.New(rand.NewPCG(seed, 0))
				psi := mat.NewDense(n, n, nil)
				for i := 0; i < n; i++ {
					for j := 0; j < n; j++ {
						psi.Set(i, j, mu.At(i, j)+sigma.At(i, j)*src.NormFloat64())
					}
				}
				p, err := relax.RoundMasked(psi, mask)
				require.NoError(t, err)
				for i := 0; i < n; i++ {
					for j := 0; j < n; j++ {
						want := tau * psi.At(i, j)
						if p[i] == j {
							want += 1 - tau
						}
						require.InDelta(t, want, pt.At(i, j), 1e-15)
					}
				}
				lp, err := d.LogProb(pt)
				require.NoError(t, err)
				// Ψ is recovered to about ε/τ per entry; the quadratic
				// form turns that into ~1e-13 here.
				want := sbdGaussLogPdf(psi, mu, sigma) - float64(n*n)*math.Log(tau)
				assert.InDelta(t, want, lp, 1e-10, "n=%d tau=%g draw %d", n, tau, k)
			}
		}
	}
}

// q integrates to one over R^(N×N), for N = 2 and 3. Importance sampling
// from g = the mixture over permutations P of N(τM + (1−τ)P, (cτV)²),
// c > 1, which covers q (on the image of P's cell, q is N(τM + (1−τ)P,
// τ²V²)) so that the weights q/g stay bounded. If the density missed the
// τ^(−N²) factor, or were not zero off the image, the integral would be
// far from one.
func TestRoundingNormalized(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 1))
	const K = 100000
	for _, c := range []struct {
		n   int
		tau float64
	}{{2, 0.5}, {2, 0.1}, {2, 1}, {3, 0.3}} {
		t.Run(fmt.Sprintf("n=%d/tau=%g", c.n, c.tau), func(t *testing.T) {
			n, tau := c.n, c.tau
			mu, sigma := rndParams(rng, n)
			d := Rounding{Mu: mu, Sigma: sigma, Tau: tau}
			var perms []perm.Perm
			rndEachPerm(n, func(p perm.Perm) { perms = append(perms, p.Clone()) })
			const scale = 1.3
			logG := func(x *mat.Dense) float64 {
				terms := make([]float64, len(perms))
				for k, p := range perms {
					var lp float64
					for i := 0; i < n; i++ {
						for j := 0; j < n; j++ {
							m := tau * mu.At(i, j)
							if p[i] == j {
								m += 1 - tau
							}
							s := scale * tau * sigma.At(i, j)
							z := (x.At(i, j) - m) / s
							lp += -0.5*z*z - math.Log(s) - 0.5*math.Log(2*math.Pi)
						}
					}
					terms[k] = lp - math.Log(float64(len(perms)))
				}
				return rndLogSumExp(terms)
			}
			var s, s2 float64
			x := mat.NewDense(n, n, nil)
			for k := 0; k < K; k++ {
				p := perms[rng.IntN(len(perms))]
				for i := 0; i < n; i++ {
					for j := 0; j < n; j++ {
						m := tau * mu.At(i, j)
						if p[i] == j {
							m += 1 - tau
						}
						x.Set(i, j, m+scale*tau*sigma.At(i, j)*rng.NormFloat64())
					}
				}
				lq, err := d.LogProb(x)
				require.NoError(t, err)
				w := math.Exp(lq - logG(x))
				s += w
				s2 += w * w
			}
			mean := s / float64(K)
			se := math.Sqrt((s2/float64(K) - mean*mean) / float64(K))
			t.Logf("∫q = %.4f ± %.4f", mean, se)
			require.Less(t, se, 0.02, "Monte Carlo too noisy to test anything")
			// Five standard errors: fixed seed, false alarm ~1e-6.
			assert.InDelta(t, 1, mean, 5*se)
		})
	}
}

// rndEachPerm calls f with every permutation of size n.
func rndEachPerm(n int, f func(p perm.Perm)) {
	p := perm.Identity(n)
	var rec func(k int)
	rec = func(k int) {
		if k == n {
			f(p)
			return
		}
		for i := k; i < n; i++ {
			p[k], p[i] = p[i], p[k]
			rec(k + 1)
			p[k], p[i] = p[i], p[k]
		}
	}
	rec(0)
}

func rndLogSumExp(x []float64) float64 {
	m := math.Inf(-1)
	for _, v := range x {
		m = max(m, v)
	}
	var s float64
	for _, v := range x {
		s += math.Exp(v - m)
	}
	return m + math.Log(s)
}

// E[P̃] for N = 2 in closed form: round(Ψ) is the identity exactly when
// ψ00 + ψ11 − ψ01 − ψ10 > 0, a Gaussian event.
func TestRoundingMeanN2(t *testing.T) {
	mu := mat.NewDense(2, 2, []float64{0.6, 0.4, 0.45, 0.5})
	sigma := mat.NewDense(2, 2, []float64{0.3, 0.5, 0.4, 0.2})
	const tau = 0.3
	d := Rounding{Mu: mu, Sigma: sigma, Tau: tau}
	dm := mu.At(0, 0) + mu.At(1, 1) - mu.At(0, 1) - mu.At(1, 0)
	var v float64
	for _, s := range sigma.RawMatrix().Data {
		v += s * s
	}
	pid := 0.5 * math.Erfc(-dm/math.Sqrt(2*v))
	rng := rand.New(rand.NewPCG(32, 1))
	const K = 40000
	var sum, sum2 [4]float64
	x := mat.NewDense(2, 2, nil)
	for k := 0; k < K; k++ {
		_, err := d.Rand(x, rng)
		require.NoError(t, err)
		for i, e := range x.RawMatrix().Data {
			sum[i] += e
			sum2[i] += e * e
		}
	}
	for i := range sum {
		diag := i == 0 || i == 3
		pi := pid
		if !diag {
			pi = 1 - pid
		}
		want := tau*mu.RawMatrix().Data[i] + (1-tau)*pi
		mean := sum[i] / K
		se := math.Sqrt((sum2[i]/K - mean*mean) / K)
		// Five standard errors (fixed seed).
		assert.InDelta(t, want, mean, 5*se, "entry %d", i)
	}
}

func TestRoundingVar(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 1))
	tape := ad.NewTape()
	for _, n := range []int{1, 2, 4} {
		mu, sigma := rndParams(rng, n)
		ls := mat.NewDense(n, n, nil)
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				ls.Set(i, j, math.Log(sigma.At(i, j)))
			}
		}
		muT := &ad.Tensor{Shape: []int{n, n}, Data: mu.RawMatrix().Data}
		lsT := &ad.Tensor{Shape: []int{n, n}, Data: ls.RawMatrix().Data}
		const tau = 0.25
		mask, _ := perm.FullMask(n)
		if n > 1 {
			_ = mask.Set(n-1, 0, false)
		}
		fd := Rounding{Mu: mu, Sigma: sigma, Tau: tau, Allowed: mask}

		tape.Reset()
		dv := RoundingVar{Mu: tape.Const(muT), LogSigma: tape.Const(lsT), Tau: tau, Allowed: mask}
		pt, logq := dv.Rsample(rand.New(rand.NewPCG(9, 9)))
		require.NoError(t, tape.Err())
		want, err := fd.Rand(nil, rand.New(rand.NewPCG(9, 9)))
		require.NoError(t, err)
		require.InDeltaSlice(t, want.RawMatrix().Data, pt.Value(), 1e-15)
		lp, err := fd.LogProb(want)
		require.NoError(t, err)
		require.InDelta(t, lp, logq.Item(), 1e-10)
		require.InDelta(t, lp, dv.LogProb(want).Item(), 1e-12)
		require.NoError(t, tape.Err())

		eps := &ad.Tensor{Shape: []int{n, n}, Data: sbdNoise(rng, n*n)}
		name := fmt.Sprintf("n=%d", n)
		require.NoError(t, ad.CheckGradient(func(tp *ad.Tape, vs []*ad.Var) *ad.Var {
			pt, _ := RoundingVar{Mu: vs[0], LogSigma: vs[1], Tau: tau, Allowed: mask}.RsampleNoise(eps)
			return pt
		}, muT, lsT), name)
		require.NoError(t, ad.CheckGradient(func(tp *ad.Tape, vs []*ad.Var) *ad.Var {
			_, logq := RoundingVar{Mu: vs[0], LogSigma: vs[1], Tau: tau, Allowed: mask}.RsampleNoise(eps)
			return logq
		}, muT, lsT), name)
		require.NoError(t, ad.CheckGradient(func(tp *ad.Tape, vs []*ad.Var) *ad.Var {
			return RoundingVar{Mu: vs[0], LogSigma: vs[1], Tau: tau, Allowed: mask}.LogProb(want)
		}, muT, lsT), name)
	}
}

func TestRoundingErrors(t *testing.T) {
	ok := mat.NewDense(2, 2, []float64{0.5, 0.5, 0.5, 0.5})
	one := mat.NewDense(2, 2, []float64{1, 1, 1, 1})
	mask3, _ := perm.FullMask(3)
	empty, _ := perm.NewMask(2)
	for _, c := range []struct {
		name string
		d    Rounding
	}{
		{"nil", Rounding{Tau: 0.5}},
		{"non-square", Rounding{Mu: mat.NewDense(2, 3, nil), Sigma: mat.NewDense(2, 3, nil), Tau: 0.5}},
		{"size", Rounding{Mu: ok, Sigma: mat.NewDense(3, 3, nil), Tau: 0.5}},
		{"sigma 0", Rounding{Mu: ok, Sigma: mat.NewDense(2, 2, []float64{1, 0, 1, 1}), Tau: 0.5}},
		{"sigma NaN", Rounding{Mu: ok, Sigma: mat.NewDense(2, 2, []float64{1, math.NaN(), 1, 1}), Tau: 0.5}},
		{"mu Inf", Rounding{Mu: mat.NewDense(2, 2, []float64{math.Inf(1), 0, 0, 0}), Sigma: one, Tau: 0.5}},
		{"tau 0", Rounding{Mu: ok, Sigma: one, Tau: 0}},
		{"tau > 1", Rounding{Mu: ok, Sigma: one, Tau: 1.01}},
		{"tau NaN", Rounding{Mu: ok, Sigma: one, Tau: math.NaN()}},
		{"mask size", Rounding{Mu: ok, Sigma: one, Tau: 0.5, Allowed: mask3}},
	} {
		require.Error(t, c.d.Validate(), c.name)
		_, err := c.d.Rand(nil, nil)
		require.Error(t, err, c.name)
		_, err = c.d.LogProb(ok)
		require.Error(t, err, c.name)
	}
	d := Rounding{Mu: ok, Sigma: one, Tau: 0.5}
	_, err := d.Rand(mat.NewDense(3, 3, nil), nil)
	assert.Error(t, err, "dst size")
	_, err = d.LogProb(mat.NewDense(3, 3, nil))
	assert.Error(t, err, "x size")
	_, err = d.LogProb(mat.NewDense(2, 2, []float64{0, math.NaN(), 0, 0}))
	assert.Error(t, err, "x NaN")
	_, err = Rounding{Mu: ok, Sigma: one, Tau: 0.5, Allowed: empty}.Rand(nil, nil)
	assert.ErrorIs(t, err, relax.ErrInfeasible)
	// Off the image (τ = 0.5 keeps P̃ within the half of each cell nearest
	// its vertex; the cell boundary point (½)·1 is outside): zero density.
	lp, err := d.LogProb(ok)
	require.NoError(t, err)
	assert.Equal(t, math.Inf(-1), lp)

	tape := ad.NewTape()
	m2 := &ad.Tensor{Shape: []int{2, 2}, Data: make([]float64, 4)}
	for _, c := range []struct {
		name   string
		mu, ls *ad.Tensor
		tau    float64
		mask   *perm.Mask
	}{
		{"rank", &ad.Tensor{Shape: []int{4}, Data: make([]float64, 4)}, ad.Scalar(0), 0.5, nil},
		{"logsigma shape", m2, &ad.Tensor{Shape: []int{1, 2}, Data: make([]float64, 2)}, 0.5, nil},
		{"NaN", m2, ad.Scalar(math.NaN()), 0.5, nil},
		{"tau", m2, ad.Scalar(0), 0, nil},
		{"mask size", m2, ad.Scalar(0), 0.5, mask3},
		{"infeasible", m2, ad.Scalar(0), 0.5, empty},
	} {
		tape.Reset()
		dv := RoundingVar{Mu: tape.Variable(c.mu), LogSigma: tape.Variable(c.ls), Tau: c.tau, Allowed: c.mask}
		pt, logq := dv.Rsample(nil)
		require.Error(t, tape.Err(), c.name)
		require.NotNil(t, pt)
		require.Error(t, tape.Backward(ad.Add(ad.Sum(pt), logq)), c.name)
	}
	tape.Reset()
	dv := RoundingVar{Mu: tape.Variable(m2), LogSigma: tape.Variable(ad.Scalar(0)), Tau: 0.5}
	dv.LogProb(mat.NewDense(3, 3, nil))
	require.Error(t, tape.Err(), "x size")
	tape.Reset()
	dv = RoundingVar{Mu: tape.Variable(m2), LogSigma: tape.Variable(ad.Scalar(0)), Tau: 0.5}
	dv.RsampleNoise(nil)
	require.Error(t, tape.Err(), "nil noise")
	tape.Reset()
	dv = RoundingVar{Mu: tape.Variable(m2), LogSigma: tape.Variable(ad.Scalar(0)), Tau: 0.5}
	require.Equal(t, math.Inf(-1), dv.LogProb(ok).Item())
	require.NoError(t, tape.Err())
}
