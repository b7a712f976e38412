// Command scale measures how neural identification grows with the number of
// neurons: Gumbel-Sinkhorn variational inference on synthetic worms of N =
// 279 to 20,000 neurons with about 30 position candidates per neuron, 9%
// known neurons, one worm and T = 1000 time steps, in the sparse layout
// (the data form of the statistics and the sparse guide, see package
// celegans) and, where it is affordable, the dense one (the N × N moments
// and the dense guide).
//
// Every (N, layout, budget) is one run in a child process of its own, so
// that its peak memory (the resident set's high-water mark, VmHWM) is its
// alone. A run builds the worm (celegans.ScaledConfig, a connectome with the
// real one's degree distribution and spatial wiring at any N), simulates
// it, finds the width ν that gives the target mean number of candidates,
// and fits with celegans.Solve: the tuned settings of the tables (τ = 1.5),
// no step cap, the budget alone ending the run, polishing off (the table
// measures the method alone). It records the milliseconds per ELBO step (the median over the
// trace's intervals), the steps, the accuracy of the final estimate over
// all neurons and over the unknown ones, and the peak memory. Results are
// appended to a JSONL file as they finish; a rerun skips the runs already
// there, so an interrupted grid resumes.
//
//	go run ./benchmarks/scale -out benchmarks/scale/results
//	go run ./benchmarks/scale -report benchmarks/scale/results
//
// The second command prints the table from the results alone. -methods
// rounding,mcmc runs the baselines too (with the tables' tuned settings),
// reported in a table of their own.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/permlab/permlab/celegans"
	"github.com/permlab/permlab/perm"
)

// Result is one run.
type Result struct {
	N          int     `json:"n"`
	Method     string  `json:"method,omitempty"` // "" (Gumbel-Sinkhorn, as every record before it was named), "rounding" or "mcmc"
	Layout     string  `json:"layout"`           // "sparse" or "dense"
	Budget     string  `json:"budget"`
	Seed       uint64  `json:"seed"`
	Edges      int     `json:"edges"`
	Candidates float64 `json:"candidates"` // mean per neuron, known ones included
	Nu         float64 `json:"nu"`
	SetupSec   float64 `json:"setup_s"`
	MsPerStep  float64 `json:"ms_per_step"`
	Steps      int     `json:"steps"`
	Fits       int     `json:"fits"`
	Accuracy   float64 `json:"accuracy"`
	Unknown    float64 `json:"accuracy_unknown"`
	PeakMiB    float64 `json:"peak_mib"`
	Procs      int     `json:"gomaxprocs"`
	Go         string  `json:"go"`
	Date       string  `json:"date"`
	// Failure says why the run has no estimate (the budget ended before
	// the method's first step, sweep or draw); its accuracy and step time
	// are then 0 and mean nothing.
	Failure string `json:"failure,omitempty"`
}

func (r Result) key() string {
	return fmt.Sprintf("%d/%s/%s/%d/%s", r.N, r.Layout, r.Budget, r.Seed, r.method())
}

// method returns the record's method, Gumbel-Sinkhorn for records without one.
func (r Result) method() celegans.Method {
	if r.Method == "" {
		return celegans.GumbelSinkhorn
	}
	return celegans.Method(r.Method)
}

// methods are the methods the harness runs, with the tables' tuned settings.
var methods = []celegans.Method{celegans.GumbelSinkhorn, celegans.Rounding, celegans.MCMC}

