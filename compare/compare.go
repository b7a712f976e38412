package compare

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"
)

// Task is one run: a method on a problem with a seed.
type Task struct {
	Problem string
	Seed    int
	Method  string
}

func (t Task) String() string { return fmt.Sprintf("%s seed %d %s", t.Problem, t.Seed, t.Method) }

// Result is what a method reports for one run.
type Result struct {
	// Metrics are the numbers the tables are made of (accuracy, R̂, …).
	Metrics map[string]float64
	// Iterations counts the method's steps or sweeps.
	Iterations int
	// Extra is stored with the record as is (traces, per-run details).
	Extra json.RawMessage
}

// Grid describes a comparison: every method on every problem and seed.
type Grid struct {
	Problems []string
	Seeds    []int
	Methods  []string
	// Budget is the wall-clock time of every run (0: no limit). The
	// context Solve receives has it as its deadline.
	Budget time.Duration

	// Setup builds the instance of a group (problem, seed) that all
	// methods then solve. It is called once per group and process.
	Setup func(ctx context.Context, problem string, seed int) (any, error)
	// Solve runs one method on an instance.
	Solve func(ctx context.Context, instance any, t Task) (Result, error)
	// Config, if not nil, fingerprints the configuration of a method on a
	// problem (its settings, the data source, …); records with another
	// fingerprint are ignored. nil means "" for every run.
	Config func(problem, method string) string
}

