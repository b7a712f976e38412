package celegans

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permlab/permlab/perm"
)

// TestMeanCandidatesReal reproduces the protocol's candidate counts on the
// WormAtlas positions. They are published to one decimal; ours match to
// rounding (10.419, 17.875, 36.964, 56.921, 68.778, 106.663), with the strict
// float64 comparison of PositionMask. Note 17.9 at nu = .01: positions
// exactly 0.01 apart are in or out by rounding error (|0.15-0.14| < .01 but
// |0.22-0.21| > .01 in float64); nu just above .01 gives 28.5.
func TestMeanCandidatesReal(t *testing.T) {
	c := realConnectome(t)
	for _, tc := range []struct{ nu, want float64 }{
		{0.0075, 10.4}, {0.01, 17.9}, {0.02, 37.0}, {0.04, 56.9}, {0.05, 68.8}, {0.1, 106.7},
	} {
		got, err := MeanCandidates(c, tc.nu)
		require.NoError(t, err)
		assert.InDelta(t, tc.want, got, 0.05+1e-12, "nu = %v", tc.nu)

		// The mask of any worm without known neurons has the same mean.
		p := perm.Random(c.N(), rand.New(rand.NewPCG(1, 2)))
		m, err := PositionMask(c, p, nil, tc.nu)
		require.NoError(t, err)
		assert.InDelta(t, got, float64(m.Count())/float64(c.N()), 1e-12)
	}
	nu, mean, err := CandidateWidth(c, 10)
	require.NoError(t, err)
	assert.InDelta(t, 10.4, mean, 0.05)
	got, err := MeanCandidates(c, nu)
	require.NoError(t, err)
	assert.Equal(t, mean, got)
}

func TestPositionMask(t *testing.T) {
	c, err := NewConnectome(
		[]string{"a", "b", "c", "d", "e"},
		[]float64{0.1, 0.12, 0.2, 0.5, 0.52}, nil)
	require.NoError(t, err)
	truth := perm.Perm{3, 0, 4, 1, 2} // observed m is canonical truth[m]
	m, err := PositionMask(c, truth, []int{4}, 0.05)
	require.NoError(t, err)
	want := [][]int{
		{3, 4}, // d at 0.5
		{0, 1}, // a at 0.1
		{3, 4}, // e at 0.52
		{0, 1}, // b at 0.12
		{2},    // known: c
	}
	for r, cols := range want {
		assert.Equal(t, cols, m.Row(r), "row %d", r)
	}
	assert.True(t, m.Admits(truth))
	assert.NoError(t, ValidateMask(m))

	_, err = PositionMask(c, truth, nil, 0)
	assert.ErrorContains(t, err, "nu must be > 0")
	_, err = PositionMask(c, truth, nil, math.NaN())
	assert.Error(t, err)
	_, err = PositionMask(c, truth[:4], nil, 0.1)
	assert.ErrorContains(t, err, "length 4")
	_, err = PositionMask(c, perm.Perm{0, 0, 1, 2, 3}, nil, 0.1)
	assert.Error(t, err)
	_, err = PositionMask(c, truth, []int{5}, 0.1)
	assert.ErrorContains(t, err, "known neuron 5 out of range")
	_, err = PositionMask(nil, truth, nil, 0.1)
	assert.Error(t, err)
}

// TestPositionMaskTruth: on a synthetic worm at the protocol's widths and
// known fractions, masks admit the truth and pass validation.
func TestPositionMaskTruth(t *testing.T) {
	c, err := Synthetic(0, 3)
	require.NoError(t, err)
	sim, err := Simulate(c, SimConfig{Worms: 2, T: 2, KnownCount: 55}, 5)
	require.NoError(t, err)
	for _, nu := range []float64{0.0075, 0.05, 0.1} {
		masks, err := sim.PositionMasks(nu)
		require.NoError(t, err)
		for j, m := range masks {
			w := sim.Worms[j]
			assert.True(t, m.Admits(w.Perm))
			for _, k := range w.Known {
				assert.Equal(t, []int{w.Perm[k]}, m.Row(k))
			}
			assert.NoError(t, ValidateMask(m))
		}
	}
}

