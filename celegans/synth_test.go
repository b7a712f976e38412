package celegans

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSyntheticDefaults(t *testing.T) {
	c, err := Synthetic(0, 1)
	require.NoError(t, err)
	n := DefaultNeurons
	require.Equal(t, n, c.N())
	// Exactly round(0.059 * 279*278/2) = round(2288.08) edges.
	assert.Equal(t, 2288, c.Edges())
	assert.InDelta(t, DefaultDensity, c.Density(), 0.0005)
	assert.InDelta(t, 16.4, c.MeanDegree(), 0.05)
	assert.Equal(t, "S001", c.Names[0])
	assert.Equal(t, "S279", c.Names[n-1])

	head, tail := 0, 0
	for i, p := range c.Positions {
		require.True(t, p >= 0 && p <= 1, "position %v", p)
		// Two decimals, like the WormAtlas table.
		require.Equal(t, math.Round(100*p)/100, p)
		if i > 0 {
			require.LessOrEqual(t, c.Positions[i-1], p)
		}
		if p <= 0.25 {
			head++
		}
		if p >= 0.79 {
			tail++
		}
	}
	// The mixture puts 57% in the head and 11.5% in the tail, plus the cord
	// neurons falling in those ranges; binomial sd is about 8 and 5 neurons.
	assert.InDelta(t, 0.57*float64(n)+0.315*0.06/0.61*float64(n), float64(head), 30)
	assert.InDelta(t, 0.115*float64(n)+0.315*0.01/0.61*float64(n), float64(tail), 20)

	// Wiring is local: connected pairs are closer than pairs at large (on
	// the real worm, 0.16 against 0.28).
	var dEdge, dAll float64
	for _, e := range c.EdgeList() {
		dEdge += math.Abs(c.Positions[e[0]] - c.Positions[e[1]])
	}
	dEdge /= float64(c.Edges())
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			dAll += math.Abs(c.Positions[i] - c.Positions[j])
		}
	}
	dAll /= float64(n * (n - 1) / 2)
	assert.Less(t, dEdge, 0.8*dAll)
}

// TestSyntheticLikeReal compares the synthetic worm's candidate counts with
// the real ones (10.4, 37.0, 68.8, 106.7 for nu = .0075, .02, .05, .1):
// the body plan is only mimicked, so they agree within a third.
func TestSyntheticLikeReal(t *testing.T) {
	c, err := Synthetic(0, 2)
	require.NoError(t, err)
	for _, tc := range []struct{ nu, real float64 }{{0.0075, 10.4}, {0.02, 37.0}, {0.05, 68.8}, {0.1, 106.7}} {
		m, err := MeanCandidates(c, tc.nu)
		require.NoError(t, err)
		assert.InEpsilon(t, tc.real, m, 0.33, "nu = %v", tc.nu)
	}
}

func TestSyntheticDeterministic(t *testing.T) {
	a, err := Synthetic(50, 7)
	require.NoError(t, err)
	b, err := Synthetic(50, 7)
	require.NoError(t, err)
	c, err := Synthetic(50, 8)
	require.NoError(t, err)
	assert.Equal(t, a.Positions, b.Positions)
	assert.Equal(t, a.EdgeList(), b.EdgeList())
	assert.NotEqual(t, a.EdgeList(), c.EdgeList())
}

func TestSyntheticConfig(t *testing.T) {
	c, err := SyntheticConfig{N: 1200, Density: 0.01}.Generate(3)
	require.NoError(t, err)
	assert.Equal(t, "S0001", c.Names[0])
	assert.Equal(t, int(math.Round(0.01*1200*1199/2)), c.Edges())

	for _, n := range []int{1, 2} {
		c, err := Synthetic(n, 1)
		require.NoError(t, err)
		assert.Equal(t, n, c.N())
	}

	for _, cfg := range []SyntheticConfig{{N: -1}, {Density: 1.5}, {Density: -0.1}, {Density: math.NaN()}} {
		_, err := cfg.Generate(1)
		assert.Error(t, err, "%+v", cfg)
	}
	_, err = Synthetic(-3, 1)
	assert.ErrorContains(t, err, "celegans: Synthetic: ")
}
