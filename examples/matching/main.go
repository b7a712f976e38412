// Command matching fits the point-matching model of package
// models/matching three ways and compares them: exact enumeration of every
// admitted permutation (models.Exact), MCMC (mcmc.RunModel) and
// Gumbel-Sinkhorn variational inference (vi.FitModel), each engine with its
// default options.
//
// The model matches n noisy observed points y_i in the plane to n reference
// points r_j through a latent permutation σ, y_i = r_{σ(i)} + N(0, s² I), so
// that p(σ | Y) ∝ exp(Σ_i X_{i,σ(i)}) with X_ij = −‖y_i − r_j‖²/(2s²).
//
//	go run ./examples/matching
//	go run ./examples/matching -n 8 -sigma 0.1 -radius 0.5 -seed 3
//
// For each method the table gives its mode (the matching of its marginals),
// the exact posterior probability of that mode, and the largest
// total-variation distance between its row marginals and the exact ones.
// Variational inference minimises KL(q ‖ p), which is mode-seeking: on a
// concentrated posterior (small s) it finds the mode and the marginals; on a
// posterior split between permutations (larger s) it favours one main mode.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/permlab/permlab/mcmc"
	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/models/matching"
	"github.com/permlab/permlab/perm"
	"github.com/permlab/permlab/vi"
)

func main() {
	cfg := matching.Config{}
	flag.IntVar(&cfg.N, "n", 7, "number of points (exact enumeration visits up to n! permutations)")
	flag.Float64Var(&cfg.Sigma, "sigma", 0.08, "observation noise standard deviation")
	flag.Float64Var(&cfg.Radius, "radius", 0, "if > 0, candidate mask radius around each true reference point")
	flag.Uint64Var(&cfg.Seed, "seed", 1, "seed of the problem and of both engines")
	flag.Parse()
	if err := run(context.Background(), os.Stdout, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "matching:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, w io.Writer, cfg matching.Config) error {
	pr, err := matching.Generate(cfg)
	if err != nil {
		return err
	}
	ex, err := models.Exact(pr)
	if err != nil {
		return err
	}
	mc, err := mcmc.RunModel(ctx, pr, mcmc.ModelOptions{Seed: cfg.Seed})
	if err != nil {
		return err
	}
	q, err := vi.FitModel(ctx, pr, vi.ModelOptions{Seed: cfg.Seed})
	if err != nil {
		return err
	}

	fmt.Fprintf(w, "n = %d, s = %g, %d admitted permutations, true σ = %v\n\n", cfg.N, cfg.Sigma, ex.States, pr.Truth)
	fmt.Fprintln(w, "| method | mode | exact P(mode) | max row TV to exact |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, post := range []*models.Posterior{ex.Posterior, mc.Posterior, q.Posterior} {
		pp := post.Perms[matching.Site]
		mode := pp.Mode[0]
		p, err := exactProb(pr, ex, mode)
		if err != nil {
			return err
		}
		tv, err := pp.MaxRowTV(ex.Perms[matching.Site])
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "| %s | %v | %.3f | %.4f |\n", post.Method, mode, p, tv)
	}
	for _, post := range []*models.Posterior{mc.Posterior, q.Posterior} {
		for _, note := range post.Notes {
			fmt.Fprintf(w, "\n%s: note: %s", post.Method, note)
		}
		for _, warn := range post.Warnings {
			fmt.Fprintf(w, "\n%s: WARNING: %s", post.Method, warn)
		}
	}
	fmt.Fprintln(w)
	return nil
}

// exactProb returns the exact posterior probability of the permutation p.
func exactProb(pr *matching.Problem, ex *models.ExactResult, p perm.Perm) (float64, error) {
	ll, err := pr.LogLikState(&models.State{Perms: map[string][]perm.Perm{matching.Site: {p}}})
	if err != nil {
		return 0, err
	}
	if pr.Mask != nil && !pr.Mask.Admits(p) {
		return 0, nil
	}
	return math.Exp(ll - ex.LogEvidence), nil
}
