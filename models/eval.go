package models

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/permlab/permlab/ad"
)

// HardSample records the values of s on t as a Sample with K = 1: every
// permutation as a one-hot (1, B, N, N) constant, every real site as a
// constant, except the sites named in vars, which become differentiable
// leaves (HMC reads their gradient with Var.Grad). It returns the sample and
// the leaves by name.
func HardSample(t *ad.Tape, spec *Spec, s *State, vars ...string) (*Sample, map[string]*ad.Var, error) {
	z := NewSample(t, spec, 1, true)
	leaves := make(map[string]*ad.Var, len(vars))
	isVar := make(map[string]bool, len(vars))
	for _, v := range vars {
		isVar[v] = true
	}
	for _, ps := range spec.Perms {
		perms, ok := s.Perms[ps.Name]
		if !ok || len(perms) != ps.B() {
			return nil, nil, fmt.Errorf("models: state has %d permutations for site %q, want %d", len(perms), ps.Name, ps.B())
		}
		n := ps.N
		data := t.Alloc(ps.B() * n * n)
		for b, p := range perms {
			if len(p) != n {
				return nil, nil, fmt.Errorf("models: state: site %q permutation %d has size %d, want %d", ps.Name, b, len(p), n)
			}
			for i, j := range p {
				data[b*n*n+i*n+j] = 1
			}
		}
		z.Set(ps.Name, t.Const(&ad.Tensor{Shape: []int{1, ps.B(), n, n}, Data: data}))
	}
	for _, rs := range spec.Reals {
		x, ok := s.Reals[rs.Name]
		if !ok || len(x) != rs.Size() {
			return nil, nil, fmt.Errorf("models: state has %d values for real site %q, want %d", len(x), rs.Name, rs.Size())
		}
		data := t.Alloc(len(x))
		copy(data, x)
		ten := &ad.Tensor{Shape: append([]int{1}, rs.Shape...), Data: data}
		var v *ad.Var
		if isVar[rs.Name] {
			v = t.Variable(ten)
			leaves[rs.Name] = v
		} else {
			v = t.Const(ten)
		}
		z.Set(rs.Name, v)
	}
	return z, leaves, t.Err()
}

// LogLikState returns log p(y | s) for an exact state: through the model's
// StateLogLiker fast path when it has one, otherwise by evaluating LogLik on
// one-hot values on t (which is reset first).
func LogLikState(m Model, spec *Spec, t *ad.Tape, s *State) (float64, error) {
	if f, ok := m.(StateLogLiker); ok {
		return f.LogLikState(s)
	}
	return logLikTape(m, spec, t, s)
}

func logLikTape(m Model, spec *Spec, t *ad.Tape, s *State) (float64, error) {
	t.Reset()
	z, _, err := HardSample(t, spec, s)
	if err != nil {
		return 0, err
	}
	ll := m.LogLik(t, z)
	if err := t.Err(); err != nil {
		return 0, err
	}
	if ll == nil || ll.Size() != 1 {
		return 0, fmt.Errorf("models: LogLik returned %v values for K = 1", sizeOf(ll))
	}
	v := ll.Item()
	if math.IsNaN(v) {
		return 0, fmt.Errorf("models: LogLik is NaN")
	}
	return v, nil
}

func sizeOf(v *ad.Var) int {
	if v == nil {
		return 0
	}
	return v.Size()
}

// LogPrior returns log p(s) up to a constant: the real sites' prior densities
// plus the permutation priors' masses. It returns an error for a permutation
// site whose prior is not tractable, or a permutation its mask forbids.
func LogPrior(spec *Spec, s *State) (float64, error) {
	lp, err := logPermPrior(spec, s)
	if err != nil || math.IsInf(lp, -1) {
		return lp, err
	}
	for _, rs := range spec.Reals {
		lp += rs.Prior.LogProb(s.Reals[rs.Name])
	}
	return lp, nil
}

// logPermPrior returns the permutation sites' part of LogPrior.
func logPermPrior(spec *Spec, s *State) (float64, error) {
	lp := 0.0
	for _, ps := range spec.Perms {
		prior := ps.Prior
		if prior == nil {
			prior = UniformPerm{}
		}
		if !prior.Tractable() {
			return 0, fmt.Errorf("models: site %q: prior %v has no tractable mass", ps.Name, prior)
		}
		for b, p := range s.Perms[ps.Name] {
			if !ps.Masks[b].Admits(p) {
				return math.Inf(-1), nil
			}
			lp += prior.LogMass(p)
		}
	}
	return lp, nil
}

