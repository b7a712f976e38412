package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permlab/permlab/benchmarks/internal/harness"
	"github.com/permlab/permlab/celegans"
	"github.com/permlab/permlab/internal/longtest"
)

// tinyConfig is a small problem that runs in well under a second per side.
func tinyConfig() config {
	s := celegans.DefaultSettings()
	return config{neurons: 30, worms: 2, t: 40, known: 5, nu: 0.1, tau: 0.5, tauPrior: 1, iters: 5,
		sigmaW: s.SigmaW, wStd0: s.SigmaW / 10, lr: 0.1, seed: 3, threads: 1, warmup: 1, reps: 2, block: 2,
		python: "/usr/bin/python3", script: "step_torch.py", variants: []string{"naive", "suffstats"}}
}

func needTorch(t *testing.T, python string) {
	t.Helper()
	// Starting Python and importing torch takes seconds.
	longtest.Skip(t, "starts PyTorch")
	if _, err := os.Stat(python); err != nil {
		t.Skipf("no Python interpreter at %s", python)
	}
	if err := exec.Command(python, "-c", "import torch").Run(); err != nil {
		t.Skip("torch not installed")
	}
}

func TestParseVariants(t *testing.T) {
	for in, want := range map[string][]string{
		"naive,suffstats":  {"naive", "suffstats"},
		"suffstats, naive": {"suffstats", "naive"},
		"suffstats":        {"suffstats"},
		" naive ":          {"naive"},
	} {
		got, err := parseVariants(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "naive,", "fast", "naive,naive"} {
		_, err := parseVariants(in)
		assert.Error(t, err, in)
	}
}

func TestInterleaveRotatesAndTimes(t *testing.T) {
	var order []int
	calls := make([]int, 3)
	step := func(j int) harness.Step {
		return func() (float64, float64, error) {
			order = append(order, j)
			calls[j]++
			return float64(calls[j]), float64(10 * calls[j]), nil
		}
	}
	steps := []harness.Step{step(0), step(1), step(2)}
	times, err := interleave(steps, 1, 3, 2, 0)
	require.NoError(t, err)
	want := []int{
		0, 0, 1, 1, 2, 2, // warm-up round
		1, 1, 2, 2, 0, 0,
		2, 2, 0, 0, 1, 1,
		0, 0, 1, 1, 2, 2,
	}
	assert.Equal(t, want, order)
	// The second step of each block in the three timed rounds.
	for j := range times {
		assert.Equal(t, []float64{4, 6, 8}, times[j].Wall, "side %d", j)
		assert.Equal(t, []float64{40, 60, 80}, times[j].CPU, "side %d", j)
	}

	// Block 1 times every step after the warm-up.
	order, calls = nil, make([]int, 3)
	times, err = interleave(steps, 0, 2, 1, 0)
	require.NoError(t, err)
	assert.Equal(t, []int{0, 1, 2, 1, 2, 0}, order)
	for j := range times {
		assert.Equal(t, []float64{1, 2}, times[j].Wall, "side %d", j)
	}

	boom := errors.New("boom")
	steps[1] = func() (float64, float64, error) { return 0, 0, boom }
	_, err = interleave(steps, 0, 2, 2, 0)
	assert.ErrorIs(t, err, boom)
}

func TestReportNamesFasterReference(t *testing.T) {
	c := tinyConfig()
	c.block = 4
	mk := func(wall, cpu float64) harness.Times {
		return harness.Times{Wall: []float64{wall, wall + 1, wall + 2}, CPU: []float64{cpu, cpu, cpu}}
	}
	var out bytes.Buffer
	report(&out, c, "masks", 1, []harness.Times{mk(10, 20), mk(100, 300), mk(40, 60)})
	s := out.String()
	assert.Contains(t, s, "| setting | threads | Go ms/step | PyTorch naive ms/step | ratio (naive/Go) | PyTorch suffstats ms/step | ratio (suffstats/Go) |")
	assert.Contains(t, s, "| masks, wall | 1 | 11.0 | 101.0 | 9.18 | 41.0 | 3.73 |")
	assert.Contains(t, s, "| masks, CPU | 1 | 20.0 | 300.0 | 15.00 | 60.0 | 3.00 |")
	assert.Contains(t, s, "| masks, wall, fastest step | 1 | 10.0 | 100.0 | 10.00 | 40.0 | 4.00 |")
	assert.Contains(t, s, "by median wall time: suffstats (41.0 ms/step), 3.73× Go's; by median CPU time: suffstats (60.0 ms/step), 3.00× Go's.")
	assert.NotContains(t, s, "disagree")

	out.Reset()
	report(&out, c, "masks", 1, []harness.Times{mk(10, 20), mk(30, 70), mk(40, 60)})
	s = out.String()
	assert.Contains(t, s, "by median wall time: naive (31.0 ms/step)")
	assert.Contains(t, s, "by median CPU time: suffstats (60.0 ms/step)")
	assert.Contains(t, s, "disagree")
}

// writeGrads writes gradient files for variant v as compare reads them.
func writeGrads(t *testing.T, dir, v string, grads map[string][]float64) {
	t.Helper()
	for name, g := range grads {
		require.NoError(t, harness.WriteF64(filepath.Join(dir, "grad_"+v+"_"+name+".f64"), g))
	}
}

func TestCompareDetectsDisagreement(t *testing.T) {
	grads := map[string][]float64{"X": {1, -2, 3}, "mu": {0.5, 0.25}, "rho": {-1, 4}}
	g := checkResult{ELBO: -1000, LogLik: -900, KLP: 80, KLW: 20, grads: grads}
	variants := []string{"naive", "suffstats"}
	dir := t.TempDir()
	writeGrads(t, dir, "naive", grads)
	writeGrads(t, dir, "suffstats", grads)
	same := checkResult{ELBO: -1000 * (1 + 1e-9), LogLik: -900, KLP: 80, KLW: 20}
	pys := map[string]checkResult{"naive": same, "suffstats": same}
	var out bytes.Buffer
	require.NoError(t, compare(dir, g, variants, pys, &out))
	assert.Contains(t, out.String(), "Cross-check passed: permlab and PyTorch naive and PyTorch suffstats")
	assert.Contains(t, out.String(), "| ELBO | -1000 | -1000.000001 | 1.00e-09 | -1000.000001 | 1.00e-09 |")

	// An ELBO off by 1e-5 relative fails.
	off := same
	off.ELBO = -1000 * (1 + 1e-5)
	err := compare(dir, g, variants, map[string]checkResult{"naive": same, "suffstats": off}, &out)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "suffstats ELBO")
	assert.NotContains(t, err.Error(), "naive ELBO")

	// One gradient entry off by 1e-5 of the largest fails.
	bad := map[string][]float64{"X": {1, -2, 3}, "mu": {0.5, 0.25 + 0.5e-5}, "rho": {-1, 4}}
	writeGrads(t, dir, "naive", bad)
	err = compare(dir, g, variants, pys, &out)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "naive ∂ELBO/∂mu")

	// A missing or short gradient file is an error, as is an error from the
	// reference.
	require.NoError(t, os.Remove(filepath.Join(dir, "grad_naive_X.f64")))
	assert.Error(t, compare(dir, g, variants, pys, &out))
	writeGrads(t, dir, "naive", map[string][]float64{"X": {1, -2}, "mu": grads["mu"]})
	assert.Error(t, compare(dir, g, variants, pys, &out))
	assert.Error(t, compare(dir, g, []string{"suffstats"}, map[string]checkResult{"suffstats": {Error: "bad"}}, &out))
}

