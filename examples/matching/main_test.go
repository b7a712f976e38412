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
	require.NoError(t, run(context.Background(), &buf, matching.Config{N: 5, Sigma: 0.05, Radius: 0.6, Seed: 2}))
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
	assert.Error(t, run(context.Background(), &buf, matching.Config{N: 0, Sigma: 0.1}))
	assert.Error(t, run(context.Background(), &buf, matching.Config{N: 4, Sigma: -1}))
	assert.Error(t, run(context.Background(), &buf, matching.Config{N: 13, Sigma: 0.1}), "too large to enumerate")
}
