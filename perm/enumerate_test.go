package perm

import (
	"errors"
	"fmt"
	"testing"
)

func TestEnumerateCountsAndOrder(t *testing.T) {
	fact := 1
	for n := 0; n <= 7; n++ {
		if n > 0 {
			fact *= n
		}
		var prev Perm
		seen := map[string]bool{}
		err := Enumerate(n, nil, func(p Perm) error {
			if err := p.Validate(); err != nil {
				return err
			}
			key := fmt.Sprint(p)
			if seen[key] {
				return fmt.Errorf("%v visited twice", p)
			}
			seen[key] = true
			if prev != nil && !lexLess(prev, p) {
				return fmt.Errorf("%v visited after %v", p, prev)
			}
			prev = p.Clone()
			return nil
		})
		if err != nil {
			t.Fatalf("n = %d: %v", n, err)
		}
		if len(seen) != fact {
			t.Errorf("n = %d: visited %d permutations, want %d", n, len(seen), fact)
		}
	}
}

func lexLess(a, b Perm) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// A banded mask |i - j| <= 1 admits Fibonacci(n+1) permutations: row 0
// either stays or swaps with row 1, and so on.
func TestEnumerateBandedMask(t *testing.T) {
	fib := []int{1, 1, 2, 3, 5, 8, 13, 21, 34, 55}
	for n := 1; n <= 9; n++ {
		m, err := NewMask(n)
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			for j := max(0, i-1); j <= min(n-1, i+1); j++ {
				if err := m.Set(i, j, true); err != nil {
					t.Fatal(err)
				}
			}
		}
		c, err := Count(n, m)
		if err != nil {
			t.Fatal(err)
		}
		if c != fib[n] {
			t.Errorf("n = %d: %d admitted permutations, want %d", n, c, fib[n])
		}
		err = Enumerate(n, m, func(p Perm) error {
			if !m.Admits(p) {
				return fmt.Errorf("visited %v, which the mask forbids", p)
			}
			return nil
		})
		if err != nil {
			t.Error(err)
		}
	}
}

func TestEnumerateStopAndErrors(t *testing.T) {
	calls := 0
	err := Enumerate(5, nil, func(Perm) error {
		calls++
		if calls == 3 {
			return ErrStop
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Errorf("ErrStop: err %v after %d calls, want nil after 3", err, calls)
	}
	boom := errors.New("boom")
	if err := Enumerate(4, nil, func(Perm) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("visit error: got %v", err)
	}
	m, _ := FullMask(3)
	for _, tc := range []struct {
		n    int
		mask *Mask
		fn   func(Perm) error
	}{
		{-1, nil, func(Perm) error { return nil }},
		{MaxEnumerate + 1, nil, func(Perm) error { return nil }},
		{4, m, func(Perm) error { return nil }},
		{3, nil, nil},
	} {
		if err := Enumerate(tc.n, tc.mask, tc.fn); err == nil {
			t.Errorf("Enumerate(%d, ...) accepted bad input", tc.n)
		}
	}
	empty, _ := NewMask(3)
	if c, err := Count(3, empty); err != nil || c != 0 {
		t.Errorf("empty mask: %d, %v; want 0, nil", c, err)
	}
}