// Record is one run as stored in a results file.
type Record struct {
	Problem    string             `json:"problem"`
	Seed       int                `json:"seed"`
	Method     string             `json:"method"`
	Metrics    map[string]float64 `json:"metrics,omitempty"`
	Iterations int                `json:"iterations"`
	Extra      json.RawMessage    `json:"extra,omitempty"`
	Error      string             `json:"error,omitempty"`
	ElapsedSec float64            `json:"elapsed_s"`
	Config     string             `json:"config"`
	Finished   time.Time          `json:"finished"`

	// Where the run happened.
	Worker     string `json:"worker"`
	Shard      string `json:"shard"` // "i/n", or "all"
	Attempt    int    `json:"attempt"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	CPU        string `json:"cpu"`

	file string // results file and line it was read from (for the duplicate rule)
	line int
}

// Task returns the task of r.
func (r *Record) Task() Task { return Task{Problem: r.Problem, Seed: r.Seed, Method: r.Method} }

// EventKind says what an Event reports.
type EventKind int

// The kinds of Event.
const (
	EventPlan  EventKind = iota // Message describes the run
	EventSkip                   // the task was found done
	EventStart                  // the task starts
	EventDone                   // the task finished; Record holds it
	EventFail                   // the task failed; Record.Error says why
	EventInfo                   // Message is a note
)

// Event is a progress report of Run.
type Event struct {
	Kind        EventKind
	Task        Task
	Done, Total int // tasks of this process finished or skipped, and in all
	Found       int // EventPlan: tasks found done, reported next as EventSkip
	Record      *Record
	Message     string
}

// Options configures Run.
type Options struct {
	// Dir holds the results files; "" keeps results in memory only (no
	// resume, no sharding).
	Dir string
	// Shard restricts the run to one shard; the zero value runs every
	// group (the collector).
	Shard Shard
	// Worker names this process in records and file names; "" means
	// host-pid.
	Worker string
	// Progress, if not nil, receives events from Run's goroutine.
	Progress func(Event)
}

// Summary is the outcome of Run: every successful record of the grid known
// to the results files, in grid order (problems, seeds, methods), the
// failures that have not been redone, and the bookkeeping of the files.
type Summary struct {
	Grid       *Grid
	Records    []*Record
	Failures   []*Record
	Missing    []Task // grid tasks with no successful record (another shard's, or failed)
	Duplicates int    // successful records of a task beyond the one kept
	Stale      int    // records ignored because their configuration differs
	Ran        int    // tasks this process ran (successfully or not)
}

// Lookup returns the successful record of a task.
func (s *Summary) Lookup(t Task) (*Record, bool) {
	for _, r := range s.Records {
		if r.Task() == t {
			return r, true
		}
	}
	return nil, false
}

func (g *Grid) validate() error {
	switch {
	case len(g.Problems) == 0:
		return errors.New("compare: Grid has no problems")
	case len(g.Seeds) == 0:
		return errors.New("compare: Grid has no seeds")
	case len(g.Methods) == 0:
		return errors.New("compare: Grid has no methods")
	case g.Setup == nil || g.Solve == nil:
		return errors.New("compare: Grid needs Setup and Solve")
	case g.Budget < 0:
		return fmt.Errorf("compare: negative budget %v", g.Budget)
	}
	for name, list := range map[string][]string{"problem": g.Problems, "method": g.Methods} {
		seen := map[string]bool{}
		for _, x := range list {
			if x == "" || seen[x] {
				return fmt.Errorf("compare: %s %q is empty or repeated", name, x)
			}
			seen[x] = true
		}
	}
	seen := map[int]bool{}
	for _, s := range g.Seeds {
		if seen[s] {
			return fmt.Errorf("compare: seed %d repeated", s)
		}
		seen[s] = true
	}
	return nil
}

func (g *Grid) config(problem, method string) string {
	if g.Config == nil {
		return ""
	}
	return g.Config(problem, method)
}

// group is one (problem, seed) unit of work with its index in the grid.
type group struct {
	index   int
	problem string
	seed    int
}

func (g *Grid) groups() []group {
	var out []group
	for _, p := range g.Problems {
		for _, s := range g.Seeds {
			out = append(out, group{index: len(out), problem: p, seed: s})
		}
	}
	return out
}

// Run runs the tasks of the grid that belong to o.Shard and have no
// successful record in o.Dir yet, appending each result to this process's
// own results file as soon as it is known, and returns the summary of
// everything the directory holds for the grid. A cancelled ctx stops Run
// after the running task; the finished tasks are kept.
func Run(ctx context.Context, g *Grid, o Options) (*Summary, error) {
	if err := g.validate(); err != nil {
		return nil, err
	}
	if err := o.Shard.validate(); err != nil {
		return nil, err
	}
	if o.Dir == "" && o.Shard.Count > 1 {
		return nil, errors.New("compare: sharding needs a results directory")
	}
	emit := func(ev Event) {
		if o.Progress != nil {
			o.Progress(ev)
		}
	}
	var recs []*Record
	if o.Dir != "" {
		if err := os.MkdirAll(o.Dir, 0o755); err != nil {
			return nil, fmt.Errorf("compare: %w", err)
		}
		var err error
		if recs, err = readDir(o.Dir); err != nil {
			return nil, err
		}
	}
	st := newState(g, recs)
	if st.stale > 0 {
		emit(Event{Kind: EventInfo, Message: fmt.Sprintf("%d records were made with another configuration; they are ignored", st.stale)})
	}

	var mine []group
	for _, gr := range g.groups() {
		if o.Shard.owns(gr.index) {
			mine = append(mine, gr)
		}
	}
	total := len(mine) * len(g.Methods)
	type pending struct {
		gr      group
		methods []string
	}
	var work []pending
	var found []Task
	for _, gr := range mine {
		p := pending{gr: gr}
		for _, m := range g.Methods {
			t := Task{gr.problem, gr.seed, m}
			if st.best[t] != nil {
				found = append(found, t)
			} else {
				p.methods = append(p.methods, m)
			}
		}
		if len(p.methods) > 0 {
			work = append(work, p)
		}
	}
	emit(Event{Kind: EventPlan, Total: total, Found: len(found), Message: fmt.Sprintf("%s: %d tasks, %d done, %d to run", o.Shard, total, len(found), total-len(found))})
	done := 0
	for _, t := range found {
		done++
		emit(Event{Kind: EventSkip, Task: t, Done: done, Total: total, Record: st.best[t]})
	}

	var out *resultsFile
	if o.Dir != "" && len(work) > 0 {
		var err error
		if out, err = createResultsFile(o.Dir, o.Shard, workerName(o.Worker)); err != nil {
			return nil, err
		}
		defer out.close()
	}
	worker := workerName(o.Worker)
	cpu := cpuModel()
	ran := 0
	var runErr error
	for _, p := range work {
		if runErr = ctx.Err(); runErr != nil {
			break
		}
		inst, setupErr := g.Setup(ctx, p.gr.problem, p.gr.seed)
		for _, m := range p.methods {
			if runErr = ctx.Err(); runErr != nil {
				break
			}
			t := Task{p.gr.problem, p.gr.seed, m}
			emit(Event{Kind: EventStart, Task: t, Done: done, Total: total})
			r := &Record{Problem: t.Problem, Seed: t.Seed, Method: t.Method, Config: g.config(t.Problem, t.Method),
				Worker: worker, Shard: o.Shard.String(), GOMAXPROCS: runtime.GOMAXPROCS(0), CPU: cpu}
			if out != nil {
				r.Attempt = out.attempt
			}
			start := time.Now()
			var res Result
			err := setupErr
			if err == nil {
				res, err = solveOne(ctx, g, inst, t)
			}
			r.ElapsedSec = time.Since(start).Seconds()
			r.Finished = time.Now().UTC()
			if err != nil && ctx.Err() != nil {
				runErr = ctx.Err() // interrupted: not a result
				break
			}
			if err != nil {
				r.Error = err.Error()
			} else {
				r.Metrics, r.Iterations, r.Extra = res.Metrics, res.Iterations, res.Extra
			}
			if out != nil {
				if werr := out.append(r); werr != nil {
					return nil, werr
				}
			}
			st.add(r)
			ran++
			done++
			kind := EventDone
			if r.Error != "" {
				kind = EventFail
			}
			emit(Event{Kind: kind, Task: t, Done: done, Total: total, Record: r})
		}
		if runErr != nil {
			break
		}
	}
	sum := st.summary()
	sum.Ran = ran
	return sum, runErr
}

// solveOne runs one task under the grid's budget.
func solveOne(ctx context.Context, g *Grid, inst any, t Task) (Result, error) {
	if g.Budget > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, g.Budget)
		defer cancel()
	}
	return g.Solve(ctx, inst, t)
}

// state indexes the records of the grid by task.
type state struct {
	g      *Grid
	best   map[Task]*Record // the kept successful record
	failed map[Task]*Record // the latest failure
	dups   int
	stale  int
	inGrid map[Task]bool
}

func newState(g *Grid, recs []*Record) *state {
	st := &state{g: g, best: map[Task]*Record{}, failed: map[Task]*Record{}, inGrid: map[Task]bool{}}
	for _, p := range g.Problems {
		for _, s := range g.Seeds {
			for _, m := range g.Methods {
				st.inGrid[Task{p, s, m}] = true
			}
		}
	}
	for _, r := range recs {
		if !st.inGrid[r.Task()] {
			continue
		}
		if r.Config != g.config(r.Problem, r.Method) {
			st.stale++
			continue
		}
		st.add(r)
	}
	return st
}

// add files a record under the fixed duplicate rule: the successful record
// that finished first wins, ties broken by file and line.
func (st *state) add(r *Record) {
	t := r.Task()
	if r.Error != "" {
		if f := st.failed[t]; f == nil || f.Finished.Before(r.Finished) {
			st.failed[t] = r
		}
		return
	}
	cur := st.best[t]
	if cur == nil {
		st.best[t] = r
		return
	}
	st.dups++
	if earlier(r, cur) {
		st.best[t] = r
	}
}

func earlier(a, b *Record) bool {
	if !a.Finished.Equal(b.Finished) {
		return a.Finished.Before(b.Finished)
	}
	if a.file != b.file {
		return a.file < b.file
	}
	return a.line < b.line
}

func (st *state) summary() *Summary {
	s := &Summary{Grid: st.g, Duplicates: st.dups, Stale: st.stale}
	for _, p := range st.g.Problems {
		for _, seed := range st.g.Seeds {
			for _, m := range st.g.Methods {
				t := Task{p, seed, m}
				if r := st.best[t]; r != nil {
					s.Records = append(s.Records, r)
					continue
				}
				s.Missing = append(s.Missing, t)
				if f := st.failed[t]; f != nil {
					s.Failures = append(s.Failures, f)
				}
			}
		}
	}
	return s
}

func workerName(w string) string {
	if w != "" {
		return sanitize(w)
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "host"
	}
	return sanitize(fmt.Sprintf("%s-%d", host, os.Getpid()))
}

// sanitize keeps a name safe inside a file name.
func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '_'
	}, s)
}

// cpuModel returns the "model name" of /proc/cpuinfo, or GOARCH.
func cpuModel() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				return strings.TrimSpace(v)
			}
		}
	}
	return runtime.GOARCH
}
