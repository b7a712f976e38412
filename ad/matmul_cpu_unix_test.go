//go:build unix

package ad

import (
	"syscall"
	"testing"
	"time"
)

// reportCPU runs the benchmark loop body and reports, beside the wall
// time, the process CPU time per op ("cpu-ns/op", all threads, user plus
// system). On a machine shared with other jobs the wall time mostly
// measures the queue for a core; the CPU time measures the work.
func reportCPU(b *testing.B, body func()) {
	start := cpuTime()
	n := 0
	for b.Loop() {
		body()
		n++
	}
	if n > 0 {
		b.ReportMetric(float64(cpuTime()-start)/float64(n), "cpu-ns/op")
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
