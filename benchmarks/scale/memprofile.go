package main

import (
	"bytes"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"sync"
	"time"
)

// peakHeapProfile polls the live heap (runtime/metrics' /gc/heap/live:bytes,
// the heap marked live by the last collection) every interval and, each
// time it is at least a tenth above the largest seen so far, collects twice
// (a heap profile can lag a collection behind) and takes a heap profile. The
// profile then describes the live heap at its high-water mark, to within the
// polling interval and the tenth; the forced collections can only lower the
// run's peak memory. stop writes the last profile taken to path, in the
// text form that go tool pprof reads (its first line gives the bytes in use).
func peakHeapProfile(path string, every time.Duration) (stop func() error, err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	// Only the polling goroutine touches best and peak until stop has
	// waited for it to end.
	var (
		best bytes.Buffer
		peak uint64
	)
	take := func() {
		metrics.Read(sample)
		live := sample[0].Value.Uint64()
		if live < peak+peak/10 || live == 0 {
			return
		}
		runtime.GC()
		runtime.GC()
		var b bytes.Buffer
		if err := pprof.Lookup("heap").WriteTo(&b, 1); err != nil {
			return
		}
		peak, best = live, b
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				take()
			}
		}
	}()
	return func() error {
		close(done)
		wg.Wait()
		take()
		if _, err := f.Write(best.Bytes()); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}, nil
}
