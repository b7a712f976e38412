package cputime

import "testing"

func TestProcessAdvancesWithWork(t *testing.T) {
	if !Supported {
		t.Skip("no CPU time on this system")
	}
	start := Process()
	x := 0.0
	for i := range 50_000_000 {
		x += float64(i % 7)
	}
	if x == 0 || Process() <= start {
		t.Errorf("CPU time did not advance over busy work (%v -> %v)", start, Process())
	}
}
