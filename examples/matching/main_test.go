package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permlab/permlab/models/matching"
)

func TestRun(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, compare(context.Background(), &buf, matching.Config{N: 5, Sigma: 0.05, Radius: 0.6, Seed: 2}))
	out := buf.String()
	t.Log("\n" + out)
	rows := 0
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "| ") && !strings.HasPrefix(line, "| method") {
			rows++
		}
	}
	assert.Equal(t, 5, rows, "one row per method")
	assert.Contains(t, out, "| exact enumeration |")
	assert.Contains(t, out, "| VI + calibration |")
	assert.Contains(t, out, "VI's check: the answer came from")
}

func TestRunErrors(t *testing.T) {
	var buf bytes.Buffer
	assert.Error(t, compare(context.Background(), &buf, matching.Config{N: 0, Sigma: 0.1}))
	assert.Error(t, compare(context.Background(), &buf, matching.Config{N: 4, Sigma: -1}))
	assert.Error(t, compare(context.Background(), &buf, matching.Config{N: 13, Sigma: 0.1}), "too large to enumerate")
}

func TestCommand(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run(context.Background(), []string{"-n", "4", "-sigma", "0.05", "-seed", "3"}, &stdout, &stderr), stderr.String())
	assert.Contains(t, stdout.String(), "n = 4, s = 0.05")
}

// Bad command lines exit with status 2 and a message naming the flag,
// before any work.
func TestBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-n", "0"}, "-n must be >= 2, got 0"},
		{[]string{"-n", "1"}, "-n must be >= 2, got 1"},
		{[]string{"-n", "-3"}, "-n must be >= 2"},
		{[]string{"-n", "10"}, "-n 10: exact enumeration would visit 10! permutations"},
		{[]string{"-sigma", "0"}, "-sigma must be finite and > 0, got 0"},
		{[]string{"-sigma", "-1"}, "-sigma must be finite and > 0"},
		{[]string{"-sigma", "NaN"}, "-sigma must be finite and > 0"},
		{[]string{"-radius", "-0.5"}, "-radius must be finite and >= 0"},
		{[]string{"-radius", "NaN"}, "-radius must be finite and >= 0"},
		{[]string{"-seed", "x"}, `invalid value "x" for flag -seed`},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"-n", "5", "extra"}, `unexpected argument "extra"`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			assert.Equal(t, 2, run(context.Background(), tc.args, &stdout, &stderr))
			assert.Contains(t, stderr.String(), tc.want)
			assert.NotContains(t, stderr.String(), "matching: matching:")
			assert.Empty(t, stdout.String())
		})
	}
}
