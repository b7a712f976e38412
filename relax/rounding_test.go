package relax

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/perm"
)

// rndAllPerms calls f with every permutation of size n (Heap's algorithm).
func rndAllPerms(n int, f func(p perm.Perm)) {
	p := perm.Identity(n)
	c := make([]int, n)
	f(p)
	for i := 0; i < n; {
		if c[i] < i {
			if i%2 == 0 {
				p[0], p[i] = p[i], p[0]
			} else {
				p[c[i]], p[i] = p[i], p[c[i]]
			}
			f(p)
			c[i]++
			i = 0
		} else {
			c[i] = 0
			i++
		}
	}
}

// rndFrobenius returns ‖P − x‖², P the matrix of p.
func rndFrobenius(x mat.Matrix, p perm.Perm) float64 {
	n, _ := x.Dims()
	var s float64
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			d := x.At(i, j)
			if p[i] == j {
				d--
			}
			s += d * d
		}
	}
	return s
}

// rndBruteNearest returns the smallest ‖P − x‖² over the permutations
// allowed by the mask (nil: all), by enumeration.
func rndBruteNearest(x mat.Matrix, allowed *perm.Mask) float64 {
	n, _ := x.Dims()
	best := math.Inf(1)
	rndAllPerms(n, func(p perm.Perm) {
		if allowed != nil && !allowed.Admits(p) {
			return
		}
		best = min(best, rndFrobenius(x, p))
	})
	return best
}

// rndGaussian returns a matrix with entries m + s·N(0, 1), m ~ U(0, 1),
// s ~ U(0.1, 1): a Rounding-style draw around a random mean.
func rndGaussian(rng *rand.Rand, n int) *mat.Dense {
	x := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			x.Set(i, j, rng.Float64()+(0.1+0.9*rng.Float64())*rng.NormFloat64())
		}
	}
	return x
}

// rndMask returns a random mask that admits at least the permutation p.
func rndMask(rng *rand.Rand, p perm.Perm, density float64) *perm.Mask {
	n := len(p)
	m, _ := perm.NewMask(n)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			_ = m.Set(i, j, j == p[i] || rng.Float64() < density)
		}
	}
	return m
}

func TestRoundNearest(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 1))
	for n := 1; n <= 6; n++ {
		for k := 0; k < 20; k++ {
			x := rndGaussian(rng, n)
			var mask *perm.Mask
			if k%2 == 1 {
				mask = rndMask(rng, perm.Random(n, rng), 0.4)
			}
			var p perm.Perm
			var err error
			if mask == nil {
				p, err = Round(x)
			} else {
				p, err = RoundMasked(x, mask)
				require.True(t, mask.Admits(p))
			}
			require.NoError(t, err)
			// Distances are sums of n² squares of O(1) numbers: equal to
			// within a few ulps when the same permutation wins.
			assert.InDeltaf(t, rndBruteNearest(x, mask), rndFrobenius(x, p), 1e-12, "n=%d case %d", n, k)
		}
	}
}

func TestRoundingRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 1))
	for _, n := range []int{1, 2, 3, 5, 8, 20} {
		for _, tau := range []float64{1e-3, 0.1, 0.5, 0.9, 1} {
			for k := 0; k < 25; k++ {
				psi := rndGaussian(rng, n)
				var mask *perm.Mask
				if k%3 == 2 {
					mask = rndMask(rng, perm.Random(n, rng), 0.3)
				}
				pt, p, err := Rounding(psi, tau, mask)
				require.NoError(t, err)
				want, err := RoundMasked(psi, mask)
				require.NoError(t, err)
				require.Equal(t, want, p)
				// P̃ has the same nearest permutation as Ψ.
				got, err := RoundMasked(pt, mask)
				require.NoError(t, err)
				require.Equalf(t, p, got, "n=%d tau=%g case %d", n, tau, k)

				back, p2, err := RoundingInverse(pt, tau, mask)
				require.NoError(t, err, "n=%d tau=%g case %d", n, tau, k)
				require.Equal(t, p, p2)
				// P̃ = τΨ + (1−τ)P holds an error of an ulp of its entries,
				// which dividing by τ turns into about ε(|ψ| + 1/τ).
				for i, v := range psi.RawMatrix().Data {
					tol := 4 * 0x1p-52 * (math.Abs(v) + 1/tau)
					require.InDeltaf(t, v, back.RawMatrix().Data[i], tol, "n=%d tau=%g case %d", n, tau, k)
				}
			}
		}
	}
}

