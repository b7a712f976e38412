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
	sub := func(name string, a ...string) []string { return append(append([]string{name}, m...), a...) }
	with := func(a ...string) []string { return sub("train", a...) }
	load := func(a ...string) []string { return sub("eval", append([]string{"-load", file}, a...)...) }
	fit := func(a ...string) []string {
		return sub("fit-pairs", append([]string{"-load", file, "-val", "-eval", "100", "-pairwise", "1", "-save", other}, a...)...)
	}
	critic := func(a ...string) []string {
		return sub("train-critic", append([]string{"-load", file}, a...)...)
	}
	for _, tc := range []struct {
		args  []string
		flags []string // each named in the message
		want  string   // also in the message
	}{
		// the subcommand
		{nil, []string{"train", "eval", "table2", "figure"}, "no subcommand"},
		{[]string{"-mnist", dir}, []string{"-mnist", "train", "-table2 -> table2"}, "must be a subcommand"},
		{[]string{"solve"}, []string{"solve", "train"}, "unknown subcommand"},
		{[]string{"eval", "-mnist", dir}, []string{"eval", "-load"}, "needs -load"},
		{[]string{"figure", "-mnist", dir}, []string{"figure", "-load"}, "needs -load"},
		{[]string{"fit-pairs", "-mnist", dir, "-load", file, "-val", "-eval", "100", "-pairwise", "1"}, []string{"fit-pairs", "-save"}, "needs -save"},
		{critic(), []string{"train-critic", "-save"}, "needs -save"},
		{with("-load", file), []string{"train", "-load", "eval"}, "does not take"},
		{with("-save", file), []string{"train", "-save", "fit-pairs", "train-critic"}, "does not take"},
		{load("-steps", "10"), []string{"eval", "-steps", "train, table2"}, "does not take"},
		{sub("oracle", "-steps", "10"), []string{"oracle", "-steps"}, "does not take"},
		{sub("oracle", "-out", dir), []string{"oracle", "-out"}, "does not take"},
		{sub("table2", "-val"), []string{"table2", "-val"}, "does not take"},
		{sub("table2", "-p", "3"), []string{"table2", "-p"}, "does not take"},
		{with("-sizes", "3"), []string{"train", "-sizes", "table2", "oracle"}, "does not take"},
		{with("-results", other), []string{"train", "-results", "table2"}, "does not take"},
		{with("-oracle-draws", "5"), []string{"-oracle-draws", "oracle"}, "does not take"},
		{with("-fit-epochs", "5"), []string{"-fit-epochs", "fit-pairs"}, "does not take"},
		{with("-critic-epochs", "5"), []string{"-critic-epochs", "train-critic"}, "does not take"},
		{load("-ensemble", file, "-pairwise", "1", "-fit-unary"), []string{"eval", "-fit-unary", "fit-pairs"}, "does not take"},
		// data
		{[]string{"train"}, []string{"-mnist", "-images"}, "no data"},
		{with("-images", dir), []string{"-mnist", "-images"}, "exclude each other"},
		{[]string{"table2", "-images", dir}, []string{"table2", "-images"}, "does not take"},
		{[]string{"oracle", "-images", dir}, []string{"oracle", "-images"}, "does not take"},
		{[]string{"train", "-images", dir, "-val"}, []string{"-val", "-mnist"}, "needs"},
		{with("-gray"), []string{"-gray", "-images"}, "needs"},
		{with("-size", "32"), []string{"-size", "-images"}, "needs"},
		// sizes and crop
		{with("-p", "1"), []string{"-p"}, "must be >= 2"},
		{with("-p", "0"), []string{"-p"}, "must be >= 2"},
		{with("-p", "-2"), []string{"-p"}, "must be >= 2"},
		{with("-p", "29"), []string{"-p"}, "exceeds the 28 px side"},
		{[]string{"train", "-images", dir, "-size", "0"}, []string{"-size"}, "must be >= 1"},
		{[]string{"train", "-images", dir, "-size", "8", "-p", "9"}, []string{"-p", "-size"}, "exceeds"},
		{sub("table2", "-sizes", "1"), []string{"-sizes"}, "not a Table 2 size"},
		{sub("table2", "-sizes", "3,3"), []string{"-sizes"}, "given twice"},
		{sub("oracle", "-sizes", "7"), []string{"-sizes"}, "not a Table 2 size"},
		{sub("oracle", "-oracle-draws", "0"), []string{"-oracle-draws"}, "must be >= 1"},
		{with("-crop", "-1"), []string{"-crop"}, "must be >= 0"},
		{with("-crop", "7"), []string{"-crop", "-p"}, "not a multiple"},
		{with("-crop", "30"), []string{"-crop"}, "exceeds"},
		{sub("table2", "-sizes", "3,4", "-crop", "27"), []string{"-crop", "-sizes"}, "not a multiple of 4"},
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
		{sub("table2", "-load", dir, "-steps", "10"), []string{"-load", "-steps"}, "does not take"},
		{sub("table2", "-load", dir, "-refine", "3"), []string{"-load", "-refine"}, "does not take"},
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
		{load("-ensemble", file, "-pairwise", "1", "-pairs", file), []string{"-ensemble", "-pairs", "fit-pairs"}, "excludes"},
		{load("-ensemble", file+",,"+file), []string{"-ensemble"}, "empty entry"},
		{load("-ensemble", missing), []string{"-ensemble"}, "no such file"},
		// fit-pairs
		{fit("-pairs", file), []string{"fit-pairs", "-pairs"}, "does not take"},
		{sub("fit-pairs", "-load", file, "-eval", "100", "-pairwise", "1", "-save", other), []string{"fit-pairs", "-load", "-val"}, "needs"},
		{sub("fit-pairs", "-load", file, "-val", "-pairwise", "1", "-save", other), []string{"fit-pairs", "-eval"}, "needs"},
		{sub("fit-pairs", "-load", file, "-val", "-eval", "10000", "-pairwise", "1", "-save", other), []string{"fit-pairs", "-eval"}, "needs"},
		{sub("fit-pairs", "-load", file, "-val", "-eval", "100", "-save", other), []string{"fit-pairs", "-pairwise"}, "needs"},
		{fit("-fit-epochs", "0"), []string{"-fit-epochs"}, "must be >= 1"},
		{fit("-fit-batch", "0"), []string{"-fit-batch"}, "must be >= 1"},
		{fit("-fit-lr", "0"), []string{"-fit-lr"}, "must be finite and > 0"},
		{fit("-fit-anneal", "-1"), []string{"-fit-anneal"}, "must be >= 0"},
		{fit("-fit-n", "-1"), []string{"-fit-n"}, "must be >= 0"},
		{fit("-fit-depth", "-1"), []string{"-fit-depth"}, "must be >= 0"},
		{fit("-fit-margin", "ink"), []string{"-fit-margin"}, "want pieces or pixels"},
		// the critic
		{with("-critic-weight", "3"), []string{"-critic-weight", "-critic", "train-critic"}, "needs"},
		{critic("-critic", file, "-save", other), []string{"train-critic", "-critic"}, "does not take"},
		{load("-critic", file, "-critic-weight", "-1"), []string{"-critic-weight"}, "must be finite and >= 0"},
		{sub("table2", "-load", dir, "-critic", file), []string{"-critic", "table2", "-sizes"}, "one size"},
		{critic("-save", other, "-critic-epochs", "0"), []string{"-critic-epochs"}, "must be >= 1"},
		{critic("-save", other, "-critic-hard", "1.5"), []string{"-critic-hard"}, "between 0 and 1"},
		{critic("-save", other, "-critic-top", "0"), []string{"-critic-top"}, "must be >= 1"},
		// paths
		{[]string{"train", "-mnist", missing}, []string{"-mnist"}, "no such file"},
		{[]string{"train", "-mnist", file}, []string{"-mnist"}, "not a directory"},
		{[]string{"train", "-images", missing}, []string{"-images"}, "no such file"},
		{sub("eval", "-load", missing), []string{"-load"}, "no such file"},
		{sub("eval", "-load", dir), []string{"-load"}, "is a directory, not a file"},
		{sub("figure", "-load", missing), []string{"-load"}, "no such file"},
		{sub("table2", "-load", file), []string{"-load", "table2"}, "not a directory"},
		{load("-pairwise", "1", "-pairs", missing), []string{"-pairs"}, "no such file"},
		{load("-critic", missing), []string{"-critic"}, "no such file"},
		{with("-out", ""), []string{"-out"}, "must not be empty"},
		{with("-out", file), []string{"-out"}, "not a directory"},
		{with("-out", filepath.Join(file, "sub")), []string{"-out"}, "not a directory"},
		{sub("figure", "-load", file, "-out", file), []string{"-out"}, "not a directory"},
		{sub("table2", "-results", ""), []string{"-results"}, "must not be empty"},
		{sub("table2", "-results", dir), []string{"-results"}, "is a directory, not a file"},
		{sub("table2", "-results", filepath.Join(file, "t.jsonl")), []string{"-results"}, "not a directory"},
		{sub("fit-pairs", "-load", file, "-val", "-eval", "100", "-pairwise", "1", "-save", file), []string{"-load", "-save"}, "same file"},
		{critic("-save", file), []string{"-load", "-save"}, "same file"},
		{sub("eval", "-load", loaded, "-out", outDir), []string{"-out", "-load"}, "would overwrite"},
		{sub("table2", "-sizes", "3", "-load", outDir, "-out", outDir), []string{"-out", "-load"}, "would overwrite"},
		// the command line itself
		{[]string{"train", "extra"}, []string{"extra"}, "unexpected argument"},
		{with("extra", "-p", "4"), []string{"extra"}, "unexpected argument"},
		{[]string{"train", "-nosuchflag"}, []string{"-nosuchflag"}, "not defined"},
		{with("-p", "x"), []string{"-p"}, "invalid value"},
		{sub("oracle", "-oracle-draws", "1.5"), []string{"-oracle-draws"}, "invalid value"},
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
	for _, c := range subcommands {
		assert.Contains(t, stderr, "\n  "+c.name+" ", "the usage lists every subcommand")
		code, stderr := runCLI(c.name, "-h")
		assert.Equal(t, 0, code)
		assert.Contains(t, stderr, "go run ./examples/jigsaw "+c.name+" [flags]")
		for _, f := range c.flags {
			assert.Contains(t, stderr, "  -"+f, "%s -h shows its flag -%s", c.name, f)
		}
	}
	_, stderr = runCLI("table2", "-h")
	assert.Contains(t, stderr, "out/jigsaw/table2.jsonl")
	_, stderr = runCLI("eval", "-h")
	assert.NotContains(t, stderr, "-steps", "eval -h shows only eval's flags")
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
		{"train", "-mnist", dir, "-p", "3", "-seed", "1", "-out", out},
		{"train", "-mnist", dir, "-p", "2", "-crop", "24", "-lr", "0.003", "-filters", "64", "-hidden", "256", "-context", "-refine", "3", "-edge-depth", "2", "-steps", "16000", "-val", "-eval", "2000", "-out", out},
		{"train", "-images", dir, "-size", "64", "-gray", "-p", "3", "-out", out},
		{"table2", "-mnist", dir, "-seed", "1", "-steps", "15000", "-out", out, "-results", filepath.Join(out, "t.jsonl")},
		{"table2", "-mnist", dir, "-sizes", "3", "-crop", "24", "-load", dir, "-ensemble", dir, "-pairwise", "3", "-anneal", "400000", "-critic", file, "-out", out},
		{"fit-pairs", "-mnist", dir, "-p", "6", "-load", file, "-val", "-eval", "2000", "-pairwise", "3", "-anneal", "1600000", "-save", pairs, "-fit-unary", "-fit-border", "-fit-margin", "pixels", "-fit-depth", "4", "-fit-epochs", "10", "-out", out},
		{"eval", "-mnist", dir, "-p", "6", "-load", file, "-pairwise", "3", "-anneal", "6400000", "-pairs", file, "-anneal-start", "6", "-anneal-end", "3", "-restarts", "4", "-decode-seed", "2", "-out", out},
		{"train-critic", "-mnist", dir, "-p", "3", "-load", file, "-ensemble", file, "-val", "-eval", "2000", "-pairwise", "3", "-anneal", "400000", "-save", pairs, "-critic-epochs", "2", "-critic-hard", "0.5", "-critic-top", "4", "-critic-weight", "3", "-out", out},
		{"oracle", "-mnist", dir, "-seed", "1", "-sizes", "3", "-oracle-draws", "20", "-crop", "24", "-val", "-eval", "2000", "-quiet"},
		{"figure", "-mnist", dir, "-p", "3", "-load", file, "-figtaus", "1,0.3", "-seam", "1", "-out", out},
	} {
		o, err := parseArgs(args, &bytes.Buffer{})
		require.NoError(t, err, args)
		assert.NoError(t, o.check(), args)
	}
	_, err := os.Stat(filepath.Dir(out))
	assert.True(t, os.IsNotExist(err), "the checks created -out")
	// Past the checks, an empty MNIST folder is a failure, not a usage error.
	code, stderr := runCLI("train", "-mnist", dir, "-out", out)
	assert.Equal(t, 1, code, stderr)
}

// TestDefaults: a run writes under out/ unless told otherwise, never to a
// committed file.
func TestDefaults(t *testing.T) {
	o, err := parseArgs([]string{"train", "-mnist", "DIR"}, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, filepath.Join("out", "jigsaw"), o.out)
	assert.Equal(t, filepath.Join("out", "jigsaw", "table2.jsonl"), o.results)
	assert.Equal(t, uint64(1), o.dec.Seed)
	o, err = parseArgs([]string{"eval", "-mnist", "DIR", "-seed", "4", "-decode-seed", "9"}, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, [3]uint64{4, 4, 9}, [3]uint64{o.criticCfg.Seed, o.fit.Seed, o.dec.Seed})
}
