package models

import (
	"strings"
	"testing"

	"github.com/permlab/permlab/perm"
)

// preparedMatch adds the SwapPreparer fast path to pointMatch with its
// shift c: the prepared function reads c once, at preparation. The flags
// plant the mistakes CheckFastPaths must catch.
type preparedMatch struct {
	pointMatch
	stale  bool // the function reads the permutation as it was prepared
	mutate bool // the function leaves the swap applied
}

func (m *preparedMatch) PrepareSwap(s *State, site string, b int) (func(p perm.Perm, i, k int) float64, error) {
	c := s.Reals["c"][0]
	prepared := s.Perms[site][b].Clone()
	sq := func(r, col int) float64 { d := m.ref[col] + c - m.obs[r]; return -0.5 * d * d / (m.s * m.s) }
	return func(p perm.Perm, i, k int) float64 {
		if m.stale {
			p = prepared
		}
		d := sq(i, p[k]) + sq(k, p[i]) - sq(i, p[i]) - sq(k, p[k])
		if m.mutate {
			p[i], p[k] = p[k], p[i]
		}
		return d
	}, nil
}

func TestCheckFastPathsPreparedSwap(t *testing.T) {
	m := &preparedMatch{pointMatch: *newPointMatch(6, 3)}
	m.shift = true
	if err := CheckFastPaths(m, 20, 1, 1e-12); err != nil {
		t.Errorf("a correct prepared swap rejected: %v", err)
	}
	// Over one swap a stale permutation is right; over several it is not.
	m.stale = true
	if err := CheckFastPaths(m, 20, 1, 1e-9); err == nil || !strings.Contains(err.Error(), "PrepareSwap") {
		t.Errorf("a prepared swap that ignores the accepted swaps passed: %v", err)
	}
	m.stale, m.mutate = false, true
	if err := CheckFastPaths(m, 20, 1, 1e-9); err == nil || !strings.Contains(err.Error(), "changed the permutation") {
		t.Errorf("a prepared swap that changes the permutation passed: %v", err)
	}
}
