package relax

import (
	"fmt"
	"testing"

	"github.com/permlab/permlab/perm"
)

// BenchmarkMatchingSparse solves position-mask-like problems: about 30
// candidates per row (the diagonal and 29 random columns within ±50 of
// it), scores uniform on [0, 1). "reuse" solves with one SparseMatcher
// (no allocation), "oneshot" calls MatchingSparse.
func BenchmarkMatchingSparse(b *testing.B) {
	for _, n := range []int{1000, 5000, 20000} {
		s := bandedSparseScores(n, 30, 50, 1, false)
		b.Run(fmt.Sprintf("n=%d/reuse", n), func(b *testing.B) {
			var m SparseMatcher
			dst := make(perm.Perm, n)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.Solve(dst, &s); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(s.Cols))/float64(n), "cand/row")
		})
		b.Run(fmt.Sprintf("n=%d/oneshot", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := MatchingSparse(s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
