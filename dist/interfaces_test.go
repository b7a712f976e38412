package dist

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/internal/longtest"
	"github.com/permlab/permlab/perm"
)

// The tests in this file are written once against the interfaces of
// interfaces.go and run for every type that implements them, so that a type
// whose Rand and LogProb disagree, or whose Filler ignores its buffer, fails
// here whatever its own tests check.

// mcEntropy returns the Monte Carlo estimate −(1/m) Σ log p(x_i) of the
// entropy from m draws of r (seeded by seed), and its standard error. Every
// draw must have a finite log density.
func mcEntropy[T any](t *testing.T, r Rander[T], lp LogProber[T], m int, seed uint64) (mean, se float64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 0x656e74))
	var s, s2 float64
	for i := 0; i < m; i++ {
		x, err := r.Rand(rng)
		require.NoError(t, err)
		l, err := lp.LogProb(x)
		require.NoError(t, err)
		require.False(t, math.IsInf(l, 0) || math.IsNaN(l), "draw %d: log density %v at %v", i, l, x)
		s -= l
		s2 += l * l
	}
	mean = s / float64(m)
	return mean, math.Sqrt((s2/float64(m) - mean*mean) / float64(m))
}

// denseLogProber evaluates a LogProber[mat.Matrix] at the *mat.Dense
// samples of a matrix distribution: the sample and argument types of the
// matrix distributions differ (any mat.Matrix is a valid argument).
type denseLogProber struct{ LogProber[mat.Matrix] }

func (d denseLogProber) LogProb(x *mat.Dense) (float64, error) { return d.LogProber.LogProb(x) }

// The entropy −E[log p(X)] estimated from Rand and LogProb through the
// interfaces must match the closed form within 4 standard errors (fixed
// seeds). A LogProb off by a constant, or a Rand drawing from another
// distribution, moves the estimate by many standard errors: the smallest
// constant tested this way, the N² log τ = 9 log 0.5 of Rounding, is over
// 100 of them.
func TestInterfacesEntropy(t *testing.T) {
	m := 20000
	if !longtest.Enabled {
		m = 4000
	}
	check := func(t *testing.T, mean, se, want float64) {
		t.Helper()
		t.Logf("MC %.5f ± %.5f, closed form %.5f", mean, se, want)
		assert.InDelta(t, want, mean, 4*se)
	}

	t.Run("Categorical", func(t *testing.T) {
		c := Categorical{Logits: []float64{0.3, -1, 2, math.Inf(-1), 0}}
		p, err := c.Probs()
		require.NoError(t, err)
		var want float64
		for _, pi := range p {
			if pi > 0 {
				want -= pi * math.Log(pi)
			}
		}
		mean, se := mcEntropy[int](t, c, c, m, 1)
		check(t, mean, se, want)
	})
	t.Run("Normal", func(t *testing.T) {
		n := Normal{Mu: []float64{0.5, -1, 2}, Sigma: []float64{0.3, 1, 2.5}}
		want, err := n.Entropy()
		require.NoError(t, err)
		mean, se := mcEntropy(t, Allocating[[]float64](n), LogProber[[]float64](n), m, 2)
		check(t, mean, se, want)
	})
	t.Run("Gumbel", func(t *testing.T) {
		// The distuv-style scalar through the function adapters.
		g := Gumbel{Mu: 1, Beta: 0.7}
		r := RandFunc[float64](func(rng *rand.Rand) (float64, error) { return g.Rand(rng), g.Validate() })
		lp := LogProbFunc[float64](func(x float64) (float64, error) { return g.LogProb(x), g.Validate() })
		mean, se := mcEntropy(t, r, lp, m, 3)
		check(t, mean, se, g.Entropy())
	})
	t.Run("Rounding", func(t *testing.T) {
		// The map Ψ ↦ τΨ + (1−τ)round(Ψ) is injective with Jacobian
		// τ^(N²), so H(P̃) = H(Ψ) + N² log τ.
		const n, tau = 3, 0.5
		mu, sigma := rndParams(rand.New(rand.NewPCG(4, 4)), n)
		d := Rounding{Mu: mu, Sigma: sigma, Tau: tau}
		want := float64(n*n) * (logSqrt2Pi + 0.5 + math.Log(tau))
		for i := range n {
			for j := range n {
				want += math.Log(sigma.At(i, j))
			}
		}
		mean, se := mcEntropy(t, Allocating[*mat.Dense](d), denseLogProber{d}, m/4, 5)
		check(t, mean, se, want)
	})
}

// fillerCase is one Filler to check against the buffer contract.
type fillerCase[T any] struct {
	name   string
	f      Filler[T]
	lp     LogProber[T]      // the density at the samples; nil to skip
	newBuf func() T          // a buffer of the right size
	badBuf func() T          // a buffer of the wrong size
	same   func(a, b T) bool // whether a and b share their memory
	values func(T) []float64
}