// Off the image the inverse must refuse: check both outcomes against the
// definition, round(Ψ) = round(P̃).
func TestRoundingInverseImage(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 1))
	const tau = 0.4
	inside, outside := 0, 0
	for _, n := range []int{2, 3, 4} {
		for k := 0; k < 300; k++ {
			pt := rndGaussian(rng, n)
			psi, p, err := RoundingInverse(pt, tau, nil)
			if errors.Is(err, ErrOutsideImage) {
				outside++
				// Ψ = (P̃ − (1−τ)P)/τ has a strictly nearer permutation.
				q, err := Round(pt)
				require.NoError(t, err)
				var cand mat.Dense
				cand.Scale(1/tau, pt)
				for i, j := range q {
					cand.Set(i, j, cand.At(i, j)-(1-tau)/tau)
				}
				assert.Less(t, rndBruteNearest(&cand, nil), rndFrobenius(&cand, q)-1e-9)
				continue
			}
			require.NoError(t, err)
			inside++
			// Forward of the preimage gives P̃ back.
			again, p2, err := Rounding(psi, tau, nil)
			require.NoError(t, err)
			require.Equal(t, p, p2)
			for i, v := range pt.RawMatrix().Data {
				require.InDelta(t, v, again.RawMatrix().Data[i], 1e-14*(1+math.Abs(v)))
			}
		}
	}
	t.Logf("inside %d, outside %d", inside, outside)
	require.Positive(t, inside)
	require.Positive(t, outside)
}

// Inside a cell the map is Ψ ↦ τΨ + (1−τ)P: its numerical Jacobian has
// log |det| = N² log τ.
func TestRoundingLogDetNumerical(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 1))
	for _, n := range []int{2, 3} {
		for _, tau := range []float64{0.05, 0.5, 1} {
			psi := rndGaussian(rng, n).RawMatrix().Data
			m := n * n
			const h = 1e-6
			jac := mat.NewDense(m, m, nil)
			eval := func(p []float64) []float64 {
				out, _, err := Rounding(mat.NewDense(n, n, append([]float64(nil), p...)), tau, nil)
				require.NoError(t, err)
				return out.RawMatrix().Data
			}
			for c := 0; c < m; c++ {
				p := append([]float64(nil), psi...)
				p[c] += h
				fp := eval(p)
				p[c] -= 2 * h
				fm := eval(p)
				for r := range fp {
					jac.Set(r, c, (fp[r]-fm[r])/(2*h))
				}
			}
			var lu mat.LU
			lu.Factorize(jac)
			num, _ := lu.LogDet()
			// The map is affine within the cell: the differences are exact
			// up to rounding, about ε/h = 2e-10 per entry.
			assert.InDelta(t, RoundingLogDet(n, tau), num, 1e-7, "n=%d tau=%g", n, tau)
		}
	}
}

func TestRoundingVar(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 1))
	tape := ad.NewTape()
	for _, n := range []int{1, 2, 4, 7} {
		tau := 0.3
		mask := rndMask(rng, perm.Random(n, rng), 0.5)
		xs := []*mat.Dense{rndGaussian(rng, n), rndGaussian(rng, n)}
		var data []float64
		for _, x := range xs {
			data = append(data, x.RawMatrix().Data...)
		}
		for _, batch := range []bool{false, true} {
			tape.Reset()
			var v *ad.Var
			if batch {
				v = tape.Variable(&ad.Tensor{Shape: []int{2, n, n}, Data: data})
			} else {
				v = tape.Variable(&ad.Tensor{Shape: []int{n, n}, Data: data[:n*n]})
			}
			y, perms := RoundingVar(v, tau, mask)
			require.NoError(t, tape.Err())
			require.Equal(t, v.Shape(), y.Shape())
			for b := range perms {
				want, p, err := Rounding(xs[b], tau, mask)
				require.NoError(t, err)
				require.Equal(t, p, perms[b])
				require.Equal(t, want.RawMatrix().Data, y.Value()[b*n*n:(b+1)*n*n])
			}
			require.Len(t, perms, map[bool]int{false: 1, true: 2}[batch])
		}
		psi := &ad.Tensor{Shape: []int{2, n, n}, Data: data}
		require.NoError(t, ad.CheckGradient(func(tp *ad.Tape, vs []*ad.Var) *ad.Var {
			y, _ := RoundingVar(ad.Scale(vs[0], 2), tau, mask)
			return ad.Square(y)
		}, psi), "n=%d", n)
	}
}

