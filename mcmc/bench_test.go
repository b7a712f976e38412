package mcmc

import (
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/perm"
)

// C. elegans scale: n = 279 neurons, banded candidate mask of width 2w+1.
func benchSwap(b *testing.B, n, w int, withMask bool) {
	rng := rand.New(rand.NewPCG(1, 2))
	lt := make(linearTarget, n)
	for i := range lt {
		lt[i] = make([]float64, n)
		for c := range lt[i] {
			lt[i][c] = rng.NormFloat64()
		}
	}
	var mask *perm.Mask
	if withMask {
		var err error
		if mask, err = perm.NewMask(n); err != nil {
			b.Fatal(err)
		}
		for i := range n {
			for c := max(0, i-w); c <= min(n-1, i+w); c++ {
				_ = mask.Set(i, c, true)
			}
		}
	}
	k, err := NewSwapMH(n, lt, mask, nil)
	if err != nil {
		b.Fatal(err)
	}
	p := perm.Identity(n)
	b.ResetTimer()
	for range b.N {
		if _, err := k.Step(rng, p); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSwapMHNoMask279(b *testing.B)  { benchSwap(b, 279, 0, false) }
func BenchmarkSwapMHMask279w5(b *testing.B)  { benchSwap(b, 279, 5, true) }
func BenchmarkSwapMHMask279w30(b *testing.B) { benchSwap(b, 279, 30, true) }

// One Gibbs sweep over W for n = 279 with about 16 non-zeros per row.
func BenchmarkRegressionRowsSample279(b *testing.B) {
	const n = 279
	rng := rand.New(rand.NewPCG(3, 4))
	support := make([][]int, n)
	for i := range support {
		for c := range n {
			if rng.Float64() < 16.0/n {
				support[i] = append(support[i], c)
			}
		}
	}
	x := mat.NewDense(2*n, n, nil)
	for r := range 2 * n {
		for c := range n {
			x.Set(r, c, rng.NormFloat64())
		}
	}
	sxx := mat.NewSymDense(n, nil)
	sxx.SymOuterK(1, x.T())
	syx := mat.NewDense(n, n, nil)
	syx.Mul(x.T(), x)
	g := &RegressionRows{Support: support, NoiseVar: 1, PriorVar: 1}
	w := mat.NewDense(n, n, nil)
	b.ResetTimer()
	for range b.N {
		if err := g.Sample(rng, w, sxx, syx); err != nil {
			b.Fatal(err)
		}
	}
}
