package mcmc

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/perm"
)

// TestRunModelInits: chain c starts from Inits[c mod len(Inits)]. Two
// isolated states, far apart in swaps and 200 nats above every other
// permutation, with swaps only and no tempering, keep every chain where it
// started, so the draws show the mapping.
func TestRunModelInits(t *testing.T) {
	a, b := perm.Perm{0, 1, 2, 3, 4}, perm.Perm{4, 3, 2, 1, 0}
	m := scoredPerm{n: 5, score: func(p perm.Perm) float64 {
		if p.Equal(a) || p.Equal(b) {
			return 0
		}
		return -200
	}}
	state := func(p perm.Perm) *models.State { return &models.State{Perms: map[string][]perm.Perm{"P": {p}}} }
	o := ModelOptions{Seed: 1, Chains: 3, Burn: 10, Draws: 20, Temperatures: 1, BlockMoves: -1, Inits: []*models.State{state(a), state(b)}}
	res, err := RunModel(context.Background(), m, o)
	require.NoError(t, err)
	draws := res.Posterior.Perms["P"].Draws
	require.Len(t, draws, 3*20)
	for c, want := range []perm.Perm{a, b, a} {
		for d := range 20 {
			require.Equal(t, want, draws[c*20+d][0], "chain %d draw %d", c, d)
		}
	}
	require.Contains(t, res.Posterior.Notes[0], "2 given states (Inits")

	for name, bad := range map[string]ModelOptions{
		"both":      {Init: state(a), Inits: []*models.State{state(b)}},
		"nil":       {Inits: []*models.State{state(a), nil}},
		"forbidden": {Inits: []*models.State{state(a), state(perm.Perm{0, 0, 1, 2, 3})}},
		"unknown":   {Inits: []*models.State{{Perms: map[string][]perm.Perm{"Q": {a}}}}},
	} {
		_, err := RunModel(context.Background(), m, bad)
		require.Error(t, err, name)
		if name != "both" {
			require.ErrorContains(t, err, "Inits[", name)
		}
	}
}
