package f64

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/floats"
)

// paths runs f once with the assembly kernels (where the machine has them)
// and once with the fallback.
func paths(t *testing.T, f func(t *testing.T)) {
	savedAsm, saved512 := useAsm, useAVX512
	defer func() { useAsm, useAVX512 = savedAsm, saved512 }()
	for _, p := range []struct {
		name       string
		asm, wide  bool
		need, have bool
	}{
		{"fallback", false, false, false, true},
		{"asm", true, false, true, hasAsm},
		{"asm-avx512", true, true, true, hasAVX512},
	} {
		if p.need && !p.have {
			t.Logf("this machine cannot run the %s path: not tested", p.name)
			continue
		}
		useAsm, useAVX512 = p.asm, p.wide
		t.Run(p.name, f)
	}
}

func randVec(rng *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = rng.NormFloat64()
	}
	return v
}

// close reports whether got is within a few ulps of want, relative to the
// scale of the terms that were summed.
func closeTo(got, want, scale float64) bool {
	return math.Abs(got-want) <= 1e-13*math.Max(scale, 1)
}

func TestAxpyDot(t *testing.T) {
	paths(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(1, 2))
		for n := 0; n <= 70; n++ {
			for _, extra := range []int{0, 3} {
				x := randVec(rng, n)
				y := randVec(rng, n+extra)
				a := rng.NormFloat64()
				want := append([]float64(nil), y...)
				for i := range x {
					want[i] += a * x[i]
				}
				Axpy(a, x, y)
				for i := range y {
					ok := y[i] == want[i] // past len(x), y is untouched
					if i < n {
						ok = closeTo(y[i], want[i], math.Abs(a*x[i])+math.Abs(want[i]))
					}
					if !ok {
						t.Fatalf("Axpy n=%d: y[%d] = %v, want %v", n, i, y[i], want[i])
					}
				}
				var dot, scale float64
				for i := range x {
					dot += x[i] * y[i]
					scale += math.Abs(x[i] * y[i])
				}
				if got := Dot(x, y); !closeTo(got, dot, scale) {
					t.Fatalf("Dot n=%d: %v, want %v", n, got, dot)
				}
			}
		}
		// a = 0 leaves y alone, even where x holds NaN (as gonum does not).
		y := []float64{1, 2}
		Axpy(0, []float64{math.NaN(), math.NaN()}, y)
		if y[0] != 1 || y[1] != 2 {
			t.Fatalf("Axpy with a = 0 changed y: %v", y)
		}
	})
}

func TestGemm(t *testing.T) {
	paths(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(3, 4))
		sizes := [][3]int{{0, 3, 3}, {3, 0, 3}, {3, 3, 0}, {1, 1, 1}, {4, 8, 5}, {5, 9, 7}, {3, 7, 2}, {8, 16, 16}, {13, 17, 11}, {37, 29, 41}, {279, 279, 279}}
		for _, s := range sizes {
			m, k, n := s[0], s[1], s[2]
			a, b := randVec(rng, m*k), randVec(rng, k*n)
			c := randVec(rng, m*n) // garbage that Gemm must overwrite
			Gemm(m, a, Pack(b, k, n), c)
			for i := 0; i < m; i++ {
				for j := 0; j < n; j++ {
					var want, scale float64
					for p := 0; p < k; p++ {
						want += a[i*k+p] * b[p*n+j]
						scale += math.Abs(a[i*k+p] * b[p*n+j])
					}
					if !closeTo(c[i*n+j], want, scale) {
						t.Fatalf("Gemm %v: c[%d][%d] = %v, want %v", s, i, j, c[i*n+j], want)
					}
				}
			}
		}
	})
}

func TestPackDoesNotAlias(t *testing.T) {
	b := []float64{1, 2, 3, 4}
	p := Pack(b, 2, 2)
	b[0] = 100
	c := make([]float64, 4)
	Gemm(2, []float64{1, 0, 0, 1}, p, c)
	if !floats.Equal(c, []float64{1, 2, 3, 4}) {
		t.Fatalf("identity·B = %v after changing b, want the packed copy [1 2 3 4]", c)
	}
	if k, n := p.Dims(); k != 2 || n != 2 {
		t.Fatalf("Dims = %d, %d", k, n)
	}
}

