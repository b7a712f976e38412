package celegans_test

import (
	"context"
	"testing"

	"github.com/permlab/permlab/celegans"
)

// BenchmarkMCMCSweeps times the MCMC baseline of Solve on the problem of
// BenchmarkELBOStep: per operation, 20 sweeps (a Gibbs draw of W from the
// pooled canonical statistics, then N − known swap proposals per worm) and
// the final estimate.
func BenchmarkMCMCSweeps(b *testing.B) {
	p := benchProblem(b)
	s := celegans.DefaultSettings()
	s.Sweeps = 20
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := celegans.Solve(context.Background(), p, celegans.MCMC, s, uint64(i)); err != nil {
			b.Fatal(err)
		}
	}
}
