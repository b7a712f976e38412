package models

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/perm"
)

// Model is a Bayesian model with latent permutations, written once for
// every engine. It is an ordinary Go type holding its data.
type Model interface {
	// Sites declares the latent variables with their supports and priors.
	// Engines call it once, at set-up, and validate it with Check.
	Sites() []Site
	// LogLik returns log p(y | z) for each of the z.K() samples, as a Var of
	// shape (K) (a scalar is accepted when K = 1). Read the sites with
	// z.Perm and z.Real. The same code runs on relaxed permutation matrices
	// (variational inference) and on exact one-hot ones (MCMC, Exact).
	LogLik(t *ad.Tape, z *Sample) *ad.Var
}

// Sample holds the values of a model's sites for K joint samples, as Vars on
// one tape: a permutation site has shape (K, B, N, N), a real site (K,
// Shape...). Engines fill it with Set; models read it with Perm and Real.
type Sample struct {
	t    *ad.Tape
	spec *Spec
	k    int
	hard bool
	vals map[string]*ad.Var

	sparse map[string]*ad.Var   // sparse-layout values (SetSparse)
	parts  map[string][]*ad.Var // PermSparse's per-permutation views
}

// NewSample returns an empty sample of k draws of the sites in spec on t.
// hard records whether permutation values are exact one-hot matrices.
func NewSample(t *ad.Tape, spec *Spec, k int, hard bool) *Sample {
	return &Sample{t: t, spec: spec, k: k, hard: hard, vals: make(map[string]*ad.Var, len(spec.Sites))}
}

// K returns the number of samples.
func (z *Sample) K() int { return z.k }

// Tape returns the tape the values live on.
func (z *Sample) Tape() *ad.Tape { return z.t }

// Hard reports whether permutation sites hold exact one-hot matrices (MCMC,
// Exact) rather than relaxed ones (VI).
func (z *Sample) Hard() bool { return z.hard }

// Set stores the value of site name. It records an error on the tape if the
// site is unknown or the shape is not the declared one.
func (z *Sample) Set(name string, v *ad.Var) {
	site, ok := z.spec.Lookup(name)
	if !ok {
		z.t.Fail(fmt.Errorf("models: Sample.Set: unknown site %q (sites: %v)", name, z.spec.Names()))
		return
	}
	if v == nil {
		z.t.Fail(fmt.Errorf("models: Sample.Set: nil value for site %q", name))
		return
	}
	if want := z.shapeOf(site); !slices.Equal(v.Shape(), want) {
		z.t.Fail(fmt.Errorf("models: Sample.Set: site %q has shape %v, want %v", name, v.Shape(), want))
		return
	}
	z.vals[name] = v
	delete(z.sparse, name)
	delete(z.parts, name)
}

func (z *Sample) shapeOf(s Site) []int {
	switch s := s.(type) {
	case *PermSite:
		return []int{z.k, s.B(), s.N, s.N}
	case *RealSite:
		return append([]int{z.k}, s.Shape...)
	}
	return nil
}

// Perm returns the value of permutation site name, shape (K, B, N, N). An
// unknown name, a real site or a missing value is recorded as an error on
// the tape, and the returned Var is the tape's dead value, so that the
// model's code needs no error checks and the engine reports the mistake.
// A site set in the sparse layout (SetSparse) is scattered into a dense
// value on the first call, O(K·B·N²); see PermSparse for a model that
// should scale with the candidates instead.
func (z *Sample) Perm(name string) *ad.Var { return z.get(name, true) }

// Real returns the value of real site name, shape (K, Shape...), with the
// same error handling as Perm.
func (z *Sample) Real(name string) *ad.Var { return z.get(name, false) }

func (z *Sample) get(name string, isPerm bool) *ad.Var {
	site, ok := z.spec.Lookup(name)
	if !ok {
		return z.fail(fmt.Errorf("models: unknown site %q (sites: %v)", name, z.spec.Names()))
	}
	if _, p := site.(*PermSite); p != isPerm {
		kind := "a real site"
		if p {
			kind = "a permutation site"
		}
		return z.fail(fmt.Errorf("models: site %q is %s", name, kind))
	}
	v, ok := z.vals[name]
	if !ok {
		sv, sparse := z.sparse[name]
		if !sparse {
			return z.fail(fmt.Errorf("models: site %q has no value in this sample", name))
		}
		v = z.densePerm(z.spec.permSpec(name), sv)
		z.vals[name] = v
	}
	return v
}

func (z *Sample) fail(err error) *ad.Var {
	z.t.Fail(err)
	return ad.Neg(z.t.ConstScalar(math.NaN())) // the tape's dead value
}

