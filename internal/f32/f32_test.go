package f32

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// paths runs f on the assembly path (where the CPU has it) and on the Go
// loop.
func paths(t *testing.T, f func(t *testing.T)) {
	savedAsm, saved512 := useAsm, useAVX512
	defer func() { useAsm, useAVX512 = savedAsm, saved512 }()
	for _, p := range []struct {
		asm, wide, ok bool
	}{{true, true, hasAVX512}, {true, false, hasAsm}, {false, false, true}} {
		if !p.ok {
			continue
		}
		useAsm, useAVX512 = p.asm, p.wide
		t.Run(fmt.Sprintf("asm=%v,avx512=%v", p.asm, p.wide), f)
	}
}

func randVec(rng *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = rng.NormFloat64()
	}
	return v
}

// shapes (m, k, n) cover full and partial row blocks and panels, k = 0
// and 1, and the VAE's layer shapes.
var shapes = [][3]int{
	{0, 3, 4}, {1, 0, 5}, {1, 1, 1}, {5, 7, 15}, {6, 4, 16}, {7, 9, 17},
	{12, 33, 32}, {13, 64, 47}, {100, 200, 256}, {100, 784, 40},
}

// product packs a (m×k) and b (k×n) and returns c after Gemm over all
// blocks and panels, starting from c0.
func product(m, k, n int, a, b []float64, c0 []float64, acc bool) []float64 {
	l := PrepareLeft(nil, m, k)
	PackLeft(l, a, 0, l.Blocks())
	p := Prepare(nil, k, n)
	PackPanels(p, b, 0, p.Panels())
	c := append([]float64(nil), c0...)
	Gemm(l, 0, l.Blocks(), p, 0, p.Panels(), c, acc)
	return c
}

// TestGemmError checks every entry against the exact product of the
// float32-rounded inputs: a float32 sum of k fused products is within
// (k+1)·2⁻²⁴·Σ|a||b| of it (the usual bound γ_k, with room for the
// final conversion), plus, with acc, the float64 rounding of the sum.
// Without acc every entry must be a float32 value, which a float64 sum
// would not give.
func TestGemmError(t *testing.T) {
	paths(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(3, 4))
		for _, s := range shapes {
			m, k, n := s[0], s[1], s[2]
			a, b := randVec(rng, m*k), randVec(rng, k*n)
			old := randVec(rng, m*n)
			for _, acc := range []bool{false, true} {
				c := product(m, k, n, a, b, old, acc)
				for i := range m {
					for j := range n {
						exact, abs := 0.0, 0.0
						for p := range k {
							x := float64(float32(a[i*k+p])) * float64(float32(b[p*n+j]))
							exact += x
							abs += math.Abs(x)
						}
						got := c[i*n+j]
						bound := float64(k+1) * 0x1p-24 * abs
						if acc {
							exact += old[i*n+j]
							bound += 0x1p-52 * (math.Abs(exact) + abs)
						} else if float64(float32(got)) != got {
							t.Fatalf("%v: c[%d,%d] = %v is not a float32", s, i, j, got)
						}
						if math.Abs(got-exact) > bound {
							t.Fatalf("%v acc=%v: c[%d,%d] = %v, exact %v, error %g > bound %g",
								s, acc, i, j, got, exact, math.Abs(got-exact), bound)
						}
					}
				}
			}
		}
	})
}

// TestGemmSplitBits checks that computing a product in pieces (ranges of
// row blocks and panels, in any order) gives the bits of one call.
func TestGemmSplitBits(t *testing.T) {
	paths(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(5, 6))
		m, k, n := 41, 70, 83
		a, b := randVec(rng, m*k), randVec(rng, k*n)
		old := randVec(rng, m*n)
		for _, acc := range []bool{false, true} {
			want := product(m, k, n, a, b, old, acc)
			l := PrepareLeft(nil, m, k)
			p := Prepare(nil, k, n)
			// Pack and multiply in pieces, last pieces first.
			for blk := l.Blocks() - 1; blk >= 0; blk-- {
				PackLeft(l, a, blk, blk+1)
			}
			PackPanels(p, b, 3, p.Panels())
			PackPanels(p, b, 0, 3)
			c := append([]float64(nil), old...)
			Gemm(l, 4, l.Blocks(), p, 2, p.Panels(), c, acc)
			Gemm(l, 0, 4, p, 2, p.Panels(), c, acc)
			Gemm(l, 2, l.Blocks(), p, 0, 2, c, acc)
			Gemm(l, 0, 2, p, 0, 2, c, acc)
			for i := range c {
				if math.Float64bits(c[i]) != math.Float64bits(want[i]) {
					t.Fatalf("acc=%v: entry %d = %v in pieces, %v in one call", acc, i, c[i], want[i])
				}
			}
		}
	})
}

