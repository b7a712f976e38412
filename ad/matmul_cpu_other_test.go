//go:build !unix

package ad

import "testing"

// reportCPU runs the benchmark loop body; without getrusage it reports the
// wall time only.
func reportCPU(b *testing.B, body func()) {
	for b.Loop() {
		body()
	}
}
