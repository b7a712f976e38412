package main

import (
	"path/filepath"
	"testing"
)

func TestReadSum(t *testing.T) {
	for n := 0; n < 11; n++ {
		data := make([]float64, n)
		want := 0.0
		for i := range data {
			data[i] = float64(i + 1)
			want += data[i]
		}
		if got := readSum(data); got != want {
			t.Errorf("n=%d: readSum = %v, want %v", n, got, want)
		}
	}
}

func TestRunWithoutPython(t *testing.T) {
	// Go timings only (no interpreter): the harness must still solve,
	// time the reads and print its table.
	missing := filepath.Join(t.TempDir(), "no-python")
	if err := run("5,60", 2, 1, 1, 1, missing, filepath.Join("lap_scipy.py")); err != nil {
		t.Fatal(err)
	}
	if err := run("0", 1, 1, 1, 1, missing, "lap_scipy.py"); err == nil {
		t.Error("size 0 accepted")
	}
	if err := run("5", 0, 1, 1, 1, missing, "lap_scipy.py"); err == nil {
		t.Error("reps 0 accepted")
	}
}
