package main

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Gumbel-Sinkhorn VI against the exact posterior. Reverse-KL variational
// inference with a factorised (Gumbel-space mean-field) family is
// mode-seeking: on a posterior that is concentrated it must find the MAP and
// match the marginals; on one split between a few permutations it must lock
// onto one of the main modes rather than something in between.
func TestVIMatchesExactPosterior(t *testing.T) {
	cfg := DefaultVIConfig()
	cfg.Steps = 1000
	cfg.Samples = 5000
	cfg.Tau, cfg.TauPrior = 0.5, 0.5
	var concentrated int
	sigmas := []float64{0.05, 0.08}
	if testing.Short() {
		sigmas = sigmas[:1]
	}
	for _, sigma := range sigmas {
		for _, n := range []int{5, 6, 7, 8} {
			for seed := uint64(1); seed <= 4; seed++ {
				pr, err := Generate(Config{N: n, Sigma: sigma, Seed: seed})
				require.NoError(t, err)
				ex, err := pr.Exact()
				require.NoError(t, err)
				q, err := pr.RunVI(context.Background(), cfg)
				require.NoError(t, err)
				pMAP := math.Exp(ex.MAPLogDensity - ex.LogZ)
				modeLD, err := pr.LogJoint(q.Mode)
				require.NoError(t, err)
				pMode := math.Exp(modeLD - ex.LogZ)
				tv := MaxRowTV(q.Marginals, ex.Marginals)
				t.Logf("σ=%g n=%d seed=%d P(MAP)=%.3f P(mode of q)=%.3f max row TV=%.3f", sigma, n, seed, pMAP, pMode, tv)
				// The mode of q is one of the main modes of the posterior.
				assert.GreaterOrEqual(t, pMode, 0.5*pMAP, "n=%d seed=%d", n, seed)
				if pMAP >= 0.9 {
					concentrated++
					assert.True(t, q.Mode.Equal(ex.MAP), "n=%d seed=%d: mode %v, MAP %v", n, seed, q.Mode, ex.MAP)
					// Sampling error of 5000 hard samples is below 0.01 per
					// entry; the rest is the approximation.
					assert.Less(t, tv, 0.1, "n=%d seed=%d", n, seed)
				}
			}
		}
	}
	require.GreaterOrEqual(t, concentrated, 4, "enough concentrated cases to test")
}