func TestBadShapesPanic(t *testing.T) {
	for name, f := range map[string]func(){
		"pack": func() { Pack(make([]float64, 5), 2, 3) },
		"gemm": func() { Gemm(2, make([]float64, 5), Pack(make([]float64, 6), 3, 2), make([]float64, 4)) },
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

func benchPaths(b *testing.B, f func(b *testing.B)) {
	saved := useAsm
	defer func() { useAsm = saved }()
	for _, asm := range []bool{false, true} {
		if asm && !hasAsm {
			continue
		}
		useAsm = asm
		name := map[bool]string{false: "gonum", true: "asm"}[asm]
		b.Run(name, f)
	}
}

func BenchmarkAxpy279(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	x, y := randVec(rng, 279), randVec(rng, 279)
	benchPaths(b, func(b *testing.B) {
		for b.Loop() {
			Axpy(1e-9, x, y)
		}
	})
}

func BenchmarkDot279(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	x, y := randVec(rng, 279), randVec(rng, 279)
	var s float64
	benchPaths(b, func(b *testing.B) {
		for b.Loop() {
			s += Dot(x, y)
		}
	})
	_ = s
}

func BenchmarkGemm279(b *testing.B) {
	const n = 279
	rng := rand.New(rand.NewPCG(1, 1))
	a, m := randVec(rng, n*n), Pack(randVec(rng, n*n), n, n)
	c := make([]float64, n*n)
	benchPaths(b, func(b *testing.B) {
		for b.Loop() {
			Gemm(n, a, m, c)
		}
	})
}

func TestGather(t *testing.T) {
	paths(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(5, 6))
		const rows, stride = 13, 37
		b := randVec(rng, rows*stride)
		for n := 0; n <= 37; n++ {
			for _, cnt := range []int{0, 1, 3, 4, 5, 8, 11} {
				idx := make([]int, cnt)
				for i := range idx {
					idx[i] = rng.IntN(rows) // repeats allowed
				}
				coef := randVec(rng, cnt)
				y := randVec(rng, n)
				want := append([]float64(nil), y...)
				scale := make([]float64, n)
				for i := range want {
					scale[i] = math.Abs(want[i])
					for k, r := range idx {
						want[i] += coef[k] * b[r*stride+i]
						scale[i] += math.Abs(coef[k] * b[r*stride+i])
					}
				}
				AxpyGather(y, coef, b, stride, idx)
				for i := range y {
					if !closeTo(y[i], want[i], scale[i]) {
						t.Fatalf("AxpyGather n=%d cnt=%d: y[%d] = %v, want %v", n, cnt, i, y[i], want[i])
					}
				}
				x := randVec(rng, n)
				dst := randVec(rng, cnt+2)
				DotGather(dst, x, b, stride, idx)
				for k, r := range idx {
					var want, scale float64
					for i := range x {
						want += x[i] * b[r*stride+i]
						scale += math.Abs(x[i] * b[r*stride+i])
					}
					if !closeTo(dst[k], want, scale) {
						t.Fatalf("DotGather n=%d cnt=%d: dst[%d] = %v, want %v", n, cnt, k, dst[k], want)
					}
				}
			}
		}
	})
}

// With the assembly kernels, AxpyGather rounds exactly as successive Axpy
// calls do (one fused multiply-add per term, in order).
func TestAxpyGatherMatchesAxpy(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const n = 41
	b := randVec(rng, 9*n)
	idx := []int{3, 0, 8, 8, 1, 5, 2}
	coef := randVec(rng, len(idx))
	y1 := randVec(rng, n)
	y2 := append([]float64(nil), y1...)
	AxpyGather(y1, coef, b, n, idx)
	for k, r := range idx {
		Axpy(coef[k], b[r*n:(r+1)*n], y2)
	}
	if !floats.Equal(y1, y2) {
		t.Fatalf("AxpyGather differs from successive Axpy calls")
	}
}

func TestGatherPanics(t *testing.T) {
	for name, f := range map[string]func(){
		"coef":  func() { AxpyGather(make([]float64, 2), []float64{1}, make([]float64, 4), 2, []int{0, 1}) },
		"range": func() { AxpyGather(make([]float64, 2), []float64{1}, make([]float64, 4), 2, []int{2}) },
		"dst":   func() { DotGather(make([]float64, 1), make([]float64, 2), make([]float64, 4), 2, []int{0, 1}) },
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

func BenchmarkGather279x99(b *testing.B) {
	const n, cnt = 279, 99
	rng := rand.New(rand.NewPCG(1, 1))
	m := randVec(rng, n*n)
	idx := make([]int, cnt)
	for i := range idx {
		idx[i] = rng.IntN(n)
	}
	coef, y, dst := randVec(rng, cnt), randVec(rng, n), make([]float64, cnt)
	benchPaths(b, func(b *testing.B) {
		b.Run("axpy", func(b *testing.B) {
			for b.Loop() {
				AxpyGather(y, coef, m, n, idx)
			}
		})
		b.Run("dot", func(b *testing.B) {
			for b.Loop() {
				DotGather(dst, y, m, n, idx)
			}
		})
		b.Run("axpy-loop", func(b *testing.B) {
			for b.Loop() {
				for k, r := range idx {
					Axpy(coef[k]*1e-12, m[r*n:(r+1)*n], y)
				}
			}
		})
		b.Run("dot-loop", func(b *testing.B) {
			for b.Loop() {
				for k, r := range idx {
					dst[k] = Dot(y, m[r*n:(r+1)*n])
				}
			}
		})
	})
}
