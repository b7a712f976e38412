// The experiment runner: the grids of the seed paper's Tables 3 and 7, with
// their published numbers, and Experiment, which runs every method on every
// cell and seed, appending results to a JSON-lines file it can resume from.

package celegans

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"time"

	"github.com/permlab/permlab/compare"
)

// Cell is one column of the seed paper's Tables 3 and 7: a simulation set-up
// (worms, known neurons, candidate constraint) on which every method runs.
//
// The candidate constraint is the position window |pos_m - pos_n| < nu of
// PositionMask. Nu gives the width directly; if Nu is 0, Candidates is a
// target mean number of candidates per neuron, turned into a width by
// CandidateWidth on the connectome of the run.
type Cell struct {
	Table      int     // table of the seed paper (3 or 7); 0 for a cell of one's own
	Label      string  // short name, unique within its table, e.g. "40-easy"; used by SelectCells
	Header     string  // column header, e.g. "40% easy"
	Worms      int     // worms sharing W, at least 1
	Known      int     // neurons per worm whose identity is given
	Nu         float64 // candidate width; if 0, Candidates is used
	Candidates float64 // target mean number of candidates per neuron, when Nu is 0

	// Paper holds the accuracy published in the seed paper for each method,
	// nil for cells of one's own. The paper does not say whether it counts
	// the known neurons.
	Paper map[Method]float64
}

// Key returns the cell's name across tables: "t3/40-easy" for a cell of
// Table 3, the bare label for a cell of one's own.
func (c Cell) Key() string {
	if c.Table == 0 {
		return c.Label
	}
	return fmt.Sprintf("t%d/%s", c.Table, c.Label)
}

func (c Cell) title() string {
	if c.Header != "" {
		return c.Header
	}
	return c.Label
}

func (c Cell) validate(n int) error {
	switch {
	case c.Label == "" || strings.ContainsAny(c.Label, " ,\t\n"):
		return fmt.Errorf("celegans: cell %q: label must be non-empty, without spaces or commas", c.Label)
	case c.Worms < 1:
		return fmt.Errorf("celegans: cell %s: need at least 1 worm, got %d", c.Key(), c.Worms)
	case c.Known < 0 || c.Known >= n:
		return fmt.Errorf("celegans: cell %s: known neurons must be in [0, %d) for %d neurons, got %d", c.Key(), n, n, c.Known)
	case c.Nu < 0 || math.IsNaN(c.Nu) || math.IsInf(c.Nu, 0):
		return fmt.Errorf("celegans: cell %s: candidate width must be finite and >= 0, got %v", c.Key(), c.Nu)
	case c.Nu == 0 && !(c.Candidates >= 1 && c.Candidates <= float64(n)):
		return fmt.Errorf("celegans: cell %s: without a width, target candidates must be in [1, %d], got %v", c.Key(), n, c.Candidates)
	}
	return nil
}

// Table 3 of the seed paper: 4 worms; 40, 30, 20 and 10 % of the neurons
// known; "easy" and "hard" candidate widths nu = 0.05 and 0.1.
var (
	table3Known  = []int{110, 83, 55, 25}
	table3Pct    = []int{40, 30, 20, 10}
	table3Widths = []struct {
		name string
		nu   float64
	}{{"easy", 0.05}, {"hard", 0.1}}
	// table3Paper[m][k] is the accuracy of method m in the k-th column
	// (40% easy, 40% hard, 30% easy, ..., 10% hard).
	table3Paper = map[Method][8]float64{
		MCMC:                {.85, .82, .51, .44, .29, .27, .16, .12},
		Rounding:            {.97, .95, .90, .85, .77, .59, .39, .21},
		GumbelSinkhorn:      {.97, .96, .92, .84, .76, .59, .44, .26},
		GumbelSinkhornNoReg: {.96, .93, .89, .78, .71, .52, .40, .23},
	}

	// Table 7 of the seed paper: 25 known neurons; mean numbers of
	// candidates 10, 30, 45 and 60; 1 and 4 worms.
	table7Known      = 25
	table7Candidates = []int{10, 30, 45, 60}
	table7Worms      = []int{1, 4}
	table7Paper      = map[Method][8]float64{
		MCMC:                {.34, .65, .18, .28, .14, .17, .13, .16},
		Rounding:            {.77, .93, .33, .70, .18, .48, .17, .37},
		GumbelSinkhorn:      {.79, .94, .40, .69, .25, .51, .21, .44},
		GumbelSinkhornNoReg: {.77, .92, .40, .64, .25, .44, .21, .39},
	}
)

