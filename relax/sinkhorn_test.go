package relax

import (
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/internal/longtest"
)

// refLogSinkhorn is the textbook log-domain iteration, written independently
// of the engine: z = x/τ, then iters times z −= lse_rows(z), z −= lse_cols(z).
func refLogSinkhorn(x []float64, n int, tau float64, iters int) []float64 {
	z := make([]float64, n*n)
	for i, v := range x {
		z[i] = v / tau
	}
	lse := func(get func(k int) float64) float64 {
		m := math.Inf(-1)
		for k := 0; k < n; k++ {
			m = math.Max(m, get(k))
		}
		s := 0.0
		for k := 0; k < n; k++ {
			s += math.Exp(get(k) - m)
		}
		return m + math.Log(s)
	}
	for l := 0; l < iters; l++ {
		for i := 0; i < n; i++ {
			c := lse(func(k int) float64 { return z[i*n+k] })
			for k := 0; k < n; k++ {
				z[i*n+k] -= c
			}
		}
		for j := 0; j < n; j++ {
			c := lse(func(k int) float64 { return z[k*n+j] })
			for k := 0; k < n; k++ {
				z[k*n+j] -= c
			}
		}
	}
	return z
}

// refPlainSinkhorn is the definition of the seed paper taken literally:
// S⁰ = exp(X), then alternate row and column normalisation. Only safe for
// small |X|.
func refPlainSinkhorn(x []float64, n int, iters int) []float64 {
	p := make([]float64, n*n)
	for i, v := range x {
		p[i] = math.Exp(v)
	}
	for l := 0; l < iters; l++ {
		for i := 0; i < n; i++ {
			s := 0.0
			for j := 0; j < n; j++ {
				s += p[i*n+j]
			}
			for j := 0; j < n; j++ {
				p[i*n+j] /= s
			}
		}
		for j := 0; j < n; j++ {
			s := 0.0
			for i := 0; i < n; i++ {
				s += p[i*n+j]
			}
			for i := 0; i < n; i++ {
				p[i*n+j] /= s
			}
		}
	}
	return p
}

func randData(rng *rand.Rand, n int, scale float64) []float64 {
	d := make([]float64, n*n)
	for i := range d {
		d[i] = scale * rng.NormFloat64()
	}
	return d
}

func TestSinkhornMatchesDefinition(t *testing.T) {
	// For |X| = O(1) the literal definition is accurate, so the two must
	// agree to rounding: 1e-13 absolute on probabilities in [0, 1].
	rng := rand.New(rand.NewPCG(1, 1))
	for _, n := range []int{1, 2, 3, 7, 16} {
		for _, iters := range []int{1, 2, 10, 50} {
			d := randData(rng, n, 1)
			s, err := Sinkhorn(mat.NewDense(n, n, d), 1, iters)
			require.NoError(t, err)
			want := refPlainSinkhorn(d, n, iters)
			for k, v := range s.RawMatrix().Data {
				require.InDelta(t, want[k], v, 1e-13, "n=%d iters=%d entry %d", n, iters, k)
			}
		}
	}
}

func TestLogSinkhornMatchesLogDomainReference(t *testing.T) {
	// The engine replaces most log-sum-exps by matrix-vector products on a
	// kernel; it must agree with the plain log-domain iteration to rounding.
	// Log values are as large as |X|/τ, and the subtraction of potentials
	// of that size loses about that many ulps, so the tolerance is
	// 1e-12·(1 + max|X/τ|). Small τ forces kernel rebuilds, large |X|/τ the
	// extreme dynamic range.
	rng := rand.New(rand.NewPCG(2, 2))
	for _, tau := range []float64{1e-4, 1e-3, 0.01, 0.1, 0.5, 1, 10, 1e3} {
		for _, scale := range []float64{1, 30, 1e6} {
			for _, n := range []int{1, 2, 5, 12} {
				for _, iters := range []int{1, 3, 25} {
					d := randData(rng, n, scale)
					got, err := LogSinkhorn(mat.NewDense(n, n, append([]float64(nil), d...)), tau, iters)
					require.NoError(t, err)
					want := refLogSinkhorn(d, n, tau, iters)
					big := 0.0
					for _, v := range d {
						big = math.Max(big, math.Abs(v/tau))
					}
					tol := 1e-12 * (1 + big)
					for k, v := range got.RawMatrix().Data {
						require.InDelta(t, want[k], v, tol, "tau=%g scale=%g n=%d iters=%d entry %d", tau, scale, n, iters, k)
					}
					// Sinkhorn is exp of LogSinkhorn to rounding.
					s, err := Sinkhorn(mat.NewDense(n, n, d), tau, iters)
					require.NoError(t, err)
					for k, v := range s.RawMatrix().Data {
						require.InDelta(t, math.Exp(want[k]), v, tol, "exp: tau=%g scale=%g n=%d iters=%d", tau, scale, n, iters)
					}
				}
			}
		}
	}
}

