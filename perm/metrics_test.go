package perm

import (
	"math"
	"math/rand/v2"
	"testing"
)

// kendallNaive is the O(n²) definition of tau-a.
func kendallNaive(a, b Perm) float64 {
	n := len(a)
	s := 0
	for i := range n {
		for j := i + 1; j < n; j++ {
			x := (a[i] - a[j]) * (b[i] - b[j])
			switch {
			case x > 0:
				s++
			case x < 0:
				s--
			}
		}
	}
	return float64(s) / (float64(n) * float64(n-1) / 2)
}

func TestKendallTau(t *testing.T) {
	tests := []struct {
		pred, truth Perm
		want        float64
	}{
		{Perm{0}, Perm{0}, 1},
		{Perm{0, 1}, Perm{0, 1}, 1},
		{Perm{1, 0}, Perm{0, 1}, -1},
		{Perm{0, 1, 2, 3}, Perm{3, 2, 1, 0}, -1},
		// One adjacent swap among 4 items: 1 discordant pair of 6.
		{Perm{1, 0, 2, 3}, Perm{0, 1, 2, 3}, (5.0 - 1.0) / 6},
		{Perm{2, 0, 1}, Perm{0, 1, 2}, (1.0 - 2.0) / 3},
	}
	for _, tc := range tests {
		got, err := KendallTau(tc.pred, tc.truth)
		if err != nil {
			t.Fatal(err)
		}
		// Exact ratios of small integers; only the final division rounds.
		if math.Abs(got-tc.want) > 1e-15 {
			t.Errorf("KendallTau(%v, %v) = %v, want %v", tc.pred, tc.truth, got, tc.want)
		}
	}

	rng := rand.New(rand.NewPCG(13, 14))
	for _, n := range []int{2, 3, 10, 57, 200} {
		for range 20 {
			a, b := Random(n, rng), Random(n, rng)
			got, err := KendallTau(a, b)
			if err != nil {
				t.Fatal(err)
			}
			sym, _ := KendallTau(b, a)
			want := kendallNaive(a, b)
			// Both are ratios of integers < 2^53 computed with one or two
			// roundings.
			if math.Abs(got-want) > 1e-14 || math.Abs(sym-want) > 1e-14 {
				t.Fatalf("n=%d: KendallTau = %v (swapped %v), naive %v", n, got, sym, want)
			}
		}
	}
}

func TestCountInversions(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	for _, n := range []int{0, 1, 2, 3, 7, 64, 100} {
		a := Random(n, rng)
		var want int64
		for i := range n {
			for j := i + 1; j < n; j++ {
				if a[i] > a[j] {
					want++
				}
			}
		}
		s := append([]int(nil), a...)
		if got := countInversions(s, make([]int, n)); got != want {
			t.Errorf("n=%d: %d inversions, want %d", n, got, want)
		}
		for i := 1; i < n; i++ {
			if s[i-1] > s[i] {
				t.Fatalf("n=%d: not sorted: %v", n, s)
			}
		}
	}
}

func TestProportionWrongAnyWrong(t *testing.T) {
	tests := []struct {
		pred, truth Perm
		prop, any   float64
	}{
		{Perm{0, 1, 2, 3}, Perm{0, 1, 2, 3}, 0, 0},
		{Perm{1, 0, 2, 3}, Perm{0, 1, 2, 3}, 0.5, 1},
		{Perm{1, 2, 3, 0}, Perm{0, 1, 2, 3}, 1, 1},
		{Perm{0}, Perm{0}, 0, 0},
	}
	for _, tc := range tests {
		pw, err := ProportionWrong(tc.pred, tc.truth)
		if err != nil || pw != tc.prop {
			t.Errorf("ProportionWrong(%v, %v) = %v, %v; want %v", tc.pred, tc.truth, pw, err, tc.prop)
		}
		aw, err := AnyWrong(tc.pred, tc.truth)
		if err != nil || aw != tc.any {
			t.Errorf("AnyWrong(%v, %v) = %v, %v; want %v", tc.pred, tc.truth, aw, err, tc.any)
		}
	}
}

func TestMetricErrors(t *testing.T) {
	metrics := map[string]func(a, b Perm) (float64, error){
		"KendallTau": KendallTau, "ProportionWrong": ProportionWrong, "AnyWrong": AnyWrong,
	}
	bad := []struct{ a, b Perm }{
		{Perm{0, 1}, Perm{0}},
		{Perm{}, Perm{}},
		{Perm{0, 0}, Perm{0, 1}},
		{Perm{0, 1}, Perm{2, 1}},
	}
	for name, f := range metrics {
		for _, b := range bad {
			if _, err := f(b.a, b.b); err == nil {
				t.Errorf("%s(%v, %v): no error", name, b.a, b.b)
			}
		}
	}
}

func TestL1L2(t *testing.T) {
	x := []float64{0, 1, 2, -1}
	y := []float64{1, 1, 0, 1}
	if l1, err := L1(x, y); err != nil || l1 != (1.0+0+2+2)/4 {
		t.Errorf("L1 = %v, %v", l1, err)
	}
	if l2, err := L2(x, y); err != nil || l2 != (1.0+0+4+4)/4 {
		t.Errorf("L2 = %v, %v", l2, err)
	}
	if l1, _ := L1(x, x); l1 != 0 {
		t.Errorf("L1(x, x) = %v", l1)
	}
	if l2, _ := L2(x, x); l2 != 0 {
		t.Errorf("L2(x, x) = %v", l2)
	}
	if l1, _ := L1([]float64{math.NaN()}, []float64{0}); !math.IsNaN(l1) {
		t.Errorf("NaN did not propagate: %v", l1)
	}
	if _, err := L1(x, y[:3]); err == nil {
		t.Errorf("L1 length mismatch: no error")
	}
	if _, err := L2(nil, nil); err == nil {
		t.Errorf("L2 empty: no error")
	}
}
