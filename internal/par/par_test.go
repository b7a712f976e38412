package par

import (
	"runtime"
	"sync/atomic"
	"testing"
)

// TestRangeCovers: every index is visited once, in the chunks the grain
// gives, whatever GOMAXPROCS is.
func TestRangeCovers(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{1, 2, 5} {
		runtime.GOMAXPROCS(procs)
		for _, c := range []struct{ n, grain int }{{0, 4}, {1, 4}, {4, 4}, {5, 4}, {1000, 7}, {100000, Grain}} {
			seen := make([]int32, c.n)
			var calls atomic.Int32
			Range(c.n, c.grain, func(lo, hi int) {
				calls.Add(1)
				if lo%c.grain != 0 || (hi != c.n && hi-lo != c.grain) || hi > c.n || lo >= hi {
					t.Errorf("procs %d n %d grain %d: chunk [%d, %d)", procs, c.n, c.grain, lo, hi)
				}
				for i := lo; i < hi; i++ {
					atomic.AddInt32(&seen[i], 1)
				}
			})
			for i, s := range seen {
				if s != 1 {
					t.Fatalf("procs %d n %d grain %d: index %d visited %d times", procs, c.n, c.grain, i, s)
				}
			}
			want := int32((c.n + c.grain - 1) / c.grain)
			if procs == 1 && c.n > 0 {
				want = 1
			}
			if c.n <= c.grain && c.n > 0 {
				want = 1
			}
			if got := calls.Load(); got != want {
				t.Errorf("procs %d n %d grain %d: %d calls, want %d", procs, c.n, c.grain, got, want)
			}
		}
	}
}

func TestRangeBadGrain(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic for grain 0")
		}
	}()
	Range(10, 0, func(int, int) {})
}
