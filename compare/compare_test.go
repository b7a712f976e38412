package compare

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The test binary doubles as a worker: with COMPARE_TEST_WORKER=1 in its
// environment, TestMain runs workerMain instead of the tests, the way a
// cluster job runs the grid's command.
func TestMain(m *testing.M) {
	if os.Getenv("COMPARE_TEST_WORKER") == "1" {
		os.Exit(workerMain(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// testGrid is a small deterministic grid. Solve fails once for the task
// (b, 2, m1) when failOnce names a marker file that does not exist yet.
func testGrid(failOnce string) *Grid {
	return &Grid{
		Problems: []string{"a", "b", "c"},
		Seeds:    []int{1, 2, 3},
		Methods:  []string{"m1", "m2"},
		Setup: func(_ context.Context, p string, seed int) (any, error) {
			return float64(seed*10 + int(p[0]-'a')), nil
		},
		Solve: func(_ context.Context, inst any, t Task) (Result, error) {
			if failOnce != "" && t == (Task{"b", 2, "m1"}) {
				if _, err := os.Stat(failOnce); errors.Is(err, os.ErrNotExist) {
					if err := os.WriteFile(failOnce, nil, 0o644); err != nil {
						return Result{}, err
					}
					return Result{}, errors.New("transient failure")
				}
			}
			bonus := 0.0
			if t.Method == "m2" {
				bonus = 0.5
			}
			return Result{Metrics: map[string]float64{"acc": inst.(float64) + bonus}, Iterations: 7}, nil
		},
		Config: func(p, m string) string { return "v1/" + m },
	}
}

func workerMain(args []string) int {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	dir := fs.String("dir", "", "results directory")
	shard := fs.String("shard", "", "i/n")
	count := fs.Int("count", 0, "number of shards when the index comes from the environment")
	killAfter := fs.Int("kill-after", 0, "exit abruptly after this many finished tasks")
	failOnce := fs.String("fail-once", "", "marker file")
	worker := fs.String("worker", "", "worker name")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	sh, err := ParseShard(*shard)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if *shard == "" {
		var ok bool
		if sh, ok, err = ShardFromEnv(*count); err != nil || !ok {
			fmt.Fprintln(os.Stderr, "no shard:", err)
			return 2
		}
	}
	if _, err := PinFromEnv(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	finished := 0
	_, err = Run(context.Background(), testGrid(*failOnce), Options{Dir: *dir, Shard: sh, Worker: *worker, Progress: func(ev Event) {
		if ev.Kind == EventDone || ev.Kind == EventFail {
			finished++
			if *killAfter > 0 && finished == *killAfter {
				os.Exit(3) // like kill -9: no deferred clean-up
			}
		}
	}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func worker(t *testing.T, env []string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), "COMPARE_TEST_WORKER=1"), env...)
	return cmd
}

// countPerTask counts the successful records of each task in the files.
func countPerTask(t *testing.T, dir string) map[Task]int {
	t.Helper()
	recs, err := ReadRecords(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := map[Task]int{}
	for _, r := range recs {
		if r.Error == "" {
			n[r.Task()]++
		}
	}
	return n
}

func sequential(t *testing.T) *Summary {
	t.Helper()
	sum, err := Run(context.Background(), testGrid(""), Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Records) != 18 || sum.Ran != 18 {
		t.Fatalf("sequential run: %d records, %d ran; want 18", len(sum.Records), sum.Ran)
	}
	return sum
}

func sameMetrics(t *testing.T, got, want *Summary) {
	t.Helper()
	if len(got.Records) != len(want.Records) {
		t.Fatalf("%d records, want %d", len(got.Records), len(want.Records))
	}
	for i, r := range want.Records {
		g := got.Records[i]
		if g.Task() != r.Task() || g.Metrics["acc"] != r.Metrics["acc"] {
			t.Errorf("record %d: %v acc %v, want %v acc %v", i, g.Task(), g.Metrics["acc"], r.Task(), r.Metrics["acc"])
		}
	}
}

func TestShardsAsSubprocessesEqualSequential(t *testing.T) {
	want := sequential(t)
	dir := t.TempDir()
	var cmds []*exec.Cmd
	for i := range 3 {
		env := []string{EnvKubernetesIndex + "=" + fmt.Sprint(i)}
		if i == 2 {
			env = []string{EnvSlurmIndex + "=2"} // the Slurm variable works too
		}
		c := worker(t, env, "-dir", dir, "-count", "3", "-worker", fmt.Sprintf("w%d", i))
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, c)
	}
	for i, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("worker %d: %v", i, err)
		}
	}
	for task, n := range countPerTask(t, dir) {
		if n != 1 {
			t.Errorf("%v recorded %d times", task, n)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, ResultsPattern))
	if len(files) != 3 {
		t.Errorf("%d results files, want one per shard: %v", len(files), files)
	}
	// The collector finds everything done.
	sum, err := Run(context.Background(), testGrid(""), Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Ran != 0 || sum.Duplicates != 0 || len(sum.Missing) != 0 {
		t.Errorf("collector ran %d, %d duplicates, %d missing; want 0, 0, 0", sum.Ran, sum.Duplicates, len(sum.Missing))
	}
	sameMetrics(t, sum, want)
	for _, r := range sum.Records {
		if r.Worker == "" || r.GOMAXPROCS < 1 || r.CPU == "" || r.Attempt != 1 || r.Shard == "all" {
			t.Errorf("record %v lacks provenance: worker %q, GOMAXPROCS %d, CPU %q, attempt %d, shard %q", r.Task(), r.Worker, r.GOMAXPROCS, r.CPU, r.Attempt, r.Shard)
		}
	}
}

func TestKilledShardResumes(t *testing.T) {
	want := sequential(t)
	dir := t.TempDir()
	c := worker(t, nil, "-dir", dir, "-shard", "0/2", "-kill-after", "3", "-worker", "w")
	if err := c.Run(); err == nil {
		t.Fatal("the worker was meant to die")
	}
	if n := len(countPerTask(t, dir)); n != 3 {
		t.Fatalf("the killed worker left %d finished tasks, want 3", n)
	}
	for _, sh := range []string{"0/2", "1/2"} {
		if out, err := worker(t, nil, "-dir", dir, "-shard", sh, "-worker", "w").CombinedOutput(); err != nil {
			t.Fatalf("shard %s: %v\n%s", sh, err, out)
		}
	}
	for task, n := range countPerTask(t, dir) {
		if n != 1 {
			t.Errorf("%v recorded %d times after the rerun", task, n)
		}
	}
	sum, err := Run(context.Background(), testGrid(""), Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	sameMetrics(t, sum, want)
	// The rerun of shard 0 got its own file, attempt 2.
	if _, err := os.Stat(filepath.Join(dir, "results-0of2-w-2.jsonl")); err != nil {
		t.Errorf("no attempt-2 file: %v", err)
	}
}

func TestSameShardTwiceAtOnce(t *testing.T) {
	want := sequential(t)
	dir := t.TempDir()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for k := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := worker(t, []string{EnvKubernetesIndex + "=1"}, "-dir", dir, "-count", "2", "-worker", "same").CombinedOutput()
			if err != nil {
				errs[k] = fmt.Errorf("%v: %s", err, out)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	counts := countPerTask(t, dir)
	extra := 0
	for _, n := range counts {
		extra += n - 1
	}
	if _, err := worker(t, nil, "-dir", dir, "-shard", "0/2").CombinedOutput(); err != nil {
		t.Fatal(err)
	}
	sum, err := Run(context.Background(), testGrid(""), Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Duplicates != extra {
		t.Errorf("Duplicates = %d, want %d (records beyond one per task)", sum.Duplicates, extra)
	}
	if !strings.Contains(sum.Status(), "18 of 18 runs done") {
		t.Errorf("status %q", sum.Status())
	}
	sameMetrics(t, sum, want)
}

func TestTaskThatFailsOnce(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(t.TempDir(), "failed")
	sum, err := Run(context.Background(), testGrid(marker), Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Failures) != 1 || sum.Failures[0].Task() != (Task{"b", 2, "m1"}) || len(sum.Records) != 17 {
		t.Fatalf("first run: %d failures, %d records", len(sum.Failures), len(sum.Records))
	}
	if !strings.Contains(sum.Status(), "1 failed") {
		t.Errorf("status %q does not mention the failure", sum.Status())
	}
	sum, err = Run(context.Background(), testGrid(marker), Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Ran != 1 || len(sum.Failures) != 0 || len(sum.Records) != 18 {
		t.Errorf("second run: ran %d, %d failures, %d records; want 1, 0, 18", sum.Ran, len(sum.Failures), len(sum.Records))
	}
}

func TestGroupsGoToShardModN(t *testing.T) {
	g := testGrid("")
	for n := 1; n <= 4; n++ {
		owner := map[int]int{}
		for i := range n {
			sh := Shard{Index: i, Count: n}
			for _, gr := range g.groups() {
				if sh.owns(gr.index) {
					owner[gr.index]++
					if n > 1 && gr.index%n != i {
						t.Errorf("group %d in shard %d/%d", gr.index, i, n)
					}
				}
			}
		}
		for gi := range 9 {
			if owner[gi] != 1 {
				t.Errorf("n = %d: group %d owned %d times", n, gi, owner[gi])
			}
		}
	}
}

func TestParseShardAndEnv(t *testing.T) {
	for _, bad := range []string{"3/3", "-1/2", "a/b", "1", "0/0"} {
		if _, err := ParseShard(bad); err == nil {
			t.Errorf("ParseShard(%q) accepted", bad)
		}
	}
	if s, err := ParseShard(" 2/5 "); err != nil || s != (Shard{2, 5}) {
		t.Errorf("ParseShard: %v, %v", s, err)
	}
	t.Setenv(EnvKubernetesIndex, "4")
	if _, _, err := ShardFromEnv(4); err == nil {
		t.Error("index 4 of 4 accepted")
	}
	if _, _, err := ShardFromEnv(0); err == nil {
		t.Error("missing count accepted")
	}
	if s, ok, err := ShardFromEnv(5); err != nil || !ok || s != (Shard{4, 5}) {
		t.Errorf("ShardFromEnv: %v %v %v", s, ok, err)
	}
	if _, err := Run(context.Background(), testGrid(""), Options{Shard: Shard{1, 2}}); err == nil {
		t.Error("sharding without a directory accepted")
	}
}

func TestCutOffLineAndStaleRecordsAreIgnored(t *testing.T) {
	dir := t.TempDir()
	if _, err := Run(context.Background(), testGrid(""), Options{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	// A killed writer's half line, and records of another configuration.
	if err := os.WriteFile(filepath.Join(dir, "results-all-x-1.jsonl"), []byte(`{"problem":"a","seed":1,"method":"m1","metrics":{"acc":`), 0o644); err != nil {
		t.Fatal(err)
	}
	g := testGrid("")
	g.Config = func(p, m string) string { return "v2/" + m }
	var notes []string
	sum, err := Run(context.Background(), g, Options{Dir: dir, Progress: func(ev Event) {
		if ev.Kind == EventInfo {
			notes = append(notes, ev.Message)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Stale != 18 || sum.Ran != 18 || len(notes) != 1 {
		t.Errorf("stale %d, ran %d, notes %v; want 18, 18, one note", sum.Stale, sum.Ran, notes)
	}
}

func TestCancelKeepsFinishedRuns(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	g := testGrid("")
	solve := g.Solve
	n := 0
	g.Solve = func(c context.Context, inst any, tk Task) (Result, error) {
		n++
		if n == 4 {
			cancel()
			<-c.Done()
			return Result{}, c.Err()
		}
		return solve(c, inst, tk)
	}
	sum, err := Run(ctx, g, Options{Dir: dir})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if len(sum.Records) != 3 || len(sum.Failures) != 0 {
		t.Errorf("%d records, %d failures after cancel; want 3, 0 (an interrupted run is not a failure)", len(sum.Records), len(sum.Failures))
	}
}

func TestBudgetIsTheDeadline(t *testing.T) {
	g := testGrid("")
	g.Problems, g.Seeds, g.Methods = []string{"a"}, []int{1}, []string{"m1"}
	g.Budget = 30 * time.Millisecond
	g.Solve = func(ctx context.Context, _ any, _ Task) (Result, error) {
		d, ok := ctx.Deadline()
		if !ok || time.Until(d) > 30*time.Millisecond {
			return Result{}, fmt.Errorf("deadline %v, %v", d, ok)
		}
		return Result{Metrics: map[string]float64{"acc": 1}}, nil
	}
	sum, err := Run(context.Background(), g, Options{})
	if err != nil || len(sum.Records) != 1 {
		t.Fatalf("%v, %+v", err, sum.Failures)
	}
}

func TestTable(t *testing.T) {
	sum := sequential(t)
	tab := sum.Table("acc", 2)
	for _, want := range []string{"| method | a | b | c |", "| m1 | 20.00 ± 10.00 | 21.00 ± 10.00 | 22.00 ± 10.00 |", "| m2 | 20.50 ± 10.00 |"} {
		if !strings.Contains(tab, want) {
			t.Errorf("table lacks %q:\n%s", want, tab)
		}
	}
}

func TestWorkersRunShardsPinned(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("needs 2 CPUs to pin two workers")
	}
	dir := t.TempDir()
	w := &Workers{Count: 2, CPUsPerWorker: 1, Command: []string{os.Args[0], "-dir", dir}}
	t.Setenv("COMPARE_TEST_WORKER", "1")
	if err := w.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	counts := countPerTask(t, dir)
	if len(counts) != 18 {
		t.Errorf("%d tasks done by the workers, want 18", len(counts))
	}
}

// Collect recomputes a run's summary from its files alone: the same
// records, stale configurations left out, nothing run.
func TestCollect(t *testing.T) {
	dir := t.TempDir()
	g := testGrid(filepath.Join(t.TempDir(), "marker"))
	run, err := Run(context.Background(), g, Options{Dir: dir, Worker: "w"})
	require.NoError(t, err)
	require.Len(t, run.Failures, 1, "the task that fails once")

	bare := &Grid{Problems: g.Problems, Seeds: g.Seeds, Methods: g.Methods, Config: g.Config}
	got, err := Collect(bare, dir)
	require.NoError(t, err)
	sameMetrics(t, got, run)
	assert.Len(t, got.Failures, 1)
	assert.Zero(t, got.Stale)

	// Another configuration of m2: its records are stale.
	v2 := *bare
	v2.Config = func(p, m string) string {
		if m == "m2" {
			return "v2/m2"
		}
		return "v1/" + m
	}
	got, err = Collect(&v2, dir)
	require.NoError(t, err)
	assert.Equal(t, 9, got.Stale)
	assert.Len(t, got.Records, 8) // m1 only, less the failed task

	_, err = Collect(&Grid{}, dir)
	assert.Error(t, err)
}
