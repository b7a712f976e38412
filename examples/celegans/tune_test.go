package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permlab/permlab/internal/longtest"
)

func writeGrid(t *testing.T, g Grid) string {
	t.Helper()
	data, err := json.Marshal(g)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "grid.json")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	return path
}

// A tuning grid runs each variant as its own experiment, writes the tuning
// table, and resumes without re-running anything.
func TestTuning(t *testing.T) {
	longtest.Skip(t, "runs the real methods")
	grid := writeGrid(t, Grid{
		Protocol: "test grid",
		Args:     []string{"-neurons", "50", "-table", "7", "-cells", "10c-1w,10c-4w", "-T", "100", "-seed-start", "101", "-seeds", "2", "-budget", "0", "-trace", "0"},
		Variants: []Variant{
			{Name: "mcmc-default", Method: "mcmc", Args: []string{"-sweeps", "30"}},
			{Name: "mcmc-2chains", Method: "mcmc", Args: []string{"-sweeps", "30", "-chains", "2"}},
			{Name: "rounding-lr0.05", Method: "rounding", Args: []string{"-steps", "20", "-round-lr", "0.05"}},
		},
	})
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	args := []string{"-tune", grid, "-out", dir}
	require.Equal(t, 0, run(context.Background(), args, &stdout, &stderr), stderr.String())
	out := stdout.String()
	assert.Contains(t, out, "### mcmc (2 variants)")
	assert.Contains(t, out, "### rounding (1 variants)")
	assert.Regexp(t, "\\| (\\*\\*)?mcmc-2chains(\\*\\*)? \\| `-sweeps 30 -chains 2` \\| [01]\\.\\d{3} / [01]\\.\\d{3} \\| \\d+ \\| [0-9.–]+ \\|", out)
	for _, f := range []string{"tuning.md", "tuning.json", "tune/mcmc-default/summary.json", "tune/rounding-lr0.05/report.md"} {
		assert.FileExists(t, filepath.Join(dir, f))
	}
	var rows []TuneRow
	data, err := os.ReadFile(filepath.Join(dir, "tuning.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &rows))
	require.Len(t, rows, 3)
	for _, r := range rows {
		assert.Equal(t, 4, r.Runs, r.Variant.Name) // 2 cells × 2 tuning seeds
		assert.Len(t, r.Cells, 2, r.Variant.Name)
	}
	before := readResults(t, filepath.Join(dir, "tune", "mcmc-2chains"))

	// -report prints the same table from the results files, running nothing.
	md, err := os.ReadFile(filepath.Join(dir, "tuning.md"))
	require.NoError(t, err)
	stdout.Reset()
	stderr.Reset()
	require.Equal(t, 0, run(context.Background(), []string{"-tune", grid, "-report", dir}, &stdout, &stderr), stderr.String())
	assert.Equal(t, string(md), stdout.String())
	assert.Empty(t, stderr.String(), "nothing run")

	stdout.Reset()
	stderr.Reset()
	require.Equal(t, 0, run(context.Background(), args, &stdout, &stderr), stderr.String())
	assert.Contains(t, stderr.String(), "skipped 4 runs already in the results file")
	assert.Equal(t, before, readResults(t, filepath.Join(dir, "tune", "mcmc-2chains")), "nothing re-run")
}

func TestTuningBadGrid(t *testing.T) {
	for _, tc := range []struct {
		grid Grid
		want string
	}{
		{Grid{}, "no variants"},
		{Grid{Variants: []Variant{{Name: "a b", Method: "mcmc"}}}, "name"},
		{Grid{Variants: []Variant{{Name: "a", Method: "mcmc"}, {Name: "a", Method: "mcmc"}}}, "twice"},
		{Grid{Variants: []Variant{{Name: "a", Method: "nuts"}}}, "unknown method"},
		{Grid{Variants: []Variant{{Name: "a", Method: "mcmc", Args: []string{"-out", "x"}}}}, "set by the tuning runner"},
	} {
		var stdout, stderr bytes.Buffer
		assert.Equal(t, 2, run(context.Background(), []string{"-tune", writeGrid(t, tc.grid), "-out", t.TempDir()}, &stdout, &stderr))
		assert.Contains(t, stderr.String(), tc.want)
	}
	var stdout, stderr bytes.Buffer
	assert.Equal(t, 2, run(context.Background(), []string{"-tune", filepath.Join(t.TempDir(), "missing.json")}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "missing.json")

	// Every variant's flags are checked before the first one runs.
	out := filepath.Join(t.TempDir(), "out")
	grid := writeGrid(t, Grid{
		Args: []string{"-neurons", "50", "-table", "7", "-cells", "10c-1w"},
		Variants: []Variant{
			{Name: "good", Method: "mcmc", Args: []string{"-sweeps", "30"}},
			{Name: "bad", Method: "rounding", Args: []string{"-steps", "0"}},
		},
	})
	stderr.Reset()
	assert.Equal(t, 2, run(context.Background(), []string{"-tune", grid, "-out", out}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "variant bad: -steps must be >= 1, got 0")
	assert.NoDirExists(t, out, "no variant ran")
}

// The committed grids parse, and every variant's flags are flags of this
// command.
func TestCommittedGrids(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("..", "..", "celegans", "tuning", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	for _, p := range paths {
		g, err := readGrid(p)
		require.NoError(t, err, p)
		for _, v := range g.Variants {
			var o options
			fs := newFlags(&o, io.Discard)
			require.NoError(t, fs.Parse(append(append([]string{}, g.Args...), v.Args...)), "%s: %s", p, v.Name)
			_, err := o.experiment(io.Discard)
			require.NoError(t, err, "%s: %s", p, v.Name)
		}
	}
}
