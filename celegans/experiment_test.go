package celegans

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permlab/permlab/compare"
	"github.com/permlab/permlab/internal/longtest"
)

func TestTableCells(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cells  []Cell
		table  int
		labels []string
	}{
		{"table3", Table3Cells(), 3, []string{"40-easy", "40-hard", "30-easy", "30-hard", "20-easy", "20-hard", "10-easy", "10-hard"}},
		{"table7", Table7Cells(), 7, []string{"10c-1w", "10c-4w", "30c-1w", "30c-4w", "45c-1w", "45c-4w", "60c-1w", "60c-4w"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Len(t, tc.cells, len(tc.labels))
			for i, c := range tc.cells {
				assert.Equal(t, tc.table, c.Table)
				assert.Equal(t, tc.labels[i], c.Label)
				assert.Equal(t, fmt.Sprintf("t%d/%s", tc.table, tc.labels[i]), c.Key())
				assert.Len(t, c.Paper, len(Methods), "every method has a published value")
				assert.NoError(t, c.validate(DefaultNeurons))
			}
		})
	}
	// Spot checks against experiments.md, section 4.
	t3, t5 := Table3Cells(), Table7Cells()
	assert.Equal(t, Cell{Table: 3, Label: "40-easy", Header: "40% easy", Worms: 4, Known: 110, Nu: 0.05,
		Paper: map[Method]float64{MCMC: .85, Rounding: .97, GumbelSinkhorn: .97, GumbelSinkhornNoReg: .96}}, t3[0])
	assert.Equal(t, 25, t3[7].Known)
	assert.Equal(t, 0.1, t3[7].Nu)
	assert.Equal(t, .26, t3[7].Paper[GumbelSinkhorn])
	assert.Equal(t, .44, t3[3].Paper[MCMC])
	assert.Equal(t, 83, t3[3].Known)
	assert.Equal(t, Cell{Table: 7, Label: "45c-4w", Header: "45 cand. 4w", Worms: 4, Known: 25, Candidates: 45,
		Paper: map[Method]float64{MCMC: .17, Rounding: .48, GumbelSinkhorn: .51, GumbelSinkhornNoReg: .44}}, t5[5])
	assert.Equal(t, 1, t5[0].Worms)
	assert.Equal(t, .77, t5[0].Paper[Rounding])
	assert.Equal(t, .39, t5[7].Paper[GumbelSinkhornNoReg])
}

func TestSelectCells(t *testing.T) {
	keys := func(cells []Cell) []string {
		var out []string
		for _, c := range cells {
			out = append(out, c.Key())
		}
		return out
	}
	for _, tc := range []struct {
		table  string
		labels []string
		want   []string
		err    string
	}{
		{"3", []string{"10-hard", "40-easy"}, []string{"t3/40-easy", "t3/10-hard"}, ""},
		{"all", []string{"t7/60c-1w", "30-easy"}, []string{"t3/30-easy", "t7/60c-1w"}, ""},
		{"", []string{" 10c-4w"}, []string{"t7/10c-4w"}, ""},
		{"7", []string{"40-easy"}, nil, `no cell "40-easy"`},
		{"4", nil, nil, "table must be 3, 7 or all"},
	} {
		got, err := SelectCells(tc.table, tc.labels)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, tc.want, keys(got))
	}
	all, err := SelectCells("all", nil)
	require.NoError(t, err)
	assert.Len(t, all, 16)
}

