package masktab

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestForms checks both forms against the rows they were built from, at
// sizes on and off the word boundary.
func TestForms(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 63, 64, 65, 130} {
		rows := make([][]int, n)
		for i := range rows {
			for c := range n {
				if rng.IntN(4) == 0 {
					rows[i] = append(rows[i], c)
				}
			}
		}
		row := func(i int) []int { return rows[i] }
		for _, bytes := range []bool{true, false} {
			tab := NewForm(n, row, bytes)
			if (tab.Bytes != nil) != bytes || (tab.Bits != nil) == bytes {
				t.Fatalf("n=%d bytes=%v: wrong form", n, bytes)
			}
			for i := range n {
				for c := range n {
					if want := slices.Contains(rows[i], c); tab.Has(i, c) != want {
						t.Fatalf("n=%d bytes=%v: Has(%d, %d) = %v", n, bytes, i, c, !want)
					}
				}
			}
		}
	}
	if New(DenseMax, func(int) []int { return nil }).Bytes == nil || New(DenseMax+1, func(int) []int { return nil }).Bits == nil {
		t.Fatal("New does not switch to bits above DenseMax")
	}
}

// TestOutOfRange: a column outside the table is never allowed.
func TestOutOfRange(t *testing.T) {
	for _, bytes := range []bool{true, false} {
		tab := NewForm(3, func(int) []int { return []int{0, 1, 2} }, bytes)
		if tab.Has(0, -1) || tab.Has(0, 3) || !tab.Has(0, 2) {
			t.Errorf("bytes=%v: columns -1, 3 and 2 give %v, %v, %v", bytes, tab.Has(0, -1), tab.Has(0, 3), tab.Has(0, 2))
		}
	}
}