func paperColumn(table map[Method][8]float64, k int) map[Method]float64 {
	out := make(map[Method]float64, len(table))
	for m, row := range table {
		out[m] = row[k]
	}
	return out
}

// Table3Cells returns the eight cells of the seed paper's Table 3, in its
// column order: 4 worms, 110, 83, 55 and 25 known neurons (40, 30, 20 and
// 10 % of 278), each with the easy (nu = 0.05) and hard (nu = 0.1) candidate
// widths. Labels are "40-easy", "40-hard", ..., "10-hard".
func Table3Cells() []Cell {
	var cells []Cell
	for i, known := range table3Known {
		for _, w := range table3Widths {
			cells = append(cells, Cell{
				Table:  3,
				Label:  fmt.Sprintf("%d-%s", table3Pct[i], w.name),
				Header: fmt.Sprintf("%d%% %s", table3Pct[i], w.name),
				Worms:  4,
				Known:  known,
				Nu:     w.nu,
				Paper:  paperColumn(table3Paper, len(cells)),
			})
		}
	}
	return cells
}

// Table7Cells returns the eight cells of the seed paper's Table 7, in its
// column order: 25 known neurons, mean numbers of candidates 10, 30, 45 and
// 60 (widths found by CandidateWidth), each with 1 and 4 worms. Labels are
// "10c-1w", "10c-4w", ..., "60c-4w".
func Table7Cells() []Cell {
	var cells []Cell
	for _, cand := range table7Candidates {
		for _, worms := range table7Worms {
			cells = append(cells, Cell{
				Table:      7,
				Label:      fmt.Sprintf("%dc-%dw", cand, worms),
				Header:     fmt.Sprintf("%d cand. %dw", cand, worms),
				Worms:      worms,
				Known:      table7Known,
				Candidates: float64(cand),
				Paper:      paperColumn(table7Paper, len(cells)),
			})
		}
	}
	return cells
}

// SelectCells returns the cells of the given table ("3", "7", "all" or ""
// for both) whose label or key is in labels (all of them if labels is
// empty), in table order. It is an error if a label matches no cell.
func SelectCells(table string, labels []string) ([]Cell, error) {
	var pool []Cell
	switch strings.TrimSpace(strings.ToLower(table)) {
	case "3":
		pool = Table3Cells()
	case "7":
		pool = Table7Cells()
	case "all", "":
		pool = append(Table3Cells(), Table7Cells()...)
	default:
		return nil, fmt.Errorf("celegans: SelectCells: table must be 3, 7 or all, got %q (the supplementary C. elegans table is Table 7 in the paper; Table 5 is digit assembly)", table)
	}
	if len(labels) == 0 {
		return pool, nil
	}
	want := make(map[string]bool, len(labels))
	for _, l := range labels {
		want[strings.TrimSpace(l)] = false
	}
	var out []Cell
	for _, c := range pool {
		if _, ok := want[c.Label]; ok {
			want[c.Label] = true
			out = append(out, c)
		} else if _, ok := want[c.Key()]; ok {
			want[c.Key()] = true
			out = append(out, c)
		}
	}
	for _, l := range labels {
		if !want[strings.TrimSpace(l)] {
			var names []string
			for _, c := range pool {
				names = append(names, c.Label)
			}
			return nil, fmt.Errorf("celegans: SelectCells: no cell %q in table %q (cells: %s)", l, table, strings.Join(names, ", "))
		}
	}
	return out, nil
}

