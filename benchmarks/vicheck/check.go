package main

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/permlab/permlab/mcmc"
	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/models/matching"
	"github.com/permlab/permlab/perm"
	"github.com/permlab/permlab/vi"
)

// family is a kind of model the check runs on, with the levels of its
// noise parameter.
type family struct {
	Name   string
	Param  string // what Level means
	Make   func(n int, level float64, seed uint64) (models.Model, error)
	Levels []float64
}

// families are the four model families of the check: the two library
// models of package matching at several noise levels, a Poisson count
// model (non-Gaussian observations, a latent real site integrated
// numerically by Exact) and a pairwise model with candidate masks and
// fixed rows.
var families = []family{
	{
		Name: "point matching", Param: "noise s", Levels: []float64{0.05, 0.1, 0.2},
		Make: func(n int, s float64, seed uint64) (models.Model, error) {
			return matching.Generate(matching.Config{N: n, Sigma: s, Seed: seed})
		},
	},
	{
		Name: "permutation regression", Param: "noise s", Levels: []float64{0.1, 0.3},
		Make: func(n int, s float64, seed uint64) (models.Model, error) {
			return matching.GenerateRegression(matching.RegressionConfig{N: n, D: 1, S: s, Seed: seed})
		},
	},
	{
		Name: "Poisson counts", Param: "mean count", Levels: []float64{20, 100},
		Make: func(n int, mean float64, seed uint64) (models.Model, error) {
			return matching.GenerateCounts(matching.CountsConfig{N: n, MeanCount: mean, Seed: seed})
		},
	},
	{
		Name: "pairwise, masks + fixed row", Param: "noise s", Levels: []float64{0.05, 0.1},
		Make: func(n int, s float64, seed uint64) (models.Model, error) {
			return matching.GeneratePairwise(matching.PairwiseConfig{N: n, Sigma: s, Radius: 0.5, Fixed: 1, Seed: seed})
		},
	},
}

// smallRow is the check of one data set small enough for Exact.
type smallRow struct {
	Family string  `json:"family"`
	Level  float64 `json:"level"`
	N      int     `json:"n"`
	Seed   uint64  `json:"seed"`

	// ProbMAP is the exact posterior probability of the most probable
	// permutation; ProbVI and ProbPlain those of VI's answer with the
	// default check and without it (Polish.Off, the paper's plain method).
	ProbMAP   float64 `json:"prob_map"`
	ProbVI    float64 `json:"prob_vi"`
	ProbPlain float64 `json:"prob_plain"`
	// Right is ProbVI >= 0.9·ProbMAP; Warned whether VI printed a warning,
	// and PlainWarned the same for the plain method.
	Right       bool `json:"right"`
	Warned      bool `json:"warned"`
	PlainRight  bool `json:"plain_right"`
	PlainWarned bool `json:"plain_warned"`
	// Gain is the nats polishing gained over the chosen fit's mode.
	Gain float64 `json:"gain"`
	From string  `json:"from"`

	// Wall times in seconds: VI with and without the check, default MCMC,
	// and the calibration (MCMC started from VI's polished states).
	WallVI    float64 `json:"wall_vi"`
	WallPlain float64 `json:"wall_plain"`
	WallMCMC  float64 `json:"wall_mcmc"`
	WallCal   float64 `json:"wall_cal"`
	// Largest row total-variation distances to the exact marginals.
	TVVI   float64 `json:"tv_vi"`
	TVMCMC float64 `json:"tv_mcmc"`
	TVCal  float64 `json:"tv_cal"`
}

// calibrate are the MCMC options of the calibrated marginals: chains
// started from VI's polished states (mcmc.CalibrationOptions).
func calibrate(q *vi.ModelResult, seed uint64) mcmc.ModelOptions {
	return mcmc.CalibrationOptions(q.Polish.States(mcmc.DefaultChains), seed)
}

func checkSmall(ctx context.Context, f family, n int, level float64, seed uint64) (*smallRow, error) {
	m, err := f.Make(n, level, seed)
	if err != nil {
		return nil, err
	}
	ex, err := models.Exact(m)
	if err != nil {
		return nil, fmt.Errorf("exact: %w", err)
	}
	row := &smallRow{Family: f.Name, Level: level, N: n, Seed: seed}
	if row.ProbMAP, err = ex.Prob(ex.MAP); err != nil {
		return nil, err
	}

	t0 := time.Now()
	q, err := vi.FitModel(ctx, m, vi.ModelOptions{Seed: seed})
	if err != nil {
		return nil, fmt.Errorf("vi: %w", err)
	}
	row.WallVI = time.Since(t0).Seconds()
	if row.ProbVI, err = ex.Prob(modeState(q.Posterior)); err != nil {
		return nil, err
	}
	row.Right = row.ProbVI >= 0.9*row.ProbMAP
	row.Warned = len(q.Posterior.Warnings) > 0
	row.Gain, row.From = q.Polish.Gain, q.Polish.From
	if row.TVVI, err = maxTV(q.Posterior, ex.Posterior); err != nil {
		return nil, err
	}

	t0 = time.Now()
	plain, err := vi.FitModel(ctx, m, vi.ModelOptions{Seed: seed, Polish: vi.Polish{Off: true}})
	if err != nil {
		return nil, fmt.Errorf("vi plain: %w", err)
	}
	row.WallPlain = time.Since(t0).Seconds()
	if row.ProbPlain, err = ex.Prob(modeState(plain.Posterior)); err != nil {
		return nil, err
	}
	row.PlainRight = row.ProbPlain >= 0.9*row.ProbMAP
	row.PlainWarned = len(plain.Posterior.Warnings) > 0

	t0 = time.Now()
	mc, err := mcmc.RunModel(ctx, m, mcmc.ModelOptions{Seed: seed})
	if err != nil {
		return nil, fmt.Errorf("mcmc: %w", err)
	}
	row.WallMCMC = time.Since(t0).Seconds()
	if row.TVMCMC, err = maxTV(mc.Posterior, ex.Posterior); err != nil {
		return nil, err
	}

	t0 = time.Now()
	cal, err := mcmc.RunModel(ctx, m, calibrate(q, seed))
	if err != nil {
		return nil, fmt.Errorf("calibration: %w", err)
	}
	row.WallCal = time.Since(t0).Seconds()
	if row.TVCal, err = maxTV(cal.Posterior, ex.Posterior); err != nil {
		return nil, err
	}
	return row, nil
}

// modeState returns the permutations of a posterior's mode as a state.
func modeState(p *models.Posterior) *models.State {
	s := &models.State{Perms: map[string][]perm.Perm{}}
	for name, pp := range p.Perms {
		s.Perms[name] = pp.Mode
	}
	return s
}

// maxTV is the largest row total-variation distance between two
// posteriors over all permutation sites.
func maxTV(a, b *models.Posterior) (float64, error) {
	worst := 0.0
	for name, pa := range a.Perms {
		pb, ok := b.Perms[name]
		if !ok {
			return 0, fmt.Errorf("site %q missing", name)
		}
		tv, err := pa.MaxRowTV(pb)
		if err != nil {
			return 0, err
		}
		worst = math.Max(worst, tv)
	}
	return worst, nil
}