type config struct {
	neurons    []int
	methods    []celegans.Method
	budgets    []time.Duration
	denseMax   int
	candidates float64
	known      float64
	steps      int
	seed       uint64
	out        string
	report     string
	child      bool
	n          int
	layout     string
	method     celegans.Method
	budget     time.Duration
	profile    string
	memprofile string
}

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(2)
	}
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string, stderr io.Writer) (*config, error) {
	fs := flag.NewFlagSet("scale", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := &config{}
	neurons := fs.String("neurons", "279,1000,2000,5000,10000,20000", "comma-separated numbers of neurons")
	budgets := fs.String("budgets", "60s,10m", "comma-separated wall-clock budgets per run")
	methodList := fs.String("methods", string(celegans.GumbelSinkhorn), "comma-separated methods: gumbel-sinkhorn, rounding, mcmc (each with the tables' tuned settings)")
	fs.IntVar(&c.denseMax, "dense-max", 2000, "largest N also run in the dense layout (0: none)")
	fs.Float64Var(&c.candidates, "candidates", 30, "target mean number of position candidates per neuron")
	fs.Float64Var(&c.known, "known", 0.09, "fraction of known neurons")
	fs.IntVar(&c.steps, "T", 1000, "time steps per worm")
	seed := fs.Uint64("seed", 1, "seed of the worm and the fit")
	fs.StringVar(&c.out, "out", "out/scale", "results directory (results.jsonl is appended to)")
	fs.StringVar(&c.report, "report", "", "print the table of the results in this directory and exit")
	fs.BoolVar(&c.child, "child", false, "internal: run one configuration and print its result")
	fs.IntVar(&c.n, "n", 0, "internal: neurons of the child run")
	fs.StringVar(&c.layout, "layout", "", "internal: layout of the child run")
	method := fs.String("method", string(celegans.GumbelSinkhorn), "internal: method of the child run")
	fs.DurationVar(&c.budget, "budget", 0, "internal: budget of the child run")
	fs.StringVar(&c.profile, "cpuprofile", "", "with -child: write a CPU profile of the fit to this file")
	fs.StringVar(&c.memprofile, "memprofile", "", "with -child: write the heap profile of the largest live heap seen after a collection to this file")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	c.seed = *seed
	var err error
	for _, f := range strings.Split(*methodList, ",") {
		m := celegans.Method(strings.TrimSpace(f))
		if !slices.Contains(methods, m) || slices.Contains(c.methods, m) {
			return nil, fmt.Errorf("-methods: %q is not one of %v, or is given twice", f, methods)
		}
		c.methods = append(c.methods, m)
	}
	c.method = celegans.Method(*method)
	if !slices.Contains(methods, c.method) {
		return nil, fmt.Errorf("-method: %q is not one of %v", *method, methods)
	}
	if c.neurons, err = parseInts(*neurons); err != nil {
		return nil, fmt.Errorf("-neurons: %w", err)
	}
	for _, n := range c.neurons {
		if n < 50 {
			return nil, fmt.Errorf("-neurons: %d is below 50", n)
		}
	}
	for _, s := range strings.Split(*budgets, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("-budgets: %q is not a positive duration", s)
		}
		c.budgets = append(c.budgets, d)
	}
	switch {
	case c.denseMax < 0:
		return nil, fmt.Errorf("-dense-max must be >= 0, got %d", c.denseMax)
	case !(c.candidates >= 2):
		return nil, fmt.Errorf("-candidates must be >= 2, got %v", c.candidates)
	case !(c.known >= 0 && c.known < 1):
		return nil, fmt.Errorf("-known must be in [0, 1), got %v", c.known)
	case c.steps < 2:
		return nil, fmt.Errorf("-T must be >= 2, got %d", c.steps)
	}
	if (c.profile != "" || c.memprofile != "") && !c.child {
		return nil, fmt.Errorf("-cpuprofile and -memprofile need -child")
	}
	if c.child {
		if c.n < 50 || (c.layout != "sparse" && c.layout != "dense") || c.budget <= 0 {
			return nil, fmt.Errorf("-child needs -n >= 50, -layout sparse|dense and -budget > 0")
		}
		return c, nil
	}
	if c.report == "" {
		if err := os.MkdirAll(c.out, 0o755); err != nil {
			return nil, fmt.Errorf("-out: %w", err)
		}
		f, err := os.OpenFile(filepath.Join(c.out, "results.jsonl"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, fmt.Errorf("-out: %w", err)
		}
		f.Close()
	}
	return c, nil
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("%q is not an integer", f)
		}
		out = append(out, v)
	}
	return out, nil
}