// Results are written to these files of Experiment.OutDir.
const (
	ResultsFiles = compare.ResultsPattern // one file per process, one record per line, appended as runs finish
	SummaryFile  = "summary.json"         // the Summary of the last Run
	ReportFile   = "report.md"            // the Summary's markdown tables
)

// Experiment runs methods on a grid of cells and seeds, following the
// protocol of the seed paper's Section 5 and Linderman et al. (2018).
//
// For each cell and seed s = 1, ..., Seeds it simulates the worms with
// Simulate(Connectome, SimConfig{Worms, T, KnownCount}, s), so every cell
// with the same seed shares W, builds the position masks, and runs each
// method in turn on that same Problem with the same Settings (in particular
// the same wall-clock Budget: MCMC never gets less time than the variational
// methods) and a seed derived from s and the method. Runs are sequential, so
// that a budget is a fair share of the machine.
//
// With OutDir set, every finished run is appended at once to
// OutDir/results-*.jsonl (package compare: one file per process, so that
// shards on a cluster never share one), and runs already recorded there with the same
// configuration are skipped, so an interrupted experiment resumes where it
// stopped. Failed runs are recorded too, but are tried again on the next Run.
type Experiment struct {
	Cells   []Cell
	Methods []Method // nil means Methods
	Seeds   int      // number of seeds; 0 means 1
	// SeedStart is the first seed: the runs use seeds SeedStart, …,
	// SeedStart+Seeds-1 (0 means 1). The reported tables use seeds 1-5;
	// the hyperparameters were tuned on seeds 101 and 102.
	SeedStart int

	// Connectome is the worm; nil means Synthetic(0, 1). ConnectomeName
	// describes it in reports.
	Connectome     *Connectome
	ConnectomeName string

	T        int      // time steps per worm; 0 means DefaultT
	Settings Settings // the zero value means DefaultSettings()

	// OutDir receives the results files, summary.json, report.md and the
	// figures; "" keeps everything in memory (no resume).
	OutDir string
	// TraceCell is the key (or label) of the cell whose accuracy against
	// time is plotted; "" means the first cell.
	TraceCell string
	// Progress, if not nil, is called from Run's goroutine as runs start,
	// finish, fail or are skipped (see compare.Event; the Extra field of
	// an event's Record holds this package's Record, which RecordOf
	// reads). The plan event's Message describes the grid.
	Progress func(compare.Event)

	// Shard restricts Run to one shard of the grid (see package compare):
	// the zero value runs everything and writes the reports. Worker names
	// this process in the results ("" means host-pid).
	Shard  compare.Shard
	Worker string

	// solve is Solve; tests replace it.
	solve func(ctx context.Context, p *Problem, m Method, s Settings, seed uint64) (*Outcome, error)
}

