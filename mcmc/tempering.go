package mcmc

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// GeometricLadder returns k inverse temperatures spaced geometrically from 1
// down to betaMin: β_j = betaMin^{j/(k-1)}, j = 0, …, k-1. A single level is
// the ladder {1}.
//
// Geometric spacing keeps the ratio of adjacent β constant. For a target
// whose log-likelihood L has roughly constant heat capacity (Var_β(L) ∝ 1/β²,
// as for a Gaussian-like likelihood), the expected log acceptance of an
// exchange between β and rβ depends only on r, so every adjacent pair then
// exchanges at about the same rate.
func GeometricLadder(k int, betaMin float64) ([]float64, error) {
	if k < 1 {
		return nil, fmt.Errorf("mcmc: GeometricLadder: need at least 1 level, got %d", k)
	}
	if !(betaMin > 0 && betaMin <= 1) {
		return nil, fmt.Errorf("mcmc: GeometricLadder: betaMin must be in (0, 1], got %v", betaMin)
	}
	out := make([]float64, k)
	out[0] = 1
	for j := 1; j < k; j++ {
		out[j] = math.Pow(betaMin, float64(j)/float64(k-1))
	}
	return out, nil
}

// checkLadder validates an explicit ladder: it must start at 1 and
// decrease strictly, staying in (0, 1].
func checkLadder(l []float64) error {
	if len(l) == 0 || l[0] != 1 {
		return fmt.Errorf("ladder must start at β = 1, got %v", l)
	}
	for j := 1; j < len(l); j++ {
		if !(l[j] > 0 && l[j] < l[j-1]) {
			return fmt.Errorf("ladder must decrease strictly and stay > 0, got %v", l)
		}
	}
	return nil
}

// exchangeAccept decides a replica exchange between the states at inverse
// temperatures bi > bj with log-likelihoods li and lj. The tempered targets
// are π_β(x) ∝ exp(β L(x)) p(x); exchanging the two states is a symmetric
// proposal on the product space, accepted with probability
//
//	min(1, π_bi(x_j) π_bj(x_i) / (π_bi(x_i) π_bj(x_j))) = min(1, exp((bi - bj)(lj - li))),
//
// the priors cancelling.
func exchangeAccept(rng *rand.Rand, bi, bj, li, lj float64) bool {
	logA := (bi - bj) * (lj - li)
	if math.IsNaN(logA) {
		return false
	}
	return logA >= 0 || math.Log(rng.Float64()) < logA
}
