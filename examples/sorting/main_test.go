package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/permlab/permlab/models/sorting"
)

// runArgs runs the command and returns its status, stdout and stderr.
func runArgs(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-n", "1"}, "-n must be >= 2, got 1"},
		{[]string{"-test", "0:1,5"}, `interval "5" is not low:high`},
		{[]string{"-test", "2:1"}, "want finite low < high"},
		{[]string{"-test", "a:1"}, `interval "a:1"`},
		{[]string{"-test", ","}, "no intervals"},
		{[]string{"-variant", "deep"}, `-variant: "deep" is not paper or standardized`},
		{[]string{"-test-lists", "0"}, "-test-lists must be >= 1"},
		{[]string{"-tau", "0"}, "Tau must be finite and > 0"},
		{[]string{"-lr-end", "1"}, "LREnd 1 must be <= LR"},
		{[]string{"-steps", "-3"}, "-steps must be >= 0"},
		{[]string{"-table1", "-n", "5"}, "drop -n"},
		{[]string{"-table1", "-json", "x.json"}, "-table1 does not take"},
		{[]string{"-table1", "-ns", "5,1"}, `-ns: "1" is not a list size >= 2`},
		{[]string{"-table1", "-seeds", "0"}, "-seeds must be >= 1"},
		{[]string{"extra"}, "unexpected arguments"},
	} {
		code, _, stderr := runArgs(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: status %d, stderr %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
	if code, _, _ := runArgs(t, "-nosuchflag"); code != 2 {
		t.Errorf("unknown flag: status %d, want 2", code)
	}
	if code, _, stderr := runArgs(t, "-h"); code != 0 || !strings.Contains(stderr, "Usage:") {
		t.Errorf("-h: status %d, stderr %q", code, stderr)
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
	if code, _, stderr := runArgs(t, "-n", "5", "-variant", "standardized", "-load", model); code != 1 || !strings.Contains(stderr, "Load") {
		t.Errorf("-load of the other variant: status %d, stderr %q", code, stderr)
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
}

func TestReadRecordsTornLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.jsonl")
	r := newRecord(sorting.DefaultConfig(5), 10, 2)
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
