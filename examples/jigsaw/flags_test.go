package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runCLI runs the command and returns its exit status and stderr.
func runCLI(args ...string) (int, string) {
	var stderr bytes.Buffer
	code := command(context.Background(), args, &stderr)
	return code, stderr.String()
}

// TestBadFlags runs the command with bad flags: each is refused with exit
// status 2 by a message naming the flag (both flags, for a combination).
// Status 2 comes only from parsing and checking, before any data is read
// (a failure after that exits with 1, see TestGoodFlags).
func TestBadFlags(t *testing.T) {
	dir := t.TempDir() // an empty folder: a run that got past the checks would fail to read MNIST from it
	file := filepath.Join(dir, "net.gob")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	other := filepath.Join(t.TempDir(), "other.json")
	missing := filepath.Join(dir, "missing")
	// A network whose run's record is where this run would write its own.
	outDir := t.TempDir()
	loaded := filepath.Join(outDir, "jigsaw_mnist-test_p3.gob")
	require.NoError(t, os.WriteFile(loaded, nil, 0o644))

	m := []string{"-mnist", dir}
	with := func(a ...string) []string { return append(append([]string{}, m...), a...) }
	load := func(a ...string) []string { return with(append([]string{"-load", file}, a...)...) }
	fit := func(a ...string) []string {
		return load(append([]string{"-val", "-eval", "100", "-pairwise", "1", "-fit-pairs", other}, a...)...)
	}
	for _, tc := range []struct {
		args  []string
		flags []string // each named in the message
		want  string   // also in the message
	}{
		// data and modes
		{nil, []string{"-mnist", "-images"}, "no data"},
		{with("-images", dir), []string{"-mnist", "-images"}, "exclude each other"},
		{with("-oracle", "-table2"), []string{"-oracle", "-table2"}, "exclude each other"},
		{[]string{"-images", dir, "-table2"}, []string{"-table2", "-mnist"}, "needs"},
		{[]string{"-images", dir, "-oracle"}, []string{"-oracle", "-mnist"}, "needs"},
		{[]string{"-images", dir, "-val"}, []string{"-val", "-mnist"}, "needs"},
		{with("-gray"), []string{"-gray", "-images"}, "needs"},
		{with("-size", "32"), []string{"-size", "-images"}, "needs"},
		{with("-table2", "-val"), []string{"-table2", "-val"}, "test set"},
		{with("-table2", "-p", "3"), []string{"-table2", "-p"}, "does not take"},
		{with("-sizes", "3"), []string{"-sizes", "-table2", "-oracle"}, "needs"},
		{with("-results", other), []string{"-results", "-table2"}, "needs"},
		{with("-oracle", "-steps", "10"), []string{"-oracle", "-steps"}, "does not take"},
		{with("-oracle", "-out", dir), []string{"-oracle", "-out"}, "does not take"},
		{with("-oracle", "-load", file), []string{"-oracle", "-load"}, "does not take"},
		{with("-oracle-draws", "5"), []string{"-oracle-draws", "-oracle"}, "needs"},
		// sizes and crop
		{with("-p", "1"), []string{"-p"}, "must be >= 2"},
		{with("-p", "0"), []string{"-p"}, "must be >= 2"},
		{with("-p", "-2"), []string{"-p"}, "must be >= 2"},
		{with("-p", "29"), []string{"-p"}, "exceeds the 28 px side"},
		{[]string{"-images", dir, "-size", "0"}, []string{"-size"}, "must be >= 1"},
		{[]string{"-images", dir, "-size", "8", "-p", "9"}, []string{"-p", "-size"}, "exceeds"},
		{with("-table2", "-sizes", "1"), []string{"-sizes"}, "not a Table 2 size"},
		{with("-table2", "-sizes", "3,3"), []string{"-sizes"}, "given twice"},
		{with("-oracle", "-sizes", "7"), []string{"-sizes"}, "not a Table 2 size"},
		{with("-oracle", "-oracle-draws", "0"), []string{"-oracle-draws"}, "must be >= 1"},
		{with("-crop", "-1"), []string{"-crop"}, "must be >= 0"},
		{with("-crop", "7"), []string{"-crop", "-p"}, "not a multiple"},
		{with("-crop", "30"), []string{"-crop"}, "exceeds"},
		{with("-table2", "-sizes", "3,4", "-crop", "27"), []string{"-crop", "-sizes"}, "not a multiple of 4"},
		{with("-eval", "-1"), []string{"-eval"}, "must be >= 0"},
		{with("-figtaus", "1,0"), []string{"-figtaus"}, "bad temperature"},
		{with("-figtaus", "a"), []string{"-figtaus"}, "bad temperature"},
		// training
		{with("-steps", "-1"), []string{"-steps"}, "must be >= 0"},
		{with("-batch", "0"), []string{"-batch"}, "must be >= 1"},
		{with("-lr", "0"), []string{"-lr"}, "must be finite and > 0"},
		{with("-lr", "Inf"), []string{"-lr"}, "must be finite and > 0"},
		{with("-filters", "0"), []string{"-filters"}, "must be >= 1"},
		{with("-kernel", "4"), []string{"-kernel"}, "odd"},
		{with("-pool", "0"), []string{"-pool"}, "must be >= 1"},
		{with("-tau", "0"), []string{"-tau"}, "must be finite and > 0"},
		{with("-iters", "0"), []string{"-iters"}, "must be >= 1"},
		{with("-samples", "0"), []string{"-samples"}, "must be >= 1"},
		{with("-noise", "-1"), []string{"-noise"}, "must be finite and >= 0"},
		{with("-loss-power", "-1"), []string{"-loss-power"}, "must be finite and >= 0"},
		{with("-hidden", "-1"), []string{"-hidden"}, "must be >= 0"},
		{with("-refine", "-1"), []string{"-refine"}, "must be >= 0"},
		{with("-refine", "1", "-edge-depth", "-1"), []string{"-edge-depth"}, "must be >= 0"},
		{with("-edge-depth", "2"), []string{"-edge-depth", "-refine"}, "needs"},
		{with("-context"), []string{"-context", "-hidden"}, "needs"},
		{load("-steps", "10"), []string{"-load", "-steps"}, "does not take"},
		{load("-filters", "64"), []string{"-load", "-filters"}, "does not take"},
		{load("-refine", "3"), []string{"-load", "-refine"}, "does not take"},
		// decoding
		{with("-pairwise", "-1"), []string{"-pairwise"}, "must be finite and >= 0"},
		{with("-pairwise", "3"), []string{"-pairwise", "-refine"}, "edge matching"},
		{with("-seam", "-1"), []string{"-seam"}, "must be finite and >= 0"},
		{load("-anneal", "-1"), []string{"-anneal"}, "must be >= 0"},
		{load("-anneal", "100"), []string{"-anneal", "-pairwise", "-seam"}, "needs"},
		{load("-seam", "1", "-restarts", "2"), []string{"-restarts", "-anneal"}, "needs"},
		{load("-seam", "1", "-anneal-start", "5"), []string{"-anneal-start", "-anneal"}, "needs"},
		{load("-seam", "1", "-anneal-end", "1"), []string{"-anneal-end", "-anneal"}, "needs"},
		{load("-seam", "1", "-decode-seed", "3"), []string{"-decode-seed", "-anneal"}, "needs"},
		{load("-seam", "1", "-anneal", "10", "-restarts", "-1"), []string{"-restarts"}, "must be >= 0"},
		{load("-seam", "1", "-anneal", "10", "-anneal-start", "-1"), []string{"-anneal-start"}, "must be finite and >= 0"},
		{load("-seam", "1", "-anneal", "10", "-anneal-end", "NaN"), []string{"-anneal-end"}, "must be finite and >= 0"},
		{load("-seam", "1", "-anneal", "10", "-anneal-start", "0.01"), []string{"-anneal-end", "-anneal-start"}, "must not exceed"},
		{load("-pairs", file), []string{"-pairs", "-pairwise"}, "needs"},
		// -ensemble
		{with("-ensemble", file), []string{"-ensemble", "-load"}, "needs"},
		{load("-ensemble", file, "-pairwise", "1", "-pairs", file), []string{"-ensemble", "-pairs", "-fit-pairs"}, "excludes"},
		{load("-ensemble", file+",,"+file), []string{"-ensemble"}, "empty entry"},
		{load("-ensemble", missing), []string{"-ensemble"}, "no such file"},
		// -fit-pairs
		{with("-fit-epochs", "5"), []string{"-fit-epochs", "-fit-pairs"}, "needs"},
		{with("-fit-unary"), []string{"-fit-unary", "-fit-pairs"}, "needs"},
		{with("-fit-margin", "pixels"), []string{"-fit-margin", "-fit-pairs"}, "needs"},
		{load("-pairwise", "1", "-pairs", file, "-fit-pairs", other), []string{"-pairs", "-fit-pairs"}, "exclude each other"},
		{load("-pairwise", "1", "-fit-pairs", other), []string{"-fit-pairs", "-load", "-val"}, "needs"},
		{with("-val", "-eval", "100", "-fit-pairs", other), []string{"-fit-pairs", "-load", "-val"}, "needs"},
		{with("-table2", "-load", dir, "-eval", "100", "-pairwise", "1", "-fit-pairs", other), []string{"-fit-pairs", "-table2"}, "not -table2"},
		{load("-val", "-pairwise", "1", "-fit-pairs", other), []string{"-fit-pairs", "-eval"}, "needs"},
		{load("-val", "-eval", "10000", "-pairwise", "1", "-fit-pairs", other), []string{"-fit-pairs", "-eval"}, "needs"},
		{load("-val", "-eval", "100", "-fit-pairs", other), []string{"-fit-pairs", "-pairwise"}, "needs"},
		{fit("-fit-epochs", "0"), []string{"-fit-epochs"}, "must be >= 1"},
		{fit("-fit-batch", "0"), []string{"-fit-batch"}, "must be >= 1"},
		{fit("-fit-lr", "0"), []string{"-fit-lr"}, "must be finite and > 0"},
		{fit("-fit-anneal", "-1"), []string{"-fit-anneal"}, "must be >= 0"},
		{fit("-fit-n", "-1"), []string{"-fit-n"}, "must be >= 0"},
		{fit("-fit-depth", "-1"), []string{"-fit-depth"}, "must be >= 0"},
		{fit("-fit-margin", "ink"), []string{"-fit-margin"}, "want pieces or pixels"},
		// the critic
		{with("-critic-weight", "3"), []string{"-critic-weight", "-critic", "-train-critic"}, "needs"},
		{with("-critic-epochs", "5"), []string{"-critic-epochs", "-train-critic"}, "needs"},
		{with("-critic-hard", "0.5"), []string{"-critic-hard", "-train-critic"}, "needs"},
		{load("-critic", file, "-train-critic", other), []string{"-critic", "-train-critic"}, "exclude each other"},
		{load("-critic", file, "-critic-weight", "-1"), []string{"-critic-weight"}, "must be finite and >= 0"},
		{with("-table2", "-load", dir, "-critic", file), []string{"-critic", "-table2", "-sizes"}, "one size"},
		{load("-train-critic", other, "-critic-epochs", "0"), []string{"-critic-epochs"}, "must be >= 1"},
		{load("-train-critic", other, "-critic-hard", "1.5"), []string{"-critic-hard"}, "between 0 and 1"},
		{load("-train-critic", other, "-critic-top", "0"), []string{"-critic-top"}, "must be >= 1"},
		// paths
		{[]string{"-mnist", missing}, []string{"-mnist"}, "no such file"},
		{[]string{"-mnist", file}, []string{"-mnist"}, "not a directory"},
		{[]string{"-images", missing}, []string{"-images"}, "no such file"},
		{with("-load", missing), []string{"-load"}, "no such file"},
		{with("-load", dir), []string{"-load"}, "is a directory, not a file"},
		{with("-table2", "-load", file), []string{"-load", "-table2"}, "not a directory"},
		{load("-pairwise", "1", "-pairs", missing), []string{"-pairs"}, "no such file"},
		{load("-critic", missing), []string{"-critic"}, "no such file"},
		{with("-out", ""), []string{"-out"}, "must not be empty"},
		{with("-out", file), []string{"-out"}, "not a directory"},
		{with("-out", filepath.Join(file, "sub")), []string{"-out"}, "not a directory"},
		{with("-table2", "-results", ""), []string{"-results"}, "must not be empty"},
		{with("-table2", "-results", dir), []string{"-results"}, "is a directory, not a file"},
		{with("-table2", "-results", filepath.Join(file, "t.jsonl")), []string{"-results"}, "not a directory"},
		{load("-val", "-eval", "100", "-pairwise", "1", "-fit-pairs", file), []string{"-load", "-fit-pairs"}, "same file"},
		{load("-train-critic", file), []string{"-load", "-train-critic"}, "same file"},
		{with("-load", loaded, "-out", outDir), []string{"-out", "-load"}, "would overwrite"},
		{with("-table2", "-sizes", "3", "-load", outDir, "-out", outDir), []string{"-out", "-load"}, "would overwrite"},
		// the command line itself
		{[]string{"extra"}, []string{"extra"}, "unexpected argument"},
		{with("extra", "-p", "4"), []string{"extra"}, "unexpected argument"},
		{[]string{"-nosuchflag"}, []string{"-nosuchflag"}, "not defined"},
		{with("-p", "x"), []string{"-p"}, "invalid value"},
		{with("-oracle-draws", "1.5"), []string{"-oracle-draws"}, "invalid value"},
	} {
		code, stderr := runCLI(tc.args...)
		ok := code == 2 && strings.Contains(stderr, tc.want)
		for _, f := range tc.flags {
			ok = ok && strings.Contains(stderr, f)
		}
		if !ok {
			t.Errorf("%q: status %d, stderr %q; want 2 and a message naming %v with %q", tc.args, code, firstLine(stderr), tc.flags, tc.want)
		}
	}
	code, stderr := runCLI("-h")
	assert.Equal(t, 0, code)
	assert.Contains(t, stderr, "Usage:")
	assert.Contains(t, stderr, "out/jigsaw/table2.jsonl")
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// TestGoodFlags: valid command lines, the README's among them, pass the
// checks, which create nothing; a run that fails after them exits with 1.
func TestGoodFlags(t *testing.T) {
	dir, out := t.TempDir(), filepath.Join(t.TempDir(), "new", "out")
	file := filepath.Join(dir, "net.gob")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	pairs := filepath.Join(t.TempDir(), "pairs.json")
	for _, args := range [][]string{
		{"-mnist", dir, "-p", "3", "-seed", "1", "-out", out},
		{"-mnist", dir, "-p", "2", "-crop", "24", "-lr", "0.003", "-filters", "64", "-hidden", "256", "-context", "-refine", "3", "-edge-depth", "2", "-steps", "16000", "-val", "-eval", "2000", "-out", out},
		{"-images", dir, "-size", "64", "-gray", "-p", "3", "-out", out},
		{"-mnist", dir, "-table2", "-seed", "1", "-steps", "15000", "-out", out, "-results", filepath.Join(out, "t.jsonl")},
		{"-mnist", dir, "-table2", "-sizes", "3", "-crop", "24", "-load", dir, "-ensemble", dir, "-pairwise", "3", "-anneal", "400000", "-critic", file, "-out", out},
		{"-mnist", dir, "-p", "6", "-load", file, "-val", "-eval", "2000", "-pairwise", "3", "-anneal", "1600000", "-fit-pairs", pairs, "-fit-unary", "-fit-border", "-fit-margin", "pixels", "-fit-depth", "4", "-fit-epochs", "10", "-out", out},
		{"-mnist", dir, "-p", "6", "-load", file, "-pairwise", "3", "-anneal", "6400000", "-pairs", file, "-anneal-start", "6", "-anneal-end", "3", "-restarts", "4", "-decode-seed", "2", "-out", out},
		{"-mnist", dir, "-p", "3", "-load", file, "-ensemble", file, "-val", "-eval", "2000", "-pairwise", "3", "-anneal", "400000", "-train-critic", pairs, "-critic-epochs", "2", "-critic-hard", "0.5", "-critic-top", "4", "-critic-weight", "3", "-out", out},
		{"-mnist", dir, "-oracle", "-seed", "1", "-sizes", "3", "-oracle-draws", "20", "-crop", "24", "-val", "-eval", "2000", "-quiet"},
	} {
		o, err := parseArgs(args, &bytes.Buffer{})
		require.NoError(t, err, args)
		assert.NoError(t, o.check(), args)
	}
	_, err := os.Stat(filepath.Dir(out))
	assert.True(t, os.IsNotExist(err), "the checks created -out")
	// Past the checks, an empty MNIST folder is a failure, not a usage error.
	code, stderr := runCLI("-mnist", dir, "-out", out)
	assert.Equal(t, 1, code, stderr)
}

// TestDefaults: a run writes under out/ unless told otherwise, never to a
// committed file.
func TestDefaults(t *testing.T) {
	o, err := parseArgs([]string{"-mnist", "DIR"}, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, filepath.Join("out", "jigsaw"), o.out)
	assert.Equal(t, filepath.Join("out", "jigsaw", "table2.jsonl"), o.results)
	assert.Equal(t, uint64(1), o.dec.Seed)
	o, err = parseArgs([]string{"-mnist", "DIR", "-seed", "4", "-decode-seed", "9"}, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, [3]uint64{4, 4, 9}, [3]uint64{o.criticCfg.Seed, o.fit.Seed, o.dec.Seed})
}