func TestRoundingErrors(t *testing.T) {
	ok := mat.NewDense(2, 2, []float64{1, 0, 0, 1})
	nan := mat.NewDense(2, 2, []float64{1, math.NaN(), 0, 1})
	inf := mat.NewDense(2, 2, []float64{1, math.Inf(-1), 0, 1})
	empty, _ := perm.NewMask(2)
	mask3, _ := perm.FullMask(3)
	cases := []struct {
		name       string
		x          mat.Matrix
		tau        float64
		mask       *perm.Mask
		infeasible bool
	}{
		{"nil", nil, 0.5, nil, false},
		{"non-square", mat.NewDense(2, 3, nil), 0.5, nil, false},
		{"empty", &mat.Dense{}, 0.5, nil, false},
		{"NaN", nan, 0.5, nil, false},
		{"-Inf", inf, 0.5, nil, false},
		{"tau 0", ok, 0, nil, false},
		{"tau < 0", ok, -1, nil, false},
		{"tau > 1", ok, 1.5, nil, false},
		{"tau NaN", ok, math.NaN(), nil, false},
		{"mask size", ok, 0.5, mask3, false},
		{"infeasible mask", ok, 0.5, empty, true},
	}
	for _, c := range cases {
		_, _, err := Rounding(c.x, c.tau, c.mask)
		require.Error(t, err, c.name)
		assert.Equal(t, c.infeasible, errors.Is(err, ErrInfeasible), "%s: %v", c.name, err)
		_, _, err = RoundingInverse(c.x, c.tau, c.mask)
		require.Error(t, err, c.name)
		assert.False(t, errors.Is(err, ErrOutsideImage), c.name)
		_, err = RoundMasked(c.x, c.mask)
		if strings.HasPrefix(c.name, "tau") {
			require.NoError(t, err, c.name)
		} else {
			require.Error(t, err, c.name)
		}
	}

	tape := ad.NewTape()
	tensors := []struct {
		name string
		v    *ad.Tensor
		tau  float64
		mask *perm.Mask
	}{
		{"rank 1", &ad.Tensor{Shape: []int{4}, Data: make([]float64, 4)}, 0.5, nil},
		{"non-square", &ad.Tensor{Shape: []int{2, 3}, Data: make([]float64, 6)}, 0.5, nil},
		{"empty", &ad.Tensor{Shape: []int{0, 0}}, 0.5, nil},
		{"NaN", &ad.Tensor{Shape: []int{1, 1}, Data: []float64{math.NaN()}}, 0.5, nil},
		{"tau", &ad.Tensor{Shape: []int{2, 2}, Data: make([]float64, 4)}, 0, nil},
		{"mask size", &ad.Tensor{Shape: []int{2, 2}, Data: make([]float64, 4)}, 0.5, mask3},
		{"infeasible", &ad.Tensor{Shape: []int{2, 2}, Data: make([]float64, 4)}, 0.5, empty},
	}
	for _, c := range tensors {
		tape.Reset()
		y, perms := RoundingVar(tape.Variable(c.v), c.tau, c.mask)
		require.Error(t, tape.Err(), c.name)
		require.NotNil(t, y, c.name)
		assert.Nil(t, perms, c.name)
		require.Error(t, tape.Backward(ad.Sum(y)), c.name)
	}
	y, perms := RoundingVar(nil, 0.5, nil)
	assert.Nil(t, y)
	assert.Nil(t, perms)
}

func BenchmarkRoundingVar(b *testing.B) {
	for _, n := range []int{10, 100, 280} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(15, 1))
			x := ad.NewParam("x", &ad.Tensor{Shape: []int{n, n}, Data: rndGaussian(rng, n).RawMatrix().Data})
			tape := ad.NewTape()
			b.ReportAllocs()
			for b.Loop() {
				tape.Reset()
				y, _ := RoundingVar(tape.Param(x), 0.1, nil)
				if err := tape.Backward(ad.Sum(y)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
