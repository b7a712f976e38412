package compare

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzReadRecords checks that ReadRecords and Collect never panic on any
// results file, that what ReadRecords returns names a task, and that the
// report of a grid accounts for each of its tasks once.
func FuzzReadRecords(f *testing.F) {
	rec := func(r Record) []byte {
		b, err := json.Marshal(r)
		if err != nil {
			f.Fatal(err)
		}
		return append(b, '\n')
	}
	fin := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	ok := rec(Record{Problem: "p1", Seed: 1, Method: "m1", Metrics: map[string]float64{"acc": 0.5}, Iterations: 10,
		Extra: json.RawMessage(`{"cell":"p1"}`), ElapsedSec: 1.5, Config: "c", Finished: fin, Worker: "w", Shard: "all", Attempt: 1, GOMAXPROCS: 2, CPU: "x"})
	failed := rec(Record{Problem: "p1", Seed: 2, Method: "m2", Error: "boom", Config: "c", Finished: fin})
	f.Add(append(append([]byte(nil), ok...), failed...))                 // valid
	f.Add(append(append([]byte(nil), ok...), ok...))                     // a duplicate
	f.Add(append(append([]byte(nil), ok...), failed[:len(failed)/2]...)) // torn last line
	f.Add(append([]byte("{bad\n"), ok...))                               // a damaged line
	f.Add([]byte(`{"problem":"p1","seed":1,"method":"m1","config":"c","metrics":{"acc":NaN}}` + "\n"))
	f.Add([]byte(`{"problem":"p1","seed":1e300,"method":"m1","config":"c","finished":"yesterday"}` + "\n"))
	f.Add([]byte(`{"problem":"","seed":1,"method":"m1"}` + "\n" + `{"problem":"p2","seed":-1,"method":"m2","config":"c"}` + "\n"))
	f.Add([]byte{0, 1, 2, 0xff, '\n', '{', '}'})
	// A few real lines: the first of each committed celegans results file.
	if names, _ := filepath.Glob(filepath.Join("..", "celegans", "results", "tables", ResultsPattern)); len(names) > 0 {
		if data, err := os.ReadFile(names[0]); err == nil {
			end := 0
			for range 3 {
				if i := bytes.IndexByte(data[end:], '\n'); i >= 0 {
					end += i + 1
				}
			}
			f.Add(data[:end])
		}
	}
	dir := f.TempDir()
	path := filepath.Join(dir, "results-fuzz.jsonl")
	grid := &Grid{Problems: []string{"p1", "p2", "t3/10-hard"}, Seeds: []int{1, 2, 5}, Methods: []string{"m1", "m2", "mcmc"},
		Config: func(p, m string) string { return "c" }}
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		recs, err := ReadRecords(dir)
		if err != nil {
			return
		}
		for _, r := range recs {
			if r.Problem == "" || r.Method == "" {
				t.Fatalf("record without a task: %+v", r)
			}
		}
		s, err := Collect(grid, dir)
		if err != nil {
			t.Fatalf("Collect on a directory ReadRecords reads: %v", err)
		}
		if n := len(grid.Problems) * len(grid.Seeds) * len(grid.Methods); len(s.Records)+len(s.Missing) != n {
			t.Fatalf("%d records and %d missing for %d tasks", len(s.Records), len(s.Missing), n)
		}
		_ = s.Table("acc", 3)
		_ = s.Status()
	})
}
