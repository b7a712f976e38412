package models

import (
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/permlab/permlab/perm"
	"github.com/permlab/permlab/relax"
)

// Site is a latent variable of a model: a *PermSite or a *RealSite.
type Site interface {
	// SiteName returns the name under which the site's values appear in a
	// Sample, a State and a Posterior.
	SiteName() string
	site()
}

// PermSite declares Batch independent latent permutations of size N, each
// optionally restricted by a candidate mask and with some rows fixed.
//
// In a Sample the site's value has shape (K, Batch, N, N): for each of the K
// samples and each permutation b, a matrix P with P[i][j] the weight of
// "row i goes to column j". An engine that works with exact permutations
// (MCMC, Exact) passes one-hot matrices; variational inference passes
// relaxed, doubly stochastic ones. The likelihood is written once for both.
type PermSite struct {
	Name  string
	N     int // size (>= 1)
	Batch int // number of independent permutations; 0 means 1

	// Masks, if not nil, holds one N×N candidate mask per permutation
	// (len Batch), or a single mask shared by all of them: row i may go to
	// column j only if the mask allows (i, j).
	Masks []*perm.Mask

	// Fixed, if not nil, holds per permutation (len Batch, or 1 shared) a
	// slice of length N: Fixed[b][i] = j >= 0 pins row i to column j (a
	// known assignment), -1 leaves row i free.
	Fixed [][]int

	// Prior is the prior over each permutation; nil means Uniform.
	Prior PermPrior
}

// SiteName implements Site.
func (s *PermSite) SiteName() string { return s.Name }
func (*PermSite) site()              {}

// B returns the number of permutations, Batch or 1 when Batch is 0.
func (s *PermSite) B() int { return max(s.Batch, 1) }

// RealSite declares a real-valued latent tensor of the given shape with
// independent prior coordinates. In a Sample its value has shape
// (K, Shape...).
type RealSite struct {
	Name  string
	Shape []int     // dimensions, each >= 1; nil or empty means a scalar
	Prior RealPrior // required
}

// SiteName implements Site.
func (s *RealSite) SiteName() string { return s.Name }
func (*RealSite) site()              {}

// Size returns the number of scalar coordinates of the site.
func (s *RealSite) Size() int {
	n := 1
	for _, d := range s.Shape {
		n *= d
	}
	return n
}

// PermSpec is a validated permutation site with its constraints resolved:
// for every permutation b, Masks[b] is the effective mask (the declared mask
// with fixed rows pinned and their columns removed from every other row) and
// Free[b][i] reports whether row i may move.
type PermSpec struct {
	*PermSite
	Masks []*perm.Mask
	Free  [][]bool
	// Full reports whether every Masks[b] allows every pair (no constraint).
	Full bool

	patOnce sync.Once // builds pats (see Patterns)
	pats    []*relax.SparsePattern
	patOff  []int // patOff[b]: start of permutation b in the sparse layout
	patErr  error
}

// Spec is the validated site list of a model, the view that engines build
// their guides and kernels from. Sites keep their declaration order.
type Spec struct {
	Sites []Site
	Perms []*PermSpec
	Reals []*RealSite
	index map[string]Site
}

// Lookup returns the site with the given name.
func (s *Spec) Lookup(name string) (Site, bool) {
	x, ok := s.index[name]
	return x, ok
}

// Names returns the site names in declaration order.
func (s *Spec) Names() []string {
	out := make([]string, len(s.Sites))
	for i, x := range s.Sites {
		out[i] = x.SiteName()
	}
	return out
}

// CheckNames reports an error naming the first key of names that is not a
// site of the model. Engines call it on every by-name option (guides,
// kernels, initial values) so that a typo is an error at set-up.
func (s *Spec) CheckNames(what string, names []string) error {
	for _, n := range names {
		if _, ok := s.index[n]; !ok {
			return fmt.Errorf("models: %s names site %q, which the model does not declare (sites: %v)", what, n, s.Names())
		}
	}
	return nil
}

// Check validates the sites a model declares and resolves their constraints.
// Empty, duplicated or unknown-kind sites, bad shapes, masks of the wrong
// size, fixed rows outside their mask or pinned twice, constraints that admit
// no permutation, and missing or invalid priors are errors naming the site.
func Check(m Model) (*Spec, error) {
	if m == nil {
		return nil, errors.New("models: Check: nil model")
	}
	sites := m.Sites()
	if len(sites) == 0 {
		return nil, errors.New("models: Check: the model declares no latent sites")
	}
	return checkSites(sites, "models: Check: ", "site %q has unknown kind %T")
}

// checkSites validates a list of global sites (those of a Model, or the
// global sites of an Amortized model): each named once, and each a
// permutation or real site with a valid declaration. Its own errors start
// with prefix; a site of another kind is reported with the format other
// (arguments: the name and the site).
func checkSites(sites []Site, prefix, other string) (*Spec, error) {
	spec := &Spec{index: make(map[string]Site, len(sites))}
	for k, x := range sites {
		if x == nil {
			return nil, fmt.Errorf(prefix+"site %d is nil", k)
		}
		name := x.SiteName()
		if name == "" {
			return nil, fmt.Errorf(prefix+"site %d has no name", k)
		}
		if _, dup := spec.index[name]; dup {
			return nil, fmt.Errorf(prefix+"site %q declared twice", name)
		}
		spec.index[name] = x
		spec.Sites = append(spec.Sites, x)
		switch s := x.(type) {
		case *PermSite:
			ps, err := checkPerm(s)
			if err != nil {
				return nil, err
			}
			spec.Perms = append(spec.Perms, ps)
		case *RealSite:
			if err := checkReal(s); err != nil {
				return nil, err
			}
			spec.Reals = append(spec.Reals, s)
		default:
			return nil, fmt.Errorf(prefix+other, name, x)
		}
	}
	return spec, nil
}

