package celegans_test

import (
	"context"
	"testing"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/ad/optim"
	"github.com/permlab/permlab/celegans"
	"github.com/permlab/permlab/perm"
	"github.com/permlab/permlab/vi"
)

// Settings of BenchmarkELBOStep: the "hard" setting of the seed's Table 7
// with 4 worms on a synthetic worm of the real size.
const (
	benchNeurons = 279  // synthetic connectome size (WormAtlas: 279)
	benchWorms   = 4    // worms sharing W
	benchT       = 1000 // time steps per worm
	benchKnown   = 25   // known neurons per worm (Table 7)
	benchNu      = 0.1  // candidate width: the "hard" setting
	benchTau     = 0.5  // Gumbel-Sinkhorn temperature
	benchIters   = 20   // Sinkhorn iterations L
	benchSeed    = 1
)

// benchProblem simulates the benchmark's problem.
func benchProblem(b testing.TB) *celegans.Problem {
	b.Helper()
	c, err := celegans.Synthetic(benchNeurons, benchSeed)
	if err != nil {
		b.Fatal(err)
	}
	sim, err := celegans.Simulate(c, celegans.SimConfig{Worms: benchWorms, T: benchT, KnownCount: benchKnown}, benchSeed)
	if err != nil {
		b.Fatal(err)
	}
	masks, err := sim.PositionMasks(benchNu)
	if err != nil {
		b.Fatal(err)
	}
	p, err := celegans.FromSimulation(sim, masks)
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// meanCandidates is the mean number of allowed entries per row of masks.
func meanCandidates(masks []*perm.Mask) float64 {
	var allowed, rows int
	for _, m := range masks {
		for i := 0; i < m.Size(); i++ {
			allowed += len(m.Row(i))
		}
		rows += m.Size()
	}
	return float64(allowed) / float64(rows)
}

// BenchmarkELBOStep times one step of Gumbel-Sinkhorn variational inference
// on the C. elegans problem, as the GumbelSinkhorn method of Solve takes it:
// a K = 1 sample of the 4 relaxed permutations (L = 20 Sinkhorn iterations
// at τ = 0.5) and of W, the likelihood of the 4 worms (T = 1000, N = 279),
// both KL terms, the backward pass and an Adam update. "hard" uses the
// position masks with ν = 0.1 and 25 known neurons per worm; "nomask" the
// same problem with every entry of P allowed.
func BenchmarkELBOStep(b *testing.B) {
	p := benchProblem(b)
	s := celegans.DefaultSettings()
	for _, bc := range []struct {
		name  string
		masks []*perm.Mask
	}{
		{"hard", p.Masks},
		{"nomask", nil},
	} {
		b.Run(bc.name, func(b *testing.B) {
			pg, err := vi.NewGumbelSinkhorn("P", p.Worms(), p.N(), bc.masks, optim.Constant(benchTau), s.TauPrior, benchIters)
			if err != nil {
				b.Fatal(err)
			}
			wg, err := vi.NewNormal("W", len(p.Support()), nil, 0.05, s.SigmaW)
			if err != nil {
				b.Fatal(err)
			}
			guides := []vi.Guide{pg, wg}
			params := append(pg.Params(), wg.Params()...)
			opt, err := optim.NewAdam(params)
			if err != nil {
				b.Fatal(err)
			}
			model, err := celegans.NewModel(p).VI()
			if err != nil {
				b.Fatal(err)
			}
			tape := ad.NewTape()
			cand := float64(p.N())
			if bc.masks != nil {
				cand = meanCandidates(bc.masks)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				tape.Reset()
				elbo, _, _, err := vi.ELBO(tape, model, guides, vi.Step{Index: i, K: 1, Rng: vi.StepRand(benchSeed, i)})
				if err != nil {
					b.Fatal(err)
				}
				if err := tape.Backward(ad.Neg(elbo)); err != nil {
					b.Fatal(err)
				}
				if err := opt.Step(s.LR); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(cand, "candidates/row")
		})
	}
}

// BenchmarkVISteps times the Gumbel-Sinkhorn method of Solve on the problem
// of BenchmarkELBOStep as the tables run it, through vi.FitModel: per
// operation, 100 steps of one fit (no restarts) and the final estimate from
// 5 draws.
func BenchmarkVISteps(b *testing.B) {
	p := benchProblem(b)
	s := celegans.DefaultSettings()
	s.Steps, s.Draws, s.PlateauWindow = 100, 5, 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := celegans.Solve(context.Background(), p, celegans.GumbelSinkhorn, s, uint64(i)); err != nil {
			b.Fatal(err)
		}
	}
}
