package relax

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/internal/longtest"
	"github.com/permlab/permlab/perm"
)

// TestMatchingSparseInitBruteForce runs the brute-force comparison of
// TestMatchingBruteForce with the sparse first phase forced on (by default
// it only runs from sparseInitMinN on), so that tiny problems, where k
// covers whole rows or nearly, exercise it with every kind of instance.
func TestMatchingSparseInitBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 21))
	m := Matcher{init: initSparse}
	var total, infeasible int
	for n := 1; n <= 8; n++ {
		for k := range 150 {
			kind := k % numKinds
			x, mask := randomInstance(rng, n, kind)
			want, feasible := bruteMatch(n, x.RawMatrix().Data, mask)
			total++
			p, err := m.Solve(nil, x, mask)
			if !feasible {
				infeasible++
				if !errors.Is(err, ErrInfeasible) {
					t.Fatalf("n=%d kind=%d: infeasible, solver returned %v, %v\nx=%v", n, kind, p, err, mat.Formatted(x))
				}
				continue
			}
			if err != nil {
				t.Fatalf("n=%d kind=%d: %v\nx=%v", n, kind, err, mat.Formatted(x))
			}
			got := checkSolution(t, x, mask, p)
			tol := 0.0
			if kind == kindUniform {
				tol = 1e-14
			}
			if math.Abs(got-want) > tol {
				t.Fatalf("n=%d kind=%d: objective %v, brute force %v\nx=%v\nmask=%v p=%v", n, kind, got, want, mat.Formatted(x), mask, p)
			}
		}
	}
	if infeasible < 50 {
		t.Fatalf("only %d infeasible instances of %d", infeasible, total)
	}
}

// hardMatchingInstance draws an n×n problem of one of several kinds chosen to
// defeat the candidate guess of the sparse phase or to stress ties.
func hardMatchingInstance(rng *rand.Rand, n, kind int) (x *mat.Dense, mask *perm.Mask, integer bool) {
	x = mat.NewDense(n, n, nil)
	a := make([]float64, n)
	b := make([]float64, n)
	for i := range n {
		a[i] = float64(rng.IntN(9) - 4)
		b[i] = float64(rng.IntN(9) - 4)
	}
	integer = true
	for i := range n {
		for j := range n {
			var v float64
			switch kind {
			case 0: // uniform floats
				v, integer = rng.Float64(), false
			case 1: // few distinct integers: many optimal permutations
				v = float64(rng.IntN(3))
			case 2: // all equal
				v = 1
			case 3: // rank one, integer: sorting-like, cheapest entries useless
				v = a[i] * b[j]
			case 4: // rows sorted decreasingly: the cheapest costs come last
				v = float64(n - j + rng.IntN(3))
			case 5: // integers with 40% -Inf
				v = float64(rng.IntN(50))
				if rng.Float64() < 0.4 {
					v = math.Inf(-1)
				}
			case 6: // wide range of magnitudes
				v, integer = math.Exp(20*rng.NormFloat64()), false
			case 7: // sparse mask around a hidden permutation (set below)
				v = float64(rng.IntN(100))
			case 8: // planted: a column everyone wants
				v = float64(rng.IntN(10))
				if j == 0 {
					v = 100
				}
			case 9: // infeasible mask: Hall violation on the first rows
				v = float64(rng.IntN(10))
			}
			x.Set(i, j, v)
		}
	}
	switch kind {
	case 7:
		mask, _ = perm.NewMask(n)
		hidden := perm.Random(n, rng)
		for i := range n {
			_ = mask.Set(i, hidden[i], true)
			for range 4 {
				_ = mask.Set(i, rng.IntN(n), true)
			}
		}
	case 9:
		mask, _ = perm.FullMask(n)
		// Rows 0..4 may only take columns 0..3.
		for i := range 5 {
			for j := 4; j < n; j++ {
				_ = mask.Set(i, j, false)
			}
		}
	}
	return x, mask, integer
}

