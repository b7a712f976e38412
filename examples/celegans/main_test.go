package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permlab/permlab/celegans"
	"github.com/permlab/permlab/compare"
	"github.com/permlab/permlab/internal/longtest"
)

func TestHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run(context.Background(), []string{"-h"}, &stdout, &stderr))
	for _, want := range []string{"-budget", "-connect", "-table", "10c-4w", "40-easy", "same -out", "-table all -seeds 5"} {
		assert.Contains(t, stderr.String(), want)
	}
	assert.NotContains(t, stderr.String(), "%!")
}

func TestDefaultOptions(t *testing.T) {
	var o options
	require.NoError(t, newFlags(&o, &bytes.Buffer{}).Parse(nil))
	e, err := o.experiment(io.Discard)
	require.NoError(t, err)
	require.Len(t, e.Cells, 1)
	assert.Equal(t, "t3/40-easy", e.Cells[0].Key())
	assert.Nil(t, e.Methods, "all methods")
	assert.Equal(t, 1, e.Seeds)
	assert.Equal(t, celegans.DefaultT, e.T)
	assert.Equal(t, 35*time.Second, e.Settings.Budget)
	assert.Equal(t, 5, e.Settings.TraceEvery)
	assert.Equal(t, celegans.DefaultNeurons, e.Connectome.N())
	assert.Equal(t, filepath.Join("out", "celegans"), e.OutDir)

	require.NoError(t, newFlags(&o, &bytes.Buffer{}).Parse([]string{"-table", "7", "-cells", "10c-1w, 60c-4w", "-methods", "mcmc,rounding", "-steps", "7", "-sweeps", "9"}))
	e, err = o.experiment(io.Discard)
	require.NoError(t, err)
	require.Len(t, e.Cells, 2)
	assert.Equal(t, "t7/60c-4w", e.Cells[1].Key())
	assert.Equal(t, []celegans.Method{celegans.MCMC, celegans.Rounding}, e.Methods)
	assert.Equal(t, 7, e.Settings.Steps)
	assert.Equal(t, 9, e.Settings.Sweeps)
	assert.Equal(t, 1, e.SeedStart)
	want := celegans.DefaultSettings()
	want.Budget, want.Steps, want.Sweeps, want.TraceEvery = e.Settings.Budget, 7, 9, 5
	assert.Equal(t, want, e.Settings, "every hyperparameter defaults to the reported tables' settings")
}

func TestHyperparameterFlags(t *testing.T) {
	var o options
	require.NoError(t, newFlags(&o, &bytes.Buffer{}).Parse([]string{
		"-seed-start", "101", "-seeds", "4", "-tau", "0.5", "-tau-prior", "2", "-lr", "0.05", "-k", "3",
		"-iters", "10", "-sigma-w", "0.3", "-draws", "7", "-plateau-window", "0",
		"-round-tau", "0.4", "-round-noise", "0.2", "-prior-std", "0.25"}))
	e, err := o.experiment(io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 101, e.SeedStart)
	assert.Equal(t, 4, e.Seeds)
	s := e.Settings
	assert.Equal(t, []float64{0.5, 2, 0.05, 0.3, 0.4, 0.2, 0.25}, []float64{s.Tau, s.TauPrior, s.LR, s.SigmaW, s.RoundTau, s.RoundNoise, s.PriorStd})
	assert.Equal(t, []int{3, 10, 7, 0}, []int{s.K, s.Iters, s.Draws, s.PlateauWindow})

	require.NoError(t, newFlags(&o, &bytes.Buffer{}).Parse([]string{"-seed-start", "0"}))
	_, err = o.experiment(io.Discard)
	assert.ErrorContains(t, err, "-seed-start")
}

