package dist

import (
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

func randMatrix(rng *rand.Rand, n int) *mat.Dense {
	x := mat.NewDense(n, n, nil)
	for i := range n {
		for j := range n {
			x.Set(i, j, rng.NormFloat64())
		}
	}
	return x
}

// maxDiffToPerm returns max_ij |s_ij - P_ij| for the permutation matrix P
// of p.
func maxDiffToPerm(s mat.Matrix, p perm.Perm) float64 {
	n, _ := s.Dims()
	var d float64
	for i := range n {
		for j := range n {
			want := 0.0
			if p[i] == j {
				want = 1
			}
			d = math.Max(d, math.Abs(s.At(i, j)-want))
		}
	}
	return d
}

// One float64 sample: Z is exactly (X + ε)/τ for the ε the same seed gives,
// Hard is the GumbelMatching sample of that seed, and Soft is doubly
// stochastic (columns to rounding, rows to the truncation error of L = 100
// iterations on a 5×5 problem at τ = 1, which is far below 1e-9).
func TestGumbelSinkhornRand(t *testing.T) {
	const n, tau = 5, 1.0
	x := randMatrix(rand.New(rand.NewPCG(1, 1)), n)
	g := GumbelSinkhorn{X: x, Tau: tau, Iters: 100}
	s, err := g.Rand(rand.New(rand.NewPCG(2, 2)))
	require.NoError(t, err)
	eps := FillGumbel(make([]float64, n*n), rand.New(rand.NewPCG(2, 2)))
	for i := range n {
		var row, col float64
		for j := range n {
			assert.InDelta(t, (x.At(i, j)+eps[i*n+j])/tau, s.Z.At(i, j), 1e-15)
			row += s.Soft.At(i, j)
			col += s.Soft.At(j, i)
		}
		assert.InDelta(t, 1, row, 1e-9, "row %d", i)
		assert.InDelta(t, 1, col, 1e-12, "column %d", i)
	}
	hard, err := GumbelMatching{X: x}.Rand(rand.New(rand.NewPCG(2, 2)))
	require.NoError(t, err)
	assert.Equal(t, hard, s.Hard)
}

// As τ → 0 the sample tends to the permutation matrix of M(X + ε) (the
// seed's Theorem 1; L = 5000 because Sinkhorn converges slowly at small τ).
// The distance must shrink with τ and be below 1e-3 at τ = 0.01 (observed
// 0.64, 0.45, 0.24, 0.022, 3.7e-4 for τ = 1 … 0.01).
func TestGumbelSinkhornLowTemperature(t *testing.T) {
	const n = 5
	x := randMatrix(rand.New(rand.NewPCG(4, 4)), n)
	prev := math.Inf(1)
	for _, tau := range []float64{1, 0.3, 0.1, 0.03, 0.01} {
		s, err := GumbelSinkhorn{X: x, Tau: tau, Iters: 5000}.Rand(rand.New(rand.NewPCG(5, 5)))
		require.NoError(t, err)
		d := maxDiffToPerm(s.Soft, s.Hard)
		t.Logf("tau %v: max |S - M| = %.3g", tau, d)
		assert.Less(t, d, prev, "tau %v", tau)
		prev = d
	}
	assert.Less(t, prev, 1e-3)
}

func TestGumbelSinkhornErrors(t *testing.T) {
	x := mat.NewDense(3, 3, nil)
	bad := []GumbelSinkhorn{
		{X: x, Tau: 0, Iters: 5},
		{X: x, Tau: math.NaN(), Iters: 5},
		{X: x, Tau: 1, Iters: 0},
		{X: nil, Tau: 1, Iters: 5},
		{X: mat.NewDense(2, 3, nil), Tau: 1, Iters: 5},
		{X: mat.NewDense(2, 2, []float64{0, math.NaN(), 0, 0}), Tau: 1, Iters: 5},
		{X: &mat.Dense{}, Tau: 1, Iters: 5},
	}
	for _, g := range bad {
		_, err := g.Rand(nil)
		assert.Error(t, err, "%+v", g)
	}
}

func TestGumbelSinkhornVar(t *testing.T) {
	const n, tau, iters = 4, 0.5, 30
	x := randMatrix(rand.New(rand.NewPCG(6, 6)), n)
	xt := &ad.Tensor{Shape: []int{n, n}, Data: x.RawMatrix().Data}

	t.Run("MatchesFloat", func(t *testing.T) {
		tp := ad.NewTape()
		s := GumbelSinkhornVar{X: tp.Const(xt), Tau: tau, Iters: iters}.Rsample(rand.New(rand.NewPCG(7, 7)), 3)
		require.NoError(t, tp.Err())
		require.Equal(t, []int{3, n, n}, s.Soft.Shape())
		require.Equal(t, []int{3, n, n}, s.Z.Shape())
		hard, err := s.Hard()
		require.NoError(t, err)
		require.Len(t, hard, 3)
		rng := rand.New(rand.NewPCG(7, 7)) // the same draws, sample after sample
		g := GumbelSinkhorn{X: x, Tau: tau, Iters: iters}
		for k := range 3 {
			want, err := g.Rand(rng)
			require.NoError(t, err)
			off := k * n * n
			assert.InDeltaSlice(t, want.Soft.RawMatrix().Data, s.Soft.Value()[off:off+n*n], 1e-12, "sample %d", k)
			assert.InDeltaSlice(t, want.Z.RawMatrix().Data, s.Z.Value()[off:off+n*n], 1e-15, "sample %d", k)
			assert.Equal(t, want.Hard, hard[k])
			// Columns are normalised last, so they sum to one to rounding;
			// rows carry the truncation error of L = 30 iterations at
			// τ = 0.5 (about 1e-3 here), tested at convergence below.
			for j := range n {
				var col float64
				for i := range n {
					col += s.Soft.Value()[off+i*n+j]
				}
				assert.InDelta(t, 1, col, 1e-12)
			}
		}
	})
	t.Run("DoublyStochastic", func(t *testing.T) {
		// τ = 1 and L = 200: the row sums converge (geometrically) to
		// far below 1e-9.
		tp := ad.NewTape()
		s := GumbelSinkhornVar{X: tp.Const(xt), Tau: 1, Iters: 200}.Rsample(rand.New(rand.NewPCG(7, 7)), 4)
		require.NoError(t, tp.Err())
		v := s.Soft.Value()
		for k := range 4 {
			for i := range n {
				var row, col float64
				for j := range n {
					row += v[k*n*n+i*n+j]
					col += v[k*n*n+j*n+i]
				}
				assert.InDelta(t, 1, row, 1e-9)
				assert.InDelta(t, 1, col, 1e-12)
			}
		}
	})
	t.Run("Batch", func(t *testing.T) {
		// X of shape (B, N, N) = (2, 4, 4), k = 3: sample s of matrix b is
		// at index s·B + b and uses noise eps[s][b].
		xb := &ad.Tensor{Shape: []int{2, n, n}, Data: make([]float64, 2*n*n)}
		rng := rand.New(rand.NewPCG(8, 8))
		for i := range xb.Data {
			xb.Data[i] = rng.NormFloat64()
		}
		eps, err := GumbelNoise(rng, 3, 2, n, n)
		require.NoError(t, err)
		tp := ad.NewTape()
		s := GumbelSinkhornVar{X: tp.Const(xb), Tau: tau, Iters: iters}.RsampleNoise(eps)
		require.NoError(t, tp.Err())
		require.Equal(t, []int{6, n, n}, s.Z.Shape())
		for sIdx := range 3 {
			for b := range 2 {
				for e := range n * n {
					want := (xb.Data[b*n*n+e] + eps.Data[(sIdx*2+b)*n*n+e]) / tau
					assert.InDelta(t, want, s.Z.Value()[(sIdx*2+b)*n*n+e], 1e-15)
				}
			}
		}
	})
	t.Run("Gradients", func(t *testing.T) {
		// Noise held fixed by re-seeding on every evaluation. Soft is the
		// truncated Sinkhorn of relax (its adjoint is relax's), Z is linear.
		require.NoError(t, ad.CheckGradient(func(_ *ad.Tape, xs []*ad.Var) *ad.Var {
			s := GumbelSinkhornVar{X: xs[0], Tau: tau, Iters: iters}.Rsample(rand.New(rand.NewPCG(9, 9)), 2)
			return ad.Concat(ad.Reshape(s.Soft, -1), ad.Reshape(s.Z, -1))
		}, xt))
		// A whole Gumbel-space ELBO-like objective: a squared error on the
		// soft samples plus the closed-form KL.
		target := &ad.Tensor{Shape: []int{n, n}, Data: make([]float64, n*n)}
		for i := range n {
			target.Data[i*n+(i+1)%n] = 1
		}
		require.NoError(t, ad.CheckGradient(func(tp *ad.Tape, xs []*ad.Var) *ad.Var {
			s := GumbelSinkhornVar{X: xs[0], Tau: tau, Iters: iters}.Rsample(rand.New(rand.NewPCG(9, 9)), 3)
			fit := ad.Sum(ad.Square(ad.Sub(s.Soft, tp.Const(target))))
			return ad.Add(fit, GumbelKLVar(xs[0], tau, 1))
		}, xt))
	})
	t.Run("Masked", func(t *testing.T) {
		xm := xt.Clone()
		xm.Data[1] = math.Inf(-1) // pair (0, 1) forbidden
		tp := ad.NewTape()
		s := GumbelSinkhornVar{X: tp.Const(xm), Tau: tau, Iters: iters}.Rsample(rand.New(rand.NewPCG(1, 1)), 5)
		require.NoError(t, tp.Err())
		hard, err := s.Hard()
		require.NoError(t, err)
		for k, p := range hard {
			assert.NotEqual(t, 1, p[0])
			assert.Equal(t, 0.0, s.Soft.Value()[k*n*n+1])
		}
	})
	t.Run("Errors", func(t *testing.T) {
		check := func(name string, f func(tp *ad.Tape) GumbelSinkhornVarSample) {
			tp := ad.NewTape()
			s := f(tp)
			assert.Error(t, tp.Err(), name)
			_, err := s.Hard()
			assert.Error(t, err, name)
		}
		good := func(tp *ad.Tape) GumbelSinkhornVar {
			return GumbelSinkhornVar{X: tp.Const(xt), Tau: tau, Iters: iters}
		}
		check("tau", func(tp *ad.Tape) GumbelSinkhornVarSample {
			return GumbelSinkhornVar{X: tp.Const(xt), Tau: -1, Iters: iters}.Rsample(nil, 1)
		})
		check("iters", func(tp *ad.Tape) GumbelSinkhornVarSample {
			return GumbelSinkhornVar{X: tp.Const(xt), Tau: 1, Iters: 0}.Rsample(nil, 1)
		})
		check("k", func(tp *ad.Tape) GumbelSinkhornVarSample { return good(tp).Rsample(nil, 0) })
		check("shape", func(tp *ad.Tape) GumbelSinkhornVarSample {
			return GumbelSinkhornVar{X: tp.Const(ad.Zeros(2, 3)), Tau: 1, Iters: 5}.Rsample(nil, 1)
		})
		check("rank", func(tp *ad.Tape) GumbelSinkhornVarSample {
			return GumbelSinkhornVar{X: tp.Const(ad.Zeros(4)), Tau: 1, Iters: 5}.Rsample(nil, 1)
		})
		check("NaN", func(tp *ad.Tape) GumbelSinkhornVarSample {
			bad := xt.Clone()
			bad.Data[3] = math.NaN()
			return GumbelSinkhornVar{X: tp.Const(bad), Tau: 1, Iters: 5}.Rsample(nil, 1)
		})
		check("noise nil", func(tp *ad.Tape) GumbelSinkhornVarSample { return good(tp).RsampleNoise(nil) })
		check("noise shape", func(tp *ad.Tape) GumbelSinkhornVarSample {
			return good(tp).RsampleNoise(ad.Zeros(n, n))
		})
		check("noise data", func(tp *ad.Tape) GumbelSinkhornVarSample {
			return good(tp).RsampleNoise(&ad.Tensor{Shape: []int{1, n, n}, Data: make([]float64, 3)})
		})
		s := GumbelSinkhornVar{}.Rsample(nil, 1)
		assert.Nil(t, s.Soft)
	})
}

// One training step's sampling for a 50×50 permutation with K = 5 samples
// and L = 20 iterations, forward and backward.
func BenchmarkGumbelSinkhornVar(b *testing.B) {
	const n, k = 50, 5
	x := ad.NewParam("X", ad.Zeros(n, n))
	rng := rand.New(rand.NewPCG(1, 1))
	tp := ad.NewTape()
	b.ReportAllocs()
	for b.Loop() {
		tp.Reset()
		s := GumbelSinkhornVar{X: tp.Param(x), Tau: 0.5, Iters: 20}.Rsample(rng, k)
		if err := tp.Backward(ad.Sum(s.Soft)); err != nil {
			b.Fatal(err)
		}
	}
}

// RandSoft is Rand's Soft from the same draws, written into dst when given.
func TestGumbelSinkhornRandSoft(t *testing.T) {
	const n = 5
	x := randMatrix(rand.New(rand.NewPCG(1, 1)), n)
	x.Set(1, 3, math.Inf(-1))
	g := GumbelSinkhorn{X: x, Tau: 0.7, Iters: 40}
	r1, r2 := rand.New(rand.NewPCG(2, 2)), rand.New(rand.NewPCG(2, 2))
	dst := mat.NewDense(n, n, nil)
	for k := range 3 {
		want, err := g.Rand(r1)
		require.NoError(t, err)
		got, err := g.RandSoft(dst, r2)
		require.NoError(t, err)
		assert.Same(t, dst, got)
		assert.Equal(t, want.Soft.RawMatrix().Data, got.RawMatrix().Data, "sample %d", k)
	}
	got, err := g.RandSoft(nil, rand.New(rand.NewPCG(2, 2)))
	require.NoError(t, err)
	first, err := g.Rand(rand.New(rand.NewPCG(2, 2)))
	require.NoError(t, err)
	assert.Equal(t, first.Soft.RawMatrix().Data, got.RawMatrix().Data)

	_, err = g.RandSoft(mat.NewDense(n-1, n-1, nil), nil)
	assert.Error(t, err, "wrong dst size")
	for _, bad := range []GumbelSinkhorn{
		{X: x, Tau: 0, Iters: 5},
		{X: x, Tau: 1, Iters: 0},
		{X: nil, Tau: 1, Iters: 5},
		{X: &mat.Dense{}, Tau: 1, Iters: 5},
	} {
		_, err := bad.RandSoft(nil, nil)
		assert.Error(t, err, "%+v", bad)
		assert.Error(t, bad.Validate(), "%+v", bad)
	}
	assert.NoError(t, g.Validate())
}

// A −∞ entry of the noise forbids its pair in that sample: the sample and
// the gradient equal, to the last bit, those of masking X + ε after the
// sum (the gradient of a pair forbidden in every sample is exactly 0), and
// the hard samples avoid the pair.
func TestGumbelSinkhornVarForbiddenNoise(t *testing.T) {
	const k, b, n, tau, iters = 3, 2, 4, 0.6, 25
	rng := rand.New(rand.NewPCG(20, 20))
	xt := &ad.Tensor{Shape: []int{b, n, n}, Data: FillNormal(make([]float64, b*n*n), rng)}
	eps, err := GumbelNoise(rng, k, b, n, n)
	require.NoError(t, err)
	w := &ad.Tensor{Shape: []int{k * b, n, n}, Data: FillNormal(make([]float64, k*b*n*n), rng)}
	keep := make([]bool, k*b*n*n)
	for i := range keep {
		keep[i] = true
	}
	forbidAll := []int{0*n + 1, n*n + 2*n + 3} // pairs forbidden in every sample
	for s := range k {
		for _, e := range forbidAll {
			keep[s*b*n*n+e] = false
		}
	}
	keep[1*b*n*n+n*n+0] = false // matrix 1, pair (0, 0), in sample 1 only
	epsInf := &ad.Tensor{Shape: eps.Shape, Data: append([]float64(nil), eps.Data...)}
	for i, ok := range keep {
		if !ok {
			epsInf.Data[i] = math.Inf(-1)
		}
	}

	p1 := ad.NewParam("X", &ad.Tensor{Shape: xt.Shape, Data: append([]float64(nil), xt.Data...)})
	tp := ad.NewTape()
	s := GumbelSinkhornVar{X: tp.Param(p1), Tau: tau, Iters: iters}.RsampleNoise(epsInf)
	require.NoError(t, tp.Backward(ad.Sum(ad.Mul(s.Soft, tp.Const(w)))))

	p2 := ad.NewParam("X", &ad.Tensor{Shape: xt.Shape, Data: append([]float64(nil), xt.Data...)})
	tp2 := ad.NewTape()
	z := ad.Mask(ad.Add(tp2.Const(eps), tp2.Param(p2)), keep, math.Inf(-1))
	soft := relax.SinkhornVar(ad.Reshape(z, -1, n, n), tau, iters)
	require.NoError(t, tp2.Backward(ad.Sum(ad.Mul(soft, tp2.Const(w)))))

	assert.Equal(t, soft.Value(), s.Soft.Value())
	assert.Equal(t, p2.Grad.Data, p1.Grad.Data)
	for _, e := range forbidAll {
		assert.Equal(t, 0.0, p1.Grad.Data[e])
	}
	assert.NotZero(t, p1.Grad.Data[n*n], "a pair forbidden in one sample only still learns from the others")

	hard, err := s.Hard()
	require.NoError(t, err)
	for i, p := range hard {
		for r, c := range p {
			assert.True(t, keep[i*n*n+r*n+c], "sample %d matrix %d: forbidden pair (%d, %d)", i/b, i%b, r, c)
		}
	}
}