// TestMatchingSparseInitAgreement compares the two initialisations of the
// dense solver (which share the exact augmentation phase) on problems from
// 48 to 300 of every kind of hardMatchingInstance: same feasibility, same optimum.
func TestMatchingSparseInitAgreement(t *testing.T) {
	rng := rand.New(rand.NewPCG(22, 22))
	classic := Matcher{init: initClassic}
	sparse := Matcher{init: initSparse}
	var auto Matcher
	sizes := []int{48, 61, 100, 173, 300}
	if !longtest.Enabled {
		sizes = sizes[:3]
	}
	for _, n := range sizes {
		for kind := range 10 {
			for rep := range 2 {
				x, mask, integer := hardMatchingInstance(rng, n, kind)
				want, errC := classic.Solve(nil, x, mask)
				got, errS := sparse.Solve(nil, x, mask)
				if errC != nil || errS != nil {
					if !errors.Is(errC, ErrInfeasible) || !errors.Is(errS, ErrInfeasible) {
						t.Fatalf("n=%d kind=%d rep=%d: classic error %v, sparse error %v", n, kind, rep, errC, errS)
					}
					continue
				}
				if kind == 9 {
					t.Fatalf("n=%d: Hall violation not detected", n)
				}
				vc := checkSolution(t, x, mask, want)
				vs := checkSolution(t, x, mask, got)
				tol := 0.0
				if !integer {
					tol = 4 * float64(n) * 0x1p-52 * math.Abs(vc)
				}
				if math.Abs(vc-vs) > tol {
					t.Fatalf("n=%d kind=%d rep=%d: sparse start %v, classic %v (diff %g)", n, kind, rep, vs, vc, vs-vc)
				}
				if sparse.Value() != vs {
					t.Fatalf("n=%d kind=%d: Value() = %v, objective %v", n, kind, sparse.Value(), vs)
				}
				p, err := auto.Solve(nil, x, mask)
				if err != nil || !p.Equal(got) {
					t.Fatalf("n=%d kind=%d: default Matcher gave %v, %v; sparse start %v", n, kind, p, err, got)
				}
			}
		}
	}
}

func TestMatchingSparseInitAllocs(t *testing.T) {
	x := uniformMatrix(200, 9)
	var m Matcher
	dst := make(perm.Perm, 200)
	mask, _ := perm.FullMask(200)
	_ = mask.Set(3, 4, false)
	allocs := testing.AllocsPerRun(10, func() {
		_, _ = m.Solve(dst, x, nil)
		_, _ = m.Solve(dst, x, mask)
		_, _ = m.SolveRaw(dst, 200, x.RawMatrix().Data, nil)
	})
	if allocs != 0 {
		t.Errorf("repeated solves allocate %v times per run, want 0", allocs)
	}
}

func TestCheapest(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 23))
	inf := math.Inf(1)
	for trial := range 300 {
		n := 1 + rng.IntN(40)
		k := 1 + rng.IntN(12)
		ci := make([]float64, n)
		finite := 0
		for j := range ci {
			ci[j] = float64(rng.IntN(8))
			if trial%3 == 0 && rng.IntN(3) == 0 {
				ci[j] = inf
			} else {
				finite++
			}
		}
		topv := make([]float64, k)
		topc := make([]int32, k)
		cnt := rowCheapest(ci, topv, topc, trial%n)
		if cnt != min(k, finite) {
			t.Fatalf("n=%d k=%d: %d kept, want %d", n, k, cnt, min(k, finite))
		}
		// The kept entries are the cnt smallest (ties either way).
		kept := make([]bool, n)
		for _, j := range topc[:cnt] {
			if kept[j] {
				t.Fatalf("column %d kept twice", j)
			}
			kept[j] = true
		}
		for j := range n {
			for l := range n {
				// A kept entry beats every dropped finite one.
				if kept[j] && !kept[l] && ci[l] < inf {
					if ci[l] < ci[j] {
						t.Fatalf("ci=%v k=%d: kept %d (%v) but not %d (%v)", ci, k, j, ci[j], l, ci[l])
					}
				}
			}
		}
	}
}

