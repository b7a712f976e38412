package relax

import (
	"math"
	"math/rand/v2"
	"testing"
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
