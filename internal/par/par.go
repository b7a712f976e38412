// Package par runs loops over an index range on several goroutines.
//
// Range splits [0, n) into chunks whose bounds depend only on n and the
// grain, never on GOMAXPROCS or on scheduling. A loop whose chunks write
// disjoint outputs, each entry computed as the serial loop computes it,
// therefore gives the serial loop's bits for any number of threads. Sums
// over the range are not such loops: compute the terms with Range and add
// them up afterwards in order.
package par

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Grain is a chunk size for elementwise loops over float64s: large enough
// that a chunk costs much more than starting a goroutine (a few
// microseconds), small enough to share a few hundred thousand entries
// between cores.
const Grain = 1 << 15

// Range calls f(lo, hi) for the chunks [0, grain), [grain, 2·grain), …
// of [0, n) (the last one shorter), on up to GOMAXPROCS goroutines, and
// returns when every call has returned. It calls f(0, n) on the calling
// goroutine when n ≤ grain or GOMAXPROCS is 1, and nothing when n ≤ 0. It
// panics if grain < 1.
func Range(n, grain int, f func(lo, hi int)) {
	if grain < 1 {
		panic("par: Range: grain < 1")
	}
	if n <= 0 {
		return
	}
	chunks := (n + grain - 1) / grain
	workers := min(runtime.GOMAXPROCS(0), chunks)
	if workers <= 1 {
		f(0, n)
		return
	}
	var next atomic.Int64
	run := func() {
		for {
			c := int(next.Add(1)) - 1
			if c >= chunks {
				return
			}
			f(c*grain, min((c+1)*grain, n))
		}
	}
	var wg sync.WaitGroup
	for range workers - 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			run()
		}()
	}
	run()
	wg.Wait()
}