func TestCandidateWidth(t *testing.T) {
	// Unrounded positions: every difference is its own level.
	rng := rand.New(rand.NewPCG(8, 9))
	n := 30
	names := make([]string, n)
	pos := make([]float64, n)
	for i := range pos {
		names[i] = string(rune('A'+i%26)) + string(rune('a'+i/26))
		pos[i] = rng.Float64()
	}
	c, err := NewConnectome(names, pos, nil)
	require.NoError(t, err)

	// Independent check: scan a fine grid of widths for the closest mean.
	var grid []float64
	for k := 1; k <= 4000; k++ {
		grid = append(grid, float64(k)/4000)
	}
	for _, target := range []float64{1, 2.5, 7, 15.2, 29, 30} {
		nu, mean, err := CandidateWidth(c, target)
		require.NoError(t, err)
		got, err := MeanCandidates(c, nu)
		require.NoError(t, err)
		assert.Equal(t, mean, got, "target %v", target)
		best := math.Inf(1)
		for _, g := range grid {
			m, err := MeanCandidates(c, g)
			require.NoError(t, err)
			best = math.Min(best, math.Abs(m-target))
		}
		assert.LessOrEqual(t, math.Abs(mean-target), best+1e-12, "target %v", target)
	}

	// Ties: two-decimal positions, levels never split equal distances.
	tied, err := NewConnectome([]string{"a", "b", "c", "d"}, []float64{0.14, 0.15, 0.21, 0.22}, nil)
	require.NoError(t, err)
	nu, mean, err := CandidateWidth(tied, 2)
	require.NoError(t, err)
	assert.Equal(t, 2.0, mean) // both 0.01 pairs together: (4 + 2*2)/4
	assert.InDelta(t, 0.035, nu, 1e-12)

	_, _, err = CandidateWidth(c, 0.5)
	assert.Error(t, err)
	_, _, err = CandidateWidth(c, 31)
	assert.Error(t, err)
	_, _, err = CandidateWidth(nil, 3)
	assert.Error(t, err)
	_, err = MeanCandidates(c, -1)
	assert.Error(t, err)
}

func TestValidateMask(t *testing.T) {
	build := func(rows [][]int) *perm.Mask {
		m, err := perm.NewMask(len(rows))
		require.NoError(t, err)
		for i, cols := range rows {
			for _, j := range cols {
				require.NoError(t, m.Set(i, j, true))
			}
		}
		return m
	}
	tests := []struct {
		name string
		rows [][]int
		want string // "" for valid
	}{
		{"identity", [][]int{{0}, {1}, {2}}, ""},
		{"cycle", [][]int{{1}, {2}, {0}}, ""},
		{"needs augmenting", [][]int{{0, 1}, {0}, {1, 2}}, ""},
		{"empty mask", [][]int{}, ""},
		{"empty row", [][]int{{0, 1}, {}, {2}}, "row 1 has no candidate"},
		{"empty column", [][]int{{0}, {0}, {0, 2}}, "column 1 is no row's candidate"},
		{"hall", [][]int{{0}, {0}, {1, 2}}, "no perfect matching: at most 2 of 3"},
		{"hall wide", [][]int{{0, 1}, {0, 1}, {0, 1}, {2, 3}}, "at most 3 of 4"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateMask(build(tc.rows))
			if tc.want == "" {
				assert.NoError(t, err)
			} else {
				assert.ErrorContains(t, err, tc.want)
			}
		})
	}
	assert.Error(t, ValidateMask(nil))
}

// TestMaxMatchingBrute compares Hopcroft-Karp with a brute-force search over
// all permutations on random sparse masks.
func TestMaxMatchingBrute(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 300; trial++ {
		n := 1 + rng.IntN(6)
		adj := make([][]int, n)
		for i := range adj {
			for j := 0; j < n; j++ {
				if rng.Float64() < 0.35 {
					adj[i] = append(adj[i], j)
				}
			}
		}
		require.Equal(t, bruteMatching(adj, n), maxMatching(adj, n), "trial %d: %v", trial, adj)
	}
}

// bruteMatching returns the largest matching by trying every assignment of
// rows to distinct columns or to nothing.
func bruteMatching(adj [][]int, n int) int {
	used := make([]bool, n)
	var rec func(i int) int
	rec = func(i int) int {
		if i == len(adj) {
			return 0
		}
		best := rec(i + 1)
		for _, j := range adj[i] {
			if !used[j] {
				used[j] = true
				best = max(best, 1+rec(i+1))
				used[j] = false
			}
		}
		return best
	}
	return rec(0)
}