// Record is the result of one run, as stored in the Extra field of a
// compare.Record in the results files.
type Record struct {
	Cell   string `json:"cell"` // Cell.Key()
	Table  int    `json:"table"`
	Label  string `json:"label"`
	Seed   int    `json:"seed"`
	Method Method `json:"method"`

	Worms          int     `json:"worms"`
	Known          int     `json:"known"`
	Nu             float64 `json:"nu"`              // candidate width used
	MeanCandidates float64 `json:"mean_candidates"` // MeanCandidates(Nu), no known neurons
	MaskCandidates float64 `json:"mask_candidates"` // allowed pairs per row of the masks, known rows included

	Accuracy        float64       `json:"accuracy"`         // over all neurons
	AccuracyUnknown float64       `json:"accuracy_unknown"` // over the neurons not known
	ElapsedSec      float64       `json:"elapsed_s"`
	Iterations      int           `json:"iterations"`     // VI steps or MCMC sweeps
	Fits            int           `json:"fits,omitempty"` // variational fits run (more than 1 after restarts)
	Trace           []TraceRecord `json:"trace,omitempty"`
	Error           string        `json:"error,omitempty"`

	// LogLikGap is log p(Y | estimate) − log p(Y | truth) with W
	// integrated out (Problem.LogLikGap): positive when the data favour
	// the estimate over the true identities. Absent in records written
	// before it was added, and when it cannot be computed (a problem
	// without ground truth).
	LogLikGap *float64 `json:"loglik_gap,omitempty"`

	// PolishGain is Outcome.PolishGain: how much polishing raised the
	// estimate's collapsed log-likelihood, in nats. Absent when polishing
	// was off, and in records written before it was added.
	PolishGain *float64 `json:"polish_gain,omitempty"`

	// MCMC only: sweeps over all chains, and split R̂ and ESS of the
	// log-likelihood trace (absent where they could not be computed).
	Sweeps int     `json:"sweeps,omitempty"`
	RHat   float64 `json:"rhat,omitempty"`
	ESS    float64 `json:"ess,omitempty"`

	// Config identifies the configuration (connectome, T, method, the
	// method's settings, cell); only records with the current one are
	// reused.
	Config   string    `json:"config"`
	Finished time.Time `json:"finished"`

	// Where the run happened, from the results file (not stored twice).
	Worker     string `json:"-"`
	Attempt    int    `json:"-"`
	GOMAXPROCS int    `json:"-"`
	CPU        string `json:"-"`
}

// TraceRecord is a TracePoint in seconds.
type TraceRecord struct {
	Sec             float64 `json:"t"`
	Accuracy        float64 `json:"acc"`
	AccuracyUnknown float64 `json:"acc_unknown"`
}

// task returns the run r records, as package compare names it.
func (r *Record) task() compare.Task { return taskOf(r.Cell, r.Seed, r.Method) }

// taskOf names the run of method m on cell key with seed, as package
// compare names it.
func taskOf(cell string, seed int, m Method) compare.Task {
	return compare.Task{Problem: cell, Seed: seed, Method: string(m)}
}

// plannedCell is a cell with its width resolved on the run's connectome.
type plannedCell struct {
	Cell
	nu, mean float64
	config   map[Method]string // fingerprint of each method's runs
}

// defaults returns a copy of e with the defaults filled in.
func (e *Experiment) defaults() (*Experiment, error) {
	x := *e
	if x.Methods == nil {
		x.Methods = Methods
	}
	if x.Seeds == 0 {
		x.Seeds = 1
	}
	if x.SeedStart == 0 {
		x.SeedStart = 1
	}
	if x.Connectome == nil {
		c, err := Synthetic(0, 1)
		if err != nil {
			return nil, err
		}
		x.Connectome = c
		if x.ConnectomeName == "" {
			x.ConnectomeName = "synthetic (seed 1)"
		}
	}
	if x.ConnectomeName == "" {
		x.ConnectomeName = "custom"
	}
	if x.T == 0 {
		x.T = DefaultT
	}
	if x.Settings == (Settings{}) {
		x.Settings = DefaultSettings()
	}
	if x.solve == nil {
		x.solve = Solve
	}
	switch {
	case len(x.Cells) == 0:
		return nil, errors.New("celegans: Experiment: no cells")
	case len(x.Methods) == 0:
		return nil, errors.New("celegans: Experiment: no methods")
	case x.Seeds < 0:
		return nil, fmt.Errorf("celegans: Experiment: Seeds must be >= 0, got %d", x.Seeds)
	case x.SeedStart < 0:
		return nil, fmt.Errorf("celegans: Experiment: SeedStart must be >= 0, got %d", x.SeedStart)
	case x.T < 2:
		return nil, fmt.Errorf("celegans: Experiment: T must be >= 2, got %d", x.T)
	case x.Settings.Budget < 0:
		return nil, fmt.Errorf("celegans: Experiment: negative budget %v", x.Settings.Budget)
	}
	seen := make(map[Method]bool)
	for _, m := range x.Methods {
		if _, err := ParseMethod(string(m)); err != nil {
			return nil, fmt.Errorf("celegans: Experiment: %w", err)
		}
		if seen[m] {
			return nil, fmt.Errorf("celegans: Experiment: method %s listed twice", m)
		}
		seen[m] = true
	}
	return &x, nil
}