func TestRunWithoutPython(t *testing.T) {
	c := tinyConfig()
	c.python = "/nonexistent/python3"
	var out bytes.Buffer
	require.NoError(t, run(c, true, &out))
	s := out.String()
	assert.Contains(t, s, "PyTorch reference not run: no Python interpreter")
	assert.Contains(t, s, "| permlab (Go) | 1 |")
	assert.NotContains(t, s, "ratio")
	assert.Regexp(t, `This host's dense kernel, in the same run: one \d+×\d+×\d+ product \(f64.Gemm, one thread\) in [0-9.]+ ms, [0-9.]+ billion`, s)

	c.checkOnly = true
	err := run(c, true, &out)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the cross-check needs PyTorch")
}

func TestRunAgainstTorch(t *testing.T) {
	c := tinyConfig()
	needTorch(t, c.python)
	var out bytes.Buffer
	// run fails unless both references pass the cross-check.
	require.NoError(t, run(c, true, &out))
	s := out.String()
	assert.Contains(t, s, "Cross-check passed: permlab and PyTorch naive and PyTorch suffstats compute the same ELBO and gradient.")
	assert.Contains(t, s, "| PyTorch naive ms/step | ratio (naive/Go) | PyTorch suffstats ms/step | ratio (suffstats/Go) |")
	assert.Contains(t, s, "Faster PyTorch reference by median wall time:")
	assert.Contains(t, s, "This host's dense kernel, in the same run:")

	// Without masks, and one reference alone.
	c = tinyConfig()
	c.checkOnly, c.variants = true, []string{"suffstats"}
	out.Reset()
	require.NoError(t, run(c, false, &out))
	s = out.String()
	assert.Contains(t, s, "no position masks")
	assert.Contains(t, s, "Cross-check passed: permlab and PyTorch suffstats compute")
	assert.NotContains(t, s, "PyTorch naive")
	assert.NotContains(t, s, "ms/step")
}

// TestReferenceSelfCheck runs step_torch.py on its own (the standalone mode
// checks both variants at the same point and prints their difference).
func TestReferenceSelfCheck(t *testing.T) {
	c := tinyConfig()
	needTorch(t, c.python)
	c.keep = true
	var out bytes.Buffer
	c.checkOnly = true
	require.NoError(t, run(c, true, &out))
	_, after, ok := strings.Cut(out.String(), "data in ")
	require.True(t, ok)
	dir, _, _ := strings.Cut(after, "\n")
	defer os.RemoveAll(dir)
	py, err := exec.Command(c.python, c.script, dir, "--variant", "both").CombinedOutput()
	require.NoError(t, err, string(py))
	assert.Contains(t, string(py), "check naive:")
	assert.Contains(t, string(py), "check suffstats:")
	_, line, ok := strings.Cut(string(py), "suffstats against naive: ")
	require.True(t, ok, string(py))
	line, _, _ = strings.Cut(line, "\n")
	var elbo, gx, gmu, grho float64
	_, err = fmt.Sscanf(line, "ELBO %g relative; gradients (max abs diff / max abs) X %g, mu %g, rho %g", &elbo, &gx, &gmu, &grho)
	require.NoError(t, err, line)
	// The two variants evaluate the same function in different orders.
	for _, d := range []float64{elbo, gx, gmu, grho} {
		assert.Less(t, d, 1e-12, line)
	}
	_, err = exec.Command(c.python, c.script, dir, "--variant", "fast").CombinedOutput()
	assert.Error(t, err)
}
