package f64

import (
	"math"
	"math/rand/v2"
	"testing"
)

// packShapes cover full and partial panels, k below and above 4 and not a
// multiple of it, and a row-block tail (k mod 4 ≠ 0) in the row packer.
var packShapes = [][2]int{{0, 5}, {1, 1}, {3, 8}, {4, 8}, {5, 9}, {7, 16}, {8, 3}, {13, 17}, {33, 40}, {64, 31}, {101, 200}}

// checkPanels compares every stored entry of p with the k×n matrix b it
// should hold, zero padding included, bit for bit.
func checkPanels(t *testing.T, p *Packed, b []float64, k, n int) {
	t.Helper()
	for q := 0; q < p.Panels(); q++ {
		for r := 0; r < k; r++ {
			for j := 0; j < panelWidth; j++ {
				got := p.panels[(q*k+r)*panelWidth+j]
				want := 0.0
				if c := q*panelWidth + j; c < n {
					want = b[r*n+c]
				}
				if math.Float64bits(got) != math.Float64bits(want) {
					t.Fatalf("%d×%d: panel %d row %d column %d = %v, want %v", k, n, q, r, j, got, want)
				}
			}
		}
	}
}

// TestPackLayout checks the panels PackTo and PackTransTo write on both
// paths, into fresh storage and into reused storage full of other values.
func TestPackLayout(t *testing.T) {
	paths(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(8, 1))
		var p, pt *Packed
		for _, s := range packShapes {
			k, n := s[0], s[1]
			b := randVec(rng, k*n)
			bt := make([]float64, n*k)
			Transpose(bt, b, k, n)
			for _, fresh := range []bool{true, false} {
				if fresh {
					p, pt = nil, nil
				} else {
					// Storage left over from a larger matrix of other values.
					p = PackTo(nil, randVec(rng, (k+3)*(n+9)), k+3, n+9)
					pt = PackTo(nil, randVec(rng, (k+3)*(n+9)), k+3, n+9)
				}
				p = PackTo(p, b, k, n)
				checkPanels(t, p, b, k, n)
				pt = PackTransTo(pt, bt, k, n)
				checkPanels(t, pt, b, k, n)
			}
		}
	})
}

// TestTransposeShapes checks Transpose on both paths at shapes with and
// without full 4×4 blocks and 32×32 tiles.
func TestTransposeShapes(t *testing.T) {
	paths(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(8, 2))
		for _, s := range [][2]int{{0, 3}, {3, 0}, {1, 1}, {2, 3}, {4, 4}, {5, 7}, {4, 35}, {33, 70}, {64, 64}, {100, 784}, {67, 5}} {
			m, n := s[0], s[1]
			src := randVec(rng, m*n)
			dst := randVec(rng, m*n)
			Transpose(dst, src, m, n)
			for i := 0; i < m; i++ {
				for j := 0; j < n; j++ {
					if math.Float64bits(dst[j*m+i]) != math.Float64bits(src[i*n+j]) {
						t.Fatalf("Transpose %v: dst[%d][%d] = %v, want %v", s, j, i, dst[j*m+i], src[i*n+j])
					}
				}
			}
			// In column ranges, the last first; rows of dst outside the
			// range must be left alone.
			old := randVec(rng, m*n)
			part := append([]float64(nil), old...)
			cuts := []int{0, n / 3, n/3 + 5, n}
			for c := len(cuts) - 2; c >= 0; c-- {
				j0, j1 := min(cuts[c], n), min(cuts[c+1], n)
				if j0 > j1 {
					continue
				}
				TransposeCols(part, src, m, n, j0, j1)
			}
			for i := range part {
				if math.Float64bits(part[i]) != math.Float64bits(dst[i]) {
					t.Fatalf("TransposeCols %v: entry %d = %v, want %v", s, i, part[i], dst[i])
				}
			}
			if n > 2 && m > 0 {
				only := append([]float64(nil), old...)
				TransposeCols(only, src, m, n, 1, 2)
				for j := 0; j < n; j++ {
					for i := 0; i < m; i++ {
						want := old[j*m+i]
						if j == 1 {
							want = src[i*n+j]
						}
						if math.Float64bits(only[j*m+i]) != math.Float64bits(want) {
							t.Fatalf("TransposeCols %v [1,2): dst[%d][%d] = %v, want %v", s, j, i, only[j*m+i], want)
						}
					}
				}
			}
		}
	})
}

func TestTransposeColsPanics(t *testing.T) {
	for _, r := range [][2]int{{-1, 1}, {2, 1}, {0, 4}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("TransposeCols columns %v of 3: no panic", r)
				}
			}()
			TransposeCols(make([]float64, 6), make([]float64, 6), 2, 3, r[0], r[1])
		}()
	}
}

