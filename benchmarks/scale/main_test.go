package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permlab/permlab/celegans"
	"github.com/permlab/permlab/internal/racedetect"
)

func TestParseFlags(t *testing.T) {
	dir := t.TempDir()
	c, err := parseFlags([]string{"-neurons", "300, 600", "-budgets", "5s", "-out", dir}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, []int{300, 600}, c.neurons)
	assert.Equal(t, []time.Duration{5 * time.Second}, c.budgets)
	assert.FileExists(t, filepath.Join(dir, "results.jsonl"), "the output is checked before any work")

	bad := map[string][]string{
		"-neurons":    {"-neurons", "300,x"},
		"below 50":    {"-neurons", "10"},
		"-budgets":    {"-budgets", "0s"},
		"-dense-max":  {"-dense-max", "-1"},
		"-candidates": {"-candidates", "1"},
		"-known":      {"-known", "1"},
		"-T":          {"-T", "1"},
		"unexpected":  {"stray"},
		"-child":      {"-child", "-n", "100"},
		"-methods":    {"-methods", "gumbel-sinkhorn,sorting"},
		"twice":       {"-methods", "mcmc,mcmc"},
		"need -child": {"-memprofile", "x.heap"},
	}
	for want, args := range bad {
		_, err := parseFlags(append(args, "-out", dir), io.Discard)
		require.Error(t, err, "%v", args)
		assert.Contains(t, err.Error(), want, "%v", args)
	}
	// An output directory that cannot be made is an error before any run.
	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	_, err = parseFlags([]string{"-out", filepath.Join(file, "sub")}, io.Discard)
	assert.ErrorContains(t, err, "-out")
}

// TestPeakHeapProfile checks that the profile written is a heap profile
// taken at the larger of two live heaps.
func TestPeakHeapProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "peak.heap")
	stop, err := peakHeapProfile(path, time.Millisecond)
	require.NoError(t, err)
	big := make([][]byte, 0, 64)
	for range 64 {
		big = append(big, make([]byte, 1<<20)) // 64 MiB live
	}
	runtime.GC()
	time.Sleep(50 * time.Millisecond)
	runtime.KeepAlive(big)
	big = nil
	runtime.GC()
	require.NoError(t, stop())
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	// "heap profile: <objects>: <bytes in use> [...": the sampled live heap.
	var objects, inuse int64
	_, err = fmt.Sscanf(string(b), "heap profile: %d: %d", &objects, &inuse)
	require.NoError(t, err, "%.80s", b)
	assert.Greater(t, inuse, int64(48<<20), "the profile is the one taken while 64 MiB were live")
}

func TestMsPerStep(t *testing.T) {
	tr := []celegans.TracePoint{
		{Elapsed: time.Second, Step: 10},
		{Elapsed: 2 * time.Second, Step: 20}, // 100 ms per step
		{Elapsed: 4 * time.Second, Step: 30}, // 200
		{Elapsed: 5 * time.Second, Step: 10}, // a new fit: skipped
		{Elapsed: 6 * time.Second, Step: 20}, // 100
		{Elapsed: 6 * time.Second, Step: 20}, // the final estimate: skipped
	}
	assert.InDelta(t, 100, msPerStep(tr), 1e-9)
	assert.True(t, math.IsNaN(msPerStep(nil)))
}

// TestOneSmall runs a tiny configuration in process, both layouts, and
// checks the record and the table.
func TestOneSmall(t *testing.T) {
	if racedetect.Enabled {
		t.Skip("runs on wall-clock budgets, which the race detector's 5-20 times slowdown leaves too short (the harness joined the race stage with -memprofile's goroutine)")
	}
	var rs []Result
	for _, layout := range []string{"sparse", "dense"} {
		c := &config{child: true, n: 120, layout: layout, budget: 2 * time.Second, candidates: 8, known: 0.09, steps: 50, seed: 1}
		r, err := one(c)
		require.NoError(t, err, layout)
		assert.Equal(t, 120, r.N)
		assert.Positive(t, r.Steps)
		assert.InDelta(t, 8, r.Candidates, 4)
		assert.True(t, r.Accuracy > 0 && r.Accuracy <= 1)
		rs = append(rs, *r)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "results.jsonl")
	for _, r := range rs {
		require.NoError(t, appendResult(path, r))
	}
	back, err := load(path)
	require.NoError(t, err)
	assert.Equal(t, rs, back)
	tab := table(back)
	assert.Equal(t, 4, strings.Count(tab, "\n"), "%s", tab)
	assert.Contains(t, tab, "| 120 |")
	assert.Contains(t, tab, "accuracy after 2 s")
	// A budget that only some rows ran shows as not run in the others.
	extra := back[0]
	extra.Budget = "10m0s"
	tab = table(append(back, extra))
	assert.Contains(t, tab, "accuracy after 10 min")
	assert.Equal(t, 1, strings.Count(tab, "not run"), "%s", tab)

	// The baselines in the sparse layout: the data form for MCMC, the
	// sparse rounding guide; a table of their own, with a method column.
	for _, m := range []celegans.Method{celegans.Rounding, celegans.MCMC} {
		c := &config{child: true, method: m, n: 120, layout: "sparse", budget: time.Second, candidates: 8, known: 0.09, steps: 50, seed: 1}
		r, err := one(c)
		require.NoError(t, err, m)
		assert.Equal(t, string(m), r.Method)
		assert.Positive(t, r.Steps, m)
		assert.True(t, r.Accuracy > 0 && r.Accuracy <= 1, m)
		rs = append(rs, *r)
	}
	tab = table(rs)
	assert.Contains(t, tab, "| method | N |")
	assert.Contains(t, tab, "| rounding | 120 |")
	assert.Contains(t, tab, "| mcmc | 120 |")
	assert.True(t, strings.HasPrefix(tab, table(rs[:2])), "Gumbel-Sinkhorn's table comes first, as it was")
}

// TestGeneratedDocs: the table in README.md is what -report prints from
// the committed results.
func TestGeneratedDocs(t *testing.T) {
	data, err := os.ReadFile("README.md")
	require.NoError(t, err)
	blocks := generatedBlock.FindAllStringSubmatch(string(data), -1)
	require.NotEmpty(t, blocks, "README.md has no generated block")
	for _, m := range blocks {
		dir, ok := strings.CutPrefix(m[1], "benchmarks/scale/")
		require.True(t, ok, "a generated block must report a folder under benchmarks/scale: %q", m[1])
		rs, err := load(filepath.Join(dir, "results.jsonl"))
		require.NoError(t, err)
		require.NotEmpty(t, rs, "%s", m[1])
		assert.Equal(t, table(rs), m[2], "README.md's table differs from `go run ./benchmarks/scale -report %s`; paste its output", m[1])
	}
}

var generatedBlock = regexp.MustCompile("(?s)<!-- go run ./benchmarks/scale -report (\\S+) -->\n(.*?)<!-- end -->")