func run(c *config) error {
	if c.child {
		if c.profile != "" {
			f, err := os.Create(c.profile)
			if err != nil {
				return fmt.Errorf("-cpuprofile: %w", err)
			}
			defer f.Close()
			if err := pprof.StartCPUProfile(f); err != nil {
				return fmt.Errorf("-cpuprofile: %w", err)
			}
			defer pprof.StopCPUProfile()
		}
		if c.memprofile != "" {
			stop, err := peakHeapProfile(c.memprofile, 50*time.Millisecond)
			if err != nil {
				return fmt.Errorf("-memprofile: %w", err)
			}
			defer func() {
				if err := stop(); err != nil {
					fmt.Fprintln(os.Stderr, "scale: -memprofile:", err)
				}
			}()
		}
		r, err := one(c)
		if err != nil {
			return err
		}
		return json.NewEncoder(os.Stdout).Encode(r)
	}
	if c.report != "" {
		rs, err := load(filepath.Join(c.report, "results.jsonl"))
		if err != nil {
			return err
		}
		fmt.Print(table(rs))
		return nil
	}
	path := filepath.Join(c.out, "results.jsonl")
	done, err := load(path)
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for _, r := range done {
		have[r.key()] = true
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	for _, m := range c.methods {
		for _, b := range c.budgets {
			for _, n := range c.neurons {
				for _, layout := range []string{"sparse", "dense"} {
					if layout == "dense" && n > c.denseMax {
						continue
					}
					if err := c.runChild(self, path, have, m, n, layout, b); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// runChild runs one configuration in a child process, unless the results
// hold it, and appends its result.
func (c *config) runChild(self, path string, have map[string]bool, m celegans.Method, n int, layout string, b time.Duration) error {
	want := Result{N: n, Layout: layout, Budget: b.String(), Seed: c.seed}
	if m != celegans.GumbelSinkhorn {
		want.Method = string(m)
	}
	if have[want.key()] {
		return nil
	}
	what := fmt.Sprintf("%s, N = %d, %s, %v", m, n, layout, b)
	fmt.Fprintf(os.Stderr, "%s: started %s\n", what, time.Now().Format(time.TimeOnly))
	args := []string{"-child", "-method", string(m), "-n", strconv.Itoa(n), "-layout", layout, "-budget", b.String(),
		"-candidates", fmt.Sprint(c.candidates), "-known", fmt.Sprint(c.known), "-T", strconv.Itoa(c.steps),
		"-seed", strconv.FormatUint(c.seed, 10)}
	cmd := exec.Command(self, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	var r Result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		return fmt.Errorf("%s: bad child output %q: %w", what, out.String(), err)
	}
	if err := appendResult(path, r); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "%s: %.1f ms/step, %d steps, accuracy %.3f (unknown %.3f), peak %.0f MiB\n",
		what, r.MsPerStep, r.Steps, r.Accuracy, r.Unknown, r.PeakMiB)
	return nil
}

// one runs one configuration in this process.
func one(c *config) (*Result, error) {
	t0 := time.Now()
	conn, err := celegans.ScaledConfig{N: c.n}.Generate(c.seed)
	if err != nil {
		return nil, err
	}
	nu, _, err := celegans.CandidateWidth(conn, c.candidates)
	if err != nil {
		return nil, err
	}
	sim, err := celegans.Simulate(conn, celegans.SimConfig{Worms: 1, T: c.steps, KnownFraction: c.known}, c.seed)
	if err != nil {
		return nil, err
	}
	masks, err := sim.PositionMasks(nu)
	if err != nil {
		return nil, err
	}
	w := sim.Worms[0]
	var st *celegans.Stats
	if c.layout == "sparse" {
		st, err = celegans.NewDataStats(w.Y)
	} else {
		st, err = w.Stats()
	}
	if err != nil {
		return nil, err
	}
	// The recording is in the statistics now; the simulation's copy goes.
	truth, known := w.Perm, w.Known
	sim.Worms = nil
	p, err := celegans.NewProblem(conn, []*celegans.Stats{st}, masks, [][]int{known}, sim.NoiseVar, []perm.Perm{truth})
	if err != nil {
		return nil, err
	}
	cands := float64(p.Masks[0].Count()) / float64(c.n)
	setup := time.Since(t0)

	// The tables' tuned settings (celegans/tuning).
	s := celegans.DefaultSettings()
	s.Tau = 1.5
	s.RoundTau = 0.7
	s.Chains, s.Estimator = 2, celegans.EstimateTail
	s.Budget = c.budget
	s.Steps = math.MaxInt32 // the budget ends the run (MCMC keeps its cap of 100,000 sweeps, which no run here reaches)
	s.NoPolish = true
	s.DenseLayout = c.layout == "dense"
	s.TraceEvery = traceEvery(c.n, c.layout)
	m := c.method
	if m == "" {
		m = celegans.GumbelSinkhorn
	}
	method := ""
	if m != celegans.GumbelSinkhorn {
		method = string(m)
	}
	out, err := celegans.Solve(context.Background(), p, m, s, c.seed)
	r := &Result{
		N: c.n, Method: method, Layout: c.layout, Budget: c.budget.String(), Seed: c.seed,
		Edges: conn.Edges(), Candidates: cands, Nu: nu, SetupSec: setup.Seconds(),
		PeakMiB: peakMiB(), Procs: runtime.GOMAXPROCS(0), Go: runtime.Version(),
		Date: time.Now().UTC().Format(time.DateOnly),
	}
	if errors.Is(err, celegans.ErrBudgetTooShort) {
		// A result of the grid, not a failure of the code: this method
		// gives no estimate at this size within the budget.
		r.Failure = err.Error()
		return r, nil
	}
	if err != nil {
		return nil, err
	}
	r.MsPerStep = msPerStep(out.Trace)
	if math.IsNaN(r.MsPerStep) && out.Iterations > 0 {
		// Too few trace points: the whole run's mean, setup of the fit
		// and the estimate included.
		r.MsPerStep = float64(out.Elapsed) / float64(time.Millisecond) / float64(out.Iterations)
	}
	r.Steps, r.Fits = out.Iterations, out.Fits
	r.Accuracy, r.Unknown = out.Accuracy, out.AccuracyUnknown
	return r, nil
}

// traceEvery spaces the trace points (each solves one assignment problem)
// a few seconds apart at the step times the layouts are expected to have.
func traceEvery(n int, layout string) int {
	if layout == "dense" {
		return max(1, 200*279*279/(n*n))
	}
	return max(5, 200*279/n)
}

// msPerStep is the median time per step over the trace's intervals within
// one fit (the step count rises).
func msPerStep(tr []celegans.TracePoint) float64 {
	var per []float64
	for i := 1; i < len(tr); i++ {
		if ds := tr[i].Step - tr[i-1].Step; ds > 0 {
			per = append(per, float64(tr[i].Elapsed-tr[i-1].Elapsed)/float64(time.Millisecond)/float64(ds))
		}
	}
	if len(per) == 0 {
		return math.NaN()
	}
	sort.Float64s(per)
	return per[len(per)/2]
}

// peakMiB reads the resident set's high-water mark from /proc (NaN where
// there is none).
func peakMiB() float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return math.NaN()
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err == nil {
				return kb / 1024
			}
		}
	}
	return math.NaN()
}

func load(path string) ([]Result, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Result
	for i, line := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var r Result
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, i+1, err)
		}
		out = append(out, r)
	}
	return out, nil
}

