package relax

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

func TestExpKernAccuracy(t *testing.T) {
	// expKern must match math.Exp to a few ulps over the kernel's domain
	// [-700, 0]: relative error at most 1e-15 (4.5 ulps), checked on a
	// uniform grid, at the table nodes k·ln2/64 ± tiny, and at random
	// points. Outside the domain it is math.Exp itself.
	rng := rand.New(rand.NewPCG(30, 30))
	worst := 0.0
	check := func(d float64) {
		want := math.Exp(d)
		got := expKern(d)
		e := math.Abs(got-want) / want
		if e > worst {
			worst = e
		}
		if !(e <= 1e-15) {
			t.Fatalf("expKern(%v) = %v, math.Exp = %v (rel. error %g)", d, got, want, e)
		}
	}
	for i := 0; i <= 700000; i++ {
		check(-float64(i) / 1000)
	}
	for k := 0; k <= 64633; k++ { // k·ln2/64 up to 700
		d := -float64(k) * math.Ln2 / 64
		for _, dd := range []float64{d, math.Nextafter(d, 0), math.Nextafter(d, -1), d + 0.0054, d - 0.0054} {
			if dd <= 0 && dd >= -700 {
				check(dd)
			}
		}
	}
	for i := 0; i < 200000; i++ {
		check(-700 * rng.Float64())
		check(-rng.Float64() * 1e-3)
	}
	t.Logf("max relative error %.3g", worst)
	for _, d := range []float64{0, math.Copysign(0, -1), math.SmallestNonzeroFloat64 * -1} {
		if expKern(d) != 1 {
			t.Errorf("expKern(%v) = %v, want 1", d, expKern(d))
		}
	}
	for _, d := range []float64{1, -701, -745.2, -800, math.Inf(-1)} {
		if got, want := expKern(d), math.Exp(d); got != want {
			t.Errorf("expKern(%v) = %v, want math.Exp = %v", d, got, want)
		}
	}
	if !math.IsNaN(expKern(math.NaN())) {
		t.Error("expKern(NaN) is not NaN")
	}
}

func BenchmarkExpKern(b *testing.B) {
	x := make([]float64, 1<<16)
	for i := range x {
		x[i] = -20 * float64(i) / float64(len(x))
	}
	b.Run("expKern", func(b *testing.B) {
		s := 0.0
		for b.Loop() {
			for _, v := range x {
				s += expKern(v)
			}
		}
		_ = s
	})
	b.Run("math.Exp", func(b *testing.B) {
		s := 0.0
		for b.Loop() {
			for _, v := range x {
				s += math.Exp(v)
			}
		}
		_ = s
	})
}

// TestExpShift checks both paths of expShift against math.Exp over the
// kernel's domain, the zeroing below sinkKernMinLog, the sum, and every
// tail length (the vector kernel works on groups of four).
func TestExpShift(t *testing.T) {
	paths := []bool{false}
	if useSinkAsm {
		paths = append(paths, true)
	}
	defer func(v bool) { useSinkAsm = v }(useSinkAsm)
	rng := rand.New(rand.NewPCG(31, 31))
	for _, asm := range paths {
		useSinkAsm = asm
		worst := 0.0
		for trial := 0; trial < 2000; trial++ {
			n := trial % 23
			s := 100 * (rng.Float64() - 0.5)
			x := make([]float64, n)
			for i := range x {
				switch rng.IntN(8) {
				case 0:
					x[i] = math.Inf(-1)
				case 1:
					x[i] = s + sinkKernMinLog - rng.Float64() // just below the cut
				case 2:
					x[i] = s - rng.Float64()*1e-3
				default:
					x[i] = s + sinkKernMinLog*rng.Float64()
				}
			}
			want := make([]float64, n)
			wsum := 0.0
			for i, v := range x {
				if d := v - s; d >= sinkKernMinLog {
					want[i] = math.Exp(d)
					wsum += want[i]
				}
			}
			got := slices.Clone(x)
			sum := expShift(got, s)
			for i := range got {
				if want[i] == 0 {
					if got[i] != 0 {
						t.Fatalf("asm=%v: exp(%v) = %v, want 0 below the cut", asm, x[i]-s, got[i])
					}
					continue
				}
				e := math.Abs(got[i]-want[i]) / want[i]
				worst = max(worst, e)
				if !(e <= 1e-15) {
					t.Fatalf("asm=%v: exp(%v) = %v, math.Exp = %v (rel. error %g)", asm, x[i]-s, got[i], want[i], e)
				}
			}
			if !(math.Abs(sum-wsum) <= 1e-15*float64(n)*wsum) {
				t.Fatalf("asm=%v: sum %v, want %v", asm, sum, wsum)
			}
		}
		// Exactly 0 gives exactly 1.
		one := []float64{3, 3, 3, 3, 3}
		if sum := expShift(one, 3); sum != 5 || one[4] != 1 || one[0] != 1 {
			t.Errorf("asm=%v: exp(0) = %v, sum %v", asm, one, sum)
		}
		t.Logf("asm=%v: max relative error %.3g", asm, worst)
	}
}

// TestSinkhornVectorPathsMatchPortable runs the operator with and without
// the vector kernels: the results agree to rounding (the exponentials round
// differently), including rows whose products underflow to the exp(log P)
// fallback, and the input check accepts and rejects the same matrices.
func TestSinkhornVectorPathsMatchPortable(t *testing.T) {
	if !useSinkAsm {
		t.Skip("no vector kernels on this machine")
	}
	defer func(v bool) { useSinkAsm = v }(useSinkAsm)
	rng := rand.New(rand.NewPCG(32, 32))
	for _, n := range []int{1, 3, 4, 5, 8, 13} {
		for _, tau := range []float64{1e-3, 0.05, 1} {
			x := make([]float64, n*n)
			for i := range x {
				x[i] = 3 * rng.NormFloat64()
			}
			run := func(asm bool) []float64 {
				useSinkAsm = asm
				s, err := Sinkhorn(mat.NewDense(n, n, x), tau, 7)
				require.NoError(t, err)
				return s.RawMatrix().Data
			}
			want, got := run(false), run(true)
			for k := range want {
				require.InDelta(t, want[k], got[k], 1e-13*math.Max(want[k], 1e-300)+1e-300,
					"n=%d tau=%g entry %d", n, tau, k)
			}
		}
	}
	for _, n := range []int{3, 4, 6} {
		for pos := range n * n {
			for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), 1e308} {
				x := make([]float64, n*n)
				x[pos] = bad
				useSinkAsm = false
				want := sinkCheck(x, n, 0.5)
				useSinkAsm = true
				got := sinkCheck(x, n, 0.5)
				assert.Equal(t, want, got, "n=%d pos=%d bad=%v", n, pos, bad)
				assert.Equal(t, allAbsLE(x, 1e300), !(math.IsNaN(bad) || math.Abs(bad) > 1e300))
			}
		}
	}
}
