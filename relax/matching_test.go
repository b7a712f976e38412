package relax

import (
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/internal/longtest"
	"github.com/permlab/permlab/perm"
)

// bruteMatch returns the largest Σ_i x[i*n+p[i]] over the permutations p
// whose entries are allowed and not -Inf, summed in row order like
// Objective, and whether any such permutation exists.
func bruteMatch(n int, x []float64, allowed *perm.Mask) (best float64, found bool) {
	best = math.Inf(-1)
	var rec func(i int, used uint32, s float64)
	rec = func(i int, used uint32, s float64) {
		if i == n {
			if !found || s > best {
				best, found = s, true
			}
			return
		}
		for j := 0; j < n; j++ {
			if used&(1<<j) != 0 || math.IsInf(x[i*n+j], -1) {
				continue
			}
			if allowed != nil && !allowed.Allowed(i, j) {
				continue
			}
			rec(i+1, used|1<<j, s+x[i*n+j])
		}
	}
	rec(0, 0, 0)
	return best, found
}

// checkSolution verifies that p is a permutation that avoids forbidden
// entries and returns its objective.
func checkSolution(t *testing.T, x *mat.Dense, allowed *perm.Mask, p perm.Perm) float64 {
	t.Helper()
	n, _ := x.Dims()
	if len(p) != n {
		t.Fatalf("solution has length %d, want %d", len(p), n)
	}
	if err := p.Validate(); err != nil {
		t.Fatalf("solution %v: %v", p, err)
	}
	for i, j := range p {
		if math.IsInf(x.At(i, j), -1) || (allowed != nil && !allowed.Allowed(i, j)) {
			t.Fatalf("solution %v uses forbidden entry (%d, %d)", p, i, j)
		}
	}
	v, err := Objective(x, p)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// instance kinds for the brute-force comparison.
const (
	kindUniform   = iota // uniform floats in [-1, 1)
	kindTies             // integers in {0, 1, 2}: many optimal permutations
	kindNegInf           // integers, about 35% of entries -Inf
	kindMask             // integers, mask allowing about 55% of entries
	kindMaskInf          // both mask and -Inf
	kindRowStruct        // x[i][j] = a[i]·b[j] (sorting-like), integer-valued
	numKinds
)

func randomInstance(rng *rand.Rand, n, kind int) (*mat.Dense, *perm.Mask) {
	x := mat.NewDense(n, n, nil)
	var mask *perm.Mask
	if kind == kindMask || kind == kindMaskInf {
		mask, _ = perm.NewMask(n)
	}
	a := make([]float64, n)
	b := make([]float64, n)
	for i := range n {
		a[i] = float64(rng.IntN(5) - 2)
		b[i] = float64(rng.IntN(5) - 2)
	}
	for i := range n {
		for j := range n {
			var v float64
			switch kind {
			case kindUniform:
				v = 2*rng.Float64() - 1
			case kindRowStruct:
				v = a[i] * b[j]
			case kindTies:
				v = float64(rng.IntN(3))
			default:
				v = float64(rng.IntN(7) - 3)
			}
			if (kind == kindNegInf || kind == kindMaskInf) && rng.Float64() < 0.35 {
				v = math.Inf(-1)
			}
			if mask != nil {
				_ = mask.Set(i, j, rng.Float64() < 0.55)
			}
			x.Set(i, j, v)
		}
	}
	return x, mask
}

func TestMatchingBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	// Instances per size: 1470 in total (≥ 1000 required), n = 8 brute
	// force costs 8! leaves, so fewer there.
	perSize := map[int]int{1: 60, 2: 180, 3: 240, 4: 240, 5: 240, 6: 240, 7: 150, 8: 120}
	var m Matcher
	var total, infeasible, ties int
	for n := 1; n <= 8; n++ {
		for k := 0; k < perSize[n]; k++ {
			kind := k % numKinds
			x, mask := randomInstance(rng, n, kind)
			want, feasible := bruteMatch(n, x.RawMatrix().Data, mask)
			total++

			var p perm.Perm
			var err error
			switch k % 3 {
			case 0:
				p, err = MatchingMasked(x, mask)
			case 1:
				p, err = m.Solve(nil, x, mask)
			default:
				p, err = m.SolveRaw(nil, n, x.RawMatrix().Data, mask)
			}
			if mask == nil && k%2 == 0 {
				p, err = Matching(x)
			}
			if !feasible {
				infeasible++
				if !errors.Is(err, ErrInfeasible) {
					t.Fatalf("n=%d kind=%d: brute force finds no feasible permutation, solver returned %v, %v\nx=%v", n, kind, p, err, mat.Formatted(x))
				}
				continue
			}
			if err != nil {
				t.Fatalf("n=%d kind=%d: %v (brute force optimum %v)\nx=%v", n, kind, err, want, mat.Formatted(x))
			}
			got := checkSolution(t, x, mask, p)
			tol := 0.0 // integer instances: all sums are exact
			if kind == kindUniform {
				// Different permutations summed in row order: a few ulps
				// of a sum of at most 8 terms of magnitude < 1.
				tol = 1e-14
			}
			if math.Abs(got-want) > tol {
				t.Fatalf("n=%d kind=%d: objective %v, brute force %v\nx=%v\nmask=%v p=%v", n, kind, got, want, mat.Formatted(x), mask, p)
			}
			if kind == kindTies {
				ties++
			}
		}
	}
	if total < 1000 || infeasible < 50 {
		t.Fatalf("too few instances: %d total, %d infeasible", total, infeasible)
	}
	t.Logf("%d instances, %d infeasible, %d tie-heavy", total, infeasible, ties)
}