// TestGemmPanels splits products into column ranges (and the rows into
// two blocks) and checks that the pieces give Gemm's and GemmAdd's bits,
// and that GemmPanels leaves the columns outside its range alone.
func TestGemmPanels(t *testing.T) {
	paths(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(8, 3))
		for _, s := range [][3]int{{1, 1, 1}, {5, 9, 7}, {7, 3, 17}, {13, 17, 41}, {100, 30, 64}, {6, 0, 20}} {
			m, k, n := s[0], s[1], s[2]
			a, b, c0 := randVec(rng, m*k), randVec(rng, k*n), randVec(rng, m*n)
			p := Pack(b, k, n)
			np := p.Panels()
			for _, acc := range []bool{false, true} {
				want := append([]float64(nil), c0...)
				if acc {
					GemmAdd(m, a, p, want)
				} else {
					Gemm(m, a, p, want)
				}
				for _, cut := range []int{0, 1, np / 2, np} {
					got := append([]float64(nil), c0...)
					h := m / 2
					for _, rows := range [][2]int{{0, h}, {h, m}} {
						i0, i1 := rows[0], rows[1]
						ai, ci := a[i0*k:i1*k], got[i0*n:i1*n]
						GemmPanels(i1-i0, ai, p, ci, cut, np, acc)
						GemmPanels(i1-i0, ai, p, ci, 0, cut, acc)
					}
					for i := range got {
						if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
							t.Fatalf("%v acc=%v cut=%d: entry %d = %v, want %v", s, acc, cut, i, got[i], want[i])
						}
					}
				}
				// A range leaves the other columns as they were.
				if np > 1 {
					got := append([]float64(nil), c0...)
					GemmPanels(m, a, p, got, 1, np, acc)
					for i := 0; i < m; i++ {
						for j := 0; j < panelWidth; j++ {
							if got[i*n+j] != c0[i*n+j] {
								t.Fatalf("%v: column %d outside the range changed", s, j)
							}
						}
					}
				}
			}
		}
	})
	p := Pack(make([]float64, 6), 2, 3)
	for _, r := range [][2]int{{-1, 1}, {1, 0}, {0, 2}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("GemmPanels with panels %v of 1: no panic", r)
				}
			}()
			GemmPanels(1, make([]float64, 2), p, make([]float64, 3), r[0], r[1], false)
		}()
	}
}

// TestPackPanelsInPieces fills the panels of a prepared matrix in three
// ranges, last range first, with PackPanels and PackTransPanels, over
// storage left by another matrix, and checks the panels and a product
// (which on the fallback path reads the row-major copy) against PackTo.
func TestPackPanelsInPieces(t *testing.T) {
	paths(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(8, 4))
		for _, s := range packShapes {
			k, n := s[0], s[1]
			b := randVec(rng, k*n)
			bt := make([]float64, n*k)
			Transpose(bt, b, k, n)
			m := 5
			a := randVec(rng, m*k)
			want := make([]float64, m*n)
			Gemm(m, a, PackTo(nil, b, k, n), want)
			for _, trans := range []bool{false, true} {
				p := PackTo(nil, randVec(rng, (k+2)*(n+9)), k+2, n+9)
				p = Prepare(p, k, n)
				np := p.Panels()
				cuts := []int{0, np / 3, (2 * np) / 3, np}
				for c := len(cuts) - 2; c >= 0; c-- {
					if trans {
						PackTransPanels(p, bt, cuts[c], cuts[c+1])
					} else {
						PackPanels(p, b, cuts[c], cuts[c+1])
					}
				}
				checkPanels(t, p, b, k, n)
				got := randVec(rng, m*n)
				Gemm(m, a, p, got)
				for i := range got {
					if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
						t.Fatalf("%v trans=%v: product entry %d = %v, want %v", s, trans, i, got[i], want[i])
					}
				}
			}
		}
	})
	p := Prepare(nil, 2, 9)
	for name, f := range map[string]func(){
		"PackPanels short b":       func() { PackPanels(p, make([]float64, 17), 0, 1) },
		"PackPanels range":         func() { PackPanels(p, make([]float64, 18), 1, 3) },
		"PackTransPanels range":    func() { PackTransPanels(p, make([]float64, 18), -1, 1) },
		"PackTransPanels short bt": func() { PackTransPanels(p, make([]float64, 19), 0, 2) },
		"Prepare negative":         func() { Prepare(nil, -1, 2) },
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
