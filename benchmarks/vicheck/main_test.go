package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permlab/permlab/internal/longtest"
	"github.com/permlab/permlab/mcmc"
	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/vi"
)

// TestGoal checks the goals of VI with its default check on five data sets
// of every family at n = 6, against exact enumeration: VI's answer has at
// least 0.9 times the probability of the most probable permutation in at
// least 90% of the data sets, a wrong answer always comes with a warning,
// and the calibrated marginals (MCMC from VI's polished states, a sixth of
// default MCMC's replica sweeps) are within row TV 0.05 of exact.
func TestGoal(t *testing.T) {
	longtest.Skip(t, "about 30 fits against exact enumeration, a minute and more")
	if raceEnabled {
		t.Skip("the goal test runs about 30 fits; skipped under the race detector, which slows it tenfold")
	}
	cal := (mcmc.CalibrationBurn + mcmc.CalibrationDraws) * mcmc.CalibrationTemperatures
	cold := (mcmc.DefaultBurn + mcmc.DefaultDraws) * mcmc.DefaultTemperatures
	require.Less(t, 3*cal, cold, "the calibration's budget in replica sweeps")
	ctx := context.Background()
	sets, right := 0, 0
	for _, f := range families {
		level := f.Levels[0]
		for seed := uint64(101); seed <= 105; seed++ {
			m, err := f.Make(6, level, seed)
			require.NoError(t, err)
			ex, err := models.Exact(m)
			require.NoError(t, err)
			pMAP, err := ex.Prob(ex.MAP)
			require.NoError(t, err)
			q, err := vi.FitModel(ctx, m, vi.ModelOptions{Seed: seed})
			require.NoError(t, err)
			pVI, err := ex.Prob(modeState(q.Posterior))
			require.NoError(t, err)
			sets++
			if pVI >= 0.9*pMAP {
				right++
			} else {
				require.NotEmpty(t, q.Posterior.Warnings, "%s seed %d: a wrong answer (probability %.3g against %.3g) without a warning", f.Name, seed, pVI, pMAP)
			}
			cal, err := mcmc.RunModel(ctx, m, calibrate(q, seed))
			require.NoError(t, err)
			tv, err := maxTV(cal.Posterior, ex.Posterior)
			require.NoError(t, err)
			require.LessOrEqual(t, tv, 0.05, "%s seed %d: calibrated marginals", f.Name, seed)
		}
	}
	require.GreaterOrEqual(t, float64(right), 0.9*float64(sets), "VI right in %d of %d data sets", right, sets)
}

// TestReadme checks that README.md holds the tables exactly as -table
// prints them from the committed results, and that the root README quotes
// their summary lines, so that no number there is copied by hand.
func TestReadme(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, printTables(&out, "results"))
	tables := out.String()
	require.Contains(t, tables, "### Against exact enumeration")
	require.Contains(t, tables, "### Against long MCMC")
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	require.Contains(t, string(readme), tables, "README.md must hold the output of -table")
	root, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	for _, line := range strings.Split(tables, "\n") {
		if strings.HasPrefix(line, "All ") {
			require.Contains(t, strings.Join(strings.Fields(string(root)), " "), line, "the root README quotes the summary")
		}
	}
}

func TestFlags(t *testing.T) {
	for _, args := range [][]string{{"-seeds", "0"}, {"stray"}, {"-table", "-small"}, {"-nope"}} {
		var stderr bytes.Buffer
		require.Error(t, run(args, &bytes.Buffer{}, &stderr), "%v", args)
	}
	dir := t.TempDir()
	err := run([]string{"-table", "-out", dir}, &bytes.Buffer{}, &bytes.Buffer{})
	require.ErrorContains(t, err, "run the check first")
	// An unreadable results file is an error naming its line.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "small.jsonl"), []byte("{}\nnot json\n"), 0o644))
	err = run([]string{"-table", "-out", dir}, &bytes.Buffer{}, &bytes.Buffer{})
	require.Error(t, err)
	require.True(t, strings.Contains(err.Error(), "small.jsonl:2"), err.Error())
}
