// Command sorting trains the Sinkhorn network of Mena et al. (2018) to sort
// lists of n numbers drawn from U(0, 1) and tests it on the intervals of the
// seed paper's Table 1 (package models/sorting).
//
//	go run ./examples/sorting -n 10 -seed 1 -test "0:1,10:11" -json out.json
//
// trains one network and prints the metrics per test interval; -table1 runs
// the whole Table 1 grid instead. Run it with -h for the flags.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/permlab/permlab/models/sorting"
)

const usage = `Usage: go run ./examples/sorting [flags]

Trains a Sinkhorn network to sort lists of -n numbers from U(0,1), with fresh
lists every step, then sorts -test-lists lists from each -test interval
(drawn from -test-seed, without retraining) and prints the proportion of
lists with any error (the seed paper's Table 1 measure), the proportion of
misplaced numbers and Kendall's tau.

  go run ./examples/sorting -n 10 -seed 1 -test "0:1,10:11" -json out.json

-variant paper is the network of the paper; -variant standardized maps each
list onto [0,1] by its minimum and range first, which makes it independent of
the interval. Progress goes to stderr, the table to stdout. With -val-every,
the weights kept are those that sorted the most -val-lists validation lists
from U(0,1) (seed -val-seed) at a checkpoint, not the last ones.

With -table1, runs the grid of Table 1 instead: every -ns size, both
variants, seeds 1..-seeds, appending one JSON line per trained network to
-results (run the same command again to skip the finished ones), then prints
the table with the mean and spread over seeds beside the paper's numbers.

Flags:
`

// options are the parsed flags.
type options struct {
	n, testLists, seeds   int
	steps, batch, samples int
	iters                 int
	seed, testSeed        uint64
	tau, tauEnd           float64
	valEvery, valLists    int
	valSeed               uint64
	lr, lrEnd, noise      float64
	variant, test         string
	save, load, jsonOut   string
	table1                bool
	results, ns, markdown string
	intervals             []interval
	parsedVariant         sorting.Variant
	parsedNs              []int
	setFlags              map[string]bool
}

// interval is a test distribution U(low, high).
type interval struct{ low, high float64 }

func (iv interval) String() string { return fmt.Sprintf("U(%g,%g)", iv.low, iv.high) }

// paperIntervals are the test distributions of Table 1, in its order.
var paperIntervals = []interval{{0, 1}, {0, 10}, {0, 1000}, {1, 2}, {10, 11}, {100, 101}, {1000, 1001}}

const defaultTest = "0:1,0:10,0:1000,1:2,10:11,100:101,1000:1001"

