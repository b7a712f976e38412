package main

import (
	"bytes"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permlab/permlab/internal/longtest"
)

func tinyConfig() config {
	return config{batch: 2, n: 6, iters: 5, tau: 0.5, seed: 3, threads: 1, warmup: 1, reps: 3,
		python: "/usr/bin/python3", script: "sinkhorn_torch.py"}
}

func TestRunWithoutPython(t *testing.T) {
	c := tinyConfig()
	c.python = "/nonexistent/python3"
	var out bytes.Buffer
	require.NoError(t, run(c, &out))
	assert.Contains(t, out.String(), "PyTorch reference not run: no Python interpreter")
	assert.Contains(t, out.String(), "| permlab relax.SinkhornVar |")
	assert.NotContains(t, out.String(), "ratio")
}

func TestRunAgainstTorch(t *testing.T) {
	// Starting Python and importing torch takes seconds.
	longtest.Skip(t, "starts PyTorch")
	c := tinyConfig()
	if _, err := os.Stat(c.python); err != nil {
		t.Skip("no python3")
	}
	if err := exec.Command(c.python, "-c", "import torch").Run(); err != nil {
		t.Skip("torch not installed")
	}
	var out bytes.Buffer
	require.NoError(t, run(c, &out))
	s := out.String()
	assert.Contains(t, s, "| ratio PyTorch / Go |")
	assert.Contains(t, s, "Agreement on the same X and R")
}

func TestRunForward(t *testing.T) {
	c := tinyConfig()
	c.forward = true
	c.python = "/nonexistent/python3"
	var out bytes.Buffer
	require.NoError(t, run(c, &out))
	assert.Contains(t, out.String(), "Sinkhorn forward S = S^L(X/τ): batch 2 × 6×6")
	assert.Contains(t, out.String(), "| permlab relax.SinkhornBatch |")

	if !longtest.Enabled {
		return
	}
	c = tinyConfig()
	c.forward, c.batch = true, 1
	if _, err := os.Stat(c.python); err != nil {
		t.Skip("no python3")
	}
	if err := exec.Command(c.python, "-c", "import torch").Run(); err != nil {
		t.Skip("torch not installed")
	}
	out.Reset()
	require.NoError(t, run(c, &out))
	s := out.String()
	assert.Contains(t, s, "| permlab relax.Sinkhorn |")
	assert.Contains(t, s, "| ratio PyTorch / Go |")
	assert.Contains(t, s, "Agreement on the same X: max |S_go − S_torch|")
}

func TestRunRejectsBadConfig(t *testing.T) {
	c := tinyConfig()
	c.n = 0
	assert.Error(t, run(c, &bytes.Buffer{}))
}