// hungarian is an independent, textbook O(n³) Kuhn-Munkres for the
// minimisation problem (potentials u, v and one Dijkstra-like sweep per
// row, 1-based with a virtual column 0). It returns the column of each row.
func hungarian(n int, c func(i, j int) float64) []int {
	inf := math.Inf(1)
	u := make([]float64, n+1)
	v := make([]float64, n+1)
	owner := make([]int, n+1) // owner[j] = row (1-based) matched to column j
	way := make([]int, n+1)
	for i := 1; i <= n; i++ {
		owner[0] = i
		j0 := 0
		minv := make([]float64, n+1)
		used := make([]bool, n+1)
		for j := range minv {
			minv[j] = inf
		}
		for {
			used[j0] = true
			i0 := owner[j0]
			delta, j1 := inf, 0
			for j := 1; j <= n; j++ {
				if used[j] {
					continue
				}
				cur := c(i0-1, j-1) - u[i0] - v[j]
				if cur < minv[j] {
					minv[j], way[j] = cur, j0
				}
				if minv[j] < delta {
					delta, j1 = minv[j], j
				}
			}
			for j := 0; j <= n; j++ {
				if used[j] {
					u[owner[j]] += delta
					v[j] -= delta
				} else {
					minv[j] -= delta
				}
			}
			j0 = j1
			if owner[j0] == 0 {
				break
			}
		}
		for j0 != 0 {
			j1 := way[j0]
			owner[j0] = owner[j1]
			j0 = j1
		}
	}
	rowTo := make([]int, n)
	for j := 1; j <= n; j++ {
		rowTo[owner[j]-1] = j - 1
	}
	return rowTo
}

