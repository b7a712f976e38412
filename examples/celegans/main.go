// Command celegans compares the methods of the seed paper on the C. elegans
// neural identification problem and prints its Tables 3 and 7 with our
// numbers next to the published ones.
//
// With no flags it runs a quick comparison: every method on one cell of
// Table 3 (4 worms, 40 % of the neurons known, easy constraint), one seed,
// on the synthetic worm that needs no data files, in about three minutes.
// Run it with -h for the flags; the experiment itself is celegans.Experiment.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/permlab/permlab/celegans"
	"github.com/permlab/permlab/compare"
	"github.com/permlab/permlab/internal/cli"
)

const usage = `Usage: go run ./examples/celegans [flags]

Compares the methods of Mena et al. (2018) on the C. elegans neural
identification problem, on the grids of the seed paper's Tables 3 and 7.

Each cell of the seed paper's Tables 3 and 7 is a simulation set-up. For
each cell and seed s = 1..-seeds, the worms are simulated once (W drawn
with seed s, T steps per worm) and every method runs on those same worms and
candidate masks with the same wall-clock budget, one run at a time. The
table entries are "mean ± sd over seeds (paper value)" of the fraction of
neurons identified correctly, over all neurons and over the unknown ones.

With no flags: every method on the cell 40-easy of Table 3, one seed, on the
synthetic worm (279 neurons, no data files needed); about 3 minutes.

The full reproduction (16 cells x 5 seeds x 4 methods, -budget each):

  go run ./examples/celegans -table all -seeds 5 \
    -connect ../shared/data/celegans/NeuronConnect.csv \
    -types ../shared/data/celegans/NeuronType.csv

Cells (for -cells; a key such as t3/40-easy works too):
  Table 3 (4 worms; 110/83/55/25 known = 40/30/20/10 %; easy nu = 0.05,
    hard nu = 0.1):  40-easy 40-hard 30-easy 30-hard 20-easy 20-hard
    10-easy 10-hard
  Table 7 (25 known; nu chosen for 10/30/45/60 mean candidates; 1 or 4
    worms):  10c-1w 10c-4w 30c-1w 30c-4w 45c-1w 45c-4w 60c-1w 60c-4w

Output, in -out: results-*.jsonl (one file per process, one line per
finished run, appended at once), summary.json, report.md (the tables printed at the end),
accuracy_table*.png (accuracy per method and cell, paper values as crosses)
and trace_*.png (accuracy against wall time on -trace-cell).

Interrupting (Ctrl-C) keeps every finished run; running the same command
again with the same -out skips the runs already done (runs made with other
settings, T or connectome are ignored, not reused). Delete -out to start
over.

On a cluster or on several cores: the grid splits into shards, a (cell,
seed) group each, group g going to shard g mod n. Every shard writes its own
results file in -out (which must be shared storage), and a run without
-shard afterwards collects them and writes the reports.

  -shard i/n                 run shard i of n
  -shards n                  run the shard whose index the scheduler sets
                             (JOB_COMPLETION_INDEX on a Kubernetes Indexed
                             Job, SLURM_ARRAY_TASK_ID on a Slurm array)
  -workers k                 run k shards here as processes pinned to
                             disjoint cores (-cores-per-worker each), then
                             collect

Report: -report DIR prints the tables of a finished experiment again,
recomputed from the results files in DIR (and its summary.json), without
running anything or reading the data. -report DIR -against BASE prints
instead the paired differences DIR − BASE of two experiments on the same
grid (for example polishing on and off), seed by seed, with 95% intervals.

Tuning: -tune FILE runs a grid of settings variants on tuning seeds, each
as its own experiment in -out/tune/<name>, and writes the tuning table to
-out/tuning.md (celegans/tuning/README.md; the committed grid of the
baselines is celegans/tuning/baselines.json). -tune FILE -report DIR prints
that table again from the results files under DIR/tune, running nothing.

Give every run exclusive cores: budgets are wall-clock. See deploy/ for a
Kubernetes Indexed Job, a Slurm array script and the container image the
job runs (deploy/Dockerfile: every command, the data mounted).

Every flag is checked, and -out tried for writing, before any data is read:
a bad command line exits with status 2 having done nothing; a failure (a
connectome file that does not load, a failed run) exits with 1, an
interrupted run with 130.

Flags:
`