// The paper's grid resolves on the default synthetic worm: widths for the
// Table 7 targets, and problems for a cell of each table.
func TestPaperGridPlans(t *testing.T) {
	c, err := Synthetic(0, 1)
	require.NoError(t, err)
	cells, err := SelectCells("all", nil)
	require.NoError(t, err)
	x, err := (&Experiment{Cells: cells, Connectome: c, T: 20}).defaults()
	require.NoError(t, err)
	plan, err := x.plan()
	require.NoError(t, err)
	require.Len(t, plan, 16)
	for _, pc := range plan {
		assert.Greater(t, pc.nu, 0.0, pc.Key())
		assert.GreaterOrEqual(t, pc.mean, 1.0, pc.Key())
		if pc.Candidates > 0 {
			// CandidateWidth picks the nearest achievable level; on the
			// two-decimal positions of the synthetic worm the levels are a few
			// candidates apart near these targets.
			assert.InDelta(t, pc.Candidates, pc.mean, 0.25*pc.Candidates, pc.Key())
		}
	}
	configs := make(map[string]bool)
	for _, i := range []int{0, 1, 8} {
		require.Len(t, plan[i].config, len(Methods))
		for _, cf := range plan[i].config {
			configs[cf] = true
		}
	}
	assert.Len(t, configs, 3*len(Methods), "configs differ between cells and between methods")
	for _, i := range []int{0, 15} {
		p, err := x.problem(plan[i], 1)
		require.NoError(t, err)
		assert.Equal(t, plan[i].Worms, p.Worms())
		assert.Len(t, p.Known[0], plan[i].Known)
	}
}

// fakeSolver returns accuracies from a table keyed by the method seed, so
// that tests know every run's result; it counts its calls and can fail or
// cancel on chosen calls.
type fakeSolver struct {
	acc     map[uint64]float64
	calls   int
	failOn  map[int]bool       // calls (1-based) that return an error
	cancel  context.CancelFunc // called on call cancelAt, which then returns ctx.Err()
	cancelA int
}

func newFakeSolver(seeds int) *fakeSolver {
	f := &fakeSolver{acc: make(map[uint64]float64), failOn: map[int]bool{}}
	for s := 1; s <= seeds; s++ {
		for i, m := range Methods {
			f.acc[methodSeed(s, m)] = 0.1*float64(i+1) + 0.05*float64(s)
		}
	}
	return f
}

func (f *fakeSolver) solve(ctx context.Context, p *Problem, m Method, s Settings, seed uint64) (*Outcome, error) {
	f.calls++
	if f.cancel != nil && f.calls == f.cancelA {
		f.cancel()
		return nil, ctx.Err()
	}
	if f.failOn[f.calls] {
		return nil, errors.New("boom")
	}
	a, ok := f.acc[seed]
	if !ok {
		return nil, fmt.Errorf("unexpected seed %d", seed)
	}
	fits := 2 // as if the variational fit had restarted once
	if m == MCMC {
		fits = 0
	}
	return &Outcome{
		Method: m, Perms: p.Truth, Accuracy: a, AccuracyUnknown: a / 2,
		Elapsed: 1500 * time.Millisecond, Iterations: 7, Fits: fits,
		Trace: []TracePoint{{Elapsed: time.Second, Step: 3, Accuracy: a / 3, AccuracyUnknown: a / 6}, {Elapsed: 2 * time.Second, Step: 7, Accuracy: a, AccuracyUnknown: a / 2}},
	}, nil
}

func smallCells() []Cell {
	return []Cell{
		{Label: "a", Header: "cell a", Worms: 2, Known: 10, Nu: 0.1},
		{Label: "b", Worms: 1, Known: 5, Candidates: 8},
	}
}

func smallExperiment(t *testing.T, dir string, f *fakeSolver) *Experiment {
	c, err := Synthetic(30, 2)
	require.NoError(t, err)
	e := &Experiment{
		Cells: smallCells(), Methods: []Method{MCMC, GumbelSinkhorn}, Seeds: 2,
		Connectome: c, ConnectomeName: "synthetic 30", T: 40, OutDir: dir,
	}
	if f != nil {
		e.solve = f.solve
	}
	return e
}

// collectNotes makes e keep the messages of its EventInfo events.
func collectNotes(e *Experiment) *[]string {
	var notes []string
	e.Progress = func(ev compare.Event) {
		if ev.Kind == compare.EventInfo {
			notes = append(notes, ev.Message)
		}
	}
	return &notes
}

