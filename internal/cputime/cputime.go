// Package cputime reads the CPU time of the running process, the measure
// that permlab's benchmarks report beside wall time: on a machine shared
// with other jobs the wall time mostly measures the queue for a core, the
// CPU time the work.
package cputime

import (
	"testing"
)

// Bench runs the benchmark loop body and reports, beside the wall time, the
// process CPU time per op ("cpu-ns/op", all threads, user plus system).
// Where the CPU time cannot be read it reports the wall time only.
func Bench(b *testing.B, body func()) {
	start := Process()
	n := 0
	for b.Loop() {
		body()
		n++
	}
	if n > 0 && Supported {
		b.ReportMetric(float64(Process()-start)/float64(n), "cpu-ns/op")
	}
}