// checkFiller checks the Filler contract: Rand(zero, rng) allocates,
// Rand(buf, rng) writes into buf and returns it with the same values from
// the same seed, a wrong-sized buffer is an error, and every sample has a
// finite log density.
func checkFiller[T any](t *testing.T, c fillerCase[T]) {
	t.Run(c.name, func(t *testing.T) {
		var zero T
		a, err := c.f.Rand(zero, rand.New(rand.NewPCG(7, 7)))
		require.NoError(t, err)
		buf := c.newBuf()
		b, err := c.f.Rand(buf, rand.New(rand.NewPCG(7, 7)))
		require.NoError(t, err)
		assert.True(t, c.same(b, buf), "Rand(dst) did not return dst")
		assert.False(t, c.same(a, buf), "Rand(zero) did not allocate")
		assert.Equal(t, c.values(a), c.values(b), "the same seed gave different samples")
		_, err = c.f.Rand(c.badBuf(), rand.New(rand.NewPCG(7, 7)))
		assert.Error(t, err, "a buffer of the wrong size")
		if c.lp == nil {
			return
		}
		rng := rand.New(rand.NewPCG(8, 8))
		for i := 0; i < 50; i++ {
			x, err := c.f.Rand(buf, rng)
			require.NoError(t, err)
			l, err := c.lp.LogProb(x)
			require.NoError(t, err)
			assert.False(t, math.IsInf(l, 0) || math.IsNaN(l), "draw %d: log density %v", i, l)
		}
	})
}

func TestFillerContract(t *testing.T) {
	sameSlice := func(a, b []float64) bool { return len(a) > 0 && len(b) > 0 && &a[0] == &b[0] }
	ident := func(x []float64) []float64 { return x }
	sameDense := func(a, b *mat.Dense) bool { return a == b }
	raw := func(x *mat.Dense) []float64 { return x.RawMatrix().Data }

	norm := Normal{Mu: []float64{0.5, -1, 2}, Sigma: []float64{0.3}}
	checkFiller(t, fillerCase[[]float64]{"Normal", norm, norm,
		func() []float64 { return make([]float64, 3) }, func() []float64 { return make([]float64, 2) }, sameSlice, ident})
	conc := Concrete{Logits: []float64{0.5, -1, 2, 0}, Temp: 0.7}
	checkFiller(t, fillerCase[[]float64]{"Concrete", conc, conc,
		func() []float64 { return make([]float64, 4) }, func() []float64 { return make([]float64, 5) }, sameSlice, ident})

	mu, sigma := rndParams(rand.New(rand.NewPCG(9, 9)), 4)
	rd := Rounding{Mu: mu, Sigma: sigma, Tau: 0.3}
	checkFiller(t, fillerCase[*mat.Dense]{"Rounding", rd, denseLogProber{rd},
		func() *mat.Dense { return mat.NewDense(4, 4, nil) }, func() *mat.Dense { return mat.NewDense(3, 3, nil) }, sameDense, raw})
	sbMu, sbSigma := sbdParams(rand.New(rand.NewPCG(10, 10)), 3)
	sb := StickBreaking{Mu: sbMu, Sigma: sbSigma}
	checkFiller(t, fillerCase[*mat.Dense]{"StickBreaking", sb, denseLogProber{sb},
		func() *mat.Dense { return mat.NewDense(4, 4, nil) }, func() *mat.Dense { return mat.NewDense(3, 3, nil) }, sameDense, raw})
}

// checkRander checks that draws through the Rander interface are
// reproducible from the seed and lie in the support.
func checkRander[T any](t *testing.T, name string, r Rander[T], inSupport func(T) error) {
	t.Run(name, func(t *testing.T) {
		draw := func(seed uint64) []T {
			rng := rand.New(rand.NewPCG(seed, 11))
			out := make([]T, 30)
			for i := range out {
				x, err := r.Rand(rng)
				require.NoError(t, err)
				require.NoError(t, inSupport(x), "draw %d: %v", i, x)
				out[i] = x
			}
			return out
		}
		assert.Equal(t, draw(12), draw(12))
	})
}

