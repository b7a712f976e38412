package relax

import (
	"errors"
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// FuzzMatchingSparse checks MatchingSparse, and the dense solver with its
// sparse first phase forced on, against the dense MatchingMasked (which
// uses the classic initialisation at these sizes) on the small problems of
// decodeMatchingInput (see FuzzMatching). Flag
// bit 4 reverses each row's candidate list; bit 5 drops the mask, so that
// every entry that is not -Inf is a candidate. Both solvers must agree on
// feasibility and, when feasible, on the optimal objective exactly (all
// scores are small dyadic numbers, so sums are exact).
func FuzzMatchingSparse(f *testing.F) {
	f.Add([]byte{0, 0, 7})
	f.Add([]byte{2, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte{3, 17, 254, 254, 1, 2, 254, 254, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	f.Add([]byte{4, 32, 255, 255, 255, 255, 255, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17})
	f.Add([]byte{5, 19, 10, 200, 30, 100, 50, 60, 70, 80, 90, 100, 110, 120, 130, 140, 150, 160, 170, 180})
	f.Add([]byte{6, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{6, 9, 254, 1, 2, 254, 3, 4, 255, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	f.Add([]byte{1, 1, 253, 1, 2, 3})
	f.Add([]byte{2, 1, 1, 1, 1, 254, 254, 254, 1, 1, 1})
	f.Add([]byte("20\xff\xff\xfd"))
	f.Fuzz(func(t *testing.T, data []byte) {
		x, mask, hasNaN := decodeMatchingInput(data)
		var flags byte
		if len(data) > 1 {
			flags = data[1]
		}
		if flags&32 != 0 {
			mask = nil
		}
		s, err := NewSparseScores(x, mask)
		if err != nil {
			t.Fatal(err)
		}
		if flags&16 != 0 {
			for i := range s.N {
				lo, hi := s.RowPtr[i], s.RowPtr[i+1]
				for a, b := lo, hi-1; a < b; a, b = a+1, b-1 {
					s.Cols[a], s.Cols[b] = s.Cols[b], s.Cols[a]
					s.Vals[a], s.Vals[b] = s.Vals[b], s.Vals[a]
				}
			}
		}
		p, err := MatchingSparse(s)
		want, derr := MatchingMasked(x, mask)
		if hasNaN {
			nanUsed := false
			for _, v := range s.Vals {
				nanUsed = nanUsed || math.IsNaN(v)
			}
			if nanUsed {
				// An error, possibly infeasibility found in an earlier
				// row, as the dense solver may.
				if err == nil {
					t.Fatalf("NaN candidate: no error, got %v", p)
				}
				return
			}
		}
		if derr != nil {
			if !errors.Is(derr, ErrInfeasible) {
				t.Fatalf("dense solver: %v", derr)
			}
			if !errors.Is(err, ErrInfeasible) {
				t.Fatalf("dense infeasible (%v); sparse gave %v, %v\n%v", derr, p, err, mat.Formatted(x))
			}
			m := Matcher{init: initSparse}
			if q, err := m.Solve(nil, x, mask); !errors.Is(err, ErrInfeasible) {
				t.Fatalf("dense infeasible (%v); with sparse start %v, %v\n%v", derr, q, err, mat.Formatted(x))
			}
			return
		}
		if err != nil {
			t.Fatalf("dense solved it (%v); sparse: %v\n%v", want, err, mat.Formatted(x))
		}
		m := Matcher{init: initSparse}
		q, err := m.Solve(nil, x, mask)
		if err != nil {
			t.Fatalf("dense solved it (%v); dense with sparse start: %v\n%v", want, err, mat.Formatted(x))
		}
		got, err := s.Objective(p)
		if err != nil {
			t.Fatal(err)
		}
		ref := checkSolution(t, x, mask, want)
		if got != ref {
			t.Fatalf("objective %v, dense %v; p=%v, dense %v\n%v", got, ref, p, want, mat.Formatted(x))
		}
		if v := checkSolution(t, x, mask, q); v != ref {
			t.Fatalf("dense with sparse start: objective %v, classic %v; %v, %v\n%v", v, ref, q, want, mat.Formatted(x))
		}
	})
}