func TestSinkhornSumsConverge(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	n := 20
	d := randData(rng, n, 1)
	x := mat.NewDense(n, n, d)
	prev := math.Inf(1)
	for _, iters := range []int{1, 5, 20, 100, 300} {
		s, err := Sinkhorn(x, 1, iters)
		require.NoError(t, err)
		// After a column normalisation the columns sum to one to rounding
		// (n terms, 1e-14).
		for j := 0; j < n; j++ {
			assert.InDelta(t, 1, mat.Sum(s.ColView(j)), 1e-14)
		}
		// The row error decreases with the iterations down to rounding.
		e := sinkRowSumError(s)
		if prev > 1e-14 {
			assert.Less(t, e, prev, "iters=%d", iters)
		}
		prev = e
	}
	assert.Less(t, prev, 1e-13)
}

// bruteMatching returns argmax_σ Σ_i x[i][σ(i)] by enumerating
// permutations (independently of Matching), and the gap between the best
// and the second-best objective.
func bruteMatching(x []float64, n int) (best []int, gap float64) {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	best = append([]int(nil), p...)
	first, second := math.Inf(-1), math.Inf(-1)
	var rec func(k int)
	rec = func(k int) {
		if k == n {
			v := 0.0
			for i, j := range p {
				v += x[i*n+j]
			}
			switch {
			case v > first:
				second, first = first, v
				copy(best, p)
			case v > second:
				second = v
			}
			return
		}
		for i := k; i < n; i++ {
			p[k], p[i] = p[i], p[k]
			rec(k + 1)
			p[k], p[i] = p[i], p[k]
		}
	}
	rec(0)
	return best, first - second
}

func TestTheorem1Limit(t *testing.T) {
	// S(X/τ) → M(X) as τ → 0 (Theorem 1), checked against M(X) found by
	// enumeration. X is uniform on [0, 1], redrawn until the best matching
	// beats the second best by 0.05, so the entropic limit is within
	// ~n!·exp(−0.05/τ) of M(X) (negligible at τ = 1e-3). At small τ the
	// truncated iteration approaches its limit only like O(1/L) (about
	// 0.5/L here), so L = 20000 gives an error of a few 1e-5; we require
	// 1e-3, and that the error shrinks along τ.
	rng := rand.New(rand.NewPCG(4, 4))
	iters := 20000
	if !longtest.Enabled {
		iters = 5000
	}
	for _, n := range []int{2, 3, 4, 5, 6} {
		for rep := 0; rep < 2; rep++ {
			d := make([]float64, n*n)
			var best []int
			for gap := 0.0; n > 1 && gap < 0.05; {
				for i := range d {
					d[i] = rng.Float64()
				}
				best, gap = bruteMatching(d, n)
			}
			prev := math.Inf(1)
			for _, tau := range []float64{1, 0.1, 0.01, 1e-3} {
				s, err := Sinkhorn(mat.NewDense(n, n, d), tau, iters)
				require.NoError(t, err, "n=%d tau=%g", n, tau)
				e := 0.0
				for i := 0; i < n; i++ {
					for j := 0; j < n; j++ {
						want := 0.0
						if best[i] == j {
							want = 1
						}
						e = math.Max(e, math.Abs(s.At(i, j)-want))
					}
				}
				assert.Less(t, e, prev, "n=%d tau=%g", n, tau)
				prev = e
			}
			assert.Less(t, prev, 1e-3, "n=%d", n)
		}
	}
}

func TestTheorem1EntropyProblem(t *testing.T) {
	// S(X/τ) maximises F(P) = <P, X> + τ h(P) over the Birkhoff polytope:
	// moving from the converged S towards any doubly stochastic Q
	// (here random permutation matrices and their mixtures) must lower F.
	rng := rand.New(rand.NewPCG(5, 5))
	n := 5
	for _, tau := range []float64{0.1, 0.5, 2} {
		d := randData(rng, n, 1)
		s, _, err := SinkhornTol(mat.NewDense(n, n, d), tau, 1e-14, 100000)
		require.NoError(t, err)
		F := func(p []float64) float64 {
			v := 0.0
			for k, pk := range p {
				v += pk * d[k]
				if pk > 0 {
					v -= tau * pk * math.Log(pk)
				}
			}
			return v
		}
		sv := s.RawMatrix().Data
		fs := F(sv)
		for rep := 0; rep < 20; rep++ {
			q := make([]float64, n*n)
			for m := 0; m < 3; m++ {
				perm := rng.Perm(n)
				for i, j := range perm {
					q[i*n+j] += 1.0 / 3
				}
			}
			for _, step := range []float64{1e-3, 0.05, 0.5} {
				p := make([]float64, n*n)
				for k := range p {
					p[k] = (1-step)*sv[k] + step*q[k]
				}
				assert.Less(t, F(p), fs, "tau=%g step=%g", tau, step)
			}
		}
	}
}

