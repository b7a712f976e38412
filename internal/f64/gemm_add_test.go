package f64

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestGemmAddAndPackTrans(t *testing.T) {
	paths(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(3, 5))
		var p *Packed // reused across sizes, growing and shrinking
		for _, s := range [][3]int{{1, 1, 1}, {4, 8, 5}, {5, 9, 7}, {13, 17, 11}, {3, 7, 2}, {37, 29, 41}} {
			m, k, n := s[0], s[1], s[2]
			a, b := randVec(rng, m*k), randVec(rng, k*n)
			c0 := randVec(rng, m*n)
			bt := make([]float64, n*k)
			Transpose(bt, b, k, n)
			c := append([]float64(nil), c0...)
			p = PackTransTo(p, bt, k, n)
			GemmAdd(m, a, p, c)
			for i := 0; i < m; i++ {
				for j := 0; j < n; j++ {
					want, scale := c0[i*n+j], math.Abs(c0[i*n+j])
					for q := 0; q < k; q++ {
						want += a[i*k+q] * b[q*n+j]
						scale += math.Abs(a[i*k+q] * b[q*n+j])
					}
					if !closeTo(c[i*n+j], want, scale) {
						t.Fatalf("GemmAdd %v: c[%d][%d] = %v, want %v", s, i, j, c[i*n+j], want)
					}
				}
			}
			// GemmAdd into zeros is Gemm, bit for bit.
			z, g := make([]float64, m*n), randVec(rng, m*n)
			GemmAdd(m, a, p, z)
			Gemm(m, a, PackTo(nil, b, k, n), g)
			for i := range z {
				if math.Float64bits(z[i]) != math.Float64bits(g[i]) && useAsm {
					t.Fatalf("GemmAdd into zeros %v: element %d = %v, Gemm gives %v", s, i, z[i], g[i])
				}
			}
		}
	})
}

func TestTranspose(t *testing.T) {
	for _, s := range [][2]int{{0, 3}, {1, 1}, {2, 3}, {33, 70}} {
		m, n := s[0], s[1]
		src := make([]float64, m*n)
		for i := range src {
			src[i] = float64(i)
		}
		dst := make([]float64, m*n)
		Transpose(dst, src, m, n)
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				if dst[j*m+i] != src[i*n+j] {
					t.Fatalf("Transpose %v: dst[%d][%d] = %v, want %v", s, j, i, dst[j*m+i], src[i*n+j])
				}
			}
		}
	}
}

// BenchmarkGemmAdd279 times c += a·B at the C. elegans size, packing
// included, as ad.MatMul's adjoints run it.
func BenchmarkGemmAdd279(b *testing.B) {
	const n = 279
	rng := rand.New(rand.NewPCG(1, 1))
	x, y, c := randVec(rng, n*n), randVec(rng, n*n), make([]float64, n*n)
	var p *Packed
	for b.Loop() {
		p = PackTransTo(p, y, n, n)
		GemmAdd(n, x, p, c)
	}
}

func TestPackTransposeBadShapesPanic(t *testing.T) {
	for name, f := range map[string]func(){
		"PackTo":      func() { PackTo(nil, make([]float64, 5), 2, 3) },
		"PackTransTo": func() { PackTransTo(nil, make([]float64, 5), 2, 3) },
		"Transpose":   func() { Transpose(make([]float64, 6), make([]float64, 5), 2, 3) },
		"GemmAdd":     func() { GemmAdd(2, make([]float64, 4), Pack(make([]float64, 6), 2, 3), make([]float64, 5)) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic on mismatched lengths", name)
				}
			}()
			f()
		}()
	}
}

// TestGemmIsFMAChain checks the assembly path entry by entry against its
// definition: one running sum over p in order with fused multiply-adds,
// from zero (Gemm) or from c (GemmAdd), in every position of the blocking
// (blocks of 6 and of 4 rows, the right edge, the last rows, long sums).
func TestGemmIsFMAChain(t *testing.T) {
	if !hasAsm {
		t.Skip("no AVX2/FMA on this machine")
	}
	rng := rand.New(rand.NewPCG(3, 6))
	for _, s := range [][3]int{{1, 1, 1}, {5, 9, 7}, {7, 3, 17}, {13, 17, 11}, {2, 40, 9}, {3, 1, 8}, {9, 600, 17}, {4, 513, 8}, {6, 256, 16}, {10, 33, 16}, {11, 20, 24}, {100, 50, 19}, {101, 30, 17}, {151, 7, 24}, {279, 12, 33}} {
		m, k, n := s[0], s[1], s[2]
		a, b, c0 := randVec(rng, m*k), randVec(rng, k*n), randVec(rng, m*n)
		for _, acc := range []bool{false, true} {
			c := append([]float64(nil), c0...)
			if acc {
				GemmAdd(m, a, Pack(b, k, n), c)
			} else {
				Gemm(m, a, Pack(b, k, n), c)
			}
			for i := 0; i < m; i++ {
				for j := 0; j < n; j++ {
					want := 0.0
					if acc {
						want = c0[i*n+j]
					}
					for p := 0; p < k; p++ {
						want = math.FMA(a[i*k+p], b[p*n+j], want)
					}
					if math.Float64bits(c[i*n+j]) != math.Float64bits(want) {
						t.Fatalf("%v acc=%v: c[%d][%d] = %v, want %v", s, acc, i, j, c[i*n+j], want)
					}
				}
			}
		}
	}
}

// TestPackedAcrossPaths packs on one path and multiplies on the other: a
// matrix packed for the assembly kernels keeps no row-major copy, and the
// fallback reads it back from the panels.
func TestPackedAcrossPaths(t *testing.T) {
	saved := useAsm
	defer func() { useAsm = saved }()
	rng := rand.New(rand.NewPCG(3, 7))
	m, k, n := 6, 5, 11
	a, b := randVec(rng, m*k), randVec(rng, k*n)
	bt := make([]float64, n*k)
	Transpose(bt, b, k, n)
	for _, packAsm := range []bool{true, false} {
		if packAsm && !hasAsm {
			continue
		}
		useAsm = packAsm
		p, pt := Pack(b, k, n), PackTransTo(nil, bt, k, n)
		useAsm = !packAsm && hasAsm
		for _, q := range []*Packed{p, pt} {
			c := make([]float64, m*n)
			Gemm(m, a, q, c)
			for i := 0; i < m; i++ {
				for j := 0; j < n; j++ {
					var want, scale float64
					for r := 0; r < k; r++ {
						want += a[i*k+r] * b[r*n+j]
						scale += math.Abs(a[i*k+r] * b[r*n+j])
					}
					if !closeTo(c[i*n+j], want, scale) {
						t.Fatalf("packed with asm=%v: c[%d][%d] = %v, want %v", packAsm, i, j, c[i*n+j], want)
					}
				}
			}
		}
	}
}