// resultLines counts the lines of every results file in dir.
func resultLines(t *testing.T, dir string) int {
	names, err := filepath.Glob(filepath.Join(dir, ResultsFiles))
	require.NoError(t, err)
	n := 0
	for _, name := range names {
		data, err := os.ReadFile(name)
		require.NoError(t, err)
		n += bytes.Count(data, []byte{'\n'})
	}
	return n
}

func TestExperimentSummary(t *testing.T) {
	dir := t.TempDir()
	f := newFakeSolver(2)
	e := smallExperiment(t, dir, f)
	var events []compare.Event
	e.Progress = func(ev compare.Event) { events = append(events, ev) }
	sum, err := e.Run(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 8, f.calls)
	assert.Equal(t, 8, resultLines(t, dir))
	require.Len(t, sum.Entries, 4)
	assert.Zero(t, sum.Missing)
	assert.Empty(t, sum.Failures)
	assert.Len(t, sum.Records(), 8)
	for _, r := range sum.Records() {
		want := 2
		if r.Method == MCMC {
			want = 0
		}
		assert.Equal(t, want, r.Fits, "%s: the outcome's fit count is recorded", r.Method)
	}

	// MCMC is Methods[0]: accuracies 0.1 + 0.05 s for s = 1, 2.
	en, ok := sum.Entry("b", MCMC)
	require.True(t, ok)
	assert.Equal(t, 2, en.Runs)
	assert.InDelta(t, 0.175, en.Accuracy, 1e-12)
	assert.InDelta(t, 0.05/math.Sqrt2, en.AccuracySD, 1e-12, "sample sd of two values 0.05 apart")
	assert.InDelta(t, 0.0875, en.AccuracyUnknown, 1e-12)
	assert.InDelta(t, 1.5, en.ElapsedSec, 1e-12)
	assert.Equal(t, 7.0, en.Iterations)
	assert.Nil(t, en.Paper)
	en, ok = sum.Entry("a", GumbelSinkhorn) // Methods[2]
	require.True(t, ok)
	assert.InDelta(t, 0.375, en.Accuracy, 1e-12)

	// Events: the plan, then start and done for each run, in grid order.
	require.Len(t, events, 1+2*8)
	assert.Equal(t, compare.EventPlan, events[0].Kind)
	assert.Equal(t, 8, events[0].Total)
	assert.Contains(t, events[0].Message, "8 runs (2 cells x 2 seeds x 2 methods)", "the plan describes the grid")
	assert.Equal(t, compare.Event{Kind: compare.EventStart, Task: taskOf("a", 1, MCMC), Done: 0, Total: 8}, events[1])
	assert.Equal(t, compare.EventDone, events[16].Kind)
	assert.Equal(t, taskOf("b", 2, GumbelSinkhorn), events[16].Task)
	assert.Equal(t, 8, events[16].Done)
	r, err := RecordOf(events[16].Record)
	require.NoError(t, err)
	assert.Equal(t, GumbelSinkhorn, r.Method, "the event carries the run's record")
	assert.Equal(t, 2, r.Fits)

	// summary.json round-trips.
	var js Summary
	data, err := os.ReadFile(filepath.Join(dir, SummaryFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &js))
	assert.Equal(t, sum.Entries, js.Entries)
	assert.Equal(t, []string{"accuracy.png", "trace_a.png"}, js.Figures)
	assert.Equal(t, 0.1, js.Cells[0].Nu)
	assert.InDelta(t, 8, js.Cells[1].MeanCandidates, 3)

	// report.md has the tables.
	md, err := os.ReadFile(filepath.Join(dir, ReportFile))
	require.NoError(t, err)
	assert.Contains(t, string(md), "| method | cell a | b |")
	assert.Contains(t, string(md), "| MCMC | 0.175 ± 0.035 | 0.175 ± 0.035 |")
	assert.Contains(t, string(md), "accuracy over the unknown neurons")
	assert.Contains(t, string(md), "| Gumbel-Sinkhorn | 0.188 ± 0.018 | 0.188 ± 0.018 |")
	assert.Contains(t, string(md), "| MCMC | 1.5 / 7 | 1.5 / 7 |")

	for _, name := range js.Figures {
		fh, err := os.Open(filepath.Join(dir, name))
		require.NoError(t, err)
		img, err := png.Decode(fh)
		fh.Close()
		require.NoError(t, err, name)
		assert.Greater(t, img.Bounds().Dx(), 300, name)
	}
}

