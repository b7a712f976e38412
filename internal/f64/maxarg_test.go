package f64

import (
	"math"
	"math/rand/v2"
	"testing"
)

// maxArgNaive is MaxArg written out one element at a time.
func maxArgNaive(best, at, b []float64, stride int, idx []int) {
	for i := range best {
		for _, r := range idx {
			if v := b[r*stride+i]; v > best[i] {
				best[i], at[i] = v, float64(r)
			}
		}
	}
}

func TestMaxArg(t *testing.T) {
	paths(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(9, 1))
		for _, n := range []int{0, 1, 3, 4, 5, 8, 13, 32} {
			for _, rows := range []int{0, 1, 3, 4, 5, 8, 9} {
				stride := n + rng.IntN(3)
				b := make([]float64, (rows+2)*stride+n)
				for i := range b {
					// Few distinct values: many ties; some NaNs and
					// signed zeros.
					switch k := rng.IntN(12); k {
					case 0:
						b[i] = math.NaN()
					case 1:
						b[i] = math.Copysign(0, -1)
					default:
						b[i] = float64(k - 6)
					}
				}
				idx := make([]int, rows)
				for i := range idx {
					idx[i] = rng.IntN(rows + 2)
				}
				best := make([]float64, n)
				at := make([]float64, n)
				for i := range best {
					best[i] = float64(rng.IntN(5) - 4)
					at[i] = -1
				}
				wantBest, wantAt := append([]float64(nil), best...), append([]float64(nil), at...)
				maxArgNaive(wantBest, wantAt, b, stride, idx)
				MaxArg(best, at, b, stride, idx)
				for i := range best {
					if math.Float64bits(best[i]) != math.Float64bits(wantBest[i]) || at[i] != wantAt[i] {
						t.Fatalf("n=%d rows=%d element %d: got (%v, %v), want (%v, %v)", n, rows, i, best[i], at[i], wantBest[i], wantAt[i])
					}
				}
			}
		}
	})
}

func TestMaxArgPanics(t *testing.T) {
	for name, f := range map[string]func(){
		"short at":   func() { MaxArg(make([]float64, 4), make([]float64, 3), make([]float64, 8), 4, []int{0}) },
		"row past b": func() { MaxArg(make([]float64, 4), make([]float64, 4), make([]float64, 8), 4, []int{1, 2}) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}
