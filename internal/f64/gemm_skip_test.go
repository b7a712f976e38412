package f64

import (
	"math"
	"math/rand/v2"
	"testing"
)

// skipPattern returns the nonzero columns of an m×k matrix: a band of
// width w around a diagonal (band), or each entry with probability 0.3,
// with some empty rows and some single entries.
func skipPattern(rng *rand.Rand, m, k, w int, band bool) [][]int {
	cols := make([][]int, m)
	for i := range cols {
		switch {
		case rng.IntN(10) == 0:
			// empty row
		case rng.IntN(10) == 0:
			cols[i] = []int{rng.IntN(max(k, 1))}
		case band:
			mid := i * k / max(m, 1)
			for c := max(0, mid-w); c < min(k, mid+w); c++ {
				cols[i] = append(cols[i], c)
			}
		default:
			for c := range k {
				if rng.Float64() < 0.3 {
					cols[i] = append(cols[i], c)
				}
			}
		}
		if k == 0 {
			cols[i] = nil
		}
	}
	return cols
}

func onPattern(rng *rand.Rand, m, k int, cols [][]int) []float64 {
	a := make([]float64, m*k)
	for i, cs := range cols {
		for _, c := range cs {
			a[i*k+c] = rng.NormFloat64()
		}
	}
	return a
}

func TestGemmSkipMatchesGemm(t *testing.T) {
	paths(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(4, 11))
		for _, c := range []struct{ m, k, n, w int }{
			{1, 1, 1, 1}, {6, 40, 8, 5}, {13, 70, 17, 9}, {36, 279, 40, 50}, {61, 100, 64, 3}, {5, 9, 9, 2}, {0, 4, 8, 1}, {12, 0, 8, 1}, {12, 30, 0, 4},
		} {
			for _, band := range []bool{true, false} {
				cols := skipPattern(rng, c.m, c.k, c.w, band)
				s, err := NewBlocks(c.m, c.k, cols)
				if err != nil {
					t.Fatal(err)
				}
				a := onPattern(rng, c.m, c.k, cols)
				b := Pack(randVec(rng, c.k*c.n), c.k, c.n)
				want := randVec(rng, c.m*c.n)
				got := randVec(rng, c.m*c.n) // overwritten
				Gemm(c.m, a, b, want)
				GemmSkip(a, s, b, got)
				sameBits(t, got, want, "%+v band %v: GemmSkip", c, band)
			}
		}
	})
}

func TestGemmOnMatchesGemm(t *testing.T) {
	paths(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(4, 12))
		for _, c := range []struct{ m, k, n, w int }{
			{1, 1, 1, 1}, {6, 40, 8, 5}, {13, 70, 17, 9}, {36, 50, 279, 50}, {61, 100, 64, 3}, {5, 9, 9, 2}, {0, 4, 8, 1}, {12, 0, 8, 1},
		} {
			for _, band := range []bool{true, false} {
				cols := skipPattern(rng, c.m, c.n, c.w, band)
				s, err := NewBlocks(c.m, c.n, cols)
				if err != nil {
					t.Fatal(err)
				}
				a := randVec(rng, c.m*c.k)
				b := Pack(randVec(rng, c.k*c.n), c.k, c.n)
				want := make([]float64, c.m*c.n)
				Gemm(c.m, a, b, want)
				got := make([]float64, c.m*c.n)
				for i := range got {
					got[i] = math.NaN()
				}
				GemmOn(a, b, got, s)
				for i, cs := range cols {
					for _, j := range cs {
						if math.Float64bits(got[i*c.n+j]) != math.Float64bits(want[i*c.n+j]) {
							t.Fatalf("%+v band %v: entry (%d, %d): got %v, want %v", c, band, i, j, got[i*c.n+j], want[i*c.n+j])
						}
					}
				}
			}
		}
	})
}

// TestBlocksSaves checks that a banded pattern in row order is described
// by its band, and that NewBlocks rejects bad lists.
func TestBlocksSaves(t *testing.T) {
	const m, k, w = 120, 120, 10
	cols := make([][]int, m)
	for i := range cols {
		for c := max(0, i-w); c < min(k, i+w); c++ {
			cols[i] = append(cols[i], c)
		}
	}
	s, err := NewBlocks(m, k, cols)
	if err != nil {
		t.Fatal(err)
	}
	// Each block of six rows spans 2w+5 columns at most.
	if d := s.Density(); d > float64(2*w+5)/k {
		t.Errorf("density %v, want at most %v", d, float64(2*w+5)/k)
	}
	if mm, kk := s.Dims(); mm != m || kk != k {
		t.Errorf("Dims %d×%d", mm, kk)
	}
	for _, bad := range [][][]int{{{0}}, {{1, 0}, {}}, {{2}, {}}, {{-1}, {}}} {
		if _, err := NewBlocks(2, 2, bad); err == nil {
			t.Errorf("NewBlocks(2, 2, %v): no error", bad)
		}
	}
}

func BenchmarkGemmSkipBand(b *testing.B) {
	const n, w = 279, 49 // the hard C. elegans masks: about 99 candidates a row
	rng := rand.New(rand.NewPCG(1, 1))
	cols := make([][]int, n)
	for i := range cols {
		for c := max(0, i-w); c < min(n, i+w+1); c++ {
			cols[i] = append(cols[i], c)
		}
	}
	s, _ := NewBlocks(n, n, cols)
	a := onPattern(rng, n, n, cols)
	p := Pack(randVec(rng, n*n), n, n)
	c := make([]float64, n*n)
	b.Run("dense", func(b *testing.B) {
		for b.Loop() {
			Gemm(n, a, p, c)
		}
	})
	b.Run("skip", func(b *testing.B) {
		for b.Loop() {
			GemmSkip(a, s, p, c)
		}
	})
	b.Run("on", func(b *testing.B) {
		for b.Loop() {
			GemmOn(a, p, c, s)
		}
	})
}