func TestRanderContract(t *testing.T) {
	const n = 4
	inf := math.Inf(-1)
	x := randMatrix(rand.New(rand.NewPCG(13, 13)), n)
	x.Set(0, 0, inf) // a forbidden pair
	x.Set(2, 1, inf)
	allowed := func(p perm.Perm) error {
		if err := p.Validate(); err != nil {
			return err
		}
		if len(p) != n {
			return fmt.Errorf("size %d, want %d", len(p), n)
		}
		for i, j := range p {
			if math.IsInf(x.At(i, j), -1) {
				return fmt.Errorf("forbidden pair (%d, %d)", i, j)
			}
		}
		return nil
	}
	checkRander[int](t, "Categorical", Categorical{Logits: []float64{1, inf, 0, -2}}, func(k int) error {
		if k < 0 || k >= 4 || k == 1 {
			return fmt.Errorf("category %d outside the support", k)
		}
		return nil
	})
	checkRander[perm.Perm](t, "GumbelMatching", GumbelMatching{X: x}, allowed)
	checkRander[GumbelSinkhornSample](t, "GumbelSinkhorn", GumbelSinkhorn{X: x, Tau: 0.5, Iters: 200}, func(s GumbelSinkhornSample) error {
		if err := allowed(s.Hard); err != nil {
			return err
		}
		for i := range n {
			var row, col float64
			for j := range n {
				if math.IsInf(x.At(i, j), -1) && s.Soft.At(i, j) != 0 {
					return fmt.Errorf("forbidden pair (%d, %d) has mass %v", i, j, s.Soft.At(i, j))
				}
				row += s.Soft.At(i, j)
				col += s.Soft.At(j, i)
			}
			// Columns are normalised last; rows carry the truncation
			// error of L = 200 iterations (observed up to 4e-5).
			if math.Abs(row-1) > 1e-3 || math.Abs(col-1) > 1e-12 {
				return fmt.Errorf("row or column %d sums to %v, %v", i, row, col)
			}
		}
		return nil
	})
	rp := RoundingPrior{Std: 0.2}
	checkRander[*mat.Dense](t, "RoundingPrior", RandFunc[*mat.Dense](func(rng *rand.Rand) (*mat.Dense, error) { return rp.Rand(n, rng) }),
		func(s *mat.Dense) error {
			l, err := rp.LogProb(s)
			if err == nil && math.IsInf(l, 0) {
				err = fmt.Errorf("log density %v", l)
			}
			return err
		})
}

// Invalid parameters surface through every interface method as an error.
func TestInterfacesInvalid(t *testing.T) {
	nan := math.NaN()
	bad2 := mat.NewDense(2, 2, []float64{nan, 0, 0, 0})
	for name, v := range map[string]Validator{
		"Categorical":    Categorical{},
		"Concrete":       Concrete{Logits: []float64{1, 2}, Temp: 0},
		"Gumbel":         Gumbel{Beta: -1},
		"GumbelMatching": GumbelMatching{X: bad2},
		"GumbelSinkhorn": GumbelSinkhorn{X: mat.NewDense(2, 2, nil), Tau: 1, Iters: 0},
		"Normal":         Normal{Mu: []float64{0}, Sigma: []float64{0}},
		"Rounding":       Rounding{Mu: bad2, Sigma: bad2, Tau: 0.5},
		"RoundingPrior":  RoundingPrior{Std: nan},
		"StickBreaking":  StickBreaking{Mu: bad2, Sigma: bad2},
	} {
		assert.Error(t, v.Validate(), name)
		if r, ok := v.(Rander[int]); ok {
			_, err := r.Rand(nil)
			assert.Error(t, err, name)
		}
		if r, ok := v.(Rander[perm.Perm]); ok {
			_, err := r.Rand(nil)
			assert.Error(t, err, name)
		}
		if r, ok := v.(Rander[GumbelSinkhornSample]); ok {
			_, err := r.Rand(nil)
			assert.Error(t, err, name)
		}
		if f, ok := v.(Filler[[]float64]); ok {
			_, err := f.Rand(nil, nil)
			assert.Error(t, err, name)
		}
		if f, ok := v.(Filler[*mat.Dense]); ok {
			_, err := f.Rand(nil, nil)
			assert.Error(t, err, name)
		}
		if lp, ok := v.(LogProber[int]); ok {
			_, err := lp.LogProb(0)
			assert.Error(t, err, name)
		}
		if lp, ok := v.(LogProber[[]float64]); ok {
			_, err := lp.LogProb([]float64{0.5, 0.5})
			assert.Error(t, err, name)
		}
		if lp, ok := v.(LogProber[mat.Matrix]); ok {
			_, err := lp.LogProb(mat.NewDense(3, 3, nil))
			assert.Error(t, err, name)
		}
	}
	// Valid counterparts pass.
	for name, v := range map[string]Validator{
		"GumbelMatching": GumbelMatching{X: &mat.Dense{}},
		"GumbelSinkhorn": GumbelSinkhorn{X: mat.NewDense(2, 2, []float64{math.Inf(-1), 0, 0, 0}), Tau: 1, Iters: 1},
	} {
		assert.NoError(t, v.Validate(), name)
	}
}
