package relax

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permlab/permlab/perm"
)

// spsBandRows returns candidate lists like a position mask: row i has
// column i and up to k−1 other distinct columns drawn from
// [i−window, i+window], sorted.
func spsBandRows(rng *rand.Rand, n, k, window int) [][]int {
	rows := make([][]int, n)
	for i := range rows {
		lo, hi := max(0, i-window), min(n-1, i+window)
		want := min(k, hi-lo+1)
		set := map[int]bool{i: true}
		r := []int{i}
		for len(r) < want {
			j := lo + rng.IntN(hi-lo+1)
			if !set[j] {
				set[j] = true
				r = append(r, j)
			}
		}
		slices.Sort(r)
		rows[i] = r
	}
	return rows
}

// spsRandRows returns a random pattern containing a random permutation,
// each other entry present with probability density.
func spsRandRows(rng *rand.Rand, n int, density float64) [][]int {
	sigma := perm.Random(n, rng)
	rows := make([][]int, n)
	for i := range rows {
		for j := 0; j < n; j++ {
			if j == sigma[i] || rng.Float64() < density {
				rows[i] = append(rows[i], j)
			}
		}
	}
	return rows
}

func mustPattern(t testing.TB, rows [][]int) *SparsePattern {
	t.Helper()
	p, err := SparsePatternFromRows(rows)
	require.NoError(t, err)
	return p
}

func TestSparsePatternValidation(t *testing.T) {
	cases := []struct {
		name   string
		n      int
		rowPtr []int
		cols   []int
		msg    string
	}{
		{"empty", 0, []int{0}, nil, "size must be >= 1"},
		{"rowPtr length", 2, []int{0, 1}, []int{0}, "len(RowPtr) = 2, want N+1 = 3"},
		{"rowPtr start", 2, []int{1, 1, 2}, []int{0, 1}, "RowPtr must run from 0"},
		{"rowPtr end", 2, []int{0, 1, 3}, []int{0, 1}, "RowPtr must run from 0"},
		{"decreasing", 3, []int{0, 2, 1, 3}, []int{0, 1, 2}, "RowPtr decreases at row 1"},
		{"beyond Cols", 2, []int{0, 5, 2}, []int{0, 1}, "RowPtr[1] = 5 exceeds len(Cols) = 2"},
		{"empty row", 2, []int{0, 0, 2}, []int{0, 1}, "row 0 has no candidate"},
		{"column range", 2, []int{0, 1, 2}, []int{0, 2}, "column 2 out of range"},
		{"negative column", 2, []int{0, 1, 2}, []int{-1, 1}, "column -1 out of range"},
		{"unsorted", 2, []int{0, 2, 3}, []int{1, 0, 1}, "strictly increasing, got 0 after 1"},
		{"duplicate", 2, []int{0, 2, 3}, []int{0, 0, 1}, "strictly increasing, got 0 after 0"},
		{"empty column", 2, []int{0, 1, 2}, []int{0, 0}, "column 1 has no candidate"},
		// Rows 0 and 1 both have only column 0 (Hall's condition fails).
		{"no perfect matching", 3, []int{0, 1, 2, 5}, []int{0, 0, 0, 1, 2}, "row 1 cannot be matched"},
	}
	for _, c := range cases {
		_, err := NewSparsePattern(c.n, c.rowPtr, c.cols)
		require.Error(t, err, c.name)
		assert.Contains(t, err.Error(), "relax: NewSparsePattern: ", c.name)
		assert.Contains(t, err.Error(), c.msg, c.name)
	}
	_, err := NewSparsePattern(3, []int{0, 1, 2, 5}, []int{0, 0, 0, 1, 2})
	assert.ErrorIs(t, err, ErrInfeasible)
	_, err = SparsePatternFromRows([][]int{{1, 0}, {0, 1}})
	assert.ErrorContains(t, err, "relax: SparsePatternFromRows: row 0: columns must be strictly increasing")
	_, err = SparsePatternFromRows(nil)
	assert.ErrorContains(t, err, "size must be >= 1")
	_, err = SparsePatternFromMask(nil)
	assert.ErrorContains(t, err, "nil mask")
	m, _ := perm.NewMask(2)
	_ = m.Set(0, 0, true)
	_ = m.Set(1, 0, true)
	_, err = SparsePatternFromMask(m)
	assert.ErrorContains(t, err, "relax: SparsePatternFromMask: column 1 has no candidate")

	// The input slices are copied.
	rowPtr, cols := []int{0, 2, 4}, []int{0, 1, 0, 1}
	p, err := NewSparsePattern(2, rowPtr, cols)
	require.NoError(t, err)
	cols[0], rowPtr[1] = 1, 1
	assert.Equal(t, []int{0, 2, 4}, p.RowPtr())
	assert.Equal(t, []int{0, 1, 0, 1}, p.Cols())
}