// plan resolves the candidate widths and the configuration fingerprints.
func (e *Experiment) plan() ([]plannedCell, error) {
	conn := connectomeHash(e.Connectome)
	n := e.Connectome.N()
	seen := make(map[string]bool)
	var out []plannedCell
	for _, c := range e.Cells {
		if err := c.validate(n); err != nil {
			return nil, err
		}
		if seen[c.Key()] {
			return nil, fmt.Errorf("celegans: Experiment: cell %s listed twice", c.Key())
		}
		seen[c.Key()] = true
		pc := plannedCell{Cell: c, nu: c.Nu, config: make(map[Method]string, len(e.Methods))}
		var err error
		if c.Nu > 0 {
			pc.mean, err = MeanCandidates(e.Connectome, c.Nu)
		} else {
			pc.nu, pc.mean, err = CandidateWidth(e.Connectome, c.Candidates)
		}
		if err != nil {
			return nil, fmt.Errorf("celegans: cell %s: %w", c.Key(), err)
		}
		for _, m := range e.Methods {
			js, err := json.Marshal(struct {
				Connectome   string
				T            int
				Method       Method
				Settings     any
				Worms, Known int
				Nu           float64
			}{conn, e.T, m, e.Settings.of(m), c.Worms, c.Known, pc.nu})
			if err != nil {
				return nil, err
			}
			h := sha256.Sum256(js)
			pc.config[m] = hex.EncodeToString(h[:8])
		}
		out = append(out, pc)
	}
	return out, nil
}

// of returns the settings that method m depends on. A run's fingerprint
// covers only these, so that changing one method's settings makes only that
// method's earlier results stale.
func (s Settings) of(m Method) any {
	type common struct {
		// Engine names the code path: results of the methods' own
		// samplers and fitting loops (before the engines ran them) are
		// not mixed with the engines'.
		Engine     string
		Budget     time.Duration
		TraceEvery int
		NoPolish   bool
	}
	type variational struct {
		common
		Steps, K, Iters int
		LR              float64
		SigmaW          float64
	}
	c := common{"vi.FitModel, mcmc.RunModel", s.Budget, s.TraceEvery, s.NoPolish}
	v := variational{c, s.Steps, s.K, s.Iters, s.LR, s.SigmaW}
	// Layout names how a variational guide is stored: "auto" (vi.FitModel's
	// choice, sparse for sparse masks) or "dense".
	layout := "auto"
	if s.DenseLayout {
		layout = "dense"
	}
	switch m {
	case GumbelSinkhorn, GumbelSinkhornNoReg:
		return struct {
			variational
			Tau, TauPrior float64
			Draws         int
			PlateauWindow int
			Layout        string
		}{v, s.Tau, s.TauPrior, s.Draws, s.PlateauWindow, layout}
	case Rounding:
		return struct {
			variational
			RoundTau, RoundNoise, PriorStd, RoundLR float64
			Layout                                  string
		}{v, s.RoundTau, s.RoundNoise, s.PriorStd, s.RoundLR, layout}
	default: // MCMC
		return struct {
			common
			Sweeps       int
			SigmaW       float64
			Chains, Thin int
			Estimator    string
			BlockMoves   int
		}{c, s.Sweeps, s.SigmaW, s.Chains, s.Thin, s.Estimator, s.BlockMoves}
	}
}

