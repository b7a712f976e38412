package f64

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestGemmGatherMatchesGemm(t *testing.T) {
	paths(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(9, 2))
		for _, c := range []struct{ m, k, n int }{
			{1, 1, 1}, {4, 5, 8}, {81, 25, 32}, {49, 25, 32}, {7, 9, 13}, {5, 3, 17}, {3, 800, 9}, {0, 3, 4}, {3, 0, 4},
		} {
			x := randVec(rng, 200+c.k*3)
			rows := make([]int, c.m)
			offs := make([]int, c.k)
			for i := range rows {
				rows[i] = rng.IntN(100)
			}
			for p := range offs {
				offs[p] = rng.IntN(100 + c.k*3)
			}
			a := make([]float64, c.m*c.k)
			for i, r := range rows {
				for p, o := range offs {
					a[i*c.k+p] = x[r+o]
				}
			}
			b := Pack(randVec(rng, c.k*c.n), c.k, c.n)
			want := randVec(rng, c.m*c.n)
			got := randVec(rng, c.m*c.n) // overwritten, not added to
			Gemm(c.m, a, b, want)
			GemmGather(x, rows, offs, b, got)
			sameBits(t, got, want, "%+v: GemmGather", c)
			// Accumulating into the same values.
			want = randVec(rng, c.m*c.n)
			got = append([]float64(nil), want...)
			GemmAdd(c.m, a, b, want)
			GemmGatherAdd(x, rows, offs, b, got)
			sameBits(t, got, want, "%+v: GemmGatherAdd", c)
		}
	})
}

func sameBits(t *testing.T, got, want []float64, format string, args ...any) {
	t.Helper()
	for i := range want {
		if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
			t.Fatalf(format+": entry %d: got %v, want %v", append(args, i, got[i], want[i])...)
		}
	}
}

// TestGemmGatherTransposed checks the use for aᵀ·B.
func TestGemmGatherTransposed(t *testing.T) {
	paths(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(9, 3))
		for _, c := range []struct{ m, k, n int }{{512, 288, 9}, {9, 81, 9}, {5, 7, 3}, {1, 1, 1}} {
			a := randVec(rng, c.k*c.m) // k×m
			at := make([]float64, c.m*c.k)
			Transpose(at, a, c.k, c.m)
			rows := make([]int, c.m)
			for i := range rows {
				rows[i] = i
			}
			offs := make([]int, c.k)
			for p := range offs {
				offs[p] = p * c.m
			}
			b := Pack(randVec(rng, c.k*c.n), c.k, c.n)
			want := randVec(rng, c.m*c.n)
			got := append([]float64(nil), want...)
			GemmAdd(c.m, at, b, want)
			GemmGatherAdd(a, rows, offs, b, got)
			sameBits(t, got, want, "%+v", c)
		}
	})
}

func TestGemmGatherPanics(t *testing.T) {
	b := Pack(make([]float64, 6), 2, 3)
	for name, f := range map[string]func(){
		"offs length": func() { GemmGather(make([]float64, 10), []int{0}, []int{0}, b, make([]float64, 3)) },
		"c length":    func() { GemmGather(make([]float64, 10), []int{0}, []int{0, 1}, b, make([]float64, 4)) },
		"past x":      func() { GemmGather(make([]float64, 10), []int{0, 8}, []int{0, 2}, b, make([]float64, 6)) },
		"negative":    func() { GemmGather(make([]float64, 10), []int{0, 1}, []int{-2, 0}, b, make([]float64, 6)) },
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
