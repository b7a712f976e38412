package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/permlab/permlab/networks/sorting"
)

// runArgs runs the command and returns its status, stdout and stderr.
func runArgs(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestBadFlags runs the command with bad flags: each is refused with exit
// status 2, before anything is trained, by a message naming the flag.
func TestBadFlags(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.params")
	for _, tc := range []struct {
		args []string
		flag string // named in the message
		want string // also in the message
	}{
		{[]string{"-n", "1"}, "-n", "-n must be >= 2, got 1"},
		{[]string{"-n", "0"}, "-n", "must be >= 2"},
		{[]string{"-test", "0:1,5"}, "-test", `interval "5" is not low:high`},
		{[]string{"-test", "2:1"}, "-test", "want finite low < high"},
		{[]string{"-test", "a:1"}, "-test", `interval "a:1"`},
		{[]string{"-test", ","}, "-test", "no intervals"},
		{[]string{"-variant", "deep"}, "-variant", `"deep" is not paper or standardized`},
		{[]string{"-test-lists", "0"}, "-test-lists", "must be >= 1"},
		{[]string{"-steps", "-3"}, "-steps", "must be >= 0"},
		{[]string{"-batch", "0"}, "-batch", "must be >= 1"},
		{[]string{"-samples", "0"}, "-samples", "must be >= 1"},
		{[]string{"-iters", "-1"}, "-iters", "must be >= 1"},
		{[]string{"-tau", "0"}, "-tau", "must be finite and > 0"},
		{[]string{"-tau", "NaN"}, "-tau", "must be finite and > 0"},
		{[]string{"-tau-end", "-1"}, "-tau-end", "0 (no annealing) or finite and > 0"},
		{[]string{"-tau-end", "2"}, "-tau-end", "-tau-end 2 must be <= -tau 1"},
		{[]string{"-lr", "0"}, "-lr", "must be finite and > 0"},
		{[]string{"-lr-end", "0"}, "-lr-end", "must be finite and > 0"},
		{[]string{"-lr-end", "1"}, "-lr-end", "-lr-end 1 must be <= -lr"},
		{[]string{"-noise", "-0.5"}, "-noise", "must be finite and >= 0"},
		{[]string{"-val-every", "-1"}, "-val-every", "must be >= 0"},
		{[]string{"-val-every", "10", "-val-lists", "0"}, "-val-lists", "must be >= 1"},
		{[]string{"-val-every", "10", "-val-seed", "2"}, "-val-seed", "must differ from -test-seed"},
		{[]string{"-val-every", "0", "-val-lists", "50"}, "-val-lists", "needs -val-every"},
		{[]string{"-val-every", "0", "-val-seed", "7"}, "-val-seed", "needs -val-every"},
		{[]string{"-seeds", "2"}, "-seeds", "needs -table1"},
		{[]string{"-ns", "5"}, "-ns", "needs -table1"},
		{[]string{"-results", "r.jsonl"}, "-results", "needs -table1"},
		{[]string{"-markdown", "t.md"}, "-markdown", "needs -table1"},
		{[]string{"-load", file, "-steps", "10"}, "-steps", "-load tests a saved network"},
		{[]string{"-load", file, "-val-every", "10"}, "-val-every", "-load tests a saved network"},
		{[]string{"-load", missing}, "-load", "no such file"},
		{[]string{"-load", dir}, "-load", "is a directory"},
		{[]string{"-save", dir}, "-save", "is a directory"},
		{[]string{"-json", filepath.Join(file, "out.json")}, "-json", "not a directory"},
		{[]string{"-json", file, "-save", file}, "-json", "-save and -json name the same file"},
		{[]string{"-table1", "-n", "5"}, "-n", "drop -n"},
		{[]string{"-table1", "-seed", "2"}, "-seed", "drop -seed"},
		{[]string{"-table1", "-variant", "paper"}, "-variant", "drop -variant"},
		{[]string{"-table1", "-json", "x.json"}, "-json", "-table1 writes its results to -results"},
		{[]string{"-table1", "-load", file}, "-load", "-table1 writes its results to -results"},
		{[]string{"-table1", "-ns", "5,1"}, "-ns", `"1" is not a list size >= 2`},
		{[]string{"-table1", "-ns", ""}, "-ns", "no list sizes"},
		{[]string{"-table1", "-seeds", "0"}, "-seeds", "must be >= 1"},
		{[]string{"-table1", "-results", ""}, "-results", "must not be empty"},
		{[]string{"-table1", "-results", dir}, "-results", "is a directory"},
		{[]string{"-table1", "-results", filepath.Join(file, "t.jsonl")}, "-results", "not a directory"},
		{[]string{"-table1", "-results", file, "-markdown", file}, "-markdown", "-markdown and -results name the same file"},
		{[]string{"-table1", "-lr-end", "1"}, "-lr-end", "must be <= -lr"},
		{[]string{"extra"}, "extra", "unexpected argument"},
		{[]string{"-n", "5", "extra"}, "extra", "unexpected argument"},
		{[]string{"-nosuchflag"}, "-nosuchflag", "not defined"},
		{[]string{"-n", "five"}, "-n", "invalid value"},
	} {
		code, stdout, stderr := runArgs(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.flag) || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: status %d, stderr %q; want 2 and a message naming %s with %q", tc.args, code, stderr, tc.flag, tc.want)
		}
		if stdout != "" || strings.Contains(stderr, "lists/s") {
			t.Errorf("%q: ran before refusing: stdout %q, stderr %q", tc.args, stdout, stderr)
		}
	}
	if code, _, stderr := runArgs(t, "-h"); code != 0 || !strings.Contains(stderr, "Usage:") {
		t.Errorf("-h: status %d, stderr %q", code, stderr)
	}
	// The checks create nothing: no results file, no folder for it.
	if _, err := os.Stat(filepath.Join(dir, "new")); !os.IsNotExist(err) {
		t.Errorf("a checked output folder was created: %v", err)
	}
	if code, _, _ := runArgs(t, "-table1", "-results", filepath.Join(dir, "new", "t.jsonl"), "-seeds", "0"); code != 2 {
		t.Errorf("-seeds 0: status %d", code)
	}
	if _, err := os.Stat(filepath.Join(dir, "new")); !os.IsNotExist(err) {
		t.Errorf("a refused run created the -results folder: %v", err)
	}
}