func TestSparsePatternAccessors(t *testing.T) {
	rng := rand.New(rand.NewPCG(60, 60))
	rows := spsRandRows(rng, 9, 0.3)
	p := mustPattern(t, rows)
	m := p.Mask()
	q, err := SparsePatternFromMask(m)
	require.NoError(t, err)
	assert.Equal(t, p.RowPtr(), q.RowPtr())
	assert.Equal(t, p.Cols(), q.Cols())
	assert.Equal(t, 9, p.N())
	assert.Equal(t, m.Count(), p.NNZ())
	for i := 0; i < 9; i++ {
		assert.Equal(t, m.Row(i), p.Row(i))
		for j := -1; j <= 9; j++ {
			e := p.Index(i, j)
			if m.Allowed(i, j) {
				require.GreaterOrEqual(t, e, 0)
				assert.Equal(t, j, p.Cols()[e])
				assert.True(t, e >= p.RowPtr()[i] && e < p.RowPtr()[i+1])
			} else {
				assert.Equal(t, -1, e, "(%d,%d)", i, j)
			}
		}
	}
	assert.Nil(t, p.Row(-1))
	assert.Nil(t, p.Row(9))
	assert.Equal(t, -1, p.Index(9, 0))
	assert.True(t, m.Admits(p.Matching()))

	vals := make([]float64, p.NNZ())
	for e := range vals {
		vals[e] = float64(e + 1)
	}
	d, err := p.Dense(vals, math.Inf(-1))
	require.NoError(t, err)
	for i := 0; i < 9; i++ {
		for j := 0; j < 9; j++ {
			if e := p.Index(i, j); e >= 0 {
				assert.Equal(t, vals[e], d.At(i, j))
			} else {
				assert.True(t, math.IsInf(d.At(i, j), -1))
			}
		}
	}
	back, err := p.Values(d)
	require.NoError(t, err)
	assert.Equal(t, vals, back)
	_, err = p.Dense(vals[1:], 0)
	assert.ErrorContains(t, err, "values for")
	_, err = p.Values(nil)
	assert.ErrorContains(t, err, "nil matrix")
	d0, _ := mustPattern(t, [][]int{{0}}).Dense([]float64{1}, 0)
	_, err = p.Values(d0)
	assert.ErrorContains(t, err, "matrix is 1×1, pattern 9×9")
}

// bruteSupport returns, for every entry of p, whether some perfect
// matching of the pattern uses it, by enumerating the permutations.
func bruteSupport(t *testing.T, p *SparsePattern) []bool {
	on := make([]bool, p.NNZ())
	err := perm.Enumerate(p.N(), p.Mask(), func(s perm.Perm) error {
		for i, j := range s {
			on[p.Index(i, j)] = true
		}
		return nil
	})
	require.NoError(t, err)
	return on
}

// bruteBlocks counts the connected components of the bipartite graph of
// the entries that lie on some perfect matching.
func bruteBlocks(p *SparsePattern, on []bool) int {
	n := p.N()
	parent := make([]int, 2*n)
	for k := range parent {
		parent[k] = k
	}
	var find func(int) int
	find = func(k int) int {
		if parent[k] != k {
			parent[k] = find(parent[k])
		}
		return parent[k]
	}
	for i := 0; i < n; i++ {
		for e := p.RowPtr()[i]; e < p.RowPtr()[i+1]; e++ {
			if on[e] {
				parent[find(i)] = find(n + p.Cols()[e])
			}
		}
	}
	c := 0
	for k := range parent {
		if find(k) == k {
			c++
		}
	}
	return c
}