// CheckFastPaths compares the model's fast paths (StateLogLiker,
// SwapDeltaer, SwapPreparer) with the generic evaluation of LogLik on
// one-hot values at trials random states and swaps, and returns an error
// describing the first disagreement beyond tol (relative to max(1,
// |value|)). A prepared swap delta is checked over several swaps of one
// preparation, each applied to the state before the next, as a swap
// sampler applies the swaps it accepts. Model authors call it in their
// tests; it is how "the value MCMC sees is the value VI differentiates" is
// kept true.
func CheckFastPaths(m Model, trials int, seed uint64, tol float64) error {
	spec, err := Check(m)
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(seed, 0xfa57))
	t := ad.NewTape()
	fast, hasFast := m.(StateLogLiker)
	sd, hasSwap := m.(SwapDeltaer)
	prep, hasPrep := m.(SwapPreparer)
	close := func(a, b float64) bool { return math.Abs(a-b) <= tol*math.Max(1, math.Abs(b)) }
	for trial := range trials {
		s, err := NewState(spec, rng)
		if err != nil {
			return err
		}
		base, err := logLikTape(m, spec, t, s)
		if err != nil {
			return err
		}
		if hasFast {
			v, err := fast.LogLikState(s)
			if err != nil {
				return fmt.Errorf("models: LogLikState: %w", err)
			}
			if !close(v, base) {
				return fmt.Errorf("models: trial %d: LogLikState = %.12g, LogLik on one-hot values = %.12g", trial, v, base)
			}
		}
		if hasSwap {
			if err := checkSwapDelta(m, spec, t, sd, s, base, rng, trial, close); err != nil {
				return err
			}
		}
		if hasPrep {
			if err := checkPreparedSwap(m, spec, t, prep, s, base, rng, trial, close); err != nil {
				return err
			}
		}
	}
	return nil
}

// freeSwap returns two free rows i ≠ j of permutation b of ps whose swap
// the mask admits in state s, or ok false when the draw gives none.
func freeSwap(ps *PermSpec, s *State, b int, rng *rand.Rand) (i, j int, ok bool) {
	var free []int
	for r, f := range ps.Free[b] {
		if f {
			free = append(free, r)
		}
	}
	if len(free) < 2 {
		return 0, 0, false
	}
	i, j = free[rng.IntN(len(free))], free[rng.IntN(len(free))]
	if q := s.Perms[ps.Name][b]; i == j || !ps.Masks[b].Allowed(i, q[j]) || !ps.Masks[b].Allowed(j, q[i]) {
		return 0, 0, false // the swap leaves the support: no engine proposes it
	}
	return i, j, true
}

// checkSwapDelta compares SwapDelta at state s (with log-likelihood base)
// with the difference of LogLik, for one swap per permutation site.
func checkSwapDelta(m Model, spec *Spec, t *ad.Tape, sd SwapDeltaer, s *State, base float64, rng *rand.Rand, trial int, close func(a, b float64) bool) error {
	for _, ps := range spec.Perms {
		b := rng.IntN(ps.B())
		i, j, ok := freeSwap(ps, s, b, rng)
		if !ok {
			continue
		}
		d, err := sd.SwapDelta(s, ps.Name, b, i, j)
		if err != nil {
			return fmt.Errorf("models: SwapDelta: %w", err)
		}
		s2 := s.Clone()
		p := s2.Perms[ps.Name][b]
		p[i], p[j] = p[j], p[i]
		after, err := logLikTape(m, spec, t, s2)
		if err != nil {
			return err
		}
		if !close(d, after-base) {
			return fmt.Errorf("models: trial %d: SwapDelta(%q, %d, %d, %d) = %.12g, difference of LogLik = %.12g", trial, ps.Name, b, i, j, d, after-base)
		}
	}
	return nil
}

// preparedSwaps is the number of swaps CheckFastPaths draws per preparation.
const preparedSwaps = 4

// checkPreparedSwap prepares a swap delta for one permutation per
// permutation site of s (with log-likelihood base) and compares it with the
// difference of LogLik over preparedSwaps swaps, applying each to s as a
// sampler applies the swaps it accepts. It changes s.
func checkPreparedSwap(m Model, spec *Spec, t *ad.Tape, prep SwapPreparer, s *State, base float64, rng *rand.Rand, trial int, close func(a, b float64) bool) error {
	for _, ps := range spec.Perms {
		b := rng.IntN(ps.B())
		delta, err := prep.PrepareSwap(s, ps.Name, b)
		if err != nil {
			return fmt.Errorf("models: PrepareSwap: %w", err)
		}
		if delta == nil {
			return fmt.Errorf("models: PrepareSwap(%q, %d) returned a nil function", ps.Name, b)
		}
		p := s.Perms[ps.Name][b]
		for k := range preparedSwaps {
			i, j, ok := freeSwap(ps, s, b, rng)
			if !ok {
				continue
			}
			before := p.Clone()
			d := delta(p, i, j)
			if !slices.Equal(p, before) {
				return fmt.Errorf("models: trial %d: the function of PrepareSwap(%q, %d) changed the permutation", trial, ps.Name, b)
			}
			p[i], p[j] = p[j], p[i]
			after, err := logLikTape(m, spec, t, s)
			if err != nil {
				return err
			}
			if !close(d, after-base) {
				return fmt.Errorf("models: trial %d: PrepareSwap(%q, %d), swap %d of rows %d and %d: %.12g, difference of LogLik = %.12g", trial, ps.Name, b, k, i, j, d, after-base)
			}
			base = after
		}
	}
	return nil
}