func TestSinkhornExtremeInputsStayFinite(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	for _, tau := range []float64{1e-4, 1e-2, 1, 1e3} {
		for _, scale := range []float64{1e-3, 1, 1e3, 1e6} {
			for _, iters := range []int{1, 20} {
				n := 9
				d := randData(rng, n, scale)
				d[0] = 1e6
				d[n+1] = -1e6
				x := mat.NewDense(n, n, d)
				big := 1e6 / tau
				s, err := Sinkhorn(x, tau, iters)
				require.NoError(t, err)
				ls, err := LogSinkhorn(x, tau, iters)
				require.NoError(t, err)
				for k, v := range s.RawMatrix().Data {
					require.False(t, math.IsNaN(v) || math.IsInf(v, 0), "tau=%g scale=%g", tau, scale)
					require.True(t, v >= 0 && v <= 1+1e-12, "entry %d = %g", k, v)
					lv := ls.RawMatrix().Data[k]
					require.False(t, math.IsNaN(lv) || math.IsInf(lv, 0), "log: tau=%g scale=%g", tau, scale)
					// log P ≤ 0 up to the rounding of potentials as large
					// as |X|/τ (1e10 here): 1e-15 relative.
					require.LessOrEqual(t, lv, 1e-15*(1+big))
				}
				for j := 0; j < n; j++ {
					require.InDelta(t, 1, mat.Sum(s.ColView(j)), 1e-12, "tau=%g scale=%g", tau, scale)
				}
			}
		}
	}
}

func TestSinkhornForbiddenEntries(t *testing.T) {
	inf := math.Inf(-1)
	rng := rand.New(rand.NewPCG(7, 7))
	n := 4
	d := randData(rng, n, 1)
	// Only the cyclic shift and the identity on the block remain allowed
	// in the first row and column.
	d[1], d[2], d[n+0], d[2*n+0] = inf, inf, inf, inf
	for _, tau := range []float64{0.01, 1} {
		s, err := Sinkhorn(mat.NewDense(n, n, d), tau, 30)
		require.NoError(t, err)
		ls, err := LogSinkhorn(mat.NewDense(n, n, d), tau, 30)
		require.NoError(t, err)
		want := refLogSinkhorn(d, n, tau, 30)
		for k, v := range d {
			if math.IsInf(v, -1) {
				assert.Equal(t, 0.0, s.RawMatrix().Data[k])
				assert.True(t, math.IsInf(ls.RawMatrix().Data[k], -1))
				continue
			}
			assert.InDelta(t, want[k], ls.RawMatrix().Data[k], 1e-10)
		}
	}
}

func TestSinkhornErrors(t *testing.T) {
	inf := math.Inf(1)
	good := mat.NewDense(2, 2, []float64{1, 2, 3, 4})
	cases := []struct {
		name  string
		x     mat.Matrix
		tau   float64
		iters int
		msg   string
	}{
		{"tau zero", good, 0, 5, "tau must be > 0"},
		{"tau negative", good, -1, 5, "got -1"},
		{"tau NaN", good, math.NaN(), 5, "tau"},
		{"tau Inf", good, inf, 5, "tau"},
		{"iters zero", good, 1, 0, "iters must be >= 1"},
		{"nil", nil, 1, 5, "nil matrix"},
		{"typed nil", (*mat.Dense)(nil), 1, 5, "nil matrix"},
		{"empty", &mat.Dense{}, 1, 5, "empty matrix"},
		{"not square", mat.NewDense(2, 3, nil), 1, 5, "square"},
		{"NaN entry", mat.NewDense(2, 2, []float64{1, math.NaN(), 3, 4}), 1, 5, "(0,1) is NaN"},
		{"+Inf entry", mat.NewDense(2, 2, []float64{1, 2, inf, 4}), 1, 5, "(1,0) is +Inf"},
		{"forbidden row", mat.NewDense(2, 2, []float64{1, 2, -inf, -inf}), 1, 5, "row 1 has no finite entry"},
		{"forbidden column", mat.NewDense(2, 2, []float64{-inf, 2, -inf, 4}), 1, 5, "column 0 has no finite entry"},
		{"overflow", mat.NewDense(2, 2, []float64{1e300, 2, 3, 4}), 1e-10, 5, "overflows"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Sinkhorn(c.x, c.tau, c.iters)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "relax: Sinkhorn: ")
			assert.Contains(t, err.Error(), c.msg)
			_, err = LogSinkhorn(c.x, c.tau, c.iters)
			assert.ErrorContains(t, err, "relax: LogSinkhorn: ")
			_, err = SinkhornBatch([]mat.Matrix{good, c.x}, c.tau, c.iters)
			assert.ErrorContains(t, err, "relax: SinkhornBatch: ")
			_, _, err = SinkhornTol(c.x, c.tau, 1e-6, max(c.iters, 0))
			assert.ErrorContains(t, err, "relax: SinkhornTol: ")
		})
	}
	_, err := SinkhornBatch([]mat.Matrix{good, mat.NewDense(1, 2, nil)}, 1, 3)
	assert.ErrorContains(t, err, "matrix 1")
	_, _, err = SinkhornTol(good, 1, 0, 5)
	assert.ErrorContains(t, err, "tol must be > 0")
	_, _, err = SinkhornTol(good, 1, math.NaN(), 5)
	assert.ErrorContains(t, err, "tol must be > 0")
}

