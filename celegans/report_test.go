package celegans

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Report recomputes, from the files alone, the report Run wrote.
func TestReportFromFiles(t *testing.T) {
	dir := t.TempDir()
	e := smallExperiment(t, dir, newFakeSolver(2))
	c, err := Synthetic(60, 2)
	require.NoError(t, err)
	e.Connectome = c
	e.Cells, err = SelectCells("7", []string{"10c-1w", "10c-4w"}) // paper cells: the report has reach times
	require.NoError(t, err)
	sum, err := e.Run(context.Background())
	require.NoError(t, err)
	written, err := os.ReadFile(filepath.Join(dir, ReportFile))
	require.NoError(t, err)
	require.Contains(t, string(written), "median time (s) to first reach the paper's accuracy")

	got, err := Report(dir)
	require.NoError(t, err)
	assert.Equal(t, string(written), got.Markdown())
	assert.Equal(t, sum.Entries, got.Entries)

	// A copy of every record in another file, finished later: duplicates,
	// counted and ignored.
	names, err := filepath.Glob(filepath.Join(dir, ResultsFiles))
	require.NoError(t, err)
	require.Len(t, names, 1)
	data, err := os.ReadFile(names[0])
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "results-copy.jsonl"), data, 0o644))
	got, err = Report(dir)
	require.NoError(t, err)
	assert.Equal(t, sum.Entries, got.Entries)
	assert.Equal(t, len(sum.Records()), got.Duplicates)

	_, err = Report(t.TempDir())
	assert.ErrorContains(t, err, SummaryFile)
}