func newFlags(o *options, out io.Writer) *flag.FlagSet {
	d := sorting.DefaultConfig(2)
	fs := flag.NewFlagSet("sorting", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.IntVar(&o.n, "n", 10, "list size (>= 2)")
	fs.Uint64Var(&o.seed, "seed", 1, "training seed (initial weights, training lists, noise)")
	fs.StringVar(&o.variant, "variant", "paper", "network: paper or standardized")
	fs.StringVar(&o.test, "test", defaultTest, "comma-separated test intervals low:high")
	fs.IntVar(&o.testLists, "test-lists", 10000, "test lists per interval")
	fs.Uint64Var(&o.testSeed, "test-seed", 2, "seed of the test lists")
	fs.IntVar(&o.steps, "steps", 0, "training steps (default: sorting.DefaultSteps(n))")
	fs.IntVar(&o.batch, "batch", d.Batch, "lists per training step")
	fs.IntVar(&o.samples, "samples", d.Samples, "Gumbel samples per list")
	fs.IntVar(&o.iters, "iters", d.Iters, "Sinkhorn iterations")
	fs.Float64Var(&o.tau, "tau", d.Tau, "Sinkhorn temperature")
	fs.Float64Var(&o.tauEnd, "tau-end", d.TauEnd, "final Sinkhorn temperature (geometric annealing from -tau; 0: none)")
	fs.Float64Var(&o.lr, "lr", d.LR, "initial Adam learning rate")
	fs.Float64Var(&o.lrEnd, "lr-end", d.LREnd, "final learning rate (cosine annealing from -lr)")
	fs.Float64Var(&o.noise, "noise", d.Noise, "noise factor of the Gumbel noise while training")
	fs.IntVar(&o.valEvery, "val-every", 0, "keep the weights that sort the most U(0,1) validation lists, checked every this many steps (0: keep the last)")
	fs.IntVar(&o.valLists, "val-lists", 200, "with -val-every: validation lists")
	fs.Uint64Var(&o.valSeed, "val-seed", 99, "with -val-every: seed of the validation lists (must differ from -test-seed)")
	fs.StringVar(&o.save, "save", "", "write the trained network to this `file`")
	fs.StringVar(&o.load, "load", "", "load a trained network from this `file` instead of training (same -n and -variant)")
	fs.StringVar(&o.jsonOut, "json", "", "write the results as JSON to this `file`")
	fs.BoolVar(&o.table1, "table1", false, "run the Table 1 grid (see above)")
	fs.IntVar(&o.seeds, "seeds", 3, "with -table1: training seeds 1..seeds per cell")
	fs.StringVar(&o.ns, "ns", "5,10,15,80,100,120", "with -table1: comma-separated list sizes")
	fs.StringVar(&o.results, "results", "models/sorting/results/table1.jsonl", "with -table1: JSON-lines results `file`, also the resume point")
	fs.StringVar(&o.markdown, "markdown", "", "with -table1: also write the table to this markdown `file`")
	return fs
}

// parseIntervals parses "low:high,low:high,...".
func parseIntervals(s string) ([]interval, error) {
	var out []interval
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		lo, hi, ok := strings.Cut(f, ":")
		if !ok {
			return nil, fmt.Errorf("-test: interval %q is not low:high", f)
		}
		low, err1 := strconv.ParseFloat(strings.TrimSpace(lo), 64)
		high, err2 := strconv.ParseFloat(strings.TrimSpace(hi), 64)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("-test: interval %q: %w", f, err)
		}
		if math.IsNaN(low) || math.IsInf(low, 0) || math.IsNaN(high) || math.IsInf(high, 0) || !(high > low) {
			return nil, fmt.Errorf("-test: interval %q: want finite low < high", f)
		}
		out = append(out, interval{low, high})
	}
	if len(out) == 0 {
		return nil, errors.New("-test: no intervals")
	}
	return out, nil
}

// parseInts parses "5,10,15".
func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		v, err := strconv.Atoi(f)
		if err != nil || v < 2 {
			return nil, fmt.Errorf("-ns: %q is not a list size >= 2", f)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, errors.New("-ns: no list sizes")
	}
	return out, nil
}

// check validates the options after parsing.
func (o *options) check() error {
	var err error
	if o.intervals, err = parseIntervals(o.test); err != nil {
		return err
	}
	if o.parsedVariant, err = sorting.ParseVariant(o.variant); err != nil {
		return fmt.Errorf("-variant: %q is not paper or standardized", o.variant)
	}
	if o.testLists < 1 {
		return fmt.Errorf("-test-lists must be >= 1, got %d", o.testLists)
	}
	if o.steps < 0 {
		return fmt.Errorf("-steps must be >= 0, got %d", o.steps)
	}
	if o.valEvery < 0 {
		return fmt.Errorf("-val-every must be >= 0, got %d", o.valEvery)
	}
	if o.valEvery > 0 {
		if o.valLists < 1 {
			return fmt.Errorf("-val-lists must be >= 1, got %d", o.valLists)
		}
		if o.valSeed == o.testSeed {
			return fmt.Errorf("-val-seed %d must differ from -test-seed", o.valSeed)
		}
	}
	if o.table1 {
		if o.seeds < 1 {
			return fmt.Errorf("-seeds must be >= 1, got %d", o.seeds)
		}
		if o.save != "" || o.load != "" || o.jsonOut != "" {
			return errors.New("-table1 does not take -save, -load or -json")
		}
		for _, name := range []string{"n", "seed", "variant"} {
			if o.setFlags[name] {
				return fmt.Errorf("-table1 runs every size, seed and variant: drop -%s (see -ns, -seeds)", name)
			}
		}
		if o.parsedNs, err = parseInts(o.ns); err != nil {
			return err
		}
		if o.results == "" {
			return errors.New("-results must not be empty")
		}
		return nil
	}
	_, err = o.config(o.n, o.seed, o.parsedVariant)
	return err
}