func TestExperimentResume(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := newFakeSolver(2)
	f.cancel, f.cancelA = cancel, 4
	e := smallExperiment(t, dir, f)
	sum, err := e.Run(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.NotNil(t, sum, "a cancelled run still reports what is done")
	assert.Equal(t, 3, resultLines(t, dir))
	assert.Equal(t, 5, sum.Missing)
	assert.FileExists(t, filepath.Join(dir, ReportFile))

	// A line cut by a crash is skipped, and the next record starts on a new line.
	files, err := filepath.Glob(filepath.Join(dir, ResultsFiles))
	require.NoError(t, err)
	require.Len(t, files, 1, "one process, one results file")
	fh, err := os.OpenFile(files[0], os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = fh.WriteString(`{"cell":"a","seed":2,"meth`)
	require.NoError(t, err)
	require.NoError(t, fh.Close())

	f2 := newFakeSolver(2)
	e = smallExperiment(t, dir, f2)
	skips := 0
	e.Progress = func(ev compare.Event) {
		if ev.Kind == compare.EventSkip {
			skips++
		}
	}
	sum, err = e.Run(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 5, f2.calls, "only the runs not done")
	assert.Equal(t, 3, skips)
	assert.Zero(t, sum.Missing)
	assert.Len(t, sum.Entries, 4)
	recs, err := ReadResults(dir)
	require.NoError(t, err)
	assert.Len(t, recs, 8, "the torn line is dropped, every run recorded once")

	// Nothing left: a third run solves nothing.
	f3 := newFakeSolver(2)
	_, err = smallExperiment(t, dir, f3).Run(context.Background())
	require.NoError(t, err)
	assert.Zero(t, f3.calls)

	// More seeds: only the new seed runs.
	f4 := newFakeSolver(3)
	e = smallExperiment(t, dir, f4)
	e.Seeds = 3
	sum, err = e.Run(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 4, f4.calls)
	en, _ := sum.Entry("a", MCMC)
	assert.Equal(t, 3, en.Runs)
	assert.InDelta(t, 0.2, en.Accuracy, 1e-12)

	// Other settings: old records are ignored, with a note.
	f5 := newFakeSolver(2)
	e = smallExperiment(t, dir, f5)
	e.Settings = DefaultSettings()
	e.Settings.Budget = time.Second
	notes := collectNotes(e)
	_, err = e.Run(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 8, f5.calls)
	require.Len(t, *notes, 1)
	// The 8 records of this grid's tasks (2 seeds); seed 3's are outside it.
	assert.Contains(t, (*notes)[0], "8 records")

	// A setting that only Gumbel-Sinkhorn uses: only its runs are redone.
	f6 := newFakeSolver(2)
	e = smallExperiment(t, dir, f6)
	e.Settings = DefaultSettings()
	e.Settings.Budget = time.Second
	e.Settings.PlateauWindow = 7
	notes = collectNotes(e)
	sum, err = e.Run(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 4, f6.calls)
	assert.Len(t, *notes, 1, "the stale Gumbel-Sinkhorn records are noted")
	for _, m := range []Method{MCMC, GumbelSinkhorn} {
		en, ok := sum.Entry("a", m)
		require.True(t, ok)
		assert.Equal(t, 2, en.Runs, m)
	}

	// Another seed range (the tuning seeds, say) runs those seeds only and
	// reports them alone.
	f7 := newFakeSolver(2)
	e = smallExperiment(t, dir, f7)
	e.Seeds, e.SeedStart = 2, 101
	sum, err = e.Run(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 8, f7.calls, "2 new seeds x 2 cells x 2 methods")
	for _, r := range sum.Records() {
		assert.Contains(t, []int{101, 102}, r.Seed)
	}
	assert.Equal(t, 101, sum.SeedStart)
}

func TestExperimentFailures(t *testing.T) {
	dir := t.TempDir()
	f := newFakeSolver(2)
	f.failOn[2] = true // a seed 1 GumbelSinkhorn
	var lines bytes.Buffer
	e := smallExperiment(t, dir, f)
	pr := newProgress(&lines, false, 0)
	e.Progress = pr.Handle
	sum, err := e.Run(context.Background())
	pr.Close()
	require.NoError(t, err, "a method's error does not stop the run")
	assert.Equal(t, 8, f.calls)
	require.Len(t, sum.Failures, 1)
	assert.Equal(t, taskOf("a", 1, GumbelSinkhorn), sum.Failures[0].task())
	assert.Equal(t, "boom", sum.Failures[0].Error)
	en, _ := sum.Entry("a", GumbelSinkhorn)
	assert.Equal(t, 1, en.Runs)
	md := sum.Markdown()
	assert.Contains(t, md, "[n=1]")
	assert.Contains(t, md, "- a seed 1 gumbel-sinkhorn: boom")
	assert.Contains(t, md, "from the masked matching of the assignment frequencies of posterior draws (30 hard draws", "the engines' estimate")
	old := *sum
	old.Settings.Draws = 0 // as read from the summary of the methods' own loops
	assert.Contains(t, old.Markdown(), "from the matching of the posterior mean;")
	assert.Contains(t, lines.String(), "[2/8] a seed 1 gumbel-sinkhorn: FAILED: boom")
	assert.Contains(t, lines.String(), "[3/8] a seed 2 mcmc: accuracy 0.200 (unknown 0.100), 7 sweeps in 1.5 s")

	// The failed run is tried again, and only it.
	f2 := newFakeSolver(2)
	lines.Reset()
	e = smallExperiment(t, dir, f2)
	pr = newProgress(&lines, false, 0)
	e.Progress = pr.Handle
	sum, err = e.Run(context.Background())
	pr.Close()
	require.NoError(t, err)
	assert.Equal(t, 1, f2.calls)
	assert.Empty(t, sum.Failures)
	en, _ = sum.Entry("a", GumbelSinkhorn)
	assert.Equal(t, 2, en.Runs)
	assert.Contains(t, lines.String(), "skipped 7 runs already in the results file")
}

func TestExperimentErrors(t *testing.T) {
	c, err := Synthetic(30, 2)
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		edit func(e *Experiment)
		err  string
	}{
		{"no cells", func(e *Experiment) { e.Cells = nil }, "no cells"},
		{"no methods", func(e *Experiment) { e.Methods = []Method{} }, "no methods"},
		{"unknown method", func(e *Experiment) { e.Methods = []Method{"simplex"} }, "unknown method"},
		{"duplicate method", func(e *Experiment) { e.Methods = []Method{MCMC, MCMC} }, "listed twice"},
		{"too many known", func(e *Experiment) { e.Cells = Table3Cells()[:1] }, "known neurons must be in [0, 30)"},
		{"duplicate cell", func(e *Experiment) { e.Cells = append(smallCells(), smallCells()[0]) }, "cell a listed twice"},
		{"no width", func(e *Experiment) { e.Cells = []Cell{{Label: "x", Worms: 1}} }, "target candidates must be in [1, 30]"},
		{"bad label", func(e *Experiment) { e.Cells = []Cell{{Label: "x y", Worms: 1, Nu: 0.1}} }, "label"},
		{"no worms", func(e *Experiment) { e.Cells = []Cell{{Label: "x", Nu: 0.1}} }, "at least 1 worm"},
		{"short T", func(e *Experiment) { e.T = 1 }, "T must be >= 2"},
		{"trace cell", func(e *Experiment) { e.TraceCell = "zz" }, `trace cell "zz"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeSolver(1)
			e := &Experiment{Cells: smallCells(), Connectome: c, T: 20, solve: f.solve}
			tc.edit(e)
			_, err := e.Run(context.Background())
			assert.ErrorContains(t, err, tc.err)
			assert.Zero(t, f.calls)
		})
	}
}

func TestProgressBar(t *testing.T) {
	var buf bytes.Buffer
	p := newProgress(&buf, true, 100*time.Millisecond)
	task := taskOf("a", 1, MCMC)
	rec := &compare.Record{Problem: "a", Seed: 1, Method: string(MCMC), Iterations: 3, ElapsedSec: 0.2,
		Metrics: map[string]float64{"accuracy": 0.5, "accuracy_unknown": 0.25}}
	p.Handle(compare.Event{Kind: compare.EventPlan, Total: 2, Message: "two runs"})
	p.Handle(compare.Event{Kind: compare.EventStart, Task: task, Total: 2})
	time.Sleep(300 * time.Millisecond) // let the ticker move the bar
	p.Handle(compare.Event{Kind: compare.EventDone, Task: task, Done: 1, Total: 2, Record: rec})
	p.Close()
	p.Close()
	out := buf.String()
	assert.Contains(t, out, "two runs\n")
	assert.Contains(t, out, "[1/2] a seed 1 mcmc: accuracy 0.500 (unknown 0.250), 3 sweeps in 0.2 s\n")
	assert.Contains(t, out, "%", "the bar was drawn")
}

func TestResultLineCountsFits(t *testing.T) {
	task := taskOf("a", 2, GumbelSinkhorn)
	event := func(fits int) compare.Event {
		extra, err := json.Marshal(&Record{Cell: "a", Seed: 2, Method: GumbelSinkhorn, Fits: fits,
			Accuracy: 0.5, AccuracyUnknown: 0.25, Iterations: 40, ElapsedSec: 1})
		require.NoError(t, err)
		rec := &compare.Record{Problem: "a", Seed: 2, Method: string(GumbelSinkhorn), Iterations: 40, ElapsedSec: 1,
			Metrics: map[string]float64{"accuracy": 0.5, "accuracy_unknown": 0.25}, Extra: extra}
		return compare.Event{Kind: compare.EventDone, Task: task, Record: rec}
	}
	assert.Equal(t, "a seed 2 gumbel-sinkhorn: accuracy 0.500 (unknown 0.250), 40 steps over 3 fits in 1.0 s",
		resultLine(event(3)))
	assert.Equal(t, "a seed 2 gumbel-sinkhorn: accuracy 0.500 (unknown 0.250), 40 steps in 1.0 s",
		resultLine(event(1)), "a single fit is not mentioned")
}

// The real methods on a tiny problem: every file is written and a second
// run finds everything done.
func TestExperimentSolve(t *testing.T) {
	longtest.Skip(t, "runs the real methods")
	dir := t.TempDir()
	e := smallExperiment(t, dir, nil)
	e.Cells = e.Cells[:1]
	e.Seeds = 1
	e.Settings = DefaultSettings()
	e.Settings.Steps, e.Settings.Sweeps, e.Settings.Draws = 30, 30, 5
	e.Settings.Budget = 5 * time.Second
	e.Settings.TraceEvery = 10
	sum, err := e.Run(context.Background())
	require.NoError(t, err)
	require.Len(t, sum.Entries, 2)
	for _, r := range sum.Records() {
		assert.Empty(t, r.Error)
		assert.Equal(t, 30, r.Iterations, "%s stops at its step count, well within the budget", r.Method)
		assert.GreaterOrEqual(t, r.Accuracy, 10.0/30, "%s: the known neurons are always right", r.Method)
		assert.NotEmpty(t, r.Trace, r.Method)
		assert.NotNil(t, r.LogLikGap, "%s: the gap to the truth is recorded", r.Method)
	}
	assert.Contains(t, sum.Markdown(), "W integrated out")
	assert.Equal(t, 2, resultLines(t, dir), "one line per run")
	for _, name := range []string{SummaryFile, ReportFile, "accuracy.png", "trace_a.png"} {
		assert.FileExists(t, filepath.Join(dir, name))
	}
	assert.True(t, strings.HasPrefix(sum.Markdown(), "Connectome: synthetic 30, 30 neurons"))

	e.solve = func(context.Context, *Problem, Method, Settings, uint64) (*Outcome, error) {
		return nil, errors.New("should not run")
	}
	sum2, err := e.Run(context.Background())
	require.NoError(t, err)
	assert.Equal(t, sum.Entries, sum2.Entries)
}

// The report's derived figures: the worst R̂ and smallest ESS over seeds,
// and the median time at which traced runs first reach the paper's value.
func TestEntryDiagnosticsAndReach(t *testing.T) {
	cell := Table3Cells()[0] // paper: Gumbel-Sinkhorn .97 on 40% easy
	paper := cell.Paper[GumbelSinkhorn]
	tr := func(secs ...float64) []TraceRecord {
		var out []TraceRecord
		for i, s := range secs {
			out = append(out, TraceRecord{Sec: s, Accuracy: paper - 0.1 + 0.05*float64(i)})
		}
		return out
	}
	recs := []*Record{
		{Accuracy: 0.99, Trace: tr(1, 2, 3, 4)}, // reaches paper at the third point: 3 s
		{Accuracy: 0.98, Trace: tr(1, 5, 7)},    // at 7 s
		{Accuracy: 0.90, Trace: tr(1, 2)},       // never
		{Accuracy: 0.97},                        // no trace
	}
	e := entryOf(cell, GumbelSinkhorn, recs)
	assert.Equal(t, 3, e.Traced)
	assert.Equal(t, 2, e.Reached)
	require.NotNil(t, e.ReachMedianS)
	assert.InDelta(t, 3, *e.ReachMedianS, 1e-12) // stat.Empirical: the lower of the two middle values
	assert.Nil(t, e.RHatMax)

	assert.Zero(t, e.GapRuns)
	assert.Nil(t, e.GapMedian)

	gap := func(v float64) *float64 { return &v }
	g := entryOf(cell, Rounding, []*Record{{LogLikGap: gap(2)}, {LogLikGap: gap(-3)}, {}, {LogLikGap: gap(1)}})
	assert.Equal(t, 3, g.GapRuns, "records without a gap are left out")
	assert.Equal(t, 2, g.GapPositive)
	require.NotNil(t, g.GapMedian)
	assert.Equal(t, 1.0, *g.GapMedian)

	mc := entryOf(cell, MCMC, []*Record{{RHat: 1.02, ESS: 300}, {RHat: 1.3, ESS: 40}, {}})
	require.NotNil(t, mc.RHatMax)
	require.NotNil(t, mc.ESSMin)
	assert.Equal(t, 1.3, *mc.RHatMax)
	assert.Equal(t, 40.0, *mc.ESSMin)
}

// RecordOf reads the record a run stored, and refuses a compare record
// without one or with another run's.
func TestRecordOf(t *testing.T) {
	extra, err := json.Marshal(&Record{Cell: "a", Seed: 2, Method: MCMC, Accuracy: 0.5})
	require.NoError(t, err)
	cr := &compare.Record{Problem: "a", Seed: 2, Method: string(MCMC), Extra: extra, Worker: "w", Attempt: 2}
	r, err := RecordOf(cr)
	require.NoError(t, err)
	assert.Equal(t, 0.5, r.Accuracy)
	assert.Equal(t, "w", r.Worker)
	assert.Equal(t, 2, r.Attempt)

	_, err = RecordOf(&compare.Record{Problem: "a", Seed: 2, Method: string(MCMC)})
	assert.ErrorContains(t, err, "no stored record")
	cr.Seed = 3
	_, err = RecordOf(cr)
	assert.ErrorContains(t, err, "holds the record of a seed 2 mcmc")
	cr.Extra = []byte("{")
	_, err = RecordOf(cr)
	assert.Error(t, err)
}