func checkReal(s *RealSite) error {
	for _, d := range s.Shape {
		if d < 1 {
			return fmt.Errorf("models: site %q: shape %v has a dimension < 1", s.Name, s.Shape)
		}
	}
	if s.Prior == nil {
		return fmt.Errorf("models: site %q: no prior (use models.Normal{Sigma: 1}, for example)", s.Name)
	}
	if err := s.Prior.Validate(); err != nil {
		return fmt.Errorf("models: site %q: prior: %w", s.Name, err)
	}
	return nil
}

func checkPerm(s *PermSite) (*PermSpec, error) {
	if s.N < 1 {
		return nil, fmt.Errorf("models: site %q: N must be >= 1, got %d", s.Name, s.N)
	}
	if s.Batch < 0 {
		return nil, fmt.Errorf("models: site %q: Batch must be >= 0, got %d", s.Name, s.Batch)
	}
	b, n := s.B(), s.N
	if len(s.Masks) != 0 && len(s.Masks) != 1 && len(s.Masks) != b {
		return nil, fmt.Errorf("models: site %q: %d masks for %d permutations (want 0, 1 or %d)", s.Name, len(s.Masks), b, b)
	}
	if len(s.Fixed) != 0 && len(s.Fixed) != 1 && len(s.Fixed) != b {
		return nil, fmt.Errorf("models: site %q: %d fixed-row lists for %d permutations (want 0, 1 or %d)", s.Name, len(s.Fixed), b, b)
	}
	if s.Prior != nil {
		if err := s.Prior.Validate(n); err != nil {
			return nil, fmt.Errorf("models: site %q: prior: %w", s.Name, err)
		}
	}
	ps := &PermSpec{PermSite: s, Masks: make([]*perm.Mask, b), Free: make([][]bool, b), Full: true}
	for k := range b {
		var declared *perm.Mask
		if len(s.Masks) > 0 {
			declared = s.Masks[min(k, len(s.Masks)-1)]
			if declared == nil {
				return nil, fmt.Errorf("models: site %q: mask %d is nil", s.Name, k)
			}
			if declared.Size() != n {
				return nil, fmt.Errorf("models: site %q: mask %d is %d x %d, want %d x %d", s.Name, k, declared.Size(), declared.Size(), n, n)
			}
		}
		var fixed []int
		if len(s.Fixed) > 0 {
			fixed = s.Fixed[min(k, len(s.Fixed)-1)]
			if len(fixed) != n {
				return nil, fmt.Errorf("models: site %q: fixed rows of permutation %d have length %d, want %d", s.Name, k, len(fixed), n)
			}
		}
		m, free, full, err := resolve(n, declared, fixed)
		if err != nil {
			return nil, fmt.Errorf("models: site %q, permutation %d: %w", s.Name, k, err)
		}
		ps.Masks[k], ps.Free[k] = m, free
		ps.Full = ps.Full && full
	}
	return ps, nil
}

// resolve builds the effective mask of one permutation: fixed rows keep only
// their column, which no other row may take.
func resolve(n int, declared *perm.Mask, fixed []int) (*perm.Mask, []bool, bool, error) {
	var m *perm.Mask
	if declared != nil {
		m = declared.Clone()
	} else {
		m, _ = perm.FullMask(n) // n >= 1
	}
	free := make([]bool, n)
	for i := range free {
		free[i] = true
	}
	owner := make([]int, n)
	for j := range owner {
		owner[j] = -1
	}
	for i, j := range fixed {
		switch {
		case j == -1:
			continue
		case j < -1 || j >= n:
			return nil, nil, false, fmt.Errorf("row %d is fixed to column %d, outside [0, %d)", i, j, n)
		case !m.Allowed(i, j):
			return nil, nil, false, fmt.Errorf("row %d is fixed to column %d, which its mask forbids", i, j)
		case owner[j] >= 0:
			return nil, nil, false, fmt.Errorf("rows %d and %d are both fixed to column %d", owner[j], i, j)
		}
		owner[j] = i
		free[i] = false
	}
	for j, i := range owner {
		if i < 0 {
			continue
		}
		for r := range n {
			_ = m.Set(r, j, r == i) // in range
		}
		for c := range n {
			_ = m.Set(i, c, c == j)
		}
	}
	full := m.Count() == n*n
	if !full && !admitsSome(n, m) {
		return nil, nil, false, errors.New("the mask and fixed rows admit no permutation")
	}
	return m, free, full, nil
}

// admitsSome reports whether the mask admits a perfect matching.
func admitsSome(n int, m *perm.Mask) bool {
	rows := make([][]int, n)
	for i := range rows {
		rows[i] = m.Row(i)
	}
	_, ok := perfectMatching(rows, perm.Identity(n))
	return ok
}

// perfectMatching matches every row to one of its allowed columns by
// Kuhn's augmenting paths (O(n·|E|)), taking rows in the given order and
// trying each row's columns in the order listed. It returns match[column] =
// row, or false when no perfect matching exists.
func perfectMatching(rows [][]int, order []int) ([]int, bool) {
	n := len(rows)
	match := make([]int, n)
	for j := range match {
		match[j] = -1
	}
	seen := make([]bool, n)
	var try func(i int) bool
	try = func(i int) bool {
		for _, j := range rows[i] {
			if seen[j] {
				continue
			}
			seen[j] = true
			if match[j] < 0 || try(match[j]) {
				match[j] = i
				return true
			}
		}
		return false
	}
	for _, i := range order {
		clear(seen)
		if !try(i) {
			return nil, false
		}
	}
	return match, true
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