func TestMatchingSparseInitScaling(t *testing.T) {
	// As TestMatchingLargeAndSmallMagnitudes, at sizes that use the sparse
	// phase: scaling by a power of two must not change the solution,
	// whether the matrix is read in place (no mask) or copied (mask).
	rng := rand.New(rand.NewPCG(24, 24))
	for _, n := range []int{48, 90} {
		x := mat.NewDense(n, n, nil)
		for i := range n {
			for j := range n {
				v := 1 + rng.Float64()
				if rng.IntN(2) == 0 {
					v = -v
				}
				x.Set(i, j, v)
			}
		}
		x.Set(0, n-1, math.Inf(-1))
		mask, _ := perm.FullMask(n)
		_ = mask.Set(1, 2, false)
		for _, allowed := range []*perm.Mask{nil, mask} {
			base, err := MatchingMasked(x, allowed)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range []int{-1000, -500, 500, 1000, 1022} {
				var y mat.Dense
				y.Scale(math.Ldexp(1, e), x)
				p, err := MatchingMasked(&y, allowed)
				if err != nil {
					t.Fatalf("n=%d scale 2^%d: %v", n, e, err)
				}
				if !p.Equal(base) {
					t.Errorf("n=%d mask=%v scale 2^%d: %v, unscaled %v", n, allowed != nil, e, p, base)
				}
			}
		}
	}
}

func TestMatchingSparseInitLarge(t *testing.T) {
	// Above 512 the rows get more candidates (initBlocks); compare with
	// the classic initialisation on uniform floats and on ties.
	longtest.Skip(t, "n = 600")
	rng := rand.New(rand.NewPCG(25, 25))
	classic := Matcher{init: initClassic}
	var auto Matcher
	for _, kind := range []int{0, 1} {
		x, _, integer := hardMatchingInstance(rng, 600, kind)
		want, err := classic.Solve(nil, x, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := auto.Solve(nil, x, nil)
		if err != nil {
			t.Fatal(err)
		}
		vc, vs := checkSolution(t, x, nil, want), checkSolution(t, x, nil, got)
		tol := 0.0
		if !integer {
			tol = 4 * 600 * 0x1p-52 * math.Abs(vc)
		}
		if math.Abs(vc-vs) > tol {
			t.Errorf("kind %d: objective %v, classic %v", kind, vs, vc)
		}
	}
}

func TestMatchingSparseInitRandom(t *testing.T) {
	// Many mid-sized problems mixing the features the sparse phase must
	// survive (row offsets, ties, -Inf, masks, NaN hidden by masks),
	// solved with the sparse phase forced and by default, against the
	// classic initialisation.
	rng := rand.New(rand.NewPCG(26, 26))
	classic := Matcher{init: initClassic}
	sparse := Matcher{init: initSparse}
	var auto Matcher
	count := 300
	if !longtest.Enabled {
		count = 60
	}
	for k := range count {
		n := 24 + rng.IntN(60)
		x, mask, integer := hardMatchingInstance(rng, n, k%10)
		if k%3 == 0 {
			// Row offsets: the rows' scales differ.
			for i := range n {
				off := float64(rng.IntN(1000) - 500)
				for j := range n {
					x.Set(i, j, x.At(i, j)+off)
				}
			}
		}
		if k%7 == 0 && mask == nil {
			mask, _ = perm.FullMask(n)
			for range n {
				i, j := rng.IntN(n), rng.IntN(n)
				_ = mask.Set(i, j, false)
				x.Set(i, j, math.NaN()) // hidden by the mask
			}
		}
		want, errC := classic.Solve(nil, x, mask)
		for _, m := range []*Matcher{&sparse, &auto} {
			got, err := m.Solve(nil, x, mask)
			if errC != nil || err != nil {
				if !errors.Is(errC, ErrInfeasible) || !errors.Is(err, ErrInfeasible) {
					t.Fatalf("k=%d n=%d: classic error %v, other %v", k, n, errC, err)
				}
				continue
			}
			vc, vs := checkSolution(t, x, mask, want), checkSolution(t, x, mask, got)
			tol := 0.0
			if !integer {
				tol = 4 * float64(n) * 0x1p-52 * (math.Abs(vc) + 500*float64(n))
			}
			if math.Abs(vc-vs) > tol {
				t.Fatalf("k=%d n=%d kind=%d: objective %v, classic %v", k, n, k%10, vs, vc)
			}
		}
	}
}