// State is one exact value of every site: the currency of MCMC and exact
// enumeration. Perms[name][b] is permutation b of a permutation site;
// Reals[name] the row-major coordinates of a real site.
type State struct {
	Perms map[string][]perm.Perm
	Reals map[string][]float64
}

// NewState returns a state of spec with identity-free defaults: every
// permutation set to a permutation its mask admits (found by assignment on
// the mask) and every real coordinate drawn from its prior.
func NewState(spec *Spec, rng *rand.Rand) (*State, error) {
	s := &State{Perms: map[string][]perm.Perm{}, Reals: map[string][]float64{}}
	for _, ps := range spec.Perms {
		ps := ps
		perms := make([]perm.Perm, ps.B())
		for b := range perms {
			p, err := RandomAdmitted(ps.Masks[b], rng)
			if err != nil {
				return nil, fmt.Errorf("models: NewState: site %q: %w", ps.Name, err)
			}
			perms[b] = p
		}
		s.Perms[ps.Name] = perms
	}
	for _, rs := range spec.Reals {
		x := make([]float64, rs.Size())
		rs.Prior.Rand(x, rng)
		s.Reals[rs.Name] = x
	}
	return s, nil
}

// Clone returns a deep copy of s.
func (s *State) Clone() *State {
	c := &State{Perms: make(map[string][]perm.Perm, len(s.Perms)), Reals: make(map[string][]float64, len(s.Reals))}
	for k, ps := range s.Perms {
		cp := make([]perm.Perm, len(ps))
		for b, p := range ps {
			cp[b] = p.Clone()
		}
		c.Perms[k] = cp
	}
	for k, x := range s.Reals {
		c.Reals[k] = slices.Clone(x)
	}
	return c
}

// RandomAdmitted returns a permutation admitted by mask, random in the sense
// that rows are matched in a random order to random free columns with
// backtracking by augmenting paths. It is a starting point for chains, not a
// uniform draw. A nil mask gives a uniform random permutation.
func RandomAdmitted(mask *perm.Mask, rng *rand.Rand) (perm.Perm, error) {
	if mask == nil {
		return nil, fmt.Errorf("models: RandomAdmitted: nil mask")
	}
	n := mask.Size()
	rows := make([][]int, n)
	for i := range rows {
		r := mask.Row(i)
		rng.Shuffle(len(r), func(a, b int) { r[a], r[b] = r[b], r[a] })
		rows[i] = r
	}
	match, ok := perfectMatching(rows, rng.Perm(n))
	if !ok {
		return nil, fmt.Errorf("models: the mask admits no permutation")
	}
	p := make(perm.Perm, n)
	for j, i := range match {
		p[i] = j
	}
	return p, nil
}

// The interfaces below are optional fast paths. Engines find them by type
// assertion, as io.Copy finds io.WriterTo, and fall back to evaluating
// LogLik on one-hot values when a model does not implement them. A fast
// path must agree with LogLik; CheckFastPaths tests that.

// StateLogLiker evaluates log p(y | s) for an exact state without a tape.
type StateLogLiker interface {
	LogLikState(s *State) (float64, error)
}

// SwapDeltaer computes the change of log p(y | s) when rows i and j of
// permutation b of site exchange their columns, usually in far less time
// than two evaluations. It must not modify s.
type SwapDeltaer interface {
	SwapDelta(s *State, site string, b, i, j int) (float64, error)
}

// Conjugate is implemented by models that can draw a real site exactly from
// its full conditional p(site | everything else, y), a Gibbs update (for
// example Gaussian regression rows). MCMC uses it for the sites it names
// instead of HMC.
type Conjugate interface {
	ConjugateSites() []string
	SampleConditional(rng *rand.Rand, s *State, site string) error
}

// CollapsedLikelihood is implemented by models that can integrate some
// real sites out analytically: the part of Collapser that evaluates the
// collapsed likelihood, and all that Exact asks of a model to enumerate it
// with those sites integrated out.
type CollapsedLikelihood interface {
	// CollapsedSites names the real sites integrated out.
	CollapsedSites() []string
	// CollapsedLogLik returns log ∫ p(y | s, c) p(c) dc over the collapsed
	// sites c (their priors included), for the other sites' values in s.
	CollapsedLogLik(s *State) (float64, error)
}

// Collapser is implemented by models that can integrate some real sites out
// analytically. MCMC then moves the permutations under the collapsed
// likelihood p(y | perms, other sites), which removes the strong coupling
// that traps a sampler alternating between a permutation and a regression
// coefficient, and draws the collapsed sites afterwards from their
// conditional. Exact uses only its CollapsedLikelihood part.
type Collapser interface {
	CollapsedLikelihood
	// SampleCollapsed overwrites the collapsed sites in s with a draw from
	// p(c | y, rest of s).
	SampleCollapsed(rng *rand.Rand, s *State) error
}