// Bad command lines exit with status 2 and a message naming the flag,
// before reading any data or writing anything.
func TestBadArguments(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o644))
	missing := filepath.Join(dir, "missing.csv")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-table", "4"}, "-table must be 3, 7 or all"},
		{[]string{"-cells", "40-easy,nope"}, `-cells: no cell "nope"`},
		{[]string{"-connect", "x.csv"}, "-connect and -types go together"},
		{[]string{"-types", "x.csv"}, "-connect and -types go together"},
		{[]string{"-connect", missing, "-types", file}, "-connect " + missing + ": no such file"},
		{[]string{"-connect", file, "-types", dir}, "-types " + dir + ": is a directory"},
		{[]string{"-connect", file, "-types", file, "-neurons", "40"}, "-neurons is the size of the synthetic worm"},
		{[]string{"-methods", "mcmc,simplex"}, `-methods: unknown method "simplex"`},
		{[]string{"-methods", "mcmc,mcmc"}, "-methods lists mcmc twice"},
		{[]string{"-seeds", "0"}, "-seeds must be >= 1, got 0"},
		{[]string{"-seed-start", "0"}, "-seed-start must be >= 1"},
		{[]string{"-trace", "-1"}, "-trace must be >= 0"},
		{[]string{"-trace-cell", "10c-1w"}, `-trace-cell "10c-1w" is not among the cells run`},
		{[]string{"-budget", "soon"}, "-budget"},
		{[]string{"-budget", "-1s"}, "-budget must be >= 0"},
		{[]string{"-steps", "0"}, "-steps must be >= 1, got 0"},
		{[]string{"-steps", "-1"}, "-steps must be >= 1, got -1"},
		{[]string{"-sweeps", "-1"}, "-sweeps must be >= 1"},
		{[]string{"-sweeps", "0"}, "-sweeps must be >= 1"},
		{[]string{"-T", "0"}, "-T must be >= 2, got 0"},
		{[]string{"-T", "1"}, "-T must be >= 2, got 1"},
		{[]string{"-neurons", "0"}, "-neurons must be >= 2, got 0"},
		{[]string{"-neurons", "-5"}, "-neurons must be >= 2"},
		{[]string{"-neurons", "100"}, "-neurons 100: too few for cell t3/40-easy"},
		{[]string{"-neurons", "20", "-table", "7", "-cells", "30c-1w"}, "-neurons 20: too few for cell t7/30c-1w"},
		{[]string{"-k", "0"}, "-k must be >= 1"},
		{[]string{"-lr", "0"}, "-lr must be finite and > 0"},
		{[]string{"-tau", "-1"}, "-tau must be"},
		{[]string{"-tau-prior", "0"}, "-tau-prior must be"},
		{[]string{"-iters", "0"}, "-iters must be >= 1"},
		{[]string{"-sigma-w", "0"}, "-sigma-w must be"},
		{[]string{"-draws", "0"}, "-draws must be >= 1"},
		{[]string{"-plateau-window", "1"}, "-plateau-window must be 0 (one fit) or >= 2"},
		{[]string{"-plateau-window", "-3"}, "-plateau-window"},
		{[]string{"-round-tau", "1.5"}, "-round-tau must be in (0, 1]"},
		{[]string{"-round-noise", "0"}, "-round-noise must be"},
		{[]string{"-prior-std", "0"}, "-prior-std must be"},
		{[]string{"-round-lr", "-0.1"}, "-round-lr must be finite and >= 0"},
		{[]string{"-chains", "-1"}, "-chains must be >= 0"},
		{[]string{"-thin", "-1"}, "-thin must be >= 0"},
		{[]string{"-block-moves", "-1"}, "-block-moves must be >= 0"},
		{[]string{"-estimator", "mean"}, `-estimator "mean": want half, tail, best`},
		{[]string{"-shard", "2/2"}, "-shard: shard \"2/2\""},
		{[]string{"-shard", "0/2", "-shards", "2"}, "-shard and -shards exclude each other"},
		{[]string{"-shards", "-1"}, "-shards must be >= 0"},
		{[]string{"-shards", "2"}, "-shards 2: neither"},
		{[]string{"-workers", "-1"}, "-workers must be >= 0"},
		{[]string{"-workers", "1", "-shard", "0/2"}, "-workers runs the shards itself"},
		{[]string{"-workers", "1", "-cores-per-worker", "0"}, "-cores-per-worker must be >= 1"},
		{[]string{"-workers", "1000"}, "-workers 1000 x -cores-per-worker 1 needs 1000 cores"},
		{[]string{"-cores-per-worker", "2"}, "-cores-per-worker goes with -workers"},
		{[]string{"-out", ""}, "-out must not be empty"},
		{[]string{"-out", filepath.Join(file, "sub")}, "-out " + filepath.Join(file, "sub") + ": " + file + " is not a directory"},
		{[]string{"-report", missing}, "-report " + missing},
		{[]string{"-report", file}, "-report " + file + ": not a directory"},
		{[]string{"-tune", missing}, "-tune " + missing},
		{[]string{"-against", dir}, "-against needs -report"},
		{[]string{"-report", dir, "-against", missing}, "-against " + missing},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"-seeds", "2", "extra", "-out", dir}, `unexpected argument "extra"`},
		{[]string{"-nope"}, "flag provided but not defined: -nope"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Setenv(compare.EnvKubernetesIndex, "")
			os.Unsetenv(compare.EnvKubernetesIndex)
			t.Setenv(compare.EnvSlurmIndex, "")
			os.Unsetenv(compare.EnvSlurmIndex)
			out := filepath.Join(t.TempDir(), "out")
			args := append([]string{"-out", out}, tc.args...)
			var stdout, stderr bytes.Buffer
			assert.Equal(t, 2, run(context.Background(), args, &stdout, &stderr))
			assert.Contains(t, stderr.String(), tc.want)
			assert.NotContains(t, stderr.String(), "celegans: celegans:")
			assert.Empty(t, stdout.String())
			assert.NoDirExists(t, out, "nothing written")
		})
	}
}

