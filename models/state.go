package models

import (
	"fmt"
	"maps"
	"math"
	"slices"
)

// CheckState validates a state of spec's sites given by a user, as an
// initial value or a candidate answer: every name a site of the right kind,
// B permutations of size N that the site's masks and fixed rows admit for a
// permutation site, Size() finite values for a real site. With allPerms
// every permutation site must have values; otherwise s may name only some
// sites. Errors start with what (for example "mcmc: RunModel: Init") and
// name the site.
func (spec *Spec) CheckState(what string, s *State, allPerms bool) error {
	if s == nil {
		return fmt.Errorf("%s is nil", what)
	}
	perms, reals := slices.Sorted(maps.Keys(s.Perms)), slices.Sorted(maps.Keys(s.Reals))
	if err := spec.CheckNames(what, slices.Concat(perms, reals)); err != nil {
		return err
	}
	for _, ps := range spec.Perms {
		if _, ok := s.Perms[ps.Name]; !ok && allPerms {
			return fmt.Errorf("%s has no value for permutation site %q", what, ps.Name)
		}
	}
	for _, n := range perms {
		ps := spec.permSpec(n)
		if ps == nil {
			return fmt.Errorf("%s.Perms names %q, which is a real site", what, n)
		}
		if len(s.Perms[n]) != ps.B() {
			return fmt.Errorf("%s: site %q has %d permutations, want %d", what, n, len(s.Perms[n]), ps.B())
		}
		for b, q := range s.Perms[n] {
			if len(q) != ps.N || q.Validate() != nil || !ps.Masks[b].Admits(q) {
				return fmt.Errorf("%s: site %q permutation %d (%v) is not a permutation of size %d that its mask and fixed rows admit", what, n, b, q, ps.N)
			}
		}
	}
	for _, n := range reals {
		site, _ := spec.Lookup(n)
		rs, ok := site.(*RealSite)
		if !ok {
			return fmt.Errorf("%s.Reals names %q, which is a permutation site", what, n)
		}
		x := s.Reals[n]
		if len(x) != rs.Size() || slices.ContainsFunc(x, func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }) {
			return fmt.Errorf("%s: site %q needs %d finite values, got %v", what, n, rs.Size(), x)
		}
	}
	return nil
}

// permSpec returns the permutation site called name, or nil.
func (spec *Spec) permSpec(name string) *PermSpec {
	for _, ps := range spec.Perms {
		if ps.Name == name {
			return ps
		}
	}
	return nil
}