// TestPackPadding checks the packed layout, with storage reused from a
// larger matrix of other values: rounded entries in place, zeros past the
// edges (so edge tiles add nothing).
func TestPackPadding(t *testing.T) {
	paths(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(7, 8))
		for _, s := range [][3]int{{7, 9, 17}, {13, 5, 48}, {1, 33, 70}} {
			l := PrepareLeft(nil, 20, 40)
			PackLeft(l, randVec(rng, 800), 0, l.Blocks())
			p := Prepare(nil, 40, 80)
			PackPanels(p, randVec(rng, 3200), 0, p.Panels())
			m, k, n := s[0], s[1], s[2]
			a, b := randVec(rng, m*k), randVec(rng, k*n)
			l = PrepareLeft(l, m, k)
			PackLeft(l, a, 0, l.Blocks())
			p = Prepare(p, k, n)
			PackPanels(p, b, 0, p.Panels())
			for i := range l.Blocks() * rowBlock {
				for q := range k {
					got, want := l.data[i*k+q], float32(0)
					if i < m {
						want = float32(a[i*k+q])
					}
					if got != want {
						t.Fatalf("%v: left row %d column %d = %v, want %v", s, i, q, got, want)
					}
				}
			}
			for q := range p.Panels() {
				for r := range k {
					for j := range panelWidth {
						got, want := p.panels[(q*k+r)*panelWidth+j], float32(0)
						if c := q*panelWidth + j; c < n {
							want = float32(b[r*n+c])
						}
						if got != want {
							t.Fatalf("%v: panel %d row %d column %d = %v, want %v", s, q, r, j, got, want)
						}
					}
				}
			}
		}
	})
}