// config returns the network settings of the flags for one cell.
func (o *options) config(n int, seed uint64, v sorting.Variant) (sorting.Config, error) {
	if n < 2 {
		return sorting.Config{}, fmt.Errorf("-n must be >= 2, got %d", n)
	}
	c := sorting.DefaultConfig(n)
	if o.steps > 0 {
		c.Steps = o.steps
	}
	c.Batch, c.Samples, c.Iters = o.batch, o.samples, o.iters
	c.Tau, c.TauEnd, c.LR, c.LREnd, c.Noise = o.tau, o.tauEnd, o.lr, o.lrEnd, o.noise
	c.Seed, c.Variant = seed, v
	if err := c.Validate(); err != nil {
		return c, errors.New(strings.TrimPrefix(err.Error(), "sorting: Config: "))
	}
	return c, nil
}

// validation returns the checkpoint selection of the flags.
func (o *options) validation() validation {
	if o.valEvery == 0 {
		return validation{}
	}
	return validation{every: o.valEvery, lists: o.valLists, seed: o.valSeed}
}

// Output is the JSON written by -json.
type Output struct {
	N            int               `json:"n"`
	Variant      string            `json:"variant"`
	Seed         uint64            `json:"seed"`
	Steps        int               `json:"steps"`
	Iters        int               `json:"iters"`
	Tau          float64           `json:"tau"`
	TauEnd       float64           `json:"tau_end,omitempty"`
	Noise        float64           `json:"noise"`
	ValEvery     int               `json:"val_every,omitempty"`
	ValLists     int               `json:"val_lists,omitempty"`
	ValSeed      uint64            `json:"val_seed,omitempty"`
	KeptStep     int               `json:"kept_step"`
	TrainSeconds float64           `json:"train_seconds"`
	TestSeed     uint64            `json:"test_seed"`
	Results      []sorting.Metrics `json:"results"`
}

// validation says how to choose the weights to keep: with every > 0, the
// weights are tested every that many steps (and after the last) on lists
// U(0, 1) from seed, and the ones with the lowest proportion of lists with
// any number out of place are kept, the later on a tie. Seed must not be the
// test seed, so that the choice does not peek at the test lists.
type validation struct {
	every, lists int
	seed         uint64
}

// trainOne builds the network of cfg and trains it (or loads it from load),
// reporting progress on stderr; it returns the network, the training time in
// seconds (validation included) and the step whose weights it kept.
func trainOne(ctx context.Context, cfg sorting.Config, load string, val validation, stderr io.Writer) (*sorting.Network, float64, int, error) {
	net, err := sorting.New(cfg)
	if err != nil {
		return nil, 0, 0, err
	}
	if load != "" {
		return net, 0, 0, net.Load(load)
	}
	p := newProgress(stderr, cfg)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		best     []float64 // kept weights, all parameters concatenated
		bestStep int
		bestProp = math.Inf(1)
		valErr   error
	)
	update := p.update
	if val.every > 0 {
		update = func(step int, loss float64) {
			p.update(step, loss)
			if step%val.every != 0 && step != cfg.Steps {
				return
			}
			m, err := sorting.Evaluate(net, 0, 1, val.lists, val.seed)
			if err != nil {
				valErr = err
				cancel()
				return
			}
			fmt.Fprintf(stderr, "n=%d %v seed %d: step %d: validation prop. any wrong %.3f\n",
				cfg.N, cfg.Variant, cfg.Seed, step, m.PropAnyWrong)
			if m.PropAnyWrong <= bestProp {
				bestProp, bestStep, best = m.PropAnyWrong, step, best[:0]
				for _, q := range net.Params() {
					best = append(best, q.Value.Data...)
				}
			}
		}
	}
	start := time.Now()
	err = net.Train(ctx, update)
	p.done()
	secs := time.Since(start).Seconds()
	if valErr != nil {
		return nil, secs, 0, fmt.Errorf("validation: %w", valErr)
	}
	if err != nil || best == nil {
		return net, secs, net.StepsDone(), err
	}
	for _, q := range net.Params() {
		best = best[copy(q.Value.Data, best):]
	}
	fmt.Fprintf(stderr, "n=%d %v seed %d: kept the weights of step %d (validation prop. any wrong %.3f)\n",
		cfg.N, cfg.Variant, cfg.Seed, bestStep, bestProp)
	return net, secs, bestStep, nil
}