// options are the parsed flags.
type options struct {
	table, cells, connect, types, out, methods, traceCell string
	seeds, seedStart, neurons, steps, sweeps, t, trace    int
	budget                                                time.Duration
	shard                                                 string
	shards, workers, perWork                              int
	tune, report, against                                 string
	polish                                                bool
	// hyper holds the method hyperparameters, one flag each, starting from
	// celegans.DefaultSettings (the reported tables pass tuned values for
	// some, celegans/README.md gives their commands).
	hyper celegans.Settings

	fs *flag.FlagSet // the flags, to tell which were given
}

func newFlags(o *options, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("celegans", flag.ContinueOnError)
	fs.SetOutput(out)
	o.fs = fs
	def := celegans.DefaultSettings()
	fs.StringVar(&o.table, "table", "", "which table to run: 3, 7 or all (default: the quick comparison, cell 40-easy)")
	fs.StringVar(&o.cells, "cells", "", "comma-separated cell labels to run, within -table (default: all cells of -table)")
	fs.IntVar(&o.seeds, "seeds", 1, "number of seeds (independent simulations, each with its own W) per cell")
	fs.IntVar(&o.seedStart, "seed-start", 1, "first seed: runs use seeds seed-start … seed-start+seeds-1 (the tables use 1-5, the hyperparameters were tuned on 101-104)")
	fs.StringVar(&o.connect, "connect", "", "path of the WormAtlas `NeuronConnect.csv` (with -types; default: the synthetic worm)")
	fs.StringVar(&o.types, "types", "", "path of the WormAtlas `NeuronType.csv` (soma positions; with -connect)")
	fs.IntVar(&o.neurons, "neurons", celegans.DefaultNeurons, "neurons of the synthetic worm (not with -connect/-types)")
	fs.StringVar(&o.out, "out", filepath.Join("out", "celegans"), "output `dir`ectory for results, report and figures; also the resume point")
	fs.DurationVar(&o.budget, "budget", 35*time.Second, "wall-clock time per run, the same for every method (0: no limit, then -steps/-sweeps end runs)")
	fs.StringVar(&o.methods, "methods", "", "comma-separated methods to run (default all: "+methodList()+")")
	fs.IntVar(&o.steps, "steps", def.Steps, "most optimisation steps of the variational methods")
	fs.IntVar(&o.sweeps, "sweeps", def.Sweeps, "most MCMC sweeps")
	fs.IntVar(&o.t, "T", celegans.DefaultT, "time steps recorded per worm")
	fs.IntVar(&o.trace, "trace", 5, "record the accuracy every this many steps or sweeps, for the accuracy-time figure (0: off)")
	fs.StringVar(&o.traceCell, "trace-cell", "", "cell of the accuracy-time figure (default: the first cell run)")

	fs.StringVar(&o.shard, "shard", "", "run only shard `i/n` of the grid (see the text above)")
	fs.IntVar(&o.shards, "shards", 0, "number of shards, when the scheduler gives the index in JOB_COMPLETION_INDEX or SLURM_ARRAY_TASK_ID")
	fs.IntVar(&o.workers, "workers", 0, "run the grid as this many local shard processes pinned to disjoint cores, then collect")
	fs.IntVar(&o.perWork, "cores-per-worker", 1, "cores (and GOMAXPROCS) of each -workers process")

	// Hyperparameters of the methods (celegans.Settings), defaults from
	// celegans.DefaultSettings.
	o.hyper = def
	h := &o.hyper
	fs.IntVar(&h.K, "k", def.K, "variational methods: samples per ELBO step")
	fs.Float64Var(&h.LR, "lr", def.LR, "variational methods: Adam learning rate")
	fs.Float64Var(&h.Tau, "tau", def.Tau, "Gumbel-Sinkhorn: temperature τ of q(P) = GS(X, τ)")
	fs.Float64Var(&h.TauPrior, "tau-prior", def.TauPrior, "Gumbel-Sinkhorn: prior temperature of the Gumbel-space KL")
	fs.IntVar(&h.Iters, "iters", def.Iters, "variational methods: Sinkhorn iterations L")
	fs.Float64Var(&h.SigmaW, "sigma-w", def.SigmaW, "prior standard deviation of each non-zero entry of W (every method)")
	fs.IntVar(&h.Draws, "draws", def.Draws, "variational methods: hard draws of q(P) whose assignment frequencies give the estimate")
	fs.BoolVar(&h.DenseLayout, "dense-layout", false, "Gumbel-Sinkhorn and rounding: store the guide densely; by default a worm whose candidate mask allows few entries is stored sparsely (the same method, cost growing with the candidates)")
	fs.IntVar(&h.PlateauWindow, "plateau-window", def.PlateauWindow, "Gumbel-Sinkhorn: restart a fit whose ELBO stopped rising over this many steps, at least 2 (0: one fit)")
	fs.Float64Var(&h.RoundTau, "round-tau", def.RoundTau, "rounding VI: interpolation towards the rounded permutation, in (0, 1]")
	fs.Float64Var(&h.RoundNoise, "round-noise", def.RoundNoise, "rounding VI: initial noise scale of Ψ")
	fs.Float64Var(&h.PriorStd, "prior-std", def.PriorStd, "rounding VI: standard deviation of each component of the entry prior")
	fs.Float64Var(&h.RoundLR, "round-lr", def.RoundLR, "rounding VI: Adam learning rate (0: -lr)")
	fs.IntVar(&h.Chains, "chains", def.Chains, "MCMC: chains, run in parallel and pooled (0: 1)")
	fs.IntVar(&h.Thin, "thin", def.Thin, "MCMC: sweeps between recorded draws (0: 10)")
	fs.StringVar(&h.Estimator, "estimator", def.Estimator, "MCMC: which draws give the estimate: half (second half; empty means half), tail (last 90%) or best (highest likelihood)")
	fs.IntVar(&h.BlockMoves, "block-moves", def.BlockMoves, "MCMC: block proposals (up to 4 rows) per worm and sweep (0: none)")

	fs.BoolVar(&o.polish, "polish", true, "polish every method's estimate by a local search under the model, within the budget (10% of it), and keep it if the collapsed likelihood rose; -polish=false runs the paper's plain methods")
	fs.StringVar(&o.report, "report", "", "print the report of the experiment in this `dir`ectory, recomputed from its results files and summary.json; runs nothing")
	fs.StringVar(&o.against, "against", "", "with -report: print the paired differences between the -report experiment and the one in this `dir`ectory (the same grid), seed by seed; runs nothing")
	fs.StringVar(&o.tune, "tune", "", "run the tuning grid of this JSON `file` (see celegans/tuning/README.md): one experiment per variant in -out/tune/<name>, then the tuning table")
	return fs
}