func TestMatchingAgainstHungarian(t *testing.T) {
	sizes := []int{9, 31, 100, 157, 300}
	if !longtest.Enabled {
		sizes = []int{9, 31, 100}
	}
	rng := rand.New(rand.NewPCG(2, 2))
	var m Matcher
	for _, n := range sizes {
		for kind := 0; kind < 4; kind++ {
			x := mat.NewDense(n, n, nil)
			var mask *perm.Mask
			const penalty = 1e9
			var hidden perm.Perm
			for i := range n {
				for j := range n {
					var v float64
					switch kind {
					case 0: // uniform floats
						v = rng.Float64()
					case 1: // integers with many ties
						v = float64(rng.IntN(4))
					case 2: // wide range of magnitudes
						v = math.Exp(20 * rng.NormFloat64())
					case 3: // sparse mask, always feasible
						v = float64(rng.IntN(100))
					}
					x.Set(i, j, v)
				}
			}
			if kind == 3 {
				// Each row allows ~5 columns plus one hidden permutation,
				// so a perfect matching exists; the reference solver sees
				// forbidden entries as a penalty no optimum can afford.
				mask, _ = perm.NewMask(n)
				hidden = perm.Random(n, rng)
				for i := range n {
					_ = mask.Set(i, hidden[i], true)
					for range 5 {
						_ = mask.Set(i, rng.IntN(n), true)
					}
				}
			}
			ref := hungarian(n, func(i, j int) float64 {
				if mask != nil && !mask.Allowed(i, j) {
					return penalty
				}
				return -x.At(i, j)
			})
			refPerm := perm.Perm(ref)
			want := checkSolution(t, x, mask, refPerm)

			p, err := m.Solve(nil, x, mask)
			if err != nil {
				t.Fatalf("n=%d kind=%d: %v", n, kind, err)
			}
			got := checkSolution(t, x, mask, p)
			if m.Value() != got {
				t.Errorf("n=%d kind=%d: Value() = %v, Objective = %v", n, kind, m.Value(), got)
			}
			// Floats: two different optimal (or rounding-tied) permutations
			// summed in row order differ by rounding of n terms, ≲ n·ulp of
			// the total. Integers are exact.
			tol := 0.0
			if kind == 0 || kind == 2 {
				tol = 4 * float64(n) * 0x1p-52 * math.Abs(want)
			}
			if math.Abs(got-want) > tol {
				t.Errorf("n=%d kind=%d: objective %v, Hungarian %v (diff %g, tol %g)", n, kind, got, want, got-want, tol)
			}
		}
	}
}

func TestMatchingLargeAndSmallMagnitudes(t *testing.T) {
	// Scaling the input by a power of two must not change the solution:
	// the solver either works on the scaled numbers directly (exact
	// arithmetic up to the exponent) or rescales them by a power of two
	// itself. Without that rescaling, entries near MaxFloat64 overflow the
	// prices and entries near the subnormal range lose their differences.
	rng := rand.New(rand.NewPCG(3, 3))
	for _, n := range []int{2, 5, 40} {
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
		base, err := Matching(x)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range []int{-1060, -1000, -500, 500, 1000, 1022} {
			var y mat.Dense
			y.Scale(math.Ldexp(1, e), x)
			p, err := Matching(&y)
			if err != nil {
				t.Fatalf("n=%d scale 2^%d: %v", n, e, err)
			}
			if !p.Equal(base) {
				// 2^-1060 makes the entries subnormal and rounds them, so
				// only optimality of the rounded problem can be asked of it.
				if e == -1060 {
					continue
				}
				t.Errorf("n=%d scale 2^%d: %v, unscaled %v", n, e, p, base)
			}
		}
	}
	// Extreme opposite entries: ±MaxFloat64 in one matrix.
	big := math.MaxFloat64
	x := mat.NewDense(3, 3, []float64{
		big, -big, 0,
		-big, 1, big,
		0, big, -big,
	})
	p, err := Matching(x)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Equal(perm.Perm{0, 2, 1}) {
		t.Errorf("extreme matrix: got %v, want [0 2 1]", p)
	}
}

