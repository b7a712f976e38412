package nn

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// parallelFor calls f(w, i) for i = 0, …, count−1 on nw goroutines,
// where w < nw names the goroutine so that f can use per-goroutine
// scratch. Calls must write disjoint memory; the caller fixes any
// summation order independently of w, so results do not depend on nw.
func parallelFor(nw, count int, f func(w, i int)) {
	if nw <= 1 || count <= 1 {
		for i := range count {
			f(0, i)
		}
		return
	}
	var (
		wg   sync.WaitGroup
		next atomic.Int64
	)
	for w := range nw {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= count {
					return
				}
				f(w, i)
			}
		})
	}
	wg.Wait()
}

// workers returns the number of goroutines parallelFor uses for count
// items.
func workers(count int) int {
	return max(1, min(runtime.GOMAXPROCS(0), count))
}

// chunks splits n items into at most maxChunks contiguous chunks of equal
// size (the last may be shorter). The split depends only on n, so sums
// taken per chunk and then across chunks in order are the same whatever
// GOMAXPROCS is.
func chunks(n, maxChunks int) (size, count int) {
	if n <= 0 {
		return 1, 0
	}
	size = (n + maxChunks - 1) / maxChunks
	return size, (n + size - 1) / size
}