// TestDefaultResults checks that -table1 writes under out/ by default, not
// to the committed results.
func TestDefaultResults(t *testing.T) {
	if defaultResults != filepath.Join("out", "sorting", "table1.jsonl") {
		t.Errorf("default -results %s, want out/sorting/table1.jsonl", defaultResults)
	}
	o := options{setFlags: map[string]bool{}}
	var usage bytes.Buffer
	fs := newFlags(&o, &usage)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if o.results != defaultResults {
		t.Errorf("-results defaults to %s", o.results)
	}
	fs.PrintDefaults()
	if !strings.Contains(usage.String(), "out/sorting/table1.jsonl") {
		t.Errorf("the help does not name the default:\n%s", usage.String())
	}
}

func TestParseIntervals(t *testing.T) {
	ivs, err := parseIntervals(defaultTest)
	if err != nil {
		t.Fatal(err)
	}
	if len(ivs) != len(paperIntervals) {
		t.Fatalf("default -test has %d intervals, want %d", len(ivs), len(paperIntervals))
	}
	for k := range ivs {
		if ivs[k] != paperIntervals[k] {
			t.Errorf("interval %d = %v, want %v", k, ivs[k], paperIntervals[k])
		}
	}
	got, err := parseIntervals(" -1.5:2e3 ")
	if err != nil || len(got) != 1 || got[0] != (interval{-1.5, 2000}) {
		t.Errorf("parseIntervals(-1.5:2e3) = %v, %v", got, err)
	}
}

