package perm

import (
	"errors"
	"fmt"
)

// MaxEnumerate is the largest size Enumerate accepts: 12! ≈ 4.8·10⁸
// permutations is already minutes of work, and 13! would be hours.
const MaxEnumerate = 12

// ErrStop may be returned by the visit function of Enumerate to end the
// enumeration early; Enumerate then returns nil.
var ErrStop = errors.New("perm: stop enumeration")

// Enumerate calls visit once for every permutation of size n admitted by
// mask (every permutation when mask is nil), in lexicographic order of
// (p[0], p[1], …). The Perm passed to visit is reused between calls: copy it
// (Clone) to keep it. If visit returns ErrStop, Enumerate stops and returns
// nil; any other error stops it and is returned.
//
// The search is depth-first over rows with a used-column set, so rows that
// the mask restricts prune whole subtrees: the cost is proportional to the
// number of admitted permutations times n, not to n!.
func Enumerate(n int, mask *Mask, visit func(p Perm) error) error {
	switch {
	case n < 0:
		return fmt.Errorf("perm: Enumerate: n must be >= 0, got %d", n)
	case n > MaxEnumerate:
		return fmt.Errorf("perm: Enumerate: n = %d exceeds MaxEnumerate = %d", n, MaxEnumerate)
	case mask != nil && mask.Size() != n:
		return fmt.Errorf("perm: Enumerate: mask is %d x %d, want %d x %d", mask.Size(), mask.Size(), n, n)
	case visit == nil:
		return errors.New("perm: Enumerate: nil visit function")
	}
	rows := make([][]int, n)
	for i := range rows {
		if mask == nil {
			rows[i] = Identity(n)
		} else {
			rows[i] = mask.Row(i)
		}
	}
	p := make(Perm, n)
	used := make([]bool, n)
	var rec func(i int) error
	rec = func(i int) error {
		if i == n {
			return visit(p)
		}
		for _, c := range rows[i] {
			if used[c] {
				continue
			}
			used[c] = true
			p[i] = c
			if err := rec(i + 1); err != nil {
				return err
			}
			used[c] = false
		}
		return nil
	}
	if err := rec(0); err != nil && !errors.Is(err, ErrStop) {
		return err
	}
	return nil
}

// Count returns the number of permutations of size n admitted by mask (n!
// when mask is nil), by the same search as Enumerate.
func Count(n int, mask *Mask) (int, error) {
	c := 0
	err := Enumerate(n, mask, func(Perm) error { c++; return nil })
	if err != nil {
		return 0, fmt.Errorf("perm: Count: %w", err)
	}
	return c, nil
}
