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

	"github.com/permlab/permlab/networks/jigsaw"
)

func TestNoDataIsAnError(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.Equal(t, 2, run(context.Background(), nil, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "-mnist DIR")
}

// Bad command lines exit with status 2 and a message naming the flag,
// before any data is read (the MNIST folder here is empty, so reading it
// would fail with another message) and without writing anything.
func TestBadFlags(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o644))
	missing := filepath.Join(dir, "missing")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-eval", "-1"}, "-eval must be >= 0, got -1"},
		{[]string{"-p", "0"}, "-p must be in [2, 28], got 0"},
		{[]string{"-p", "1"}, "-p must be in [2, 28]"},
		{[]string{"-p", "29"}, "-p must be in [2, 28]"},
		{[]string{"-steps", "0"}, "-steps must be >= 1"},
		{[]string{"-batch", "-1"}, "-batch must be >= 1"},
		{[]string{"-lr", "0"}, "-lr must be finite and > 0"},
		{[]string{"-filters", "0"}, "-filters must be >= 1"},
		{[]string{"-kernel", "4"}, "-kernel must be odd and >= 1, got 4"},
		{[]string{"-kernel", "0"}, "-kernel must be odd"},
		{[]string{"-pool", "0"}, "-pool must be >= 1"},
		{[]string{"-pool", "3"}, "-pool 3 exceeds the 2 px pieces of -p 14"},
		{[]string{"-tau", "0"}, "-tau must be finite and > 0"},
		{[]string{"-iters", "0"}, "-iters must be >= 1"},
		{[]string{"-samples", "0"}, "-samples must be >= 1"},
		{[]string{"-noise", "-1"}, "-noise must be finite and >= 0"},
		{[]string{"-hidden", "-1"}, "-hidden must be >= 0"},
		{[]string{"-context"}, "-context needs -hidden > 0"},
		{[]string{"-model", file, "-steps", "10"}, "-steps trains a network; it does not go with -model"},
		{[]string{"-model", file, "-hidden", "10"}, "-hidden trains a network"},
		{[]string{"-model", missing}, "-model " + missing + ": no such file"},
		{[]string{"-classifier", missing}, "-classifier " + missing + ": no such file"},
		{[]string{"-classifier", dir}, "-classifier " + dir + ": is a directory"},
		{[]string{"-mnist", file}, "-mnist " + file + ": not a directory"},
		{[]string{"-out", file}, "-out " + file + ": not a directory"},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"-p", "7", "extra"}, `unexpected argument "extra"`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			mnist := filepath.Join(t.TempDir(), "mnist")
			require.NoError(t, os.Mkdir(mnist, 0o755))
			out := filepath.Join(t.TempDir(), "out")
			args := append([]string{"-mnist", mnist, "-out", out}, tc.args...)
			var stdout, stderr bytes.Buffer
			assert.Equal(t, 2, run(context.Background(), args, &stdout, &stderr))
			assert.Contains(t, stderr.String(), tc.want)
			assert.NotContains(t, stderr.String(), "assembly: assembly:")
			assert.NoDirExists(t, out, "nothing written")
		})
	}
}

func TestFormatRates(t *testing.T) {
	r := &jigsaw.AssemblyResult{Rates: [][]float64{{1, 0.25}, {0.5, 1}}, Counts: []int{4, 2}, Overall: 0.75}
	s := formatRates(r)
	lines := strings.Split(s, "\n")
	assert.Equal(t, "| actual \\ becomes | 0 | 1 |", lines[0])
	assert.Equal(t, "| 0 | 1.00 | 0.25 |", lines[2])
	assert.Equal(t, "| 1 | 0.50 | 1.00 |", lines[3])
	assert.Contains(t, s, "overall: 0.7500 (paper: 0.851)")
}

// A saved network with other pieces than -p is refused before any data is
// read: its results would go to files named after -p.
func TestModelPiecesMismatch(t *testing.T) {
	cfg := jigsaw.DefaultConfig(7)
	cfg.Kernel, cfg.Heads = 3, 10
	net, err := jigsaw.New(cfg, 1)
	require.NoError(t, err)
	model := filepath.Join(t.TempDir(), "assembly_p7.gob")
	require.NoError(t, net.SaveFile(model))
	var stdout, stderr bytes.Buffer
	args := []string{"-mnist", t.TempDir(), "-model", model, "-out", filepath.Join(t.TempDir(), "out")}
	assert.Equal(t, 2, run(context.Background(), args, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "has 7 pieces per side, -p says 14: pass -p 7")
}
