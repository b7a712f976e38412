package celegans_test

import (
	"context"
	"testing"

	"github.com/permlab/permlab/celegans"
)

// BenchmarkMCMCSweeps times the MCMC baseline of Solve, which runs through
// mcmc.RunModel on the model of the problem, on the problem of
// BenchmarkELBOStep: per operation, 20 sweeps of one chain (N − known swap
// proposals per worm with the model's prepared swap deltas, then a Gibbs
// draw of W from the pooled canonical statistics) and the final estimate.
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