func TestMatchingErrors(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	mask2, _ := perm.NewMask(2)
	_ = mask2.Set(0, 0, true)
	_ = mask2.Set(1, 0, true) // both rows want column 0 only
	mask3, _ := perm.FullMask(3)
	maskHall, _ := perm.FullMask(4)
	// Rows 0, 1, 2 may only use columns 0 and 1: Hall's condition fails
	// although every row and column has allowed entries.
	for i := range 3 {
		_ = maskHall.Set(i, 2, false)
		_ = maskHall.Set(i, 3, false)
	}
	ninf := math.Inf(-1)
	tests := []struct {
		name       string
		x          mat.Matrix
		mask       *perm.Mask
		infeasible bool
	}{
		{"non-square", mat.NewDense(2, 3, nil), nil, false},
		{"NaN", mat.NewDense(2, 2, []float64{0, nan, 0, 0}), nil, false},
		{"+Inf", mat.NewDense(2, 2, []float64{0, 0, inf, 0}), nil, false},
		{"mask size mismatch", mat.NewDense(2, 2, nil), mask3, false},
		{"nil matrix", nil, nil, false},
		{"row all -Inf", mat.NewDense(2, 2, []float64{ninf, ninf, 0, 0}), nil, true},
		{"column all -Inf", mat.NewDense(2, 2, []float64{ninf, 0, ninf, 0}), nil, true},
		{"1x1 -Inf", mat.NewDense(1, 1, []float64{ninf}), nil, true},
		{"mask column conflict", mat.NewDense(2, 2, nil), mask2, true},
		{"Hall violation", mat.NewDense(4, 4, nil), maskHall, true},
		{"Hall violation via -Inf", mat.NewDense(3, 3, []float64{
			0, ninf, ninf,
			0, ninf, ninf,
			0, 0, 0}), nil, true},
	}
	var m Matcher
	for _, tc := range tests {
		for _, call := range []func() (perm.Perm, error){
			func() (perm.Perm, error) { return MatchingMasked(tc.x, tc.mask) },
			func() (perm.Perm, error) { return m.Solve(nil, tc.x, tc.mask) },
		} {
			p, err := call()
			if err == nil {
				t.Errorf("%s: no error, got %v", tc.name, p)
				continue
			}
			if errors.Is(err, ErrInfeasible) != tc.infeasible {
				t.Errorf("%s: error %q, infeasible=%v expected", tc.name, err, tc.infeasible)
			}
		}
		if tc.mask == nil && tc.x != nil {
			if _, err := Matching(tc.x); err == nil {
				t.Errorf("%s: Matching: no error", tc.name)
			}
		}
	}
	// A NaN or +Inf hidden by the mask is never used, so it is accepted.
	maskDiag, _ := perm.NewMask(2)
	_ = maskDiag.Set(0, 0, true)
	_ = maskDiag.Set(1, 1, true)
	p, err := MatchingMasked(mat.NewDense(2, 2, []float64{1, nan, inf, 2}), maskDiag)
	if err != nil || !p.Equal(perm.Perm{0, 1}) {
		t.Errorf("masked NaN/+Inf: got %v, %v", p, err)
	}
	if _, err := m.SolveRaw(nil, 3, make([]float64, 8), nil); err == nil {
		t.Errorf("SolveRaw with short data: no error")
	}
	if _, err := m.SolveRaw(nil, -1, nil, nil); err == nil {
		t.Errorf("SolveRaw with negative n: no error")
	}
	if _, err := Objective(mat.NewDense(2, 2, nil), perm.Perm{0}); err == nil {
		t.Errorf("Objective length mismatch: no error")
	}
	if _, err := Objective(mat.NewDense(2, 2, nil), perm.Perm{1, 1}); err == nil {
		t.Errorf("Objective invalid perm: no error")
	}
	if _, err := MatchingBatchMasked([]mat.Matrix{mat.NewDense(1, 1, nil)}, []*perm.Mask{nil, nil}); err == nil {
		t.Errorf("MatchingBatchMasked length mismatch: no error")
	}
}

func TestMatchingEmptyAndTrivial(t *testing.T) {
	p, err := Matching(&mat.Dense{})
	if err != nil || p == nil || len(p) != 0 {
		t.Errorf("0×0: got %#v, %v", p, err)
	}
	var m Matcher
	p, err = m.SolveRaw(nil, 0, nil, nil)
	if err != nil || len(p) != 0 || m.Value() != 0 {
		t.Errorf("SolveRaw 0×0: got %#v, %v", p, err)
	}
	p, err = Matching(mat.NewDense(1, 1, []float64{-3}))
	if err != nil || !p.Equal(perm.Perm{0}) {
		t.Errorf("1×1: got %v, %v", p, err)
	}
	// Diagonal dominance: the identity is the unique optimum.
	x := mat.NewDense(4, 4, nil)
	for i := range 4 {
		x.Set(i, i, 10)
	}
	p, err = Matching(x)
	if err != nil || !p.Equal(perm.Identity(4)) {
		t.Errorf("diagonal: got %v, %v", p, err)
	}
	// Recovering a planted permutation: x = P + noise.
	rng := rand.New(rand.NewPCG(4, 4))
	truth := perm.Random(50, rng)
	x = mat.NewDense(50, 50, nil)
	for i := range 50 {
		for j := range 50 {
			x.Set(i, j, 0.1*rng.NormFloat64())
		}
		x.Set(i, truth[i], x.At(i, truth[i])+10)
	}
	p, err = Matching(x)
	if err != nil || !p.Equal(truth) {
		t.Errorf("planted permutation not recovered: %v", err)
	}
	// Non-Dense matrix types go through At: a transpose.
	pt, err := Matching(x.T())
	if err != nil {
		t.Fatal(err)
	}
	inv, _ := truth.Inverse()
	if !pt.Equal(inv) {
		t.Errorf("transpose: got %v, want inverse of truth", pt)
	}
}

func TestMatcherReuseAndAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	var m Matcher
	// Alternate sizes: stale workspace must not leak between solves.
	for _, n := range []int{7, 30, 3, 30, 1, 12} {
		x, _ := randomInstance(rng, n, kindUniform)
		fresh, err := Matching(x)
		if err != nil {
			t.Fatal(err)
		}
		p, err := m.Solve(nil, x, nil)
		if err != nil || !p.Equal(fresh) {
			t.Fatalf("n=%d: reused Matcher gave %v, %v; fresh %v", n, p, err, fresh)
		}
	}
	// Failed solves leave the Matcher usable.
	bad := mat.NewDense(2, 2, []float64{math.Inf(-1), math.Inf(-1), 0, 0})
	if _, err := m.Solve(nil, bad, nil); err == nil {
		t.Fatal("infeasible: no error")
	}
	x, _ := randomInstance(rng, 40, kindUniform)
	dst := make(perm.Perm, 40)
	want, _ := Matching(x)
	got, err := m.Solve(dst, x, nil)
	if err != nil || !got.Equal(want) || &got[0] != &dst[0] {
		t.Fatalf("Solve into dst: %v, %v", got, err)
	}
	mask, _ := perm.FullMask(40)
	allocs := testing.AllocsPerRun(20, func() {
		_, _ = m.Solve(dst, x, mask)
		_, _ = m.SolveRaw(dst, 40, x.RawMatrix().Data, nil)
	})
	if allocs != 0 {
		t.Errorf("repeated solves allocate %v times per run, want 0", allocs)
	}
}

func TestMatchingBatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	const k = 23
	xs := make([]mat.Matrix, k)
	masks := make([]*perm.Mask, k)
	for i := range xs {
		x, mask := randomInstance(rng, 3+i%9, kindMask)
		// Guarantee feasibility with the identity.
		for j := range 3 + i%9 {
			_ = mask.Set(j, j, true)
		}
		xs[i], masks[i] = x, mask
	}
	old := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(old)
	var first []perm.Perm
	for _, procs := range []int{1, 2, 5} {
		runtime.GOMAXPROCS(procs)
		ps, err := MatchingBatchMasked(xs, masks)
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range ps {
			want, _ := MatchingMasked(xs[i], masks[i])
			if !p.Equal(want) {
				t.Fatalf("GOMAXPROCS=%d item %d: %v, sequential %v", procs, i, p, want)
			}
		}
		if first == nil {
			first = ps
		}
		plain, err := MatchingBatch(xs)
		if err != nil || len(plain) != k {
			t.Fatalf("MatchingBatch: %v", err)
		}
	}
	// Errors: the lowest failing index is reported.
	xs[4] = mat.NewDense(2, 3, nil)
	xs[9] = mat.NewDense(1, 1, []float64{math.NaN()})
	if _, err := MatchingBatch(xs); err == nil || !strings.Contains(err.Error(), "matrix 4") {
		t.Errorf("batch error %v should name matrix 4", err)
	}
	xs[4] = nil
	if _, err := MatchingBatch(xs); err == nil {
		t.Errorf("nil matrix in batch: no error")
	}
	if ps, err := MatchingBatch(nil); err != nil || len(ps) != 0 {
		t.Errorf("empty batch: %v, %v", ps, err)
	}
}