func TestPanics(t *testing.T) {
	l := PrepareLeft(nil, 7, 3)
	p := Prepare(nil, 3, 5)
	for name, f := range map[string]func(){
		"PackLeft length":   func() { PackLeft(l, make([]float64, 20), 0, 1) },
		"PackLeft range":    func() { PackLeft(l, make([]float64, 21), 0, 3) },
		"PackPanels length": func() { PackPanels(p, make([]float64, 14), 0, 1) },
		"PackPanels range":  func() { PackPanels(p, make([]float64, 15), 1, 0) },
		"Round":             func() { Round(make([]float32, 3), make([]float64, 4)) },
		"Gemm inner":        func() { Gemm(l, 0, 1, Prepare(nil, 4, 5), 0, 1, make([]float64, 35), false) },
		"Gemm c":            func() { Gemm(l, 0, 1, p, 0, 1, make([]float64, 34), false) },
		"Gemm blocks":       func() { Gemm(l, 0, 3, p, 0, 1, make([]float64, 35), false) },
		"PrepareLeft":       func() { PrepareLeft(nil, -1, 2) },
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

// BenchmarkGemm times the first encoder layer of the VAE, (100, 784) ·
// (784, 512), with both factors packed from float64 in every iteration.
func BenchmarkGemm(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, s := range [][3]int{{100, 784, 512}, {100, 512, 256}, {512, 100, 256}} {
		m, k, n := s[0], s[1], s[2]
		a, bb := randVec(rng, m*k), randVec(rng, k*n)
		c := make([]float64, m*n)
		var l *Left
		var p *Packed
		b.Run(fmt.Sprintf("%dx%dx%d", m, k, n), func(b *testing.B) {
			b.SetBytes(0)
			for b.Loop() {
				l = PrepareLeft(l, m, k)
				PackLeft(l, a, 0, l.Blocks())
				p = Prepare(p, k, n)
				PackPanels(p, bb, 0, p.Panels())
				Gemm(l, 0, l.Blocks(), p, 0, p.Panels(), c, false)
			}
			b.ReportMetric(2*float64(m*k*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

func TestPackPanelsTrans(t *testing.T) {
	paths(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(9, 10))
		for _, s := range [][2]int{{1, 1}, {3, 16}, {4, 16}, {8, 48}, {7, 33}, {13, 70}, {40, 15}, {256, 200}, {30, 785}} {
			k, n := s[0], s[1]
			bt := randVec(rng, n*k)
			b := make([]float64, k*n)
			for i := range n {
				for r := range k {
					b[r*n+i] = bt[i*k+r]
				}
			}
			want := Prepare(nil, k, n)
			PackPanels(want, b, 0, want.Panels())
			np := want.Panels()
			// Whole, and split into two calls at every panel; the storage
			// is filled with junk first so that every entry must be written.
			for split := 0; split <= np; split++ {
				got := Prepare(nil, k, n)
				for i := range got.panels {
					got.panels[i] = float32(i) + 0.5
				}
				PackPanelsTrans(got, bt, 0, split)
				PackPanelsTrans(got, bt, split, np)
				for i, v := range got.panels {
					if math.Float32bits(v) != math.Float32bits(want.panels[i]) {
						t.Fatalf("k=%d n=%d split %d: entry %d = %v, want %v", k, n, split, i, v, want.panels[i])
					}
				}
			}
		}
	})
	defer func() {
		if recover() == nil {
			t.Error("PackPanelsTrans with the wrong length did not panic")
		}
	}()
	PackPanelsTrans(Prepare(nil, 3, 5), make([]float64, 14), 0, 1)
}

func TestPackLeftTrans(t *testing.T) {
	paths(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(11, 12))
		for _, s := range [][2]int{{1, 1}, {4, 4}, {6, 3}, {7, 9}, {13, 16}, {30, 33}, {100, 784}, {512, 100}} {
			m, k := s[0], s[1]
			at := randVec(rng, k*m)
			a := make([]float64, m*k)
			for p := range k {
				for i := range m {
					a[i*k+p] = at[p*m+i]
				}
			}
			want := PrepareLeft(nil, m, k)
			PackLeft(want, a, 0, want.Blocks())
			nb := want.Blocks()
			for split := 0; split <= nb; split++ {
				got := PrepareLeft(nil, m, k)
				for i := range got.data[:m*k] {
					got.data[i] = float32(i) + 0.5
				}
				PackLeftTrans(got, at, 0, split)
				PackLeftTrans(got, at, split, nb)
				for i, v := range got.data {
					if math.Float32bits(v) != math.Float32bits(want.data[i]) {
						t.Fatalf("m=%d k=%d split %d: entry %d = %v, want %v", m, k, split, i, v, want.data[i])
					}
				}
			}
		}
	})
	defer func() {
		if recover() == nil {
			t.Error("PackLeftTrans with the wrong length did not panic")
		}
	}()
	PackLeftTrans(PrepareLeft(nil, 3, 5), make([]float64, 14), 0, 1)
}

// The AVX-512 two-panel kernel must give the AVX2 kernel's bits: every
// entry is the same chain of float32 fused multiply-adds, converted and
// stored (or added) the same way. Shapes cover odd panel counts, a
// narrow last panel, a short last row block, k = 0 and 1, and panel
// ranges that start or end between the two panels of a pair.
func TestGemmAVX512Bits(t *testing.T) {
	if !hasAVX512 {
		t.Skip("this CPU has no AVX-512F: nothing to compare")
	}
	defer func(saved bool) { useAVX512 = saved }(useAVX512)
	rng := rand.New(rand.NewPCG(15, 16))
	for _, s := range [][3]int{{6, 5, 32}, {7, 1, 33}, {12, 33, 48}, {13, 0, 64}, {100, 784, 512}, {5, 9, 80}, {25, 200, 256}, {61, 64, 100}} {
		m, k, n := s[0], s[1], s[2]
		a, bm, c0 := randVec(rng, m*k), randVec(rng, k*n), randVec(rng, m*n)
		l := PrepareLeft(nil, m, k)
		PackLeft(l, a, 0, l.Blocks())
		p := Prepare(nil, k, n)
		PackPanels(p, bm, 0, p.Panels())
		np := p.Panels()
		for _, acc := range []bool{false, true} {
			for _, r := range [][2]int{{0, np}, {1, np}, {0, np - 1}, {1, np - 1}} {
				if r[0] > r[1] {
					continue
				}
				var got [2][]float64
				for j, wide := range []bool{false, true} {
					useAVX512 = wide
					got[j] = append([]float64(nil), c0...)
					Gemm(l, 0, l.Blocks(), p, r[0], r[1], got[j], acc)
				}
				for i := range got[0] {
					if math.Float64bits(got[0][i]) != math.Float64bits(got[1][i]) {
						t.Fatalf("m=%d k=%d n=%d acc=%v panels %v: entry %d: AVX2 %v, AVX-512 %v", m, k, n, acc, r, i, got[0][i], got[1][i])
					}
				}
			}
		}
	}
}