// TestSingleRun runs the documented command on a small problem and checks
// the JSON schema, the table, and that -save then -load gives the same
// results.
func TestSingleRun(t *testing.T) {
	dir := t.TempDir()
	out, model := filepath.Join(dir, "out.json"), filepath.Join(dir, "net.params")
	code, stdout, stderr := runArgs(t, "-n", "5", "-seed", "1", "-steps", "200", "-test", "0:1,10:11",
		"-test-lists", "300", "-json", out, "-save", model)
	if code != 0 {
		t.Fatalf("status %d, stderr:\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "step 200/200") || !strings.Contains(stderr, "lists/s") {
		t.Errorf("no progress on stderr:\n%s", stderr)
	}
	if !strings.Contains(stdout, "U(10,11)") || !strings.Contains(stdout, "prop. any wrong") {
		t.Errorf("no table on stdout:\n%s", stdout)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	// The schema: decode into generic maps so a renamed field fails.
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"n", "train_seconds", "results"} {
		if _, ok := doc[key]; !ok {
			t.Errorf("JSON has no %q: %s", key, b)
		}
	}
	if doc["n"] != 5.0 {
		t.Errorf(`"n" = %v, want 5`, doc["n"])
	}
	results, _ := doc["results"].([]any)
	if len(results) != 2 {
		t.Fatalf("results has %d entries, want 2: %s", len(results), b)
	}
	for k, want := range []interval{{0, 1}, {10, 11}} {
		r, _ := results[k].(map[string]any)
		for _, key := range []string{"low", "high", "prop_any_wrong", "prop_wrong", "kendall_tau"} {
			if _, ok := r[key].(float64); !ok {
				t.Errorf("results[%d] has no number %q: %v", k, key, r)
			}
		}
		if r["low"] != want.low || r["high"] != want.high {
			t.Errorf("results[%d] is U(%v, %v), want %v", k, r["low"], r["high"], want)
		}
	}
	var first Output
	if err := json.Unmarshal(b, &first); err != nil {
		t.Fatal(err)
	}

	code, _, stderr = runArgs(t, "-n", "5", "-load", model, "-test", "0:1,10:11", "-test-lists", "300", "-json", out)
	if code != 0 {
		t.Fatalf("-load: status %d, stderr:\n%s", code, stderr)
	}
	var second Output
	b, _ = os.ReadFile(out)
	if err := json.Unmarshal(b, &second); err != nil {
		t.Fatal(err)
	}
	for k := range first.Results {
		if first.Results[k] != second.Results[k] {
			t.Errorf("loaded network: %+v, trained one %+v", second.Results[k], first.Results[k])
		}
	}
	if code, _, stderr := runArgs(t, "-n", "5", "-variant", "paper", "-load", model); code != 1 || !strings.Contains(stderr, "Load") {
		t.Errorf("-load of the other variant: status %d, stderr %q", code, stderr)
	}
}

// TestKeepBest trains with -val-every and checks that the kept weights are
// those of the step the run reports: with a constant learning rate, a run of
// that many steps ends with the same weights, byte for byte. The settings
// are ones whose validation error goes up again near the end (0 from step
// 20 to 40, then 0.05 and 0.06), so the kept step is not the last.
func TestKeepBest(t *testing.T) {
	dir := t.TempDir()
	out, kept := filepath.Join(dir, "out.json"), filepath.Join(dir, "kept.params")
	common := []string{"-n", "10", "-seed", "2", "-variant", "paper", "-iters", "10", "-noise", "1", "-lr", "0.1", "-lr-end", "0.1", "-test", "0:1", "-test-lists", "50"}
	args := append([]string{"-steps", "70", "-val-every", "10", "-val-lists", "100", "-json", out, "-save", kept}, common...)
	code, _, stderr := runArgs(t, args...)
	if code != 0 {
		t.Fatalf("status %d, stderr:\n%s", code, stderr)
	}
	for _, step := range []string{"step 10:", "step 70:", "kept the weights of step"} {
		if !strings.Contains(stderr, step) {
			t.Errorf("stderr has no %q:\n%s", step, stderr)
		}
	}
	var o Output
	b, _ := os.ReadFile(out)
	if err := json.Unmarshal(b, &o); err != nil {
		t.Fatal(err)
	}
	if o.KeptStep%10 != 0 || o.KeptStep < 10 || o.KeptStep >= 70 {
		t.Fatalf("kept_step %d, want a multiple of 10 below the last step 70", o.KeptStep)
	}
	again := filepath.Join(dir, "again.params")
	args = append([]string{"-steps", strconv.Itoa(o.KeptStep), "-val-every", "0", "-save", again}, common...)
	if code, _, stderr := runArgs(t, args...); code != 0 {
		t.Fatalf("rerun: status %d, stderr:\n%s", code, stderr)
	}
	a, _ := os.ReadFile(kept)
	c, _ := os.ReadFile(again)
	if len(a) == 0 || !bytes.Equal(a, c) {
		t.Errorf("kept weights (step %d) differ from a %d-step run", o.KeptStep, o.KeptStep)
	}
}

// TestTable1Resume runs a tiny grid twice: the second run trains nothing
// and prints the same table.
func TestTable1Resume(t *testing.T) {
	results := filepath.Join(t.TempDir(), "sub", "table1.jsonl")
	args := []string{"-table1", "-ns", "3,5", "-seeds", "2", "-steps", "30", "-test", "0:1,1000:1001", "-test-lists", "50", "-results", results}
	code, first, stderr := runArgs(t, args...)
	if code != 0 {
		t.Fatalf("status %d, stderr:\n%s", code, stderr)
	}
	recs, err := readRecords(results)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 8 { // 2 sizes × 2 seeds × 2 variants
		t.Fatalf("%d records, want 8", len(recs))
	}
	for _, want := range []string{"| U(0,1) | paper |", "| U(1000,1001) | standardized |", "(.0)", "n = 3", "n = 5"} {
		if !strings.Contains(first, want) {
			t.Errorf("table lacks %q:\n%s", want, first)
		}
	}
	code, second, stderr := runArgs(t, args...)
	if code != 0 || strings.Contains(stderr, "step") {
		t.Fatalf("resumed run: status %d, trained again:\n%s", code, stderr)
	}
	if second != first {
		t.Errorf("resumed table differs:\n%s\nwant\n%s", second, first)
	}
	if recs, _ := readRecords(results); len(recs) != 8 {
		t.Errorf("resumed run appended records: %d, want 8", len(recs))
	}
	// Fewer -seeds trains nothing and still reports every recorded seed.
	args[4] = "1"
	if code, third, _ := runArgs(t, args...); code != 0 || third != first {
		t.Errorf("run with -seeds 1: status %d, table\n%s\nwant\n%s", code, third, first)
	}
	// Other settings are a different task: -steps 31 trains all cells again.
	args[4], args[6] = "2", "31"
	if code, _, stderr := runArgs(t, args...); code != 0 {
		t.Fatalf("run with other settings: status %d, stderr:\n%s", code, stderr)
	}
	if recs, _ := readRecords(results); len(recs) != 16 {
		t.Errorf("%d records after a run with other settings, want 16", len(recs))
	}
	// -seed-share adds the share of seeds under 0.01, from the same records.
	args = append(args, "-seed-share")
	code, shared, _ := runArgs(t, args...)
	if code != 0 || !strings.HasPrefix(shared, strings.Split(first, "\n")[0]) || !strings.Contains(shared, "Share of training seeds") {
		t.Errorf("-seed-share: status %d, output\n%s", code, shared)
	}
}

// TestShareMarkdown: the share of seeds counts the networks at or under the
// limit on each interval.
func TestShareMarkdown(t *testing.T) {
	rec := func(n int, v string, seed uint64, wrong ...float64) Record {
		r := Record{N: n, Variant: v, Seed: seed}
		for k, w := range wrong {
			r.Results = append(r.Results, sorting.Metrics{Low: float64(k), High: float64(k + 1), PropAnyWrong: w})
		}
		return r
	}
	rows := []Record{
		rec(10, "paper", 1, 0, 1), rec(10, "paper", 2, 0.01, 0), rec(10, "paper", 3, 0.02, 0),
		rec(10, "standardized", 1, 0, 0),
	}
	md := shareMarkdown(rows, []int{10, 80}, []interval{{0, 1}, {1, 2}}, 0.01)
	for _, want := range []string{
		"| U(0,1) | paper | 2/3 (67%) | – |",
		"| U(1,2) | paper | 2/3 (67%) | – |",
		"| U(0,1) | standardized | 1/1 (100%) | – |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("share table lacks %q:\n%s", want, md)
		}
	}
}

func TestReadRecordsTornLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.jsonl")
	r := newRecord(sorting.DefaultConfig(5), validation{}, 10, 2)
	if err := appendRecord(path, r); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"n": 5, "vari`)
	f.Close()
	recs, err := readRecords(path)
	if err != nil || len(recs) != 1 {
		t.Errorf("readRecords with a torn last line: %d records, %v; want 1, nil", len(recs), err)
	}
	if err := trimTornLine(path); err != nil {
		t.Fatal(err)
	}
	if err := appendRecord(path, r); err != nil {
		t.Fatal(err)
	}
	if recs, err := readRecords(path); err != nil || len(recs) != 2 {
		t.Errorf("append after trimming the torn line: %d records, %v; want 2, nil", len(recs), err)
	}
	os.WriteFile(path, []byte("{bad\n{}\n"), 0o644)
	if _, err := readRecords(path); err == nil {
		t.Error("readRecords with a bad first line: no error")
	}
}

func TestMeanSD(t *testing.T) {
	m, sd := meanSD([]float64{1, 2, 3})
	if m != 2 || sd != 1 {
		t.Errorf("meanSD(1,2,3) = %v, %v; want 2, 1", m, sd)
	}
	if m, sd := meanSD([]float64{0.5}); m != 0.5 || sd != 0 {
		t.Errorf("meanSD(0.5) = %v, %v", m, sd)
	}
}
