package celegans

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permlab/permlab/internal/racedetect"
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

// TestCandidateWidthSorted: the sorted-positions path of CandidateWidth
// (used above candidateWidthExactMax neurons) returns the same width and
// mean as the listing of all differences, on continuous positions, on
// two-decimal positions (many equal differences, scattered by rounding
// error) and on positions with exact duplicates.
func TestCandidateWidthSorted(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	var cases []*Connectome
	for _, n := range []int{2, 3, 40, 300} {
		pos := make([]float64, n)
		for i := range pos {
			pos[i] = rng.Float64()
		}
		cases = append(cases, positionsOnly(t, pos))
	}
	syn, err := Synthetic(300, 4) // two decimals
	require.NoError(t, err)
	cases = append(cases, syn)
	dup := make([]float64, 200)
	for i := range dup {
		dup[i] = float64(rng.IntN(60)) / 64 // exact duplicates, exact differences
	}
	cases = append(cases, positionsOnly(t, dup))

	for ci, c := range cases {
		n := c.N()
		x := append([]float64(nil), c.Positions...)
		sort.Float64s(x)
		targets := []float64{1, float64(n)}
		for k := 0; k < 25; k++ {
			targets = append(targets, 1+rng.Float64()*float64(n-1))
		}
		for _, target := range targets {
			wantNu, wantMean, err := CandidateWidth(c, target)
			require.NoError(t, err)
			nu, mean := candidateWidthSorted(x, target)
			require.Equal(t, wantMean, mean, "case %d (n = %d), target %v", ci, n, target)
			require.Equal(t, wantNu, nu, "case %d (n = %d), target %v", ci, n, target)
		}
	}

	// Above candidateWidthExactMax, CandidateWidth takes the sorted path,
	// and its mean is MeanCandidates at its nu.
	big, err := ScaledConfig{N: candidateWidthExactMax + 500}.Generate(2)
	require.NoError(t, err)
	x := append([]float64(nil), big.Positions...)
	sort.Float64s(x)
	nu, mean, err := CandidateWidth(big, 30)
	require.NoError(t, err)
	wantNu, wantMean := candidateWidthSorted(x, 30)
	assert.Equal(t, wantNu, nu)
	assert.Equal(t, wantMean, mean)
	got, err := MeanCandidates(big, nu)
	require.NoError(t, err)
	assert.Equal(t, mean, got)
	assert.InDelta(t, 30, mean, 0.01)
}

// TestCandidateWidthLarge: at N = 20,000 the sorted path takes milliseconds
// (the listing would need 1.6 GB) and its mean is the candidate count at the
// width it returns, counted independently.
func TestCandidateWidthLarge(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	n := 20000
	x := make([]float64, n)
	for i := range x {
		x[i] = bodyPosition(rng)
	}
	sort.Float64s(x)
	for _, target := range []float64{10, 30, 60} {
		start := time.Now()
		nu, mean := candidateWidthSorted(x, target)
		elapsed := time.Since(start)
		t.Logf("N = %d, target %v: nu = %.3g, mean %.4f, in %v", n, target, nu, mean, elapsed)
		if !racedetect.Enabled {
			assert.Less(t, elapsed, time.Second, "target %v", target)
		}
		// Each pair moves the mean by 2/N = 1e-4, but differences closer
		// than widthTol = 1e-9 are one level, and near nu = 5e-4 there are
		// about 1.2e9 differences per unit of nu (a gap of 0.8e-9 on
		// average): levels of a few pairs are common. Ten pairs is 1e-3.
		assert.InDelta(t, target, mean, 20.0/float64(n), "target %v", target)
		count := 0
		for i := range x {
			for k := i + 1; k < n && math.Abs(x[i]-x[k]) < nu; k++ {
				count++
			}
		}
		assert.Equal(t, float64(n+2*count)/float64(n), mean, "target %v", target)
	}
}

// positionsOnly returns a connectome without edges at the given positions.
func positionsOnly(t *testing.T, pos []float64) *Connectome {
	t.Helper()
	names := make([]string, len(pos))
	for i := range names {
		names[i] = fmt.Sprintf("n%d", i)
	}
	c, err := NewConnectome(names, pos, nil)
	require.NoError(t, err)
	return c
}
