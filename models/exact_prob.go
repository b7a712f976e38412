package models

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// LogProb returns the log of the exact posterior probability of the joint
// permutation state s: the permutations of every permutation site (real
// sites in s are ignored; the probability is marginal over them). A state
// that the masks or fixed rows forbid, or to which the likelihood gives
// zero, has probability 0 and LogProb −Inf, with no error. A nil state, a
// missing or unknown permutation site, a site with the wrong number of
// permutations, a permutation of the wrong size and a slice that is not a
// permutation are errors. It looks the state up among the enumerated
// weights, in O(Σ log(admitted permutations) · N).
func (r *ExactResult) LogProb(s *State) (float64, error) {
	if r == nil || r.logw == nil {
		return 0, errors.New("models: ExactResult.LogProb: the result holds no enumeration (use the result of Exact)")
	}
	if s == nil {
		return 0, errors.New("models: ExactResult.LogProb: nil state")
	}
	for name := range s.Perms {
		known := false
		for _, sl := range r.slots {
			known = known || sl.site.Name == name
		}
		if !known {
			return 0, fmt.Errorf("models: ExactResult.LogProb: the state has unknown permutation site %q", name)
		}
	}
	idx, forbidden := 0, false
	for _, sl := range r.slots {
		ps := sl.site
		perms, ok := s.Perms[ps.Name]
		if !ok {
			return 0, fmt.Errorf("models: ExactResult.LogProb: the state has no value for permutation site %q", ps.Name)
		}
		if len(perms) != ps.B() {
			return 0, fmt.Errorf("models: ExactResult.LogProb: the state has %d permutations for site %q, want %d", len(perms), ps.Name, ps.B())
		}
		p := perms[sl.b]
		if len(p) != ps.N {
			return 0, fmt.Errorf("models: ExactResult.LogProb: site %q permutation %d has size %d, want %d", ps.Name, sl.b, len(p), ps.N)
		}
		if err := p.Validate(); err != nil {
			return 0, fmt.Errorf("models: ExactResult.LogProb: site %q permutation %d: %w", ps.Name, sl.b, err)
		}
		k, found := slices.BinarySearchFunc(sl.perms, p, comparePerms)
		forbidden = forbidden || !found
		idx = idx*len(sl.perms) + k
	}
	if forbidden {
		return math.Inf(-1), nil
	}
	return r.logw[idx] - r.LogEvidence, nil
}

// Prob returns the exact posterior probability of the joint permutation
// state s, exp(LogProb(s)): 0 for a forbidden state, an error for a state
// of the wrong shape (see LogProb).
func (r *ExactResult) Prob(s *State) (float64, error) {
	lp, err := r.LogProb(s)
	if err != nil {
		return 0, err
	}
	return math.Exp(lp), nil
}
