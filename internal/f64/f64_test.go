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
	saved := useAsm
	defer func() { useAsm = saved }()
	for _, asm := range []bool{false, true} {
		name := "fallback"
		if asm {
			name = "asm"
			if !hasAsm {
				t.Log("no AVX2/FMA on this machine: assembly path not tested")
				continue
			}
		}
		useAsm = asm
		t.Run(name, f)
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