func methodList() string {
	var names []string
	for _, m := range celegans.Methods {
		names = append(names, string(m))
	}
	return strings.Join(names, ",")
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// given reports whether the flag name was on the command line.
func (o *options) given(name string) bool { return cli.Given(o.fs, name) }

// trimPrefix removes the package prefixes ("celegans: SelectCells: ") of a
// library error, for a message that names the flag instead.
func trimPrefix(err error, prefixes ...string) string {
	msg := err.Error()
	for _, p := range prefixes {
		msg = strings.TrimPrefix(msg, p)
	}
	return msg
}

// selectCells returns the cells -table and -cells select.
func (o *options) selectCells() ([]celegans.Cell, error) {
	switch strings.ToLower(strings.TrimSpace(o.table)) {
	case "", "3", "7", "all":
	default:
		return nil, cli.Usagef("-table must be 3, 7 or all, got %q (the supplementary C. elegans table is Table 7 in the paper; Table 5 is digit assembly)", o.table)
	}
	labels := splitList(o.cells)
	if o.table == "" && len(labels) == 0 {
		labels = []string{"40-easy"}
		return celegans.SelectCells("3", labels)
	}
	cells, err := celegans.SelectCells(o.table, labels)
	if err != nil {
		return nil, cli.Usagef("-cells: %s", trimPrefix(err, "celegans: ", "SelectCells: "))
	}
	return cells, nil
}

// validate checks every flag, and that the input files they name are
// there, without reading any data: its errors are usage errors that name
// the flag. It returns the selected cells and the shard.
func (o *options) validate() ([]celegans.Cell, compare.Shard, error) {
	var sh compare.Shard
	var c cli.Check
	c.AtLeast("-seeds", o.seeds, 1)
	c.AtLeast("-seed-start", o.seedStart, 1)
	c.That(o.budget >= 0, "-budget must be >= 0 (0: no limit), got %v", o.budget)
	c.AtLeast("-steps", o.steps, 1)
	c.AtLeast("-sweeps", o.sweeps, 1)
	c.AtLeast("-T", o.t, 2)
	c.AtLeast("-trace", o.trace, 0)
	c.That(o.out != "", "-out must not be empty")

	h := o.hyper
	c.AtLeast("-k", h.K, 1)
	c.Positive("-lr", h.LR)
	c.Positive("-tau", h.Tau)
	c.Positive("-tau-prior", h.TauPrior)
	c.AtLeast("-iters", h.Iters, 1)
	c.Positive("-sigma-w", h.SigmaW)
	c.AtLeast("-draws", h.Draws, 1)
	c.That(h.PlateauWindow == 0 || h.PlateauWindow >= 2, "-plateau-window must be 0 (one fit) or >= 2, got %d", h.PlateauWindow)
	c.That(h.RoundTau > 0 && h.RoundTau <= 1, "-round-tau must be in (0, 1], got %v", h.RoundTau)
	c.Positive("-round-noise", h.RoundNoise)
	c.Positive("-prior-std", h.PriorStd)
	c.NonNegative("-round-lr", h.RoundLR)
	c.AtLeast("-chains", h.Chains, 0)
	c.AtLeast("-thin", h.Thin, 0)
	c.AtLeast("-block-moves", h.BlockMoves, 0)
	if h.Estimator != "" {
		c.OneOf("-estimator", h.Estimator, celegans.EstimateHalf, celegans.EstimateTail, celegans.EstimateBest)
	}

	seen := map[celegans.Method]bool{}
	for _, name := range splitList(o.methods) {
		m, err := celegans.ParseMethod(name)
		if err != nil {
			c.Add(cli.Usagef("-methods: %s", trimPrefix(err, "celegans: ")))
			break
		}
		c.That(!seen[m], "-methods lists %s twice", m)
		seen[m] = true
	}

	switch {
	case o.connect != "" && o.types != "":
		c.InputFile("-connect", o.connect)
		c.InputFile("-types", o.types)
		c.That(!o.given("neurons"), "-neurons is the size of the synthetic worm; it does not go with -connect and -types")
	case o.connect != "" || o.types != "":
		c.That(false, "-connect and -types go together")
	default:
		c.AtLeast("-neurons", o.neurons, 2)
	}
	if o.report != "" {
		c.InputDir("-report", o.report)
	}
	if o.against != "" {
		c.That(o.report != "" && o.tune == "", "-against needs -report (and no -tune)")
		c.InputDir("-against", o.against)
	}
	if o.tune != "" {
		c.InputFile("-tune", o.tune)
	}
	if err := c.Err(); err != nil {
		return nil, sh, err
	}

	cells, err := o.selectCells()
	if err != nil {
		return nil, sh, err
	}
	if o.connect == "" {
		// The synthetic worm's size is known before it is drawn.
		for _, cell := range cells {
			c.That(cell.Known < o.neurons, "-neurons %d: too few for cell %s, which has %d known neurons", o.neurons, cell.Key(), cell.Known)
			c.That(cell.Nu > 0 || cell.Candidates <= float64(o.neurons), "-neurons %d: too few for cell %s, which has %g candidates per neuron", o.neurons, cell.Key(), cell.Candidates)
		}
	}
	if o.traceCell != "" {
		ok := false
		for _, cell := range cells {
			ok = ok || cell.Key() == o.traceCell || cell.Label == o.traceCell
		}
		c.That(ok, "-trace-cell %q is not among the cells run", o.traceCell)
	}
	if err := c.Err(); err != nil {
		return nil, sh, err
	}
	if sh, err = o.shardOf(); err != nil {
		return nil, sh, err
	}
	if _, err := compare.PinFromEnv(); err != nil {
		return nil, sh, cli.Usage(err)
	}
	return cells, sh, nil
}

// experiment checks the options (validate) and builds the experiment they
// describe, reading the connectome. Its errors from validate are usage
// errors; a connectome file that does not load is a failure.
func (o *options) experiment(warn io.Writer) (*celegans.Experiment, error) {
	cells, sh, err := o.validate()
	if err != nil {
		return nil, err
	}
	e := &celegans.Experiment{Cells: cells, Seeds: o.seeds, SeedStart: o.seedStart, T: o.t, OutDir: o.out, TraceCell: o.traceCell, Shard: sh}
	for _, name := range splitList(o.methods) {
		m, _ := celegans.ParseMethod(name) // checked by validate
		e.Methods = append(e.Methods, m)
	}

	if o.connect != "" {
		e.Connectome, err = celegans.LoadConnectomeFiles(o.connect, o.types)
		if err != nil {
			return nil, err
		}
		e.ConnectomeName = "WormAtlas (" + filepath.Base(o.connect) + ", " + filepath.Base(o.types) + ")"
		if msg := e.Connectome.WormAtlasMismatch(); msg != "" {
			fmt.Fprintln(warn, "celegans: warning:", msg)
		}
	} else {
		if e.Connectome, err = celegans.Synthetic(o.neurons, 1); err != nil {
			return nil, err
		}
		e.ConnectomeName = "synthetic (seed 1)"
	}

	s := o.hyper
	s.Budget, s.Steps, s.Sweeps, s.TraceEvery, s.NoPolish = o.budget, o.steps, o.sweeps, o.trace, !o.polish
	e.Settings = s
	return e, nil
}

// shardOf returns the shard the flags and environment select.
func (o *options) shardOf() (compare.Shard, error) {
	sh, err := compare.ParseShard(o.shard)
	if err != nil {
		return sh, cli.Usagef("-shard: %s", trimPrefix(err, "compare: "))
	}
	var c cli.Check
	c.AtLeast("-shards", o.shards, 0)
	c.AtLeast("-workers", o.workers, 0)
	c.AtLeast("-cores-per-worker", o.perWork, 1)
	c.That(o.workers > 0 || !o.given("cores-per-worker"), "-cores-per-worker goes with -workers")
	c.That(o.shard == "" || o.shards == 0, "-shard and -shards exclude each other")
	c.That(o.workers == 0 || (o.shard == "" && o.shards == 0), "-workers runs the shards itself; it does not go with -shard or -shards")
	c.That(o.workers*o.perWork <= runtime.NumCPU(), "-workers %d x -cores-per-worker %d needs %d cores, this machine has %d", o.workers, o.perWork, o.workers*o.perWork, runtime.NumCPU())
	if err := c.Err(); err != nil {
		return sh, err
	}
	if o.shards > 0 {
		env, ok, err := compare.ShardFromEnv(o.shards)
		if err != nil {
			return sh, cli.Usagef("-shards %d: %s", o.shards, trimPrefix(err, "compare: "))
		}
		if !ok {
			return sh, cli.Usagef("-shards %d: neither %s nor %s is set", o.shards, compare.EnvKubernetesIndex, compare.EnvSlurmIndex)
		}
		sh = env
	}
	return sh, nil
}

// runWorkers runs the grid as -workers local shard processes of this same
// program, each pinned to its own cores.
func runWorkers(ctx context.Context, o *options, args []string, stderr io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	var rest []string
	for i := 0; i < len(args); i++ {
		a := strings.TrimLeft(args[i], "-")
		name, _, hasValue := strings.Cut(a, "=")
		if name == "workers" || name == "cores-per-worker" {
			if !hasValue {
				i++ // skip the value
			}
			continue
		}
		rest = append(rest, args[i])
	}
	w := &compare.Workers{Count: o.workers, CPUsPerWorker: o.perWork, Command: append([]string{exe}, rest...), Stdout: stderr, Stderr: stderr}
	return w.Run(ctx)
}

// run is the command; it returns the exit status: 2 for a bad command line
// (nothing done), 1 for a failure, 130 when interrupted.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var o options
	fs := newFlags(&o, stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	if err := cli.Parse(fs, args); err != nil {
		return cli.Exit(stderr, "celegans", err)
	}
	if _, _, err := o.validate(); err != nil {
		return cli.Exit(stderr, "celegans", err)
	}
	if o.report != "" && o.tune == "" {
		sum, err := celegans.Report(o.report)
		if err != nil {
			return cli.Exit(stderr, "celegans", err)
		}
		if o.against == "" {
			fmt.Fprint(stdout, sum.Markdown())
			return 0
		}
		base, err := celegans.Report(o.against)
		if err != nil {
			return cli.Exit(stderr, "celegans", err)
		}
		text, err := sum.PairedMarkdown(base, filepath.Base(filepath.Clean(o.report)), filepath.Base(filepath.Clean(o.against)))
		if err != nil {
			return cli.Exit(stderr, "celegans", err)
		}
		fmt.Fprint(stdout, text)
		return 0
	}
	if o.tune != "" {
		return runTuning(ctx, &o, fs, stdout, stderr)
	}
	if err := cli.OutputDir("-out", o.out); err != nil {
		return cli.Exit(stderr, "celegans", err)
	}
	e, err := o.experiment(stderr)
	if err != nil {
		return cli.Exit(stderr, "celegans", err)
	}

	start := time.Now()
	if o.workers > 0 {
		if err := runWorkers(ctx, &o, args, stderr); err != nil {
			fmt.Fprintln(stderr, "celegans: workers:", err)
			return 1
		}
		fmt.Fprintln(stderr, "celegans: every worker finished; collecting")
	}

	progress := celegans.NewProgress(stderr, e.Settings.Budget)
	e.Progress = progress.Handle
	sum, err := e.Run(ctx)
	progress.Close()
	if sum != nil {
		fmt.Fprintln(stdout)
		if e.Shard.Count > 1 {
			fmt.Fprintf(stdout, "shard %s done; run without -shard to collect every shard and write the reports\n", e.Shard)
			return shardStatus(err, sum, stderr, o.out)
		}
		fmt.Fprint(stdout, sum.Markdown())
		fmt.Fprintf(stdout, "\nWritten to %s: %s, %s, %s", o.out, celegans.ResultsFiles, celegans.SummaryFile, celegans.ReportFile)
		for _, f := range sum.Figures {
			fmt.Fprintf(stdout, ", %s", f)
		}
		fmt.Fprintf(stdout, ".\nWall time %.1f s.\n", time.Since(start).Seconds())
	}
	return shardStatus(err, sum, stderr, o.out)
}

// shardStatus turns the outcome of a run into the exit status.
func shardStatus(err error, sum *celegans.Summary, stderr io.Writer, out string) int {
	switch {
	case errors.Is(err, context.Canceled):
		fmt.Fprintf(stderr, "celegans: interrupted; the finished runs are in %s: run the same command again to resume\n", out)
		return 130
	case err != nil:
		return cli.Exit(stderr, "celegans", err)
	case len(sum.Failures) > 0:
		fmt.Fprintf(stderr, "celegans: %d run(s) failed (listed above); they are tried again on the next run\n", len(sum.Failures))
		return 1
	}
	return 0
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