// A connectome file that does not load is a failure (status 1), reported
// once with the file and line, before anything runs.
func TestBadConnectome(t *testing.T) {
	dir := t.TempDir()
	connect, types := filepath.Join(dir, "c.csv"), filepath.Join(dir, "t.csv")
	require.NoError(t, os.WriteFile(connect, []byte("Neuron 1,Neuron 2,Type,Nbr\nAA,BB,S,1\nAA,ZZ,S,1\n"), 0o644))
	require.NoError(t, os.WriteFile(types, []byte("Neuron,Soma Position\nAA,0.5\nBB,0.1\n"), 0o644))
	out := filepath.Join(dir, "out")
	var stdout, stderr bytes.Buffer
	assert.Equal(t, 1, run(context.Background(), []string{"-connect", connect, "-types", types, "-out", out}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), connect+` line 3: neuron "ZZ" is not in `+types)
	assert.Equal(t, 1, strings.Count(stderr.String(), "celegans:"), stderr.String())
	assert.NoDirExists(t, out)
}

// A tiny run of the real methods: tables printed, files written, and a
// second run resumes with nothing left to do.
func TestRunTiny(t *testing.T) {
	longtest.Skip(t, "runs the real methods")
	dir := t.TempDir()
	args := []string{"-neurons", "40", "-table", "7", "-cells", "10c-1w", "-T", "100", "-budget", "10s",
		"-steps", "20", "-sweeps", "20", "-methods", "mcmc,gumbel-sinkhorn", "-out", dir}
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run(context.Background(), args, &stdout, &stderr), stderr.String())
	out := stdout.String()
	assert.Contains(t, out, "| method | 10 cand. 1w |")
	assert.Regexp(t, `\| MCMC \| [01]\.\d{3} \(\.34\) \|`, out)
	assert.Regexp(t, `\| Gumbel-Sinkhorn \| [01]\.\d{3} \(\.79\) \|`, out)
	assert.Contains(t, out, "Wall time")
	assert.Contains(t, stderr.String(), "[2/2] t7/10c-1w seed 1 gumbel-sinkhorn: accuracy")
	for _, name := range []string{celegans.SummaryFile, celegans.ReportFile, "accuracy_table7.png", "trace_t7_10c-1w.png"} {
		assert.FileExists(t, filepath.Join(dir, name))
	}
	results := readResults(t, dir)

	stdout.Reset()
	stderr.Reset()
	require.Equal(t, 0, run(context.Background(), args, &stdout, &stderr), stderr.String())
	assert.Contains(t, stderr.String(), "skipped 2 runs already in the results file")
	assert.Equal(t, results, readResults(t, dir), "nothing re-run")
	assert.Contains(t, stdout.String(), "| method | 10 cand. 1w |")
}