func appendResult(path string, r Result) error {
	js, err := json.Marshal(r)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(js, '\n')); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// table formats the results: one row per N and layout, with the step
// time of its longest run, its peak memory over all runs, and a column of
// accuracy per budget; Gumbel-Sinkhorn's table first, then, if any were
// run, the other methods' with a column naming the method.
func table(rs []Result) string {
	var gs, others []Result
	for _, r := range rs {
		if r.method() == celegans.GumbelSinkhorn {
			gs = append(gs, r)
		} else {
			others = append(others, r)
		}
	}
	out := methodTable(gs, false)
	if len(others) > 0 {
		if out != "" {
			out += "\n"
		}
		out += methodTable(others, true)
	}
	return out
}

// methodTable formats rs, with a method column if withMethod.
func methodTable(rs []Result, withMethod bool) string {
	if len(rs) == 0 {
		return ""
	}
	type key struct {
		method celegans.Method
		n      int
		layout string
	}
	runs := map[key]map[string]*Result{}
	var keys []key
	var budgets []time.Duration
	for i := range rs {
		r := &rs[i]
		k := key{r.method(), r.N, r.Layout}
		if runs[k] == nil {
			runs[k] = map[string]*Result{}
			keys = append(keys, k)
		}
		runs[k][r.Budget] = r
		if d, err := time.ParseDuration(r.Budget); err == nil && !slices.Contains(budgets, d) {
			budgets = append(budgets, d)
		}
	}
	slices.Sort(budgets)
	slices.SortFunc(keys, func(a, b key) int {
		if a.method != b.method {
			return slices.Index(methods, a.method) - slices.Index(methods, b.method)
		}
		if a.n != b.n {
			return a.n - b.n
		}
		return strings.Compare(b.layout, a.layout) // sparse first
	})
	var b strings.Builder
	cols := 5
	if withMethod {
		b.WriteString("| method | N | candidates | layout | ms per step or sweep | peak memory |")
		cols++
	} else {
		b.WriteString("| N | candidates | layout | ms per step | peak memory |")
	}
	for _, d := range budgets {
		fmt.Fprintf(&b, " accuracy after %s |", fmtBudget(d))
	}
	b.WriteString("\n|" + strings.Repeat("---|", cols+len(budgets)) + "\n")
	for _, k := range keys {
		var longest *Result
		peak := math.NaN()
		for _, d := range budgets {
			if r := runs[k][d.String()]; r != nil {
				longest = r
				peak = maxPeak(peak, r.PeakMiB)
			}
		}
		if withMethod {
			fmt.Fprintf(&b, "| %s ", k.method)
		}
		ms := longest.MsPerStep
		if longest.Failure != "" {
			ms = math.NaN()
		}
		fmt.Fprintf(&b, "| %d | %.1f | %s | %s | %s |", k.n, longest.Candidates, k.layout, fmtMs(ms), fmtMiB(peak))
		for _, d := range budgets {
			fmt.Fprintf(&b, " %s |", fmtAcc(runs[k][d.String()]))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func fmtBudget(d time.Duration) string {
	switch {
	case d >= time.Minute && d%time.Minute == 0:
		return fmt.Sprintf("%d min", int(d/time.Minute))
	case d%time.Second == 0:
		return fmt.Sprintf("%d s", int(d/time.Second))
	}
	return d.String()
}

func maxPeak(a, b float64) float64 {
	if math.IsNaN(a) || b > a {
		return b
	}
	return a
}

func fmtMs(v float64) string {
	switch {
	case math.IsNaN(v):
		return "–"
	case v < 10:
		return fmt.Sprintf("%.2f", v)
	case v < 1000:
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

func fmtMiB(v float64) string {
	switch {
	case math.IsNaN(v):
		return "–"
	case v >= 1024:
		return fmt.Sprintf("%.1f GiB", v/1024)
	}
	return fmt.Sprintf("%.0f MiB", v)
}

func fmtAcc(r *Result) string {
	switch {
	case r == nil:
		return "not run"
	case r.Failure != "":
		_, why, _ := strings.Cut(r.Failure, "budget ")
		return "no estimate: budget " + why
	}
	unit := "steps"
	if r.method() == celegans.MCMC {
		unit = "sweeps"
	}
	return fmt.Sprintf("%.3f (%.3f) in %d %s", r.Accuracy, r.Unknown, r.Steps, unit)
}
