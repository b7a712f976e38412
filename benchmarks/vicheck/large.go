package main

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/permlab/permlab/mcmc"
	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/perm"
	"github.com/permlab/permlab/vi"
)

// largeRow is the check of one data set too large for Exact: VI's answer
// against the most probable state that long MCMC runs visit, both scored
// by the model's exact log joint J.
type largeRow struct {
	Family string  `json:"family"`
	Level  float64 `json:"level"`
	N      int     `json:"n"`
	Seed   uint64  `json:"seed"`

	// JVI and JPlain are J at VI's answer with and without the check,
	// JMCMC the best J over the draws of the long MCMC runs.
	JVI    float64 `json:"j_vi"`
	JPlain float64 `json:"j_plain"`
	JMCMC  float64 `json:"j_mcmc"`
	// Within is JVI >= JMCMC − 1; Warned whether VI printed a warning.
	Within      bool    `json:"within"`
	Warned      bool    `json:"warned"`
	PlainWithin bool    `json:"plain_within"`
	PlainWarned bool    `json:"plain_warned"`
	Gain        float64 `json:"gain"`
	From        string  `json:"from"`

	WallVI    float64 `json:"wall_vi"`
	WallPlain float64 `json:"wall_plain"`
	WallMCMC  float64 `json:"wall_mcmc"` // default MCMC
	WallLong  float64 `json:"wall_long"` // the long runs
}

// Long MCMC: twice the default number of sweeps per chain, from another
// seed than the default run.
const (
	longBurn  = mcmc.DefaultBurn
	longDraws = 3 * mcmc.DefaultDraws
)

func checkLarge(ctx context.Context, f family, n int, level float64, seed uint64) (*largeRow, error) {
	m, err := f.Make(n, level, seed)
	if err != nil {
		return nil, err
	}
	sc, err := models.NewScorer(m)
	if err != nil {
		return nil, err
	}
	row := &largeRow{Family: f.Name, Level: level, N: n, Seed: seed}

	t0 := time.Now()
	q, err := vi.FitModel(ctx, m, vi.ModelOptions{Seed: seed})
	if err != nil {
		return nil, fmt.Errorf("vi: %w", err)
	}
	row.WallVI = time.Since(t0).Seconds()
	row.JVI, row.Warned, row.Gain, row.From = q.Polish.LogJoint, len(q.Posterior.Warnings) > 0, q.Polish.Gain, q.Polish.From

	t0 = time.Now()
	plain, err := vi.FitModel(ctx, m, vi.ModelOptions{Seed: seed, Polish: vi.Polish{Off: true}})
	if err != nil {
		return nil, fmt.Errorf("vi plain: %w", err)
	}
	row.WallPlain = time.Since(t0).Seconds()
	row.PlainWarned = len(plain.Posterior.Warnings) > 0
	if row.JPlain, err = sc.LogJoint(withReals(modeState(plain.Posterior), plain.Posterior, sc.Spec())); err != nil {
		return nil, err
	}

	t0 = time.Now()
	if _, err := mcmc.RunModel(ctx, m, mcmc.ModelOptions{Seed: seed}); err != nil {
		return nil, fmt.Errorf("mcmc: %w", err)
	}
	row.WallMCMC = time.Since(t0).Seconds()

	t0 = time.Now()
	long, err := mcmc.RunModel(ctx, m, mcmc.ModelOptions{Seed: seed + 1000, Burn: longBurn, Draws: longDraws})
	if err != nil {
		return nil, fmt.Errorf("long mcmc: %w", err)
	}
	row.WallLong = time.Since(t0).Seconds()
	if row.JMCMC, err = bestDraw(sc, long.Posterior); err != nil {
		return nil, err
	}
	row.Within = row.JVI >= row.JMCMC-1
	row.PlainWithin = row.JPlain >= row.JMCMC-1
	return row, nil
}

// withReals adds a posterior's real-site means to s.
func withReals(s *models.State, p *models.Posterior, spec *models.Spec) *models.State {
	s.Reals = map[string][]float64{}
	for _, rs := range spec.Reals {
		if rp, ok := p.Reals[rs.Name]; ok {
			s.Reals[rs.Name] = rp.Mean
		} else {
			s.Reals[rs.Name] = make([]float64, rs.Size())
		}
	}
	return s
}

// bestDraw returns the largest J over the distinct permutation draws of an
// MCMC posterior, each scored with its real sites at the posterior means
// as the starting point of their optimisation.
func bestDraw(sc *models.Scorer, p *models.Posterior) (float64, error) {
	spec := sc.Spec()
	seen := map[string]bool{}
	best := math.Inf(-1)
	nd := 0
	for _, pp := range p.Perms {
		nd = len(pp.Draws)
	}
	for d := range nd {
		s := &models.State{Perms: map[string][]perm.Perm{}}
		key := ""
		for _, ps := range spec.Perms {
			s.Perms[ps.Name] = p.Perms[ps.Name].Draws[d]
			key += fmt.Sprint(p.Perms[ps.Name].Draws[d])
		}
		if seen[key] {
			continue
		}
		seen[key] = true
		j, err := sc.LogJoint(withReals(s, p, spec))
		if err != nil {
			return 0, err
		}
		best = math.Max(best, j)
	}
	return best, nil
}
