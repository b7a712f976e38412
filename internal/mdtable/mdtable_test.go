package mdtable

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.md")
	text := "# T\n\n| a | b |\n|---|---:|\n| **x** | 0.25 (0.3) |\n| y | 1 |\n\ntext | not a table\n| only | header |\nno delimiter\n"
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	tabs, err := Read(path)
	require.NoError(t, err)
	require.Len(t, tabs, 1)
	require.Equal(t, []string{"a", "b"}, tabs[0].Header)
	require.Equal(t, [][]string{{"x", "0.25 (0.3)"}, {"y", "1"}}, tabs[0].Rows)
	require.Equal(t, []int{5, 6}, tabs[0].Lines)
	require.Equal(t, 1, tabs[0].Column("b"))
	require.Equal(t, -1, tabs[0].Column("c"))
}

func TestNumber(t *testing.T) {
	for _, c := range []struct {
		cell      string
		v, half   float64
		wantError bool
	}{
		{"0.301 (0.39)", 0.301, 0.0005, false},
		{"1", 1, 0.5, false},
		{"-0.25", -0.25, 0.005, false},
		{"–", 0, 0, true},
	} {
		v, half, err := Number(c.cell)
		if c.wantError {
			require.Error(t, err, c.cell)
			continue
		}
		require.NoError(t, err)
		require.InDelta(t, c.v, v, 1e-15, c.cell)
		require.InDelta(t, c.half, half, 1e-15, c.cell)
	}
	ok, err := Matches("0.301", 0.30149)
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = Matches("0.301", 0.3016)
	require.NoError(t, err)
	require.False(t, ok)
}

func TestFileRowsCompare(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.md")
	text := "| run | tau | wrong | file |\n|---|---|---|---|\n| a | 0.25 | 0.5 | `results/a.json` |\n| b | 0.75 |  | `results/b.txt` |\n| c | 0.1 | 0.2 | `results/c.json` |\n"
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	rows, err := FileRows(path, ".json")
	require.NoError(t, err)
	require.Len(t, rows, 2)
	require.Equal(t, "results/a.json", rows[0].Path)
	require.Equal(t, 3, rows[0].Line)
	diffs, checked, err := rows[0].Compare(map[string]float64{"tau": 0.251, "wrong": 0.4, "other": 1})
	require.NoError(t, err)
	require.Equal(t, 2, checked)
	require.Len(t, diffs, 1)
	require.Contains(t, diffs[0], "wrong is 0.5, results/a.json has 0.4")
	diffs, _, err = rows[1].Compare(map[string]float64{"tau": math.NaN()})
	require.NoError(t, err)
	require.Len(t, diffs, 1)
	require.Contains(t, diffs[0], "has no value")
}