// readResults returns the contents of every results file in dir by name.
func readResults(t *testing.T, dir string) map[string]string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, celegans.ResultsFiles))
	require.NoError(t, err)
	out := map[string]string{}
	for _, n := range names {
		data, err := os.ReadFile(n)
		require.NoError(t, err)
		out[filepath.Base(n)] = string(data)
	}
	return out
}

// Shards given by flag and by the scheduler's environment run disjoint
// groups, write their own files and no report; the collector then runs
// nothing and reports the whole grid.
func TestShardedRunAndCollect(t *testing.T) {
	longtest.Skip(t, "runs the real methods")
	dir := t.TempDir()
	base := []string{"-neurons", "40", "-table", "7", "-cells", "10c-1w,30c-1w", "-T", "100", "-budget", "5s",
		"-steps", "10", "-sweeps", "10", "-methods", "mcmc", "-out", dir}
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run(context.Background(), append(base, "-shard", "0/2"), &stdout, &stderr), stderr.String())
	assert.Contains(t, stdout.String(), "shard 0/2 done")
	assert.NoFileExists(t, filepath.Join(dir, celegans.ReportFile), "a shard writes no report")

	t.Setenv(compare.EnvKubernetesIndex, "1")
	stdout.Reset()
	require.Equal(t, 0, run(context.Background(), append(base, "-shards", "2"), &stdout, &stderr), stderr.String())
	assert.Contains(t, stdout.String(), "shard 1/2 done")
	assert.Len(t, readResults(t, dir), 2, "one results file per shard")

	recs, err := celegans.ReadResults(dir)
	require.NoError(t, err)
	require.Len(t, recs, 2)
	assert.NotEqual(t, recs[0].Cell, recs[1].Cell, "each shard ran its own group")
	for _, r := range recs {
		assert.NotEmpty(t, r.Worker)
		assert.Equal(t, 1, r.Attempt)
		assert.Positive(t, r.GOMAXPROCS)
		assert.NotEmpty(t, r.CPU)
	}

	stdout.Reset()
	stderr.Reset()
	require.Equal(t, 0, run(context.Background(), base, &stdout, &stderr), stderr.String())
	assert.Contains(t, stderr.String(), "skipped 2 runs already in the results file")
	assert.Contains(t, stdout.String(), "| method | 10 cand. 1w | 30 cand. 1w |")
	assert.FileExists(t, filepath.Join(dir, celegans.ReportFile))

	for _, bad := range [][]string{{"-shard", "2/2"}, {"-shard", "0/2", "-shards", "2"}, {"-workers", "2", "-shard", "0/2"}} {
		stderr.Reset()
		assert.Equal(t, 2, run(context.Background(), append(base, bad...), &stdout, &stderr), "%v", bad)
	}
}

// -report prints a finished experiment's tables from its files alone.
func TestReportFlag(t *testing.T) {
	longtest.Skip(t, "runs the real methods")
	dir := t.TempDir()
	args := []string{"-neurons", "40", "-table", "7", "-cells", "10c-1w", "-T", "100", "-budget", "0",
		"-steps", "20", "-sweeps", "20", "-methods", "mcmc,rounding", "-out", dir}
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run(context.Background(), args, &stdout, &stderr), stderr.String())
	report, err := os.ReadFile(filepath.Join(dir, celegans.ReportFile))
	require.NoError(t, err)

	stdout.Reset()
	require.Equal(t, 0, run(context.Background(), []string{"-report", dir}, &stdout, &stderr), stderr.String())
	assert.Equal(t, string(report), stdout.String())
	assert.Equal(t, 1, run(context.Background(), []string{"-report", t.TempDir()}, &stdout, &stderr))

	// Against itself every difference is 0 and none is marked.
	stdout.Reset()
	require.Equal(t, 0, run(context.Background(), []string{"-report", dir, "-against", dir}, &stdout, &stderr), stderr.String())
	assert.Contains(t, stdout.String(), "+0.000")
	assert.Contains(t, stdout.String(), "0 of 0 intervals exclude 0") // one seed: no interval
	for line := range strings.SplitSeq(stdout.String(), "\n") {
		if strings.HasPrefix(line, "|") {
			assert.NotContains(t, line, "*", "a difference of 0 marked")
		}
	}
}
