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
// For each method the table gives its mode, the exact posterior probability
// of that mode, the largest total-variation distance between its row
// marginals and the exact ones, and its wall time. Variational inference
// minimises KL(q ‖ p), which is mode-seeking: on a posterior split between
// permutations it favours one mode, and the one it settles in need not be
// the most probable. Its default check (see package vi, "Checking the
// answer") polishes the answer by a local search under the model's exact
// log joint and warns when the fit's own mode was far from it; the table
// shows the plain method beside it. The last row calibrates the marginals:
// MCMC chains started from VI's polished states (mcmc.CalibrationOptions),
// a sixth of default MCMC's replica sweeps.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/permlab/permlab/internal/cli"
	"github.com/permlab/permlab/mcmc"
	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/models/matching"
	"github.com/permlab/permlab/perm"
	"github.com/permlab/permlab/vi"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// parse reads and checks the flags; its errors are usage errors (exit
// status 2) that name the flag.
func parse(args []string, stderr io.Writer) (matching.Config, error) {
	cfg := matching.Config{}
	fs := flag.NewFlagSet("matching", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&cfg.N, "n", 7, fmt.Sprintf("number of points, at least 2 (exact enumeration visits up to n! permutations, at most %d: n <= %d without -radius)", models.MaxExactStates, maxUnmasked()))
	fs.Float64Var(&cfg.Sigma, "sigma", 0.08, "observation noise standard deviation")
	fs.Float64Var(&cfg.Radius, "radius", 0, "if > 0, candidate mask radius around each true reference point (0: no mask)")
	fs.Uint64Var(&cfg.Seed, "seed", 1, "seed of the problem and of both engines")
	if err := cli.Parse(fs, args); err != nil {
		return cfg, err
	}
	var c cli.Check
	c.AtLeast("-n", cfg.N, 2)
	c.Positive("-sigma", cfg.Sigma)
	c.NonNegative("-radius", cfg.Radius)
	// Without a radius every permutation is admitted, n! of them; with one
	// the count depends on the points, and models.Exact checks it.
	c.That(cfg.Radius > 0 || cfg.N <= maxUnmasked(), "-n %d: exact enumeration would visit %d! permutations, more than %d; give a -radius to admit fewer", cfg.N, cfg.N, models.MaxExactStates)
	return cfg, c.Err()
}

// maxUnmasked is the largest n whose n! permutations exact enumeration
// visits (models.MaxExactStates).
func maxUnmasked() int {
	n, states := 1, 1
	for states*(n+1) <= models.MaxExactStates {
		n++
		states *= n
	}
	return n
}

// run is the command; it returns the exit status: 2 for a bad command line
// (nothing done), 1 for a failure.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parse(args, stderr)
	if err == nil {
		err = compare(ctx, stdout, cfg)
	}
	return cli.Exit(stderr, "matching", err)
}

// compare fits the problem cfg describes by every method and prints the
// table to w.
func compare(ctx context.Context, w io.Writer, cfg matching.Config) error {
	pr, err := matching.Generate(cfg)
	if err != nil {
		return err
	}
	type row struct {
		post *models.Posterior
		name string
		wall time.Duration
	}
	var rows []row
	timed := func(name string, f func() (*models.Posterior, error)) error {
		t0 := time.Now()
		post, err := f()
		if err != nil {
			return err
		}
		rows = append(rows, row{post, name, time.Since(t0)})
		return nil
	}
	var ex *models.ExactResult
	var q *vi.ModelResult
	steps := []struct {
		name string
		f    func() (*models.Posterior, error)
	}{
		{"exact enumeration", func() (*models.Posterior, error) {
			if ex, err = models.Exact(pr); err != nil {
				return nil, err
			}
			return ex.Posterior, nil
		}},
		{"MCMC", func() (*models.Posterior, error) {
			mc, err := mcmc.RunModel(ctx, pr, mcmc.ModelOptions{Seed: cfg.Seed})
			if err != nil {
				return nil, err
			}
			return mc.Posterior, nil
		}},
		{"VI, plain (Polish.Off)", func() (*models.Posterior, error) {
			res, err := vi.FitModel(ctx, pr, vi.ModelOptions{Seed: cfg.Seed, Polish: vi.Polish{Off: true}})
			if err != nil {
				return nil, err
			}
			return res.Posterior, nil
		}},
		{"VI, checked (default)", func() (*models.Posterior, error) {
			if q, err = vi.FitModel(ctx, pr, vi.ModelOptions{Seed: cfg.Seed}); err != nil {
				return nil, err
			}
			return q.Posterior, nil
		}},
		{"VI + calibration", func() (*models.Posterior, error) {
			cal, err := mcmc.RunModel(ctx, pr, mcmc.CalibrationOptions(q.Polish.States(mcmc.DefaultChains), cfg.Seed))
			if err != nil {
				return nil, err
			}
			return cal.Posterior, nil
		}},
	}
	for _, st := range steps {
		if err := timed(st.name, st.f); err != nil {
			return fmt.Errorf("%s: %w", st.name, err)
		}
	}

	fmt.Fprintf(w, "n = %d, s = %g, %d admitted permutations, true σ = %v\n\n", cfg.N, cfg.Sigma, ex.States, pr.Truth)
	fmt.Fprintln(w, "| method | mode | exact P(mode) | max row TV to exact | wall time |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, r := range rows {
		pp := r.post.Perms[matching.Site]
		mode := pp.Mode[0]
		p, err := ex.Prob(&models.State{Perms: map[string][]perm.Perm{matching.Site: {mode}}})
		if err != nil {
			return err
		}
		tv, err := pp.MaxRowTV(ex.Perms[matching.Site])
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "| %s | %v | %.3f | %.4f | %v |\n", r.name, mode, p, tv, r.wall.Round(time.Millisecond))
	}
	fmt.Fprintf(w, "\nVI's check: the answer came from %s, %.3g nats above the chosen fit's own mode (warning above %g).\n",
		q.Polish.From, q.Polish.Gain, float64(vi.DefaultPolishWarnNats))
	for _, r := range rows[1:] {
		for _, warn := range r.post.Warnings {
			fmt.Fprintf(w, "%s: WARNING: %s\n", r.name, warn)
		}
	}
	return nil
}