func TestSparsePatternMatchingBlocksPrune(t *testing.T) {
	// Against brute force on small random patterns: the constructor
	// accepts a pattern exactly when it has a perfect matching; Prune keeps
	// exactly the entries on some perfect matching; Blocks counts the
	// components of those entries.
	rng := rand.New(rand.NewPCG(61, 61))
	accepted, rejected, partial, multi := 0, 0, 0, 0
	for trial := 0; trial < 400; trial++ {
		n := 1 + rng.IntN(7)
		density := 0.1 + 0.4*rng.Float64()
		rows := make([][]int, n)
		for i := range rows {
			for j := 0; j < n; j++ {
				if rng.Float64() < density {
					rows[i] = append(rows[i], j)
				}
			}
			if len(rows[i]) == 0 {
				rows[i] = []int{rng.IntN(n)}
			}
		}
		colHas := make([]bool, n)
		for _, r := range rows {
			for _, j := range r {
				colHas[j] = true
			}
		}
		if slices.Contains(colHas, false) {
			continue
		}
		m, _ := perm.NewMask(n)
		for i, r := range rows {
			for _, j := range r {
				_ = m.Set(i, j, true)
			}
		}
		count, err := perm.Count(n, m)
		require.NoError(t, err)
		p, err := SparsePatternFromRows(rows)
		if count == 0 {
			require.Error(t, err, "rows %v", rows)
			assert.ErrorIs(t, err, ErrInfeasible)
			rejected++
			continue
		}
		require.NoError(t, err, "rows %v", rows)
		accepted++
		assert.True(t, m.Admits(p.Matching()))
		on := bruteSupport(t, p)
		assert.Equal(t, !slices.Contains(on, false), p.TotalSupport(), "rows %v", rows)
		assert.Equal(t, bruteBlocks(p, on), p.Blocks(), "rows %v", rows)
		q, keep := p.Prune()
		var want []int
		for e, ok := range on {
			if ok {
				want = append(want, e)
			}
		}
		assert.Equal(t, want, keep, "rows %v", rows)
		assert.True(t, q.TotalSupport())
		assert.Equal(t, p.Blocks(), q.Blocks())
		for k, e := range keep {
			assert.Equal(t, entryRow(p, e), entryRow(q, k), "entry %d keeps its row", e)
			assert.Equal(t, p.Cols()[e], q.Cols()[k])
		}
		if p.TotalSupport() {
			assert.Same(t, p, q)
		} else {
			partial++
		}
		if p.Blocks() > 1 {
			multi++
		}
	}
	// The random patterns cover every case.
	assert.Greater(t, accepted, 50)
	assert.Greater(t, rejected, 10)
	assert.Greater(t, partial, 10)
	assert.Greater(t, multi, 10)
}

// entryRow returns the row of entry e of p.
func entryRow(p *SparsePattern, e int) int {
	i, _ := slices.BinarySearch(p.RowPtr(), e+1)
	return i - 1
}

func TestSparsePatternLarge(t *testing.T) {
	// A position-like band pattern at the size the operator is meant for
	// builds quickly and is one fully indecomposable block.
	rng := rand.New(rand.NewPCG(62, 62))
	p := mustPattern(t, spsBandRows(rng, 20000, 30, 60))
	assert.Equal(t, 20000*30, p.NNZ())
	assert.Equal(t, 1, p.Blocks())
	assert.True(t, p.TotalSupport())
	// An upper bidiagonal pattern has one perfect matching (the
	// identity): every off-diagonal entry lies on none, and every row is
	// its own block.
	n := 5000
	rows := make([][]int, n)
	for i := range rows {
		rows[i] = []int{i}
		if i+1 < n {
			rows[i] = append(rows[i], i+1)
		}
	}
	p = mustPattern(t, rows)
	assert.False(t, p.TotalSupport())
	assert.Equal(t, n, p.Blocks())
	q, keep := p.Prune()
	assert.Equal(t, n, q.NNZ())
	assert.Len(t, keep, n)
	assert.Equal(t, n, q.Blocks())
	// The greedy start leaves the last row free, and the only augmenting
	// path runs through every row: row i has columns i and i+1, the last
	// row only column 0. The matching is forced, so no other entry lies on
	// a perfect matching.
	for i := range rows {
		rows[i] = []int{i, i + 1}
	}
	rows[n-1] = []int{0}
	p = mustPattern(t, rows)
	want := make(perm.Perm, n)
	for i := range want {
		want[i] = (i + 1) % n
	}
	assert.Equal(t, want, p.Matching())
	assert.False(t, p.TotalSupport())
	assert.Equal(t, n, p.Blocks())
	// With column n−1 added to the last row, the cycle is one block.
	rows[n-1] = []int{0, n - 1}
	p = mustPattern(t, rows)
	assert.True(t, p.TotalSupport())
	assert.Equal(t, 1, p.Blocks())
}

func TestSparsePatternScores(t *testing.T) {
	p, err := SparsePatternFromRows([][]int{{0, 1}, {0, 1, 2}, {2}})
	require.NoError(t, err)
	vals := []float64{1, 5, 4, 0, 0, 3}
	s, err := p.Scores(vals)
	require.NoError(t, err)
	q, err := MatchingSparse(*s)
	require.NoError(t, err)
	require.Equal(t, perm.Perm{1, 0, 2}, q) // 5 + 4 + 3
	_, err = p.Scores(vals[:5])
	require.ErrorContains(t, err, "5 values for 6 entries")
}