// connectomeHash identifies a connectome by its names, positions and edges.
func connectomeHash(c *Connectome) string {
	h := sha256.New()
	var buf [8]byte
	for i, name := range c.Names {
		h.Write([]byte(name))
		h.Write([]byte{0})
		binary.LittleEndian.PutUint64(buf[:], math.Float64bits(c.Positions[i]))
		h.Write(buf[:])
	}
	for _, e := range c.EdgeList() {
		binary.LittleEndian.PutUint64(buf[:], uint64(e[0])<<32|uint64(e[1]))
		h.Write(buf[:])
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// methodSeed derives the seed of method m's run from the simulation seed:
// a splitmix64 step of both, so methods and seeds get unrelated streams.
func methodSeed(seed int, m Method) uint64 {
	x := uint64(seed)*0x9e3779b97f4a7c15 + 1
	for _, b := range []byte(m) {
		x = (x ^ uint64(b)) * 0x100000001b3
	}
	return mix64(x)
}

// mix64 is the splitmix64 finaliser: it spreads every input bit over the
// whole output, so nearby inputs give unrelated seeds.
func mix64(x uint64) uint64 {
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// Run runs every task not yet in the results file, then writes the summary,
// the markdown report and the figures (when OutDir is set) and returns the
// Summary of all the runs of the grid, old and new.
//
// If ctx is cancelled, Run stops after recording the runs that finished,
// still writes the reports of what is done, and returns the partial Summary
// with ctx.Err(). Errors of a method do not stop Run: they are recorded and
// listed in Summary.Failures.
func (e *Experiment) Run(ctx context.Context) (*Summary, error) {
	x, err := e.defaults()
	if err != nil {
		return nil, err
	}
	cells, err := x.plan()
	if err != nil {
		return nil, err
	}
	if x.TraceCell != "" {
		ok := false
		for _, c := range cells {
			ok = ok || c.Key() == x.TraceCell || c.Label == x.TraceCell
		}
		if !ok {
			return nil, fmt.Errorf("celegans: Experiment: trace cell %q is not in the grid", x.TraceCell)
		}
	}

	byKey := make(map[string]plannedCell, len(cells))
	grid := &compare.Grid{Seeds: x.seeds()}
	for _, c := range cells {
		byKey[c.Key()] = c
		grid.Problems = append(grid.Problems, c.Key())
	}
	for _, m := range x.Methods {
		grid.Methods = append(grid.Methods, string(m))
	}
	grid.Setup = func(_ context.Context, cell string, seed int) (any, error) {
		return x.problem(byKey[cell], seed)
	}
	grid.Solve = func(ctx context.Context, inst any, t compare.Task) (compare.Result, error) {
		c, m, p := byKey[t.Problem], Method(t.Method), inst.(*Problem)
		out, err := x.solve(ctx, p, m, x.Settings, methodSeed(t.Seed, m))
		if err != nil && ctx.Err() != nil {
			return compare.Result{}, err // interrupted, not a result
		}
		rec := newRecord(c, t.Seed, m, p, out, err, e.Settings.SigmaW)
		if rec.Error != "" {
			return compare.Result{}, errors.New(rec.Error)
		}
		extra, err := json.Marshal(rec)
		if err != nil {
			return compare.Result{}, err
		}
		return compare.Result{
			Metrics:    map[string]float64{"accuracy": rec.Accuracy, "accuracy_unknown": rec.AccuracyUnknown},
			Iterations: rec.Iterations,
			Extra:      extra,
		}, nil
	}
	grid.Config = func(cell, method string) string { return byKey[cell].config[Method(method)] }

	// Budgets are kept by Solve itself (Settings.Budget), which splits
	// them between a variational fit and its posterior estimate, so the
	// grid sets none of its own.
	opts := compare.Options{Dir: x.OutDir, Shard: x.Shard, Worker: x.Worker}
	if x.Progress != nil {
		opts.Progress = func(ev compare.Event) {
			if ev.Kind == compare.EventPlan {
				ev.Message = x.describe(cells, ev.Total, ev.Found)
			}
			x.Progress(ev)
		}
	}
	res, runErr := compare.Run(ctx, grid, opts)
	if res == nil {
		return nil, runErr
	}
	done := make(map[compare.Task]*Record, len(res.Records))
	for _, cr := range res.Records {
		r := fromCompare(cr, byKey)
		done[r.task()] = r
	}
	var failures []*Record
	for _, cr := range res.Failures {
		failures = append(failures, fromCompare(cr, byKey))
	}
	sum := x.summarize(cells, done, failures)
	sum.Duplicates = res.Duplicates
	// A shard reports nothing: the collector (a run without a shard)
	// writes the reports of the whole grid.
	if x.OutDir != "" && x.Shard.Count <= 1 {
		if err := x.writeReports(sum); err != nil {
			return sum, err
		}
	}
	return sum, runErr
}

// RecordOf returns the record of this package that a run of Experiment
// stored in the Extra field of cr (as Progress events and the results
// files carry it), with the provenance package compare adds (worker,
// attempt, GOMAXPROCS, CPU). It is an error if cr holds none, as for a
// failed run, or if it names another run than cr.
func RecordOf(cr *compare.Record) (*Record, error) {
	r := &Record{}
	if len(cr.Extra) == 0 {
		return nil, fmt.Errorf("celegans: RecordOf: %s: no stored record", cr.Task())
	}
	if err := json.Unmarshal(cr.Extra, r); err != nil {
		return nil, fmt.Errorf("celegans: RecordOf: %s: %w", cr.Task(), err)
	}
	if r.task() != cr.Task() {
		return nil, fmt.Errorf("celegans: RecordOf: %s holds the record of %s", cr.Task(), r.task())
	}
	r.Error = cr.Error
	r.Worker, r.Attempt, r.GOMAXPROCS, r.CPU = cr.Worker, cr.Attempt, cr.GOMAXPROCS, cr.CPU
	return r, nil
}

// fromCompare returns the celegans record stored in a compare record,
// with the provenance compare adds (worker, attempt, GOMAXPROCS, CPU). A
// record without one (a failed run), or whose stored record does not parse
// or names another run than the compare record (a damaged file), is
// rebuilt from the compare record: its task, the cell's definition, and
// the accuracies and iterations compare keeps.
func fromCompare(cr *compare.Record, cells map[string]plannedCell) *Record {
	r, err := RecordOf(cr)
	if err != nil {
		c := cells[cr.Problem]
		r = &Record{Cell: cr.Problem, Table: c.Table, Label: c.Label, Seed: cr.Seed, Method: Method(cr.Method),
			Worms: c.Worms, Known: c.Known, Nu: c.nu, MeanCandidates: c.mean, Config: cr.Config, Finished: cr.Finished,
			Accuracy: cr.Metrics["accuracy"], AccuracyUnknown: cr.Metrics["accuracy_unknown"], Iterations: cr.Iterations}
	}
	r.Error = cr.Error
	r.Worker, r.Attempt, r.GOMAXPROCS, r.CPU = cr.Worker, cr.Attempt, cr.GOMAXPROCS, cr.CPU
	return r
}

func (e *Experiment) describe(cells []plannedCell, total, found int) string {
	s := e.Settings
	var b strings.Builder
	fmt.Fprintf(&b, "%d runs (%d cells x %d seeds x %d methods), %d already in the results file\n", total, len(cells), e.Seeds, len(e.Methods), found)
	fmt.Fprintf(&b, "connectome: %s, %d neurons, %d edges; T = %d\n", e.ConnectomeName, e.Connectome.N(), e.Connectome.Edges(), e.T)
	fmt.Fprintf(&b, "budget per run: %s for every method, at most %d VI steps or %d MCMC sweeps", budgetText(s.Budget), s.Steps, s.Sweeps)
	if e.OutDir != "" {
		fmt.Fprintf(&b, "\nresults: %s", filepath.Join(e.OutDir, ResultsFiles))
	}
	return b.String()
}

func budgetText(d time.Duration) string {
	if d == 0 {
		return "no time limit"
	}
	return d.String()
}

// problem simulates the worms of cell c with the given seed.
func (e *Experiment) problem(c plannedCell, seed int) (*Problem, error) {
	sim, err := Simulate(e.Connectome, SimConfig{Worms: c.Worms, T: e.T, KnownCount: c.Known}, uint64(seed))
	if err != nil {
		return nil, fmt.Errorf("celegans: cell %s seed %d: %w", c.Key(), seed, err)
	}
	masks, err := sim.PositionMasks(c.nu)
	if err != nil {
		return nil, fmt.Errorf("celegans: cell %s seed %d: %w", c.Key(), seed, err)
	}
	p, err := FromSimulation(sim, masks)
	if err != nil {
		return nil, fmt.Errorf("celegans: cell %s seed %d: %w", c.Key(), seed, err)
	}
	return p, nil
}

func newRecord(c plannedCell, seed int, m Method, p *Problem, out *Outcome, err error, sigmaW float64) *Record {
	r := &Record{
		Cell: c.Key(), Table: c.Table, Label: c.Label, Seed: seed, Method: m,
		Worms: c.Worms, Known: c.Known, Nu: c.nu, MeanCandidates: c.mean,
		Config: c.config[m], Finished: time.Now().UTC().Truncate(time.Millisecond),
	}
	allowed := 0
	for _, mk := range p.Masks {
		allowed += mk.Count()
	}
	r.MaskCandidates = float64(allowed) / float64(p.N()*p.Worms())
	switch {
	case err != nil:
		r.Error = err.Error()
		return r
	case out == nil:
		r.Error = "no outcome"
		return r
	case math.IsNaN(out.Accuracy) || math.IsNaN(out.AccuracyUnknown):
		r.Error = "no accuracy (problem without ground truth?)"
		return r
	}
	r.Accuracy, r.AccuracyUnknown = out.Accuracy, out.AccuracyUnknown
	r.ElapsedSec = out.Elapsed.Seconds()
	r.Iterations = out.Iterations
	r.Fits = out.Fits
	r.Sweeps = out.Sweeps
	if gap, err := p.LogLikGap(out.Perms, sigmaW); err == nil {
		r.LogLikGap = &gap
	}
	if !math.IsNaN(out.PolishGain) {
		g := out.PolishGain
		r.PolishGain = &g
	}
	if !math.IsNaN(out.RHat) && !math.IsInf(out.RHat, 0) {
		r.RHat = out.RHat
	}
	if !math.IsNaN(out.ESS) && !math.IsInf(out.ESS, 0) {
		r.ESS = out.ESS
	}
	for _, tp := range out.Trace {
		if math.IsNaN(tp.Accuracy) || math.IsNaN(tp.AccuracyUnknown) {
			continue
		}
		r.Trace = append(r.Trace, TraceRecord{Sec: tp.Elapsed.Seconds(), Accuracy: tp.Accuracy, AccuracyUnknown: tp.AccuracyUnknown})
	}
	return r
}

// ReadResults returns the records of every results file in dir written by
// Experiment.Run (one per process: shards and reruns each write their own),
// in file and line order, skipping lines that do not parse.
func ReadResults(dir string) ([]*Record, error) {
	crs, err := compare.ReadRecords(dir)
	if err != nil {
		return nil, fmt.Errorf("celegans: ReadResults: %w", err)
	}
	out := make([]*Record, 0, len(crs))
	for _, cr := range crs {
		out = append(out, fromCompare(cr, nil))
	}
	return out, nil
}

// seeds returns the seeds of the experiment in order, after Run has set
// the defaults.
func (e *Experiment) seeds() []int {
	out := make([]int, e.Seeds)
	for i := range out {
		out[i] = e.SeedStart + i
	}
	return out
}
