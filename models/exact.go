package models

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/perm"
)

// MaxExactStates bounds the number of joint permutation states Exact
// enumerates (the product over permutation sites and batches of the
// admitted permutations): 2·10⁶ is seconds for a cheap likelihood.
const MaxExactStates = 2_000_000

// ExactResult is the exact posterior of a small model.
type ExactResult struct {
	*Posterior
	// LogEvidence is log Σ_s p(y | s) p(s) over the enumerated states, with
	// the uniform priors' constants dropped (so it is exact up to the log
	// of the number of admitted permutations of each uniform site).
	LogEvidence float64
	// States is the number of joint states enumerated.
	States int
	// MAP is the most probable joint state.
	MAP *State
}

// Exact computes the posterior of a model whose permutation sites are small
// by enumerating every admitted joint state: the ground truth against which
// tests and users check the engines. Permutation priors must be tractable.
// Real sites must be integrated out by the model's Collapser (Exact then
// reports only the permutation sites); a model with real sites and no
// Collapser is an error. The likelihood is evaluated with the model's fast
// paths when it has them, otherwise on one-hot values through LogLik.
func Exact(m Model) (*ExactResult, error) {
	spec, err := Check(m)
	if err != nil {
		return nil, err
	}
	col, isCol := m.(Collapser)
	if len(spec.Reals) > 0 {
		if !isCol {
			return nil, fmt.Errorf("models: Exact: the model has real sites (%s, …) and does not implement Collapser", spec.Reals[0].Name)
		}
		collapsed := col.CollapsedSites()
		for _, rs := range spec.Reals {
			if !slices.Contains(collapsed, rs.Name) {
				return nil, fmt.Errorf("models: Exact: real site %q is not collapsed; Exact enumerates permutations only", rs.Name)
			}
		}
		if err := spec.CheckNames("Collapser.CollapsedSites", collapsed); err != nil {
			return nil, err
		}
	}
	type slot struct {
		site  *PermSpec
		b     int
		perms []perm.Perm
	}
	var slots []slot
	total := 1
	for _, ps := range spec.Perms {
		prior := ps.Prior
		if prior == nil {
			prior = UniformPerm{}
		}
		if !prior.Tractable() {
			return nil, fmt.Errorf("models: Exact: site %q: prior %v has no tractable mass", ps.Name, prior)
		}
		for b := range ps.B() {
			var list []perm.Perm
			err := perm.Enumerate(ps.N, ps.Masks[b], func(p perm.Perm) error {
				list = append(list, p.Clone())
				if len(list) > MaxExactStates {
					return fmt.Errorf("more than %d admitted permutations", MaxExactStates)
				}
				return nil
			})
			if err != nil {
				return nil, fmt.Errorf("models: Exact: site %q permutation %d: %w", ps.Name, b, err)
			}
			total *= len(list)
			if total > MaxExactStates {
				return nil, fmt.Errorf("models: Exact: more than %d joint states to enumerate", MaxExactStates)
			}
			slots = append(slots, slot{ps, b, list})
		}
	}
	s := &State{Perms: map[string][]perm.Perm{}, Reals: map[string][]float64{}}
	for _, ps := range spec.Perms {
		s.Perms[ps.Name] = make([]perm.Perm, ps.B())
	}
	for _, rs := range spec.Reals {
		s.Reals[rs.Name] = make([]float64, rs.Size()) // unused by a Collapser
	}
	t := ad.NewTape()
	logw := make([]float64, 0, total)
	idx := make([]int, len(slots))
	best, bestIdx := math.Inf(-1), slices.Clone(idx)
	for {
		for k, sl := range slots {
			s.Perms[sl.site.Name][sl.b] = sl.perms[idx[k]]
		}
		var ll float64
		if isCol {
			ll, err = col.CollapsedLogLik(s)
		} else {
			ll, err = LogLikState(m, spec, t, s)
		}
		if err != nil {
			return nil, fmt.Errorf("models: Exact: %w", err)
		}
		// Only the permutations' prior: a Collapser's likelihood already
		// includes the priors of the real sites it integrates out.
		lp, err := logPermPrior(spec, s)
		if err != nil {
			return nil, fmt.Errorf("models: Exact: %w", err)
		}
		w := ll + lp
		if math.IsNaN(w) {
			return nil, fmt.Errorf("models: Exact: log weight is NaN at %v", s.Perms)
		}
		logw = append(logw, w)
		if w > best {
			best = w
			copy(bestIdx, idx)
		}
		// Advance the odometer, last slot fastest.
		k := len(idx) - 1
		for ; k >= 0; k-- {
			idx[k]++
			if idx[k] < len(slots[k].perms) {
				break
			}
			idx[k] = 0
		}
		if k < 0 {
			break
		}
	}
	if math.IsInf(best, -1) {
		return nil, fmt.Errorf("models: Exact: every state has zero probability")
	}
	z := 0.0
	for _, w := range logw {
		z += math.Exp(w - best)
	}
	logZ := best + math.Log(z)
	post := &Posterior{Method: "exact enumeration", Perms: map[string]*PermPosterior{}}
	marg := map[string][]*mat.Dense{}
	for _, ps := range spec.Perms {
		ms := make([]*mat.Dense, ps.B())
		for b := range ms {
			ms[b] = mat.NewDense(ps.N, ps.N, nil)
		}
		marg[ps.Name] = ms
	}
	clear(idx)
	for _, w := range logw {
		pr := math.Exp(w - logZ)
		for k, sl := range slots {
			raw := marg[sl.site.Name][sl.b].RawMatrix()
			for i, j := range sl.perms[idx[k]] {
				raw.Data[i*raw.Stride+j] += pr
			}
		}
		for k := len(idx) - 1; k >= 0; k-- {
			idx[k]++
			if idx[k] < len(slots[k].perms) {
				break
			}
			idx[k] = 0
		}
	}
	mapState := &State{Perms: map[string][]perm.Perm{}}
	for _, ps := range spec.Perms {
		pp := &PermPosterior{Marginals: marg[ps.Name], RHat: math.NaN(), ESS: math.NaN()}
		if err := pp.SetMode(ps.Masks); err != nil {
			return nil, fmt.Errorf("models: Exact: site %q: %w", ps.Name, err)
		}
		post.Perms[ps.Name] = pp
		mapState.Perms[ps.Name] = make([]perm.Perm, ps.B())
	}
	for k, sl := range slots {
		mapState.Perms[sl.site.Name][sl.b] = sl.perms[bestIdx[k]].Clone()
	}
	if len(spec.Reals) > 0 {
		post.Notes = append(post.Notes, "real sites were integrated out analytically (Collapser) and are not reported")
	}
	return &ExactResult{Posterior: post, LogEvidence: logZ, States: len(logw), MAP: mapState}, nil
}
