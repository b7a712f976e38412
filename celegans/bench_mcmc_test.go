package celegans_test

import (
	"context"
	"testing"

	"github.com/permlab/permlab/celegans"
	"github.com/permlab/permlab/perm"
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

// BenchmarkMCMCSweepsData times the MCMC baseline in the data form (the
// statistics are the recording itself, as at scale): a synthetic worm of
// 1,000 neurons (celegans.ScaledConfig), about 30 position candidates per
// neuron, 9% known, T = 1000; per operation, 3 sweeps of one chain.
func BenchmarkMCMCSweepsData(b *testing.B) {
	const n = 1000
	conn, err := celegans.ScaledConfig{N: n}.Generate(1)
	if err != nil {
		b.Fatal(err)
	}
	nu, _, err := celegans.CandidateWidth(conn, 30)
	if err != nil {
		b.Fatal(err)
	}
	sim, err := celegans.Simulate(conn, celegans.SimConfig{Worms: 1, T: 1000, KnownFraction: 0.09}, 1)
	if err != nil {
		b.Fatal(err)
	}
	masks, err := sim.PositionMasks(nu)
	if err != nil {
		b.Fatal(err)
	}
	w := sim.Worms[0]
	st, err := celegans.NewDataStats(w.Y)
	if err != nil {
		b.Fatal(err)
	}
	p, err := celegans.NewProblem(conn, []*celegans.Stats{st}, masks, [][]int{w.Known}, sim.NoiseVar, []perm.Perm{w.Perm})
	if err != nil {
		b.Fatal(err)
	}
	s := celegans.DefaultSettings()
	s.Sweeps, s.Chains, s.NoPolish = 3, 1, true
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := celegans.Solve(context.Background(), p, celegans.MCMC, s, uint64(i)); err != nil {
			b.Fatal(err)
		}
	}
}
