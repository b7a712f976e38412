package relax

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/internal/longtest"
	"github.com/permlab/permlab/perm"
)

// shuffleSparseRows permutes the candidates within each row of s (in place),
// so that the solver cannot rely on sorted columns.
func shuffleSparseRows(s *SparseScores, rng *rand.Rand) {
	for i := range s.N {
		lo, hi := s.RowPtr[i], s.RowPtr[i+1]
		rng.Shuffle(hi-lo, func(a, b int) {
			s.Cols[lo+a], s.Cols[lo+b] = s.Cols[lo+b], s.Cols[lo+a]
			s.Vals[lo+a], s.Vals[lo+b] = s.Vals[lo+b], s.Vals[lo+a]
		})
	}
}

// checkSparseSolution verifies that p is a permutation of candidates of s
// and returns its objective.
func checkSparseSolution(t *testing.T, s *SparseScores, p perm.Perm) float64 {
	t.Helper()
	v, err := s.Objective(p)
	if err != nil {
		t.Fatalf("solution %v: %v", p, err)
	}
	if math.IsInf(v, -1) {
		t.Fatalf("solution %v uses a -Inf candidate", p)
	}
	return v
}

// maskedSparseInstance draws an n×n dense problem with a mask of the given
// density (probability of each entry), optionally with the identity forced
// in (feasible), integer scores with many ties, or -Inf entries.
func maskedSparseInstance(rng *rand.Rand, n int, density float64, kind int, forceDiag bool) (*mat.Dense, *perm.Mask) {
	x := mat.NewDense(n, n, nil)
	mask, _ := perm.NewMask(n)
	for i := range n {
		for j := range n {
			var v float64
			switch kind {
			case 0: // uniform floats
				v = 2*rng.Float64() - 1
			case 1: // small integers: many optimal permutations
				v = float64(rng.IntN(3))
			case 2: // integers and some -Inf
				v = float64(rng.IntN(21) - 10)
				if rng.Float64() < 0.2 {
					v = math.Inf(-1)
				}
			default: // wide range of magnitudes
				v = math.Exp(10 * rng.NormFloat64())
			}
			x.Set(i, j, v)
			_ = mask.Set(i, j, rng.Float64() < density || (forceDiag && i == j))
		}
	}
	return x, mask
}

