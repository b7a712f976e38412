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

func TestCheckFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "README.md")
	text := "| run | tau | file |\n|---|---|---|\n| a | 0.25 | `res/a.json` |\n| b | 0.5 | `res/b.json` |\n"
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "res"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "res", "a.json"), []byte("0.25"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "res", "b.json"), []byte("0.75"), 0o644))
	values := func(b []byte) (map[string]float64, error) {
		v, _, err := Number(string(b))
		return map[string]float64{"tau": v}, err
	}
	rows, diffs, err := CheckFiles(path, ".json", values)
	require.NoError(t, err)
	require.Equal(t, 2, rows)
	require.Len(t, diffs, 1)
	require.Contains(t, diffs[0], "tau is 0.5, res/b.json has 0.75")
	_, diffs, err = CheckFiles(path, ".json", func([]byte) (map[string]float64, error) { return nil, nil })
	require.NoError(t, err)
	require.Len(t, diffs, 2)
	require.Contains(t, diffs[0], "no column checked")
	require.NoError(t, os.Remove(filepath.Join(dir, "res", "b.json")))
	_, _, err = CheckFiles(path, ".json", values)
	require.ErrorContains(t, err, "line 4")
}