func TestSinkhornBatchMatchesSingle(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	var xs []mat.Matrix
	for _, n := range []int{3, 8, 1, 30, 8, 5, 17} {
		xs = append(xs, mat.NewDense(n, n, randData(rng, n, 2)))
	}
	for _, procs := range []int{1, 2, 4} {
		old := runtime.GOMAXPROCS(procs)
		got, err := SinkhornBatch(xs, 0.3, 15)
		runtime.GOMAXPROCS(old)
		require.NoError(t, err)
		require.Len(t, got, len(xs))
		for k, x := range xs {
			want, err := Sinkhorn(x, 0.3, 15)
			require.NoError(t, err)
			assert.Equal(t, want.RawMatrix().Data, got[k].RawMatrix().Data, "procs=%d matrix %d", procs, k)
		}
	}
	got, err := SinkhornBatch(nil, 1, 1)
	require.NoError(t, err)
	assert.Empty(t, got)
}

func TestSinkhornTol(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	n := 10
	x := mat.NewDense(n, n, randData(rng, n, 1))
	s, used, err := SinkhornTol(x, 0.5, 1e-9, 10000)
	require.NoError(t, err)
	require.Greater(t, used, 1)
	assert.LessOrEqual(t, sinkRowSumError(s), 1e-9)
	// It stops at the first iteration meeting the rule and returns exactly
	// what Sinkhorn computes with that many iterations.
	want, err := Sinkhorn(x, 0.5, used)
	require.NoError(t, err)
	assert.Equal(t, want.RawMatrix().Data, s.RawMatrix().Data)
	prev, err := Sinkhorn(x, 0.5, used-1)
	require.NoError(t, err)
	assert.Greater(t, sinkRowSumError(prev), 1e-9)

	s, used, tolErr := SinkhornTol(x, 0.5, 1e-15, 2)
	require.ErrorIs(t, tolErr, ErrNotConverged)
	assert.True(t, strings.Contains(tolErr.Error(), "after 2 iterations"), tolErr.Error())
	assert.Equal(t, 2, used)
	want, err = Sinkhorn(x, 0.5, 2)
	require.NoError(t, err)
	assert.Equal(t, want.RawMatrix().Data, s.RawMatrix().Data)
}

func TestSinkhornAcceptsAnyMatrix(t *testing.T) {
	// A transposed view is not a RawMatrixer; a sub-matrix view has a
	// stride larger than its width. Both must read the right entries.
	rng := rand.New(rand.NewPCG(10, 10))
	big := mat.NewDense(6, 6, randData(rng, 6, 1))
	sub := big.Slice(1, 5, 2, 6)
	dense := mat.DenseCopyOf(sub)
	want, err := Sinkhorn(dense, 0.7, 9)
	require.NoError(t, err)
	got, err := Sinkhorn(sub, 0.7, 9)
	require.NoError(t, err)
	assert.Equal(t, want.RawMatrix().Data, got.RawMatrix().Data)
	var tr mat.Dense
	tr.CloneFrom(dense.T())
	want, err = Sinkhorn(&tr, 0.7, 9)
	require.NoError(t, err)
	got, err = Sinkhorn(dense.T(), 0.7, 9)
	require.NoError(t, err)
	assert.Equal(t, want.RawMatrix().Data, got.RawMatrix().Data)
}