// evaluate tests net on every interval.
func evaluate(net *sorting.Network, ivs []interval, lists int, seed uint64) ([]sorting.Metrics, error) {
	out := make([]sorting.Metrics, 0, len(ivs))
	for _, iv := range ivs {
		m, err := sorting.Evaluate(net, iv.low, iv.high, lists, seed)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// printMetrics writes a table of results to w.
func printMetrics(w io.Writer, ms []sorting.Metrics) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "test distribution\tlists\tprop. any wrong\tprop. wrong\tKendall tau\t")
	for _, m := range ms {
		fmt.Fprintf(tw, "%v\t%d\t%.4f\t%.4f\t%.4f\t\n", interval{m.Low, m.High}, m.Lists, m.PropAnyWrong, m.PropWrong, m.KendallTau)
	}
	tw.Flush()
}

// runSingle trains (or loads) one network and tests it.
func runSingle(ctx context.Context, o *options, stdout, stderr io.Writer) error {
	cfg, err := o.config(o.n, o.seed, o.parsedVariant)
	if err != nil {
		return err
	}
	val := o.validation()
	net, secs, kept, err := trainOne(ctx, cfg, o.load, val, stderr)
	if err != nil {
		return err
	}
	if o.save != "" {
		if err := net.Save(o.save); err != nil {
			return err
		}
	}
	ms, err := evaluate(net, o.intervals, o.testLists, o.testSeed)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "n = %d, %v network, seed %d, %d steps, trained in %.1f s; %d test lists per interval (seed %d)\n\n",
		cfg.N, cfg.Variant, cfg.Seed, net.StepsDone(), secs, o.testLists, o.testSeed)
	printMetrics(stdout, ms)
	if o.jsonOut == "" {
		return nil
	}
	out := Output{N: cfg.N, Variant: cfg.Variant.String(), Seed: cfg.Seed, Steps: net.StepsDone(),
		Iters: cfg.Iters, Tau: cfg.Tau, TauEnd: cfg.TauEnd, Noise: cfg.Noise, KeptStep: kept, TrainSeconds: secs,
		ValEvery: val.every, ValLists: val.lists, ValSeed: val.seed, TestSeed: o.testSeed, Results: ms}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(o.jsonOut, append(b, '\n'), 0o644)
}

// run is the command; it returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o := options{setFlags: map[string]bool{}}
	fs := newFlags(&o, stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "sorting: unexpected arguments %q (see -h)\n", fs.Args())
		return 2
	}
	fs.Visit(func(f *flag.Flag) { o.setFlags[f.Name] = true })
	if err := o.check(); err != nil {
		fmt.Fprintln(stderr, "sorting:", err)
		return 2
	}
	var err error
	if o.table1 {
		err = runTable1(ctx, &o, stdout, stderr)
	} else {
		err = runSingle(ctx, &o, stdout, stderr)
	}
	switch {
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(stderr, "sorting: interrupted")
		return 130
	case err != nil:
		fmt.Fprintln(stderr, "sorting:", err)
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
