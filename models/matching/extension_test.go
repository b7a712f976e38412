package matching_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permlab/permlab/ad/optim"
	"github.com/permlab/permlab/dist"
	"github.com/permlab/permlab/mcmc"
	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/models/matching"
	"github.com/permlab/permlab/perm"
	"github.com/permlab/permlab/relax"
	"github.com/permlab/permlab/vi"
)

// This file tests the engines' extension points from outside the engine
// packages, as a model author would use them: a guide of the model's own
// (vi.GuideProvider) and a move of its own (mcmc.MoveProvider).

// dataGuide is a Gumbel-Sinkhorn guide whose logits start at the model's
// own assignment logits X instead of random ones: a guide initialised from
// the data.
type dataGuide struct{ *vi.GumbelSinkhorn }

func (g dataGuide) Draw(rng *rand.Rand) ([]perm.Perm, error) {
	p, err := dist.GumbelMatching{X: g.Logits(0)}.Rand(rng)
	return []perm.Perm{p}, err
}

func (g dataGuide) Mode() ([]perm.Perm, error) {
	p, err := relax.Matching(g.Logits(0))
	return []perm.Perm{p}, err
}

// guided is point matching with the data-initialised guide; wrongName
// makes it return a guide named after another site.
type guided struct {
	*matching.Problem
	wrongName bool
}

func (m guided) Guide(site models.Site, rng *rand.Rand) (vi.Guide, error) {
	name := site.SiteName()
	if m.wrongName {
		name = "Q"
	}
	n := m.N()
	g, err := vi.NewGumbelSinkhorn(name, 1, n, nil, optim.Geometric{Start: 1, End: 0.1, Steps: 2000}, 0, 20)
	if err != nil {
		return nil, err
	}
	x := m.Logits()
	for i := range n {
		for j := range n {
			g.X.Value.Data[i*n+j] = x.At(i, j) + 0.01*rng.NormFloat64()
		}
	}
	return dataGuide{g}, nil
}

func TestModelSuppliesItsGuide(t *testing.T) {
	pr, err := matching.Generate(matching.Config{N: 6, Sigma: 0.1, Seed: 2})
	require.NoError(t, err)
	ex, err := models.Exact(pr)
	require.NoError(t, err)
	var traced int
	res, err := vi.FitModel(context.Background(), guided{Problem: pr}, vi.ModelOptions{Seed: 1, Trace: func(vi.TracePoint) { traced++ }})
	require.NoError(t, err)
	assert.Contains(t, res.Posterior.Method, "dataGuide")
	assert.Contains(t, strings.Join(res.Posterior.Notes, "\n"), "GuideProvider")
	_, ok := res.Guides[0].(dataGuide)
	assert.True(t, ok, "the fit used the model's guide")
	assert.Equal(t, ex.MAP.Perms[matching.Site], res.Posterior.Perms[matching.Site].Mode)
	assert.Equal(t, 20, traced, "at steps 100, 200, …, 2000")

	_, err = vi.FitModel(context.Background(), guided{Problem: pr, wrongName: true}, vi.ModelOptions{Seed: 1, Steps: 10})
	require.ErrorContains(t, err, `the guide of site "P" is named "Q"`)
}

// reversal proposes to reverse a random segment p[i..j] of the
// permutation; the same segment undoes it, so the proposal is symmetric.
type reversal struct{ broken bool }

func (r *reversal) Propose(rng *rand.Rand, p perm.Perm) (float64, error) {
	if r.broken {
		return 0, errors.New("broken move")
	}
	i, j := rng.IntN(len(p)), rng.IntN(len(p))
	if i > j {
		i, j = j, i
	}
	for ; i < j; i, j = i+1, j-1 {
		p[i], p[j] = p[j], p[i]
	}
	return 0, nil
}

type reversing struct {
	*matching.Problem
	broken bool
}

func (m reversing) Moves(site string, b int) []mcmc.PermMove {
	return []mcmc.PermMove{&reversal{broken: m.broken}}
}

func TestModelSuppliesItsMove(t *testing.T) {
	pr, err := matching.Generate(matching.Config{N: 6, Sigma: 0.15, Radius: 0.7, Seed: 3})
	require.NoError(t, err)
	ex, err := models.Exact(pr)
	require.NoError(t, err)
	res, err := mcmc.RunModel(context.Background(), reversing{Problem: pr}, mcmc.ModelOptions{Seed: 1, BlockMoves: -1})
	require.NoError(t, err)
	tv, err := res.Posterior.Perms[matching.Site].MaxRowTV(ex.Perms[matching.Site])
	require.NoError(t, err)
	assert.Less(t, tv, 0.05, "swaps and reversals target the posterior")
	var moved mcmc.StageStats
	for _, st := range res.Acceptance {
		if st.Name == "move P 0" {
			moved = st
		}
	}
	assert.Positive(t, moved.Steps)
	assert.Positive(t, moved.Accepted, "some reversals within the mask are accepted")

	_, err = mcmc.RunModel(context.Background(), reversing{Problem: pr, broken: true}, mcmc.ModelOptions{Seed: 1, Burn: 10, Draws: 10})
	require.ErrorContains(t, err, "broken move")
}