func TestMatchingSparseAgainstDense(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 11))
	densities := []float64{0.03, 0.08, 0.15, 0.3, 0.6, 1}
	var sm SparseMatcher
	var total, infeasible, ties int
	maxN := 60
	if !longtest.Enabled {
		maxN = 30
	}
	for n := 1; n <= maxN; n++ {
		for di, density := range densities {
			for kind := range 4 {
				forceDiag := (n+di+kind)%3 != 0
				x, mask := maskedSparseInstance(rng, n, density, kind, forceDiag)
				s, err := NewSparseScores(x, mask)
				if err != nil {
					t.Fatal(err)
				}
				shuffleSparseRows(&s, rng)
				total++
				want, derr := MatchingMasked(x, mask)
				var p perm.Perm
				if total%2 == 0 {
					p, err = MatchingSparse(s)
				} else {
					p, err = sm.Solve(nil, &s)
				}
				if derr != nil {
					if !errors.Is(derr, ErrInfeasible) {
						t.Fatalf("n=%d: dense solver: %v", n, derr)
					}
					infeasible++
					if !errors.Is(err, ErrInfeasible) {
						t.Fatalf("n=%d density=%v kind=%d: dense infeasible (%v), sparse gave %v, %v", n, density, kind, derr, p, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("n=%d density=%v kind=%d: %v (dense solved it)", n, density, kind, err)
				}
				got := checkSparseSolution(t, &s, p)
				ref := checkSolution(t, x, mask, want)
				if total%2 == 1 && sm.Value() != got {
					t.Fatalf("n=%d: Value() = %v, Objective = %v", n, sm.Value(), got)
				}
				tol := 0.0 // integers: every sum is exact
				switch kind {
				case 0:
					tol = 4 * float64(n) * 0x1p-52 * float64(n)
				case 3:
					tol = 4 * float64(n) * 0x1p-52 * math.Abs(ref)
				default:
					if !p.Equal(want) {
						ties++
					}
				}
				if math.Abs(got-ref) > tol {
					t.Fatalf("n=%d density=%v kind=%d: objective %v, dense %v (diff %g)\np=%v\nwant=%v",
						n, density, kind, got, ref, got-ref, p, want)
				}
			}
		}
	}
	if infeasible < 50 || ties < 20 || total-infeasible < 500 {
		t.Fatalf("weak test: %d instances, %d infeasible, %d tied with another optimum", total, infeasible, ties)
	}
	t.Logf("%d instances, %d infeasible, %d integer instances with a different optimal permutation", total, infeasible, ties)
}

// bandedSparseScores returns an n×n candidate graph with about k candidates per
// row: the diagonal and k-1 distinct random columns within ±w of it, with
// scores uniform on [0, 1) (integers in [0, 100) if integer).
func bandedSparseScores(n, k, w int, seed uint64, integer bool) SparseScores {
	rng := rand.New(rand.NewPCG(seed, uint64(n)))
	s := SparseScores{N: n, RowPtr: make([]int, n+1)}
	s.Cols = make([]int, 0, n*k)
	s.Vals = make([]float64, 0, n*k)
	seen := make(map[int]bool, k)
	for i := range n {
		clear(seen)
		lo, hi := max(0, i-w), min(n, i+w+1)
		want := min(k, hi-lo)
		add := func(j int) {
			if seen[j] {
				return
			}
			seen[j] = true
			s.Cols = append(s.Cols, j)
			if integer {
				s.Vals = append(s.Vals, float64(rng.IntN(100)))
			} else {
				s.Vals = append(s.Vals, rng.Float64())
			}
		}
		add(i)
		for len(seen) < want {
			add(lo + rng.IntN(hi-lo))
		}
		s.RowPtr[i+1] = len(s.Cols)
	}
	return s
}

// sparseToDense returns the dense matrix and mask of s.
func sparseToDense(s *SparseScores) (*mat.Dense, *perm.Mask) {
	x := mat.NewDense(s.N, s.N, nil)
	mask, _ := perm.NewMask(s.N)
	for i := range s.N {
		for e := s.RowPtr[i]; e < s.RowPtr[i+1]; e++ {
			x.Set(i, s.Cols[e], s.Vals[e])
			_ = mask.Set(i, s.Cols[e], true)
		}
	}
	return x, mask
}

func TestMatchingSparseBanded(t *testing.T) {
	// Larger position-mask-like instances against the dense solver.
	for _, tc := range []struct {
		n, k, w int
		integer bool
	}{
		{200, 10, 20, false},
		{300, 30, 50, true},
		{500, 5, 8, true},
		{400, 3, 400, false},
	} {
		s := bandedSparseScores(tc.n, tc.k, tc.w, 7, tc.integer)
		x, mask := sparseToDense(&s)
		want, err := MatchingMasked(x, mask)
		if err != nil {
			t.Fatal(err)
		}
		p, err := MatchingSparse(s)
		if err != nil {
			t.Fatal(err)
		}
		got := checkSparseSolution(t, &s, p)
		ref := checkSolution(t, x, mask, want)
		tol := 0.0
		if !tc.integer {
			tol = 4 * float64(tc.n) * 0x1p-52 * math.Abs(ref)
		}
		if math.Abs(got-ref) > tol {
			t.Errorf("n=%d k=%d w=%d: objective %v, dense %v", tc.n, tc.k, tc.w, got, ref)
		}
	}
}

func TestMatchingSparseScaling(t *testing.T) {
	// A power-of-two scaling of the scores must not change the solution.
	s := bandedSparseScores(60, 6, 10, 3, false)
	for e := range s.Vals {
		if e%2 == 0 {
			s.Vals[e] = -s.Vals[e] - 1
		}
	}
	base, err := MatchingSparse(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range []int{-1000, -500, 500, 1000, 1022} {
		y := s
		y.Vals = make([]float64, len(s.Vals))
		for e, v := range s.Vals {
			y.Vals[e] = math.Ldexp(v, sc)
		}
		p, err := MatchingSparse(y)
		if err != nil {
			t.Fatalf("scale 2^%d: %v", sc, err)
		}
		if !p.Equal(base) {
			t.Errorf("scale 2^%d: %v, unscaled %v", sc, p, base)
		}
	}
	big := math.MaxFloat64
	x := mat.NewDense(3, 3, []float64{
		big, -big, 0,
		-big, 1, big,
		0, big, -big,
	})
	sx, _ := NewSparseScores(x, nil)
	p, err := MatchingSparse(sx)
	if err != nil || !p.Equal(perm.Perm{0, 2, 1}) {
		t.Errorf("extreme matrix: got %v, %v; want [0 2 1]", p, err)
	}
}

func TestMatchingSparseErrors(t *testing.T) {
	nan, inf, ninf := math.NaN(), math.Inf(1), math.Inf(-1)
	good := func() SparseScores {
		return SparseScores{N: 2, RowPtr: []int{0, 2, 4}, Cols: []int{0, 1, 1, 0}, Vals: []float64{1, 2, 3, 4}}
	}
	tests := []struct {
		name       string
		edit       func(s *SparseScores)
		infeasible bool
		structural bool // also reported by Validate
	}{
		{"negative N", func(s *SparseScores) { s.N = -1 }, false, true},
		{"short RowPtr", func(s *SparseScores) { s.RowPtr = s.RowPtr[:2] }, false, true},
		{"RowPtr[0] != 0", func(s *SparseScores) { s.RowPtr[0] = 1 }, false, true},
		{"decreasing RowPtr", func(s *SparseScores) { s.RowPtr = []int{0, 3, 2}; s.Cols = s.Cols[:2]; s.Vals = s.Vals[:2] }, false, true},
		{"negative RowPtr", func(s *SparseScores) { s.RowPtr = []int{0, -1, 4} }, false, true},
		{"RowPtr[N] != len", func(s *SparseScores) { s.RowPtr[2] = 3 }, false, true},
		{"Vals length", func(s *SparseScores) { s.Vals = s.Vals[:3] }, false, true},
		{"column out of range", func(s *SparseScores) { s.Cols[1] = 2 }, false, true},
		{"negative column", func(s *SparseScores) { s.Cols[1] = -1 }, false, true},
		{"duplicate column", func(s *SparseScores) { s.Cols[1] = 0 }, false, true},
		{"NaN", func(s *SparseScores) { s.Vals[2] = nan }, false, false},
		{"+Inf", func(s *SparseScores) { s.Vals[0] = inf }, false, false},
		{"empty row", func(s *SparseScores) { s.RowPtr = []int{0, 0, 2}; s.Cols, s.Vals = s.Cols[:2], s.Vals[:2] }, true, false},
		{"row of -Inf", func(s *SparseScores) { s.Vals[0], s.Vals[1] = ninf, ninf }, true, false},
		{"column without candidate", func(s *SparseScores) {
			s.Cols[0], s.Cols[1] = 1, 0
			s.Cols[2], s.Cols[3] = 1, 0
			s.Vals[1], s.Vals[3] = ninf, ninf
		}, true, false},
		{"two rows one column", func(s *SparseScores) {
			s.RowPtr = []int{0, 1, 2}
			s.Cols, s.Vals = []int{0, 0}, []float64{1, 2}
		}, true, false},
	}
	var sm SparseMatcher
	for _, tc := range tests {
		s := good()
		tc.edit(&s)
		for k, call := range []func() (perm.Perm, error){
			func() (perm.Perm, error) { return MatchingSparse(s) },
			func() (perm.Perm, error) { return sm.Solve(nil, &s) },
		} {
			p, err := call()
			if err == nil {
				t.Errorf("%s (%d): no error, got %v", tc.name, k, p)
				continue
			}
			if errors.Is(err, ErrInfeasible) != tc.infeasible {
				t.Errorf("%s (%d): error %q, infeasible=%v expected", tc.name, k, err, tc.infeasible)
			}
		}
		if err := s.Validate(); (err != nil) != tc.structural {
			t.Errorf("%s: Validate() = %v", tc.name, err)
		}
	}
	// Hall violation: rows 0-2 share columns 0 and 1 although every row
	// and column has candidates.
	s := SparseScores{N: 4, RowPtr: []int{0, 2, 4, 6, 10},
		Cols: []int{0, 1, 1, 0, 0, 1, 0, 1, 2, 3},
		Vals: []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}}
	if _, err := MatchingSparse(s); !errors.Is(err, ErrInfeasible) {
		t.Errorf("Hall violation: %v", err)
	}
	if _, err := sm.Solve(nil, nil); err == nil {
		t.Errorf("nil SparseScores: no error")
	}
	// A solve after failures still works, and a 0×0 problem gives an empty
	// Perm.
	g := good()
	p, err := sm.Solve(nil, &g)
	if err != nil || !p.Equal(perm.Perm{1, 0}) || sm.Value() != 6 {
		t.Errorf("good problem after errors: %v, %v, value %v", p, err, sm.Value())
	}
	p, err = MatchingSparse(SparseScores{RowPtr: []int{0}})
	if err != nil || p == nil || len(p) != 0 {
		t.Errorf("0×0: %#v, %v", p, err)
	}
	// Objective errors.
	if _, err := g.Objective(perm.Perm{0}); err == nil {
		t.Errorf("Objective length mismatch: no error")
	}
	if _, err := g.Objective(perm.Perm{1, 1}); err == nil {
		t.Errorf("Objective invalid perm: no error")
	}
	g.Cols[0], g.Cols[1] = 1, 1
	if _, err := g.Objective(perm.Perm{0, 1}); err == nil {
		t.Errorf("Objective of a non-candidate: no error")
	}
}

func TestNewSparseScores(t *testing.T) {
	ninf := math.Inf(-1)
	x := mat.NewDense(3, 3, []float64{
		1, ninf, 3,
		4, 5, 6,
		7, 8, math.NaN(),
	})
	mask, _ := perm.FullMask(3)
	_ = mask.Set(1, 1, false)
	_ = mask.Set(2, 2, false) // hides the NaN
	for _, m := range []mat.Matrix{x, x.T().T(), mat.DenseCopyOf(x.T()).T()} {
		s, err := NewSparseScores(m, mask)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Validate(); err != nil {
			t.Fatal(err)
		}
		wantPtr, wantCols := []int{0, 2, 4, 6}, []int{0, 2, 0, 2, 0, 1}
		wantVals := []float64{1, 3, 4, 6, 7, 8}
		if s.N != 3 || !slices.Equal(s.RowPtr, wantPtr) || !slices.Equal(s.Cols, wantCols) || !slices.Equal(s.Vals, wantVals) {
			t.Errorf("got %+v", s)
		}
		p, err := MatchingSparse(s)
		want, derr := MatchingMasked(x, mask)
		if err != nil || derr != nil || !p.Equal(want) {
			t.Errorf("sparse %v, %v; dense %v, %v", p, err, want, derr)
		}
	}
	if _, err := NewSparseScores(nil, nil); err == nil {
		t.Error("nil matrix: no error")
	}
	if _, err := NewSparseScores(mat.NewDense(2, 3, nil), nil); err == nil {
		t.Error("non-square: no error")
	}
	if _, err := NewSparseScores(x, mask.Clone()); err != nil {
		t.Error(err)
	}
	m2, _ := perm.FullMask(2)
	if _, err := NewSparseScores(x, m2); err == nil {
		t.Error("mask size mismatch: no error")
	}
	s, err := NewSparseScores(&mat.Dense{}, nil)
	if err != nil || s.N != 0 || len(s.RowPtr) != 1 {
		t.Errorf("0×0: %+v, %v", s, err)
	}
	// A NaN among the candidates is reported by the solver.
	s, _ = NewSparseScores(x, nil)
	if _, err := MatchingSparse(s); err == nil || errors.Is(err, ErrInfeasible) {
		t.Errorf("NaN candidate: %v", err)
	}
}

func TestSparseMatcherReuseAndAllocs(t *testing.T) {
	var sm SparseMatcher
	// Alternating sizes must give the one-shot results.
	for _, n := range []int{50, 7, 120, 1, 50} {
		s := bandedSparseScores(n, 8, 12, uint64(n), true)
		want, err := MatchingSparse(s)
		if err != nil {
			t.Fatal(err)
		}
		p, err := sm.Solve(nil, &s)
		if err != nil || !p.Equal(want) {
			t.Fatalf("n=%d: reused %v, %v; fresh %v", n, p, err, want)
		}
	}
	s := bandedSparseScores(300, 10, 20, 1, false)
	dst := make(perm.Perm, 300)
	allocs := testing.AllocsPerRun(10, func() {
		if _, err := sm.Solve(dst, &s); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("repeated solves allocate %v times per run, want 0", allocs)
	}
	// Determinism: the same problem gives the same permutation.
	p1, _ := MatchingSparse(s)
	p2, _ := sm.Solve(nil, &s)
	if !p1.Equal(p2) || !p1.Equal(dst) {
		t.Errorf("results differ between solves")
	}
}

func TestSparseLAPEpochWrap(t *testing.T) {
	// The search stamps wrap around after 2^32 searches; force the wrap
	// and check that the searches still give the optimum.
	s := bandedSparseScores(80, 6, 10, 4, true)
	want, err := MatchingSparse(s)
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := s.Objective(want)
	var m SparseMatcher
	if err := m.load("test", &s); err != nil {
		t.Fatal(err)
	}
	lap := &m.lap
	if lap.columnReduction() >= 0 {
		t.Fatal("column without candidate")
	}
	nfree := lap.reductionTransfer()
	if nfree < 2 {
		t.Fatalf("only %d free rows: the test needs searches", nfree)
	}
	lap.budget = -1
	lap.epoch = math.MaxUint32 - 1
	for _, f := range lap.free[:nfree] {
		if _, ok := lap.augment(int(f)); !ok {
			t.Fatalf("row %d: no augmenting path", f)
		}
	}
	if lap.epoch > 100 {
		t.Fatalf("epoch %d did not wrap", lap.epoch)
	}
	p := make(perm.Perm, s.N)
	for i := range p {
		p[i] = int(lap.rowsol[i])
	}
	got, err := s.Objective(p)
	if err != nil || got != ref {
		t.Fatalf("after the wrap: objective %v (%v), want %v", got, err, ref)
	}
}
